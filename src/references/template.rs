//! The part of Jinja that reference sets use: text with `{{ expression }}` holes, where an
//! expression is a template name (`{{u}}`) or integer arithmetic over a generator's dimensions
//! (`{{(i + 1) * 1000}}`: `+ - * // %`, parentheses, integer literals). fsspec renders these
//! with jinja2; anything beyond this subset is an error naming what is not read.
//!
//! Written by hand: a Jinja engine would evaluate far more than a reference set may ask for.

use std::collections::HashMap;

/// A value a name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Text(String),
    Number(i64),
}

/// The names a template is rendered with: templates (text) and dimension values (numbers).
#[derive(Debug, Clone, Default)]
pub(crate) struct Variables {
    values: HashMap<String, Value>,
}

impl Variables {
    pub(crate) fn set_text(&mut self, name: &str, text: String) {
        self.values.insert(name.to_string(), Value::Text(text));
    }

    pub(crate) fn set_number(&mut self, name: &str, n: i64) {
        self.values.insert(name.to_string(), Value::Number(n));
    }
}

/// Text with holes, parsed once and rendered for each combination of a generator.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Hole(Expr),
}

#[derive(Debug, Clone)]
enum Expr {
    Name(String),
    Number(i64),
    Binary(Box<Expr>, Op, Box<Expr>),
    Negate(Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    FloorDiv,
    Rem,
}

/// Deepest nesting of parentheses and unary minus read (the parser recurses).
const MAX_DEPTH: usize = 64;

impl Template {
    /// `text` as it is, without holes.
    pub(crate) fn literal(text: String) -> Self {
        Self {
            parts: vec![Part::Text(text)],
        }
    }

    /// Parses `text`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let (before, after) = rest.split_at(open);
            if !before.is_empty() {
                parts.push(Part::Text(before.to_string()));
            }
            let after = &after[2..];
            let close = after
                .find("}}")
                .ok_or_else(|| "a `{{` without its `}}`".to_string())?;
            let tokens = tokens(&after[..close])?;
            let mut parser = Parser {
                tokens: &tokens,
                at: 0,
                depth: 0,
            };
            let expr = parser.sum()?;
            if parser.at != tokens.len() {
                return Err(format!(
                    "`{{{{{}}}}}` is not an expression read here (names, integers, + - * // % \
                     and parentheses)",
                    &after[..close]
                ));
            }
            parts.push(Part::Hole(expr));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Self { parts })
    }

    /// The text with each hole's value.
    pub(crate) fn render(&self, variables: &Variables) -> Result<String, String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Hole(e) => match e.evaluate(variables)? {
                    Value::Text(t) => out.push_str(&t),
                    Value::Number(n) => out.push_str(&n.to_string()),
                },
            }
        }
        Ok(out)
    }
}

impl Expr {
    fn evaluate(&self, variables: &Variables) -> Result<Value, String> {
        let number = |e: &Expr| match e.evaluate(variables)? {
            Value::Number(n) => Ok(n),
            Value::Text(t) => Err(format!("'{t}' is text, not a number")),
        };
        match self {
            Expr::Name(name) => variables
                .values
                .get(name)
                .cloned()
                .ok_or_else(|| format!("no template or dimension is named `{name}`")),
            Expr::Number(n) => Ok(Value::Number(*n)),
            Expr::Negate(e) => number(e)?
                .checked_neg()
                .map(Value::Number)
                .ok_or_else(|| "a number passes 2^63".to_string()),
            Expr::Binary(a, op, b) => {
                let (a, b) = (number(a)?, number(b)?);
                let result = match op {
                    Op::Add => a.checked_add(b),
                    Op::Sub => a.checked_sub(b),
                    Op::Mul => a.checked_mul(b),
                    // Python's floor division and modulo (the sign of the divisor).
                    Op::FloorDiv => match (a.checked_div_euclid(b), a.checked_rem_euclid(b)) {
                        (Some(q), Some(r)) if b < 0 && r != 0 => q.checked_sub(1),
                        (q, _) => q,
                    },
                    Op::Rem => match a.checked_rem_euclid(b) {
                        Some(r) if b < 0 && r != 0 => r.checked_add(b),
                        r => r,
                    },
                };
                result.map(Value::Number).ok_or_else(|| match op {
                    Op::FloorDiv | Op::Rem if b == 0 => "a division by zero".to_string(),
                    _ => "a number passes 2^63".to_string(),
                })
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Number(i64),
    Op(Op),
    Open,
    Close,
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            c if c.is_whitespace() => i += 1,
            c if c.is_ascii_digit() => {
                let start = i;
                while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
                    i += 1;
                }
                let digits: String = chars[start..i].iter().collect();
                let n = digits
                    .parse::<i64>()
                    .map_err(|_| format!("{digits} passes 2^63"))?;
                out.push(Token::Number(n));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while chars
                    .get(i)
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_')
                {
                    i += 1;
                }
                out.push(Token::Name(chars[start..i].iter().collect()));
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                out.push(Token::Op(Op::FloorDiv));
                i += 2;
            }
            '+' | '-' | '*' | '%' | '(' | ')' => {
                out.push(match c {
                    '+' => Token::Op(Op::Add),
                    '-' => Token::Op(Op::Sub),
                    '*' => Token::Op(Op::Mul),
                    '%' => Token::Op(Op::Rem),
                    '(' => Token::Open,
                    _ => Token::Close,
                });
                i += 1;
            }
            other => {
                return Err(format!(
                    "`{other}` is not read in a template expression (names, integers, \
                     + - * // % and parentheses)"
                ));
            }
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut left = self.product()?;
        while let Some(Token::Op(op @ (Op::Add | Op::Sub))) = self.peek() {
            let op = *op;
            self.at += 1;
            left = Expr::Binary(Box::new(left), op, Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while let Some(Token::Op(op @ (Op::Mul | Op::FloorDiv | Op::Rem))) = self.peek() {
            let op = *op;
            self.at += 1;
            left = Expr::Binary(Box::new(left), op, Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("an expression nested more than {MAX_DEPTH} deep"));
        }
        let token = self.peek().cloned();
        self.at += 1;
        let expr = match token {
            Some(Token::Op(Op::Sub)) => Expr::Negate(Box::new(self.unary()?)),
            Some(Token::Number(n)) => Expr::Number(n),
            Some(Token::Name(name)) => Expr::Name(name),
            Some(Token::Open) => {
                let inner = self.sum()?;
                if self.peek() != Some(&Token::Close) {
                    return Err("a `(` without its `)`".into());
                }
                self.at += 1;
                inner
            }
            _ => return Err("an expression ends too soon".into()),
        };
        self.depth -= 1;
        Ok(expr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, vars: &[(&str, i64)]) -> Result<String, String> {
        let mut v = Variables::default();
        v.set_text("u", "s3://b/f.nc".into());
        for (name, n) in vars {
            v.set_number(name, *n);
        }
        Template::parse(text)?.render(&v)
    }

    #[test]
    fn holes_take_templates_and_integer_arithmetic_as_python_computes_it() {
        assert_eq!(render("{{u}}", &[]).unwrap(), "s3://b/f.nc");
        assert_eq!(
            render("data/{{ i }}.{{j}}", &[("i", 3), ("j", 0)]).unwrap(),
            "data/3.0"
        );
        assert_eq!(
            render("{{(i + 1) * 1000 - 7 % 4}}", &[("i", 2)]).unwrap(),
            "2997"
        );
        assert_eq!(
            render("{{-7 // 2}} {{-7 % 2}} {{7 // -2}} {{7 % -2}}", &[]).unwrap(),
            "-4 1 -4 -1"
        );
        assert_eq!(render("plain", &[]).unwrap(), "plain");
    }

    #[test]
    fn what_is_not_read_is_an_error() {
        for bad in [
            "{{i",
            "{{i / 2}}",
            "{{ i.x }}",
            "{{ (i }}",
            "{{ }}",
            "{{ 1 2 }}",
            "{{k}}",
            "{{u * 2}}",
            "{{1 // 0}}",
            "{{9223372036854775807 + 1}}",
            "{{99999999999999999999}}",
        ] {
            assert!(render(bad, &[("i", 1)]).is_err(), "{bad}");
        }
        let deep = format!("{{{{{}1{}}}}}", "(".repeat(100), ")".repeat(100));
        assert!(render(&deep, &[]).is_err());
    }
}

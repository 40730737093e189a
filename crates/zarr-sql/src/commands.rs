//! The shell's backslash commands, as datafusion-cli's users type them: `\d`, `\d TABLE`, `\?`,
//! `\h [FUNCTION]`, `\quiet [true|false]`, `\pset [format FORMAT]`, `\q`. Each that reads the
//! catalog runs the SQL datafusion-cli runs for it (the session has the information schema).

use clap::ValueEnum;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use crate::output::{Format, Printer, print_text};
use crate::run_sql;

/// What the shell does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Continue,
    Quit,
}

const HELP: &str = "\
Commands:
  \\?              this list
  \\q              quit (also: quit, exit)
  \\d              list the tables
  \\d TABLE        describe a table (its columns and types)
  \\h              list the SQL functions
  \\h FUNCTION     describe a function
  \\i FILE         run the statements of FILE
  \\quiet [BOOL]   print no row counts or timings (no argument: toggle)
  \\pset [format FORMAT]
                  show the output settings, or set the format: table, csv, json, ndjson
Statements end with ';'.";

/// Runs one backslash command `line` (it starts with `\`).
pub async fn run(line: &str, ctx: &SessionContext, printer: &mut Printer) -> Result<Next> {
    let mut words = line.trim().trim_end_matches(';').split_whitespace();
    let command = words.next().unwrap_or_default();
    let args: Vec<&str> = words.collect();
    match (command, args.as_slice()) {
        ("\\q", []) => return Ok(Next::Quit),
        ("\\?", []) => print_text(&format!("{HELP}\n"))?,
        ("\\d", []) => run_sql(ctx, "SHOW TABLES", printer).await?,
        ("\\d", [table]) => {
            run_sql(ctx, &format!("SHOW COLUMNS FROM {table}"), printer).await?;
        }
        ("\\h", []) => {
            let sql = "SELECT DISTINCT routine_name AS function FROM information_schema.routines \
                       ORDER BY function";
            run_sql(ctx, sql, printer).await?;
        }
        ("\\h", [function]) => {
            let name = function.to_ascii_lowercase().replace('\'', "''");
            let sql = format!(
                "SELECT DISTINCT routine_name AS function, function_type, description, \
                 syntax_example FROM information_schema.routines WHERE routine_name = '{name}'"
            );
            run_sql(ctx, &sql, printer).await?;
        }
        ("\\i", [file]) => {
            let sql = std::fs::read_to_string(file)
                .map_err(|e| DataFusionError::Execution(format!("cannot read {file}: {e}")))?;
            run_sql(ctx, &sql, printer).await?;
        }
        ("\\quiet", []) => printer.quiet = !printer.quiet,
        ("\\quiet", [value]) => printer.quiet = parse_bool(value)?,
        ("\\pset", []) => print_text(&format!(
            "format {}\nquiet {}\n",
            format_name(printer.format),
            printer.quiet
        ))?,
        ("\\pset", ["format", name]) => {
            printer.format = Format::from_str(name, true).map_err(|_| {
                DataFusionError::Plan(format!(
                    "\\pset format '{name}' is not one of table, csv, json, ndjson"
                ))
            })?;
        }
        _ => {
            return Err(DataFusionError::Plan(format!(
                "unknown command or arguments: {}; \\? lists the commands",
                line.trim()
            )));
        }
    }
    Ok(Next::Continue)
}

fn parse_bool(value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(DataFusionError::Plan(format!(
            "\\quiet '{value}' is not true or false"
        ))),
    }
}

fn format_name(format: Format) -> String {
    format
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

//! Metadata documents parsed as zarr-python writes them: JSON, plus the bare `NaN`,
//! `Infinity` and `-Infinity` that Python's `json` module writes for non-finite floats (an
//! attribute `valid_max: nan` or `actual_range: [nan, inf]` in a dataset xarray saved).
//!
//! serde_json has no option for these tokens, and a JSON5 parser would accept far more
//! (comments, trailing commas, single quotes) than any Zarr writer emits; so the tokens are
//! rewritten here, by hand, into the strings `"NaN"`, `"Infinity"` and `"-Infinity"` that
//! the Zarr V3 specification uses for non-finite fill values.

use std::borrow::Cow;

/// `bytes` as JSON: with `NaN`, `Infinity` and `-Infinity` outside strings quoted when it has
/// any (a copy), else `bytes` themselves.
pub(super) fn normalized(bytes: &[u8]) -> Cow<'_, [u8]> {
    match has_non_finite(bytes) {
        true => quote_non_finite(bytes).map_or(Cow::Borrowed(bytes), Cow::Owned),
        false => Cow::Borrowed(bytes),
    }
}

/// Whether `bytes` may hold a bare non-finite number: an `N` or an `I` outside strings.
fn has_non_finite(bytes: &[u8]) -> bool {
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'N' || b == b'I' {
            return true;
        }
    }
    false
}

/// `bytes` with `NaN`, `Infinity` and `-Infinity` outside strings quoted, or `None` when
/// there are none. Outside strings JSON has no other letters than those of `true`, `false`
/// and `null`, so an `N` or an `I` there starts one of these tokens.
fn quote_non_finite(bytes: &[u8]) -> Option<Vec<u8>> {
    const TOKENS: [&[u8]; 3] = [b"NaN", b"Infinity", b"-Infinity"];
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) = TOKENS.iter().find(|t| bytes[i..].starts_with(t)) {
            out.push(b'"');
            out.extend_from_slice(token);
            out.push(b'"');
            i += token.len();
            changed = true;
            continue;
        }
        out.push(b);
        i += 1;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn bare_non_finite_numbers_read_as_their_v3_strings() {
        let doc =
            br#"{"valid_max": NaN, "range": [-Infinity,Infinity], "s": "NaN \" NaN", "n": 1}"#;
        let parsed: Value = serde_json::from_slice(&normalized(doc)).unwrap();
        assert_eq!(
            parsed,
            json!({"valid_max": "NaN", "range": ["-Infinity", "Infinity"], "s": "NaN \" NaN", "n": 1})
        );
        // Without them, the text itself; other invalid JSON stays invalid.
        assert!(matches!(normalized(br#"{"a": "NaN"}"#), Cow::Borrowed(_)));
        assert!(serde_json::from_slice::<Value>(&normalized(br#"{"a": Nan}"#)).is_err());
        assert_eq!(quote_non_finite(br#"{"a": "Infinity"}"#), None);
    }
}

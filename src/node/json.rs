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
    quote_non_finite(bytes).map_or(Cow::Borrowed(bytes), Cow::Owned)
}

/// `bytes` with `NaN`, `Infinity` and `-Infinity` outside strings quoted, or `None` when
/// there are none (then nothing is copied). Outside strings JSON has no other letters than
/// those of `true`, `false` and `null`, so an `N` or an `I` there starts one of these tokens.
fn quote_non_finite(bytes: &[u8]) -> Option<Vec<u8>> {
    const TOKENS: [&[u8]; 3] = [b"NaN", b"Infinity", b"-Infinity"];
    // Written from the first token on: `copied` bytes of the input are in `out`.
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let (mut in_string, mut escaped) = (false, false);
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) = TOKENS
            .iter()
            .find(|t| bytes.get(i..).is_some_and(|r| r.starts_with(t)))
        {
            let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len() + 16));
            out.extend_from_slice(bytes.get(copied..i).unwrap_or_default());
            out.push(b'"');
            out.extend_from_slice(token);
            out.push(b'"');
            i += token.len();
            copied = i;
            continue;
        }
        i += 1;
    }
    let mut out = out?;
    out.extend_from_slice(bytes.get(copied..).unwrap_or_default());
    Some(out)
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

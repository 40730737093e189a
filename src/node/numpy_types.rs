//! NumPy's `datetime64`, `timedelta64` and `S` (null-terminated bytes) arrays, as zarr-python
//! writes them: the Arrow type each maps to, and the storage type zarrs decodes them as.
//!
//! zarrs reads V3 `numpy.datetime64` but not V2's `<M8[ns]`, and neither version's `S`. Their
//! elements are plain 8-byte integers and fixed-width bytes, so zarrs is handed `int64` (V2
//! `<i8`) or raw bits (`r24`, V2 `|V3`) with the fill value in that type's form, and the node
//! keeps the Arrow mapping. The mapping is pyarrow's from NumPy: units `s`, `ms`, `us`, `ns`
//! become `Timestamp`/`Duration`, `D` becomes `Date32`, and NaT is null; the other units
//! (calendar months, hours, a scale factor) stay unsupported. `S` elements become `Binary`
//! with their trailing NULs removed, as NumPy (and so zarr-python) returns them.

use arrow::datatypes::DataType as ArrowType;
use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use serde_json::{Value, json};

use super::ElementKind;
use crate::cf::{NAT, units};
use crate::error::{Result, ZarrError};
use crate::limits::Limits;

/// How an array of one of these types is read.
pub(super) struct Mapped {
    /// The data type as shown (`numpy.datetime64[ns]`, `<M8[ns]`, `null_terminated_bytes`).
    pub(super) name: String,
    /// The element kind and what zarrs is given, or `None` when the type is not read.
    pub(super) read: Option<Storage>,
}

/// What zarrs decodes an array as, and how we read its elements.
pub(super) struct Storage {
    /// The element kind.
    pub(super) kind: ElementKind,
    /// The data type handed to zarrs (V3 `data_type`, V2 `dtype`).
    pub(super) data_type: Value,
    /// The fill value in that type's form.
    pub(super) fill_value: Value,
}

/// The V3 `data_type` `data_type` (with fill `fill`), if it is one of these types.
pub(super) fn v3(
    display: &str,
    data_type: &Value,
    fill: &Value,
    limits: &Limits,
) -> Result<Option<Mapped>> {
    let name = data_type
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let config = |key: &str| data_type.pointer(&format!("/configuration/{key}"));
    match name {
        "numpy.datetime64" | "numpy.timedelta64" => {
            let unit = config("unit").and_then(Value::as_str).unwrap_or_default();
            let scale = config("scale_factor").and_then(Value::as_u64).unwrap_or(1);
            let scaled = if scale == 1 {
                unit.to_string()
            } else {
                format!("{scale}{unit}")
            };
            let arrow = temporal(name == "numpy.datetime64", unit, scale);
            Ok(Some(Mapped {
                name: format!("{name}[{scaled}]"),
                read: match arrow {
                    Some(arrow) => Some(Storage {
                        kind: ElementKind::Primitive(arrow),
                        data_type: json!("int64"),
                        fill_value: temporal_fill(display, fill, false)?,
                    }),
                    None => None,
                },
            }))
        }
        "null_terminated_bytes" => {
            let length = config("length_bytes").and_then(Value::as_u64);
            let Some(length_bytes) = length
                .filter(|&n| n > 0)
                .and_then(|n| usize::try_from(n).ok())
            else {
                return Err(ZarrError::metadata(
                    display,
                    "null_terminated_bytes needs a positive integer length_bytes",
                ));
            };
            Ok(Some(Mapped {
                name: name.to_string(),
                read: Some(Storage {
                    kind: ElementKind::Bytes { length_bytes },
                    data_type: json!(format!("r{}", bits(display, length_bytes)?)),
                    fill_value: bytes_fill(display, fill, length_bytes, limits)?,
                }),
            }))
        }
        _ => Ok(None),
    }
}

/// The V2 `dtype` `dtype` (with fill `fill`), if it is one of these types: `<M8[ns]`,
/// `>m8[s]`, `|S3` (NumPy's `str(dtype)`).
pub(super) fn v2(
    display: &str,
    dtype: &str,
    fill: &Value,
    limits: &Limits,
) -> Result<Option<Mapped>> {
    let (order, rest) = match dtype.split_at_checked(1) {
        Some((order @ ("<" | ">" | "|" | "="), rest)) => (order, rest),
        _ => return Ok(None),
    };
    if let Some(length) = rest.strip_prefix('S') {
        let Ok(length_bytes) = length.parse::<usize>() else {
            return Ok(None);
        };
        if length_bytes == 0 {
            return Err(ZarrError::metadata(display, "dtype |S0 has no bytes"));
        }
        return Ok(Some(Mapped {
            name: dtype.to_string(),
            read: Some(Storage {
                kind: ElementKind::Bytes { length_bytes },
                data_type: json!(format!("|V{length_bytes}")),
                fill_value: bytes_fill(display, fill, length_bytes, limits)?,
            }),
        }));
    }
    let datetime = match rest.get(..2) {
        Some("M8") => true,
        Some("m8") => false,
        _ => return Ok(None),
    };
    let Some(unit) = rest[2..]
        .strip_prefix('[')
        .and_then(|u| u.strip_suffix(']'))
    else {
        return Ok(Some(Mapped {
            name: dtype.to_string(),
            read: None,
        }));
    };
    let digits = unit.bytes().take_while(u8::is_ascii_digit).count();
    let scale = match &unit[..digits] {
        "" => Some(1),
        n => n.parse::<u64>().ok(),
    };
    let arrow = scale.and_then(|scale| temporal(datetime, &unit[digits..], scale));
    let order = if order == ">" { ">" } else { "<" };
    Ok(Some(Mapped {
        name: dtype.to_string(),
        read: match arrow {
            Some(arrow) => Some(Storage {
                kind: ElementKind::Primitive(arrow),
                data_type: json!(format!("{order}i8")),
                fill_value: temporal_fill(display, fill, true)?,
            }),
            None => None,
        },
    }))
}

/// pyarrow's type for NumPy's `datetime64`/`timedelta64` of `unit` × `scale`.
fn temporal(datetime: bool, unit: &str, scale: u64) -> Option<ArrowType> {
    if scale != 1 {
        return None;
    }
    if unit == units::DAYS.numpy && datetime {
        return Some(ArrowType::Date32);
    }
    let unit = units::by_numpy(unit)?.arrow?;
    Some(if datetime {
        ArrowType::Timestamp(unit, None)
    } else {
        ArrowType::Duration(unit)
    })
}

/// A temporal fill value as an `int64` one: an integer, `"NaT"`, or (V2, where zarr-python
/// reads it as NaT) `null`.
fn temporal_fill(display: &str, fill: &Value, v2: bool) -> Result<Value> {
    match fill {
        Value::Number(n) if n.is_i64() => Ok(fill.clone()),
        Value::String(s) if s == "NaT" => Ok(json!(NAT)),
        Value::Null if v2 => Ok(json!(NAT)),
        other => Err(ZarrError::metadata(
            display,
            format!("fill_value {other} is not an integer or \"NaT\""),
        )),
    }
}

/// An `S` fill value (base64, as zarr-python writes it, or `null` for none: zeros) as the
/// `length_bytes` bytes zarrs' raw bits take (in base64), padded with NULs as NumPy pads it.
/// The element is held to the chunk limit first: the fill is built at its full size.
fn bytes_fill(display: &str, fill: &Value, length_bytes: usize, limits: &Limits) -> Result<Value> {
    limits.chunk.check(
        display,
        "one element of the data type",
        u64::try_from(length_bytes).ok(),
    )?;
    let mut bytes = match fill {
        Value::Null => Vec::new(),
        Value::String(s) => BASE64_STANDARD.decode(s).map_err(|e| {
            ZarrError::metadata(display, format!("fill_value {s:?} is not base64: {e}"))
        })?,
        other => {
            return Err(ZarrError::metadata(
                display,
                format!("fill_value {other} is not a base64 string"),
            ));
        }
    };
    if bytes.len() > length_bytes {
        return Err(ZarrError::metadata(
            display,
            format!(
                "fill_value holds {} bytes, more than the {length_bytes} of an element",
                bytes.len()
            ),
        ));
    }
    bytes.resize(length_bytes, 0);
    Ok(json!(BASE64_STANDARD.encode(bytes)))
}

fn bits(display: &str, length_bytes: usize) -> Result<usize> {
    length_bytes.checked_mul(8).ok_or_else(|| {
        ZarrError::metadata(display, format!("length_bytes {length_bytes} is too large"))
    })
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::TimeUnit;

    use super::*;
    use crate::options::ZarrOptions;

    fn limits() -> Limits {
        Limits::of(&ZarrOptions::default())
    }

    fn kind(mapped: Option<Mapped>) -> Option<ElementKind> {
        mapped.and_then(|m| m.read).map(|s| s.kind)
    }

    #[test]
    fn temporal_types_map_as_pyarrow_maps_them() {
        let ts = |unit| ElementKind::Primitive(ArrowType::Timestamp(unit, None));
        for (dtype, expected) in [
            ("<M8[ns]", Some(ts(TimeUnit::Nanosecond))),
            (">M8[ms]", Some(ts(TimeUnit::Millisecond))),
            ("<M8[us]", Some(ts(TimeUnit::Microsecond))),
            ("<M8[s]", Some(ts(TimeUnit::Second))),
            ("<M8[D]", Some(ElementKind::Primitive(ArrowType::Date32))),
            (
                "<m8[s]",
                Some(ElementKind::Primitive(ArrowType::Duration(
                    TimeUnit::Second,
                ))),
            ),
            ("<m8[D]", None),
            ("<M8[h]", None),
            ("<M8[M]", None),
            ("<M8[10s]", None),
            ("<M8", None),
        ] {
            let mapped = v2("a", dtype, &json!(null), &limits()).unwrap();
            assert_eq!(kind(mapped), expected, "{dtype}");
        }
        assert!(v2("a", "<i8", &json!(0), &limits()).unwrap().is_none());
        let v3_type = json!({"name": "numpy.datetime64",
                             "configuration": {"unit": "h", "scale_factor": 1}});
        let mapped = v3("a", &v3_type, &json!(NAT), &limits()).unwrap().unwrap();
        assert_eq!(mapped.name, "numpy.datetime64[h]");
        assert!(mapped.read.is_none());
        let v3_type = json!({"name": "numpy.timedelta64",
                             "configuration": {"unit": "ns", "scale_factor": 1}});
        let mapped = v3("a", &v3_type, &json!("NaT"), &limits())
            .unwrap()
            .unwrap();
        let storage = mapped.read.unwrap();
        assert_eq!(storage.fill_value, json!(NAT));
        assert_eq!(storage.data_type, json!("int64"));
        let e = v3("a", &v3_type, &json!(1.5), &limits()).err().unwrap();
        assert!(e.to_string().contains("not an integer or \"NaT\""), "{e}");
    }

    #[test]
    fn byte_strings_take_numpy_fill_values() {
        let storage = v2("a", "|S3", &json!("eno="), &limits())
            .unwrap()
            .unwrap()
            .read
            .unwrap();
        assert_eq!(storage.kind, ElementKind::Bytes { length_bytes: 3 });
        assert_eq!(storage.fill_value, json!("enoA"));
        assert_eq!(storage.data_type, json!("|V3"));
        let storage = v2("a", "|S2", &json!(null), &limits())
            .unwrap()
            .unwrap()
            .read
            .unwrap();
        assert_eq!(storage.fill_value, json!("AAA="));
        let v3_type = json!({"name": "null_terminated_bytes",
                             "configuration": {"length_bytes": 4}});
        let storage = v3("a", &v3_type, &json!(""), &limits())
            .unwrap()
            .unwrap()
            .read
            .unwrap();
        assert_eq!(storage.data_type, json!("r32"));
        assert_eq!(storage.fill_value, json!("AAAAAA=="));
        for (fill, rule) in [
            (json!("enoz"), "more than the 2 of an element"),
            (json!("!!"), "is not base64"),
            (json!(7), "is not a base64 string"),
        ] {
            let e = v2("a", "|S2", &fill, &limits()).err().unwrap();
            assert!(e.to_string().contains(rule), "{fill}: {e}");
        }
        let zero = json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 0}});
        assert!(v3("a", &zero, &json!(""), &limits()).is_err());
        // An element beyond the chunk limit is refused before its fill is built.
        let e = v2("a", "|S4294967296", &json!(null), &limits())
            .err()
            .unwrap();
        assert!(e.to_string().contains("max_chunk_bytes"), "{e}");
    }
}

//! The CF conventions in an array's attributes, as xarray reads them by default (`decode_cf`):
//! a time (`units: "hours since 2000-01-01"`) becomes a `Timestamp`, xarray's timedelta
//! (`dtype: "timedelta64[s]"` beside `units: "seconds"`) a `Duration`, and packed numbers
//! (`scale_factor`, `add_offset`) `Float64`, with the values `_FillValue` and `missing_value`
//! name read as NULL. `scan/cf.rs` applies what this reads.
//!
//! Times use the proleptic Gregorian calendar (`standard`, `gregorian`,
//! `proleptic_gregorian`, or none given); times in another calendar (`noleap`, `360_day`, …),
//! which no Arrow type holds, keep their stored numbers. A time is held in nanoseconds when its
//! unit is nanoseconds, in microseconds otherwise: the ±292,000 years of microseconds hold the
//! dates of climate runs that xarray's nanoseconds (1677–2262) cannot.

use arrow::datatypes::{DataType as ArrowType, TimeUnit};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::{Map, Value};

use super::ElementKind;

/// How an array's stored numbers are decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct CfDecoding {
    /// What the numbers become.
    pub kind: CfKind,
    /// Stored values read as NULL (`_FillValue`, `missing_value`), compared before decoding.
    pub missing: Vec<f64>,
}

/// What CF numbers become.
#[derive(Debug, Clone, PartialEq)]
pub enum CfKind {
    /// `value × step + epoch`, in `unit`s since 1970-01-01.
    Time {
        /// One stored unit, in `unit`s.
        step: i64,
        /// The reference date, in `unit`s since 1970-01-01.
        epoch: i64,
        /// The Arrow unit.
        unit: TimeUnit,
    },
    /// `value × step`, in `unit`s.
    Duration {
        /// One stored unit, in `unit`s.
        step: i64,
        /// The Arrow unit.
        unit: TimeUnit,
    },
    /// `value × scale + offset`, in `f64` (xarray's type for JSON's numbers).
    Scale {
        /// `scale_factor` (1 when absent).
        scale: f64,
        /// `add_offset` (0 when absent).
        offset: f64,
    },
}

impl CfDecoding {
    /// The Arrow type of the decoded values.
    pub fn arrow_type(&self) -> ArrowType {
        match &self.kind {
            CfKind::Time { unit, .. } => ArrowType::Timestamp(*unit, None),
            CfKind::Duration { unit, .. } => ArrowType::Duration(*unit),
            CfKind::Scale { .. } => ArrowType::Float64,
        }
    }
}

/// The decoding the attributes of an array of `kind` call for, if any. `v2_fill` is a Zarr V2
/// array's `fill_value` when xarray wrote the array (it keeps `_FillValue` there).
pub(super) fn decoding(
    kind: Option<&ElementKind>,
    attributes: &Map<String, Value>,
    v2_fill: Option<&Value>,
) -> Option<CfDecoding> {
    let ElementKind::Primitive(stored) = kind? else {
        return None;
    };
    if !(stored.is_integer() || stored.is_floating()) {
        return None;
    }
    let attribute = |key: &str| attributes.get(key).and_then(number);
    let units = attributes.get("units").and_then(Value::as_str);
    let kind = if let Some((unit, epoch)) = units.and_then(|u| u.split_once(" since ")) {
        let calendar = attributes.get("calendar").and_then(Value::as_str);
        let gregorian = matches!(
            calendar.map(str::to_ascii_lowercase).as_deref(),
            None | Some("standard" | "gregorian" | "proleptic_gregorian")
        );
        if !gregorian {
            return None;
        }
        let step_ns = nanoseconds(unit.trim())?;
        let unit = if step_ns == 1 {
            TimeUnit::Nanosecond
        } else {
            TimeUnit::Microsecond
        };
        let epoch = reference_date(epoch.trim())?;
        let epoch = match unit {
            TimeUnit::Nanosecond => epoch.and_utc().timestamp_nanos_opt()?,
            _ => epoch.and_utc().timestamp_micros(),
        };
        let step = step_ns / per(unit);
        CfKind::Time { step, epoch, unit }
    } else if let Some(dtype) = attributes.get("dtype").and_then(Value::as_str) {
        // xarray writes a timedelta's NumPy dtype beside its units.
        let held = dtype
            .strip_prefix("timedelta64[")
            .and_then(|u| u.strip_suffix(']'))?;
        let held = match held {
            "s" => TimeUnit::Second,
            "ms" => TimeUnit::Millisecond,
            "us" => TimeUnit::Microsecond,
            "ns" => TimeUnit::Nanosecond,
            _ => return None,
        };
        let step_ns = nanoseconds(units?.trim())?;
        // The held unit, or the coarsest finer one in which the stored unit is whole.
        let unit = if step_ns < per(held) {
            [
                TimeUnit::Millisecond,
                TimeUnit::Microsecond,
                TimeUnit::Nanosecond,
            ]
            .into_iter()
            .find(|u| step_ns % per(*u) == 0)?
        } else {
            held
        };
        CfKind::Duration {
            step: step_ns / per(unit),
            unit,
        }
    } else {
        let scale = attribute("scale_factor");
        let offset = attribute("add_offset");
        if scale.is_none() && offset.is_none() {
            return None;
        }
        CfKind::Scale {
            scale: scale.unwrap_or(1.0),
            offset: offset.unwrap_or(0.0),
        }
    };
    let mut missing: Vec<f64> = Vec::new();
    let fill = attributes.get("_FillValue").or(v2_fill);
    for value in fill.into_iter().chain(attributes.get("missing_value")) {
        match value {
            Value::Array(values) => missing.extend(values.iter().filter_map(number)),
            value => missing.extend(number(value)),
        }
    }
    missing.retain(|m| !m.is_nan());
    Some(CfDecoding { kind, missing })
}

/// A number as CF attributes hold it: a JSON number, `"NaN"`, or (xarray's `_FillValue` of a
/// V3 float array) the base64 of its little-endian bytes.
fn number(value: &Value) -> Option<f64> {
    use base64::Engine;
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) => {
            let bytes = base64::prelude::BASE64_STANDARD.decode(s).ok()?;
            match bytes.len() {
                8 => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
                4 => Some(f64::from(f32::from_le_bytes(bytes.try_into().ok()?))),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Nanoseconds in one of `unit` (CF's and UDUNITS' names xarray reads).
fn nanoseconds(unit: &str) -> Option<i64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "days" | "day" | "d" => 86_400_000_000_000,
        "hours" | "hour" | "hr" | "hrs" | "h" => 3_600_000_000_000,
        "minutes" | "minute" | "min" | "mins" => 60_000_000_000,
        "seconds" | "second" | "sec" | "secs" | "s" => 1_000_000_000,
        "milliseconds" | "millisecond" | "msec" | "msecs" | "ms" => 1_000_000,
        "microseconds" | "microsecond" | "usec" | "usecs" | "us" => 1_000,
        "nanoseconds" | "nanosecond" | "nsec" | "nsecs" | "ns" => 1,
        _ => return None,
    })
}

fn per(unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// A CF reference date as UTC: `1970-01-01`, `1900-1-1 00:00:00`, `2000-01-01T12:00:00.5Z`,
/// `1850-01-01 00:00:00 UTC`, `2000-01-01 00:00 +05:30`.
fn reference_date(text: &str) -> Option<NaiveDateTime> {
    let text = text.trim();
    let (date, rest) = match text.find(['T', ' ']) {
        Some(at) => (&text[..at], text[at + 1..].trim()),
        None => (text, ""),
    };
    let mut parts = date.split('-');
    let year: i32 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    // The time of day, then a zone: `Z`, `UTC`, `+hh:mm`, `-hh`, `+hhmm`.
    let (time, zone) = match rest.find(['Z', 'U', '+', ' ']) {
        Some(at) => (rest[..at].trim(), rest[at..].trim()),
        None => match rest.rfind('-') {
            Some(at) if rest.contains(':') && at > 0 => (rest[..at].trim(), &rest[at..]),
            _ => (rest, ""),
        },
    };
    let time = if time.is_empty() {
        NaiveTime::MIN
    } else {
        let mut hms = time.split(':');
        let hour: u32 = hms.next()?.parse().ok()?;
        let minute: u32 = hms.next().map_or(Some(0), |m| m.parse().ok())?;
        let seconds: f64 = hms.next().map_or(Some(0.0), |s| s.parse().ok())?;
        if hms.next().is_some() || !(0.0..60.0).contains(&seconds) {
            return None;
        }
        let whole = seconds.trunc() as u32;
        let nanos = ((seconds - seconds.trunc()) * 1e9).round() as u32;
        NaiveTime::from_hms_nano_opt(hour, minute, whole, nanos.min(999_999_999))?
    };
    let local = date.and_time(time);
    let offset_minutes = zone_minutes(zone)?;
    local.checked_sub_signed(chrono::TimeDelta::minutes(offset_minutes))
}

/// A zone's offset from UTC in minutes.
fn zone_minutes(zone: &str) -> Option<i64> {
    let zone = zone.trim();
    if zone.is_empty() || zone == "Z" || zone.eq_ignore_ascii_case("UTC") {
        return Some(0);
    }
    let (sign, digits) = match zone.split_at_checked(1)? {
        ("+", rest) => (1, rest),
        ("-", rest) => (-1, rest),
        _ => return None,
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) => (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?),
        None if digits.len() > 2 => (
            digits[..digits.len() - 2].parse().ok()?,
            digits[digits.len() - 2..].parse().ok()?,
        ),
        None => (digits.parse().ok()?, 0),
    };
    Some(sign * (hours * 60 + minutes))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn attrs(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn int64() -> ElementKind {
        ElementKind::Primitive(ArrowType::Int64)
    }

    #[test]
    fn reference_dates_as_cf_writes_them() {
        let at = |s: &str| reference_date(s).map(|d| d.and_utc().timestamp_micros());
        assert_eq!(at("1970-01-01"), Some(0));
        assert_eq!(at("1970-1-2"), Some(86_400_000_000));
        assert_eq!(at("1970-01-01 00:00:00"), Some(0));
        assert_eq!(at("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(at("1970-01-01 01:00:00 UTC"), Some(3_600_000_000));
        assert_eq!(at("1970-01-01 05:30 +05:30"), Some(0));
        assert_eq!(at("1970-01-01 00:00:00 -01:00"), Some(3_600_000_000));
        assert_eq!(at("1970-01-01T00:00:00-0100"), Some(3_600_000_000));
        assert_eq!(at("1900-01-01 00:00:0.0"), Some(-2_208_988_800_000_000));
        assert_eq!(at("0001-01-01"), Some(-62_135_596_800_000_000));
        for bad in [
            "",
            "yesterday",
            "2000-13-01",
            "2000-01-01 25:00",
            "2000-01-01 +5x",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn attributes_choose_the_decoding() {
        let time = decoding(
            Some(&int64()),
            &attrs(json!({"units": "hours since 2020-01-01 00:00:00",
                          "calendar": "proleptic_gregorian"})),
            None,
        )
        .unwrap();
        assert_eq!(
            time.kind,
            CfKind::Time {
                step: 3_600_000_000,
                epoch: 1_577_836_800_000_000,
                unit: TimeUnit::Microsecond
            }
        );
        let ns = decoding(
            Some(&int64()),
            &attrs(json!({"units": "ns since 1970-01-01"})),
            None,
        );
        assert_eq!(
            ns.unwrap().arrow_type(),
            ArrowType::Timestamp(TimeUnit::Nanosecond, None)
        );
        // No Arrow type holds a 360-day year: the numbers stay.
        let noleap = attrs(json!({"units": "days since 2000-01-01", "calendar": "360_day"}));
        assert_eq!(decoding(Some(&int64()), &noleap, None), None);
        let months = attrs(json!({"units": "months since 2000-01-01"}));
        assert_eq!(decoding(Some(&int64()), &months, None), None);

        let delta = decoding(
            Some(&int64()),
            &attrs(json!({"units": "seconds", "dtype": "timedelta64[s]"})),
            None,
        );
        assert_eq!(
            delta.unwrap().kind,
            CfKind::Duration {
                step: 1,
                unit: TimeUnit::Second
            }
        );
        let fine = decoding(
            Some(&int64()),
            &attrs(json!({"units": "milliseconds", "dtype": "timedelta64[s]"})),
            None,
        );
        assert_eq!(
            fine.unwrap().kind,
            CfKind::Duration {
                step: 1,
                unit: TimeUnit::Millisecond
            }
        );

        let packed = decoding(
            Some(&ElementKind::Primitive(ArrowType::Int16)),
            &attrs(json!({"scale_factor": 0.1, "add_offset": 10, "missing_value": [-1, -2]})),
            Some(&json!(-999)),
        )
        .unwrap();
        assert_eq!(
            packed.kind,
            CfKind::Scale {
                scale: 0.1,
                offset: 10.0
            }
        );
        assert_eq!(packed.missing, vec![-999.0, -1.0, -2.0]);
        // xarray writes a V3 float's _FillValue as the base64 of its little-endian bytes.
        let based = decoding(
            Some(&ElementKind::Primitive(ArrowType::Float32)),
            &attrs(json!({"scale_factor": 2, "_FillValue": "AAAAAAAA+H8=",
                          "missing_value": "AAAgQQ=="})),
            None,
        )
        .unwrap();
        assert_eq!(based.missing, vec![10.0]);
        assert_eq!(packed.arrow_type(), ArrowType::Float64);
        // Strings and plain numbers are left as they are.
        let labels = decoding(
            Some(&ElementKind::String),
            &attrs(json!({"units": "days since 2000-01-01"})),
            None,
        );
        assert_eq!(labels, None);
        assert_eq!(
            decoding(Some(&int64()), &attrs(json!({"units": "m"})), None),
            None
        );
    }
}

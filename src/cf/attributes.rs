//! The CF conventions in an array's attributes, as xarray reads them by default (`decode_cf`):
//! a time (`units: "hours since 2000-01-01"`) becomes a `Timestamp`, xarray's timedelta
//! (`dtype: "timedelta64[s]"` beside `units: "seconds"`) a `Duration`, and packed numbers
//! (`scale_factor`, `add_offset`) `Float64`, with the values `_FillValue` and `missing_value`
//! name read as NULL; bytes with `_Encoding: "utf-8"` (xarray's strings written as `S`) are
//! strings. `decode.rs` applies what this reads; the units are `units.rs`'.
//!
//! Times use the proleptic Gregorian calendar (`standard`, `gregorian`,
//! `proleptic_gregorian`, or none given); times in another calendar (`noleap`, `360_day`, …),
//! which no Arrow type holds, keep their stored numbers. A time is held in nanoseconds when its
//! unit is nanoseconds, in microseconds otherwise: the ±292,000 years of microseconds hold the
//! dates of climate runs that xarray's nanoseconds (1677–2262) cannot.

use arrow::datatypes::{DataType as ArrowType, TimeUnit};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::{Map, Value};

use super::units::{self, nanoseconds, per};

/// How an array's stored numbers are decoded, in xarray's order: `_Unsigned`, then the
/// missing values, then `scale_factor`/`add_offset`, then the time.
#[derive(Debug, Clone, PartialEq)]
pub struct CfDecoding {
    /// What the numbers become.
    pub kind: CfKind,
    /// The stored type as read: the stored type, or its twin of the other signedness under
    /// `_Unsigned`.
    pub stored: ArrowType,
    /// `_Unsigned: "true"` on signed integers, or `"false"` on unsigned ones: their bits are
    /// read as `stored`, the type of the same width and the other signedness.
    pub reinterpret: bool,
    /// Values read as NULL (`_FillValue`, `missing_value`), compared after `_Unsigned`; NaN
    /// matches NaN. Floats are compared with these.
    pub missing: Vec<f64>,
    /// The same values that are integers, exactly: integer arrays are compared with these, in
    /// their own type as xarray compares them (through `f64`, 2^53 + 1 matched 2^53 too).
    pub missing_integers: Vec<i128>,
    /// `scale_factor` and `add_offset` (1 and 0 when one is absent), applied in `f64`.
    pub scale: Option<(f64, f64)>,
}

/// What CF numbers become.
#[derive(Debug, Clone, PartialEq)]
pub enum CfKind {
    /// The stored numbers (of the other signedness under `_Unsigned`), the missing ones NULL.
    Masked,
    /// `value × scale + offset` as `Float64`.
    Scaled,
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
}

impl CfDecoding {
    /// The Arrow type of the decoded values.
    pub fn arrow_type(&self) -> ArrowType {
        match &self.kind {
            CfKind::Masked => self.stored.clone(),
            CfKind::Scaled => ArrowType::Float64,
            CfKind::Time { unit, .. } => ArrowType::Timestamp(*unit, None),
            CfKind::Duration { unit, .. } => ArrowType::Duration(*unit),
        }
    }
}

/// The decoding the attributes of an array of fixed-size elements of Arrow type `stored` call
/// for, if any. `v2_fill` is a Zarr V2 array's `fill_value` when xarray wrote the array (xarray
/// reads it as the `_FillValue`).
pub(crate) fn decoding(
    stored: &ArrowType,
    attributes: &Map<String, Value>,
    v2_fill: Option<&Value>,
) -> Option<CfDecoding> {
    if !(stored.is_integer() || stored.is_floating()) {
        return None;
    }
    // xarray unwraps one-element lists (netCDF attributes are arrays).
    let attribute = |key: &str| attributes.get(key).and_then(attribute_number);
    // netCDF's flag for bytes of the other signedness than their type (netCDF-3 has no
    // unsigned types; xarray writes "false" for signed data it stores unsigned). xarray
    // applies only these two strings, as written; so does this.
    let unsigned_attribute = match attributes.get("_Unsigned").and_then(Value::as_str) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    let twin = match (stored, unsigned_attribute) {
        (ArrowType::Int8, Some(true)) => Some(ArrowType::UInt8),
        (ArrowType::Int16, Some(true)) => Some(ArrowType::UInt16),
        (ArrowType::Int32, Some(true)) => Some(ArrowType::UInt32),
        (ArrowType::Int64, Some(true)) => Some(ArrowType::UInt64),
        (ArrowType::UInt8, Some(false)) => Some(ArrowType::Int8),
        (ArrowType::UInt16, Some(false)) => Some(ArrowType::Int16),
        (ArrowType::UInt32, Some(false)) => Some(ArrowType::Int32),
        (ArrowType::UInt64, Some(false)) => Some(ArrowType::Int64),
        _ => None,
    };
    let reinterpret = twin.is_some();
    let read_as = twin.unwrap_or_else(|| stored.clone());
    let mut missing: Vec<f64> = Vec::new();
    let mut missing_integers: Vec<i128> = Vec::new();
    let fill = v2_fill.or_else(|| attributes.get("_FillValue"));
    for value in fill.into_iter().chain(attributes.get("missing_value")) {
        let values = match value {
            Value::Array(values) => values.as_slice(),
            value => std::slice::from_ref(value),
        };
        missing.extend(values.iter().filter_map(number));
        missing_integers.extend(values.iter().filter_map(integer));
    }
    if reinterpret {
        // xarray casts the fill to the read type: the same bits, so -1 is 255 for int8 read
        // unsigned, and 255 is -1 for uint8 read signed.
        let bits = stored.primitive_width().map_or(64, |w| w * 8) as i32;
        for m in &mut missing {
            if read_as.is_unsigned_integer() && *m < 0.0 {
                *m += 2f64.powi(bits);
            } else if read_as.is_signed_integer() && *m >= 2f64.powi(bits - 1) {
                *m -= 2f64.powi(bits);
            }
        }
        let span = 1i128 << bits;
        for m in &mut missing_integers {
            if read_as.is_unsigned_integer() && *m < 0 {
                *m += span;
            } else if read_as.is_signed_integer() && *m >= span / 2 {
                *m -= span;
            }
        }
    }
    let scale_factor = attribute("scale_factor");
    let add_offset = attribute("add_offset");
    let scale = (scale_factor.is_some() || add_offset.is_some())
        .then(|| (scale_factor.unwrap_or(1.0), add_offset.unwrap_or(0.0)));
    let fractional = scale.is_some() || stored.is_floating();
    let units = attributes.get("units").and_then(Value::as_str);
    let dtype = attributes.get("dtype").and_then(Value::as_str);
    let kind = if let Some(time) = units.and_then(|u| time(u, attributes)) {
        time
    } else if let Some(delta) = dtype.and_then(|d| duration(d, units?, fractional)) {
        delta
    } else if scale.is_some() {
        CfKind::Scaled
    } else if reinterpret || !missing.is_empty() {
        CfKind::Masked
    } else {
        return None;
    };
    Some(CfDecoding {
        kind,
        stored: read_as,
        reinterpret,
        missing,
        missing_integers,
        scale,
    })
}

/// A numeric attribute as xarray reads it: a number, or a one-element list of one (netCDF
/// attributes are arrays).
fn attribute_number(value: &Value) -> Option<f64> {
    match value {
        Value::Array(list) if list.len() == 1 => number(&list[0]),
        value => number(value),
    }
}

/// The packing attributes of an array of fixed-size elements of Arrow type `stored`, checked:
/// xarray refuses a `scale_factor` or `add_offset` that is not a number (its arithmetic fails),
/// and so does this, rather than leave the stored numbers to pass for decoded ones.
pub(crate) fn check_packing(
    stored: &ArrowType,
    attributes: &Map<String, Value>,
) -> Result<(), String> {
    if !(stored.is_integer() || stored.is_floating()) {
        return Ok(());
    }
    for key in ["scale_factor", "add_offset"] {
        match attributes.get(key) {
            Some(value) if attribute_number(value).is_none() => {
                let mut shown = value.to_string();
                shown.truncate(64);
                return Err(format!(
                    "{key} is {shown}, not a number (xarray refuses it too); decode_cf = false \
                     reads the stored numbers"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The text encoding of bytes, as their `_Encoding` attribute names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEncoding {
    /// UTF-8.
    Utf8,
    /// ASCII (UTF-8 of code points below 128 only: another byte is an error, as in xarray).
    Ascii,
}

/// Which text an array's elements are by their attributes, when they are `bytes` (fixed or
/// variable-length): xarray writes strings as `S` bytes with `_Encoding: "utf-8"` when their
/// encoding asks for bytes (a dataset opened from netCDF keeps `dtype: S1`), and decodes them
/// back to strings. Other encodings stay bytes.
pub(crate) fn text_encoding(bytes: bool, attributes: &Map<String, Value>) -> Option<TextEncoding> {
    let encoding = attributes.get("_Encoding").and_then(Value::as_str);
    let encoding = encoding.map(|e| e.to_ascii_lowercase().replace(['-', '_'], ""));
    match encoding.as_deref() {
        Some("utf8") if bytes => Some(TextEncoding::Utf8),
        Some("ascii" | "usascii") if bytes => Some(TextEncoding::Ascii),
        _ => None,
    }
}

/// `units: "<unit> since <date>"` in a calendar Arrow's timestamps hold: the proleptic
/// Gregorian one, or the standard one (Julian before 1582-10-15) from a reference date after
/// the reform, which is where xarray decodes with pandas rather than `cftime`.
fn time(units: &str, attributes: &Map<String, Value>) -> Option<CfKind> {
    let (unit, epoch) = units.split_once(" since ")?;
    let calendar = attributes.get("calendar").and_then(Value::as_str);
    let calendar = calendar.map(str::to_ascii_lowercase);
    let proleptic = match calendar.as_deref() {
        Some("proleptic_gregorian") => true,
        None | Some("standard" | "gregorian") => false,
        _ => return None,
    };
    let step_ns = nanoseconds(unit.trim())?;
    let unit = if step_ns == 1 {
        TimeUnit::Nanosecond
    } else {
        TimeUnit::Microsecond
    };
    let epoch = reference_date(epoch.trim())?;
    let reform = NaiveDate::from_ymd_opt(1582, 10, 15)?.and_time(NaiveTime::MIN);
    if !proleptic && epoch < reform {
        return None;
    }
    let epoch = match unit {
        TimeUnit::Nanosecond => epoch.and_utc().timestamp_nanos_opt()?,
        _ => epoch.and_utc().timestamp_micros(),
    };
    Some(CfKind::Time {
        step: step_ns / per(unit),
        epoch,
        unit,
    })
}

/// xarray's timedelta: `dtype: "timedelta64[s]"` beside `units`. Held in that unit, or in a
/// finer one where the stored unit is not whole in it, or (`fractional` numbers) where a
/// fraction would be lost: microseconds.
fn duration(dtype: &str, units: &str, fractional: bool) -> Option<CfKind> {
    let held = dtype
        .strip_prefix("timedelta64[")
        .and_then(|u| u.strip_suffix(']'))?;
    let held = units::by_numpy(held)?.arrow?;
    let held = if fractional && per(held) > per(TimeUnit::Microsecond) {
        TimeUnit::Microsecond
    } else {
        held
    };
    let step_ns = nanoseconds(units.trim())?;
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
    Some(CfKind::Duration {
        step: step_ns / per(unit),
        unit,
    })
}

/// A number as CF attributes hold it: a JSON number, `"NaN"`, or (xarray's `_FillValue` of a
/// V3 float array) the base64 of its little-endian bytes.
fn number(value: &Value) -> Option<f64> {
    use base64::Engine;
    match value {
        Value::Number(n) => n.as_f64(),
        // NumPy's arithmetic: true is 1 (xarray masks 1 under `_FillValue: true`).
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) if s == "Infinity" => Some(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Some(f64::NEG_INFINITY),
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

/// A number of CF attributes that is an integer, exactly: JSON integers to ±2^64, and floats
/// (also base64 ones) with no fraction. A JSON integer is not read through `f64`, which holds
/// integers exactly only to 2^53.
fn integer(value: &Value) -> Option<i128> {
    match value {
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Some(i128::from(i)),
            (_, Some(u)) => Some(i128::from(u)),
            _ => n.as_f64().and_then(float_integer),
        },
        Value::Bool(b) => Some(i128::from(*b)),
        other => number(other).and_then(float_integer),
    }
}

/// `f` as an integer when it is one (and within ±2^100, beyond every integer type).
fn float_integer(f: f64) -> Option<i128> {
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 2f64.powi(100)).then_some(f as i128)
}

/// A CF reference date as UTC: `1970-01-01`, `1900-1-1 00:00:00`, `2000-01-01T12:00:00.5Z`,
/// `1850-01-01 00:00:00 UTC` (or `GMT`), `2000-01-01 00:00 +05:30`, `2000-01`, `2000`.
fn reference_date(text: &str) -> Option<NaiveDateTime> {
    let text = text.trim();
    let (date, rest) = match text.find(['T', ' ']) {
        Some(at) => (&text[..at], text[at + 1..].trim()),
        None => (text, ""),
    };
    // `2000`, `2000-01` and `2000-1-1` (pandas reads the first two as the first day), and
    // `20000101`, which pandas reads too.
    let compact;
    let date = match date.as_bytes() {
        digits if digits.len() == 8 && digits.iter().all(u8::is_ascii_digit) => {
            compact = format!("{}-{}-{}", &date[..4], &date[4..6], &date[6..]);
            compact.as_str()
        }
        _ => date,
    };
    let mut parts = date.split('-');
    let year: i32 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next().map_or(Some(1), |m| m.parse().ok())?;
    let day: u32 = parts.next().map_or(Some(1), |d| d.parse().ok())?;
    if parts.next().is_some() {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    // The time of day, then a zone: `Z`, `UTC`, `+hh:mm`, `-hh`, `+hhmm`.
    let (time, zone) = match rest.find(['Z', 'U', 'G', '+', ' ']) {
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
    local.checked_sub_signed(chrono::TimeDelta::try_minutes(offset_minutes)?)
}

/// A zone's offset from UTC in minutes.
fn zone_minutes(zone: &str) -> Option<i64> {
    let zone = zone.trim();
    if zone.is_empty()
        || zone == "Z"
        || zone.eq_ignore_ascii_case("UTC")
        || zone.eq_ignore_ascii_case("GMT")
    {
        return Some(0);
    }
    // `UTC+1` and `GMT+1` read as POSIX zones, as pandas (dateutil) reads them for xarray:
    // the sign is reversed, so `00:00 UTC+1` is 01:00 UTC.
    let named = zone
        .get(..3)
        .filter(|z| z.eq_ignore_ascii_case("UTC") || z.eq_ignore_ascii_case("GMT"));
    if named.is_some() {
        return zone_minutes(&zone[3..]).map(|minutes| -minutes);
    }
    let (sign, digits) = match zone.split_at_checked(1)? {
        ("+", rest) => (1, rest),
        ("-", rest) => (-1, rest),
        _ => return None,
    };
    // Digits only (`+€` and `+１` are no offsets), split as `hh:mm`, `hhmm` or `hh`.
    let number = |text: &str| -> Option<i64> {
        let ascii = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        ascii.then(|| text.parse().ok()).flatten()
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) => (number(h)?, number(m)?),
        None if digits.len() > 2 => {
            let (h, m) = digits.split_at_checked(digits.len() - 2)?;
            (number(h)?, number(m)?)
        }
        None => (number(digits)?, 0),
    };
    // An offset a zone can have: less than a day, as Python's `timezone` (and so pandas, which
    // xarray reads reference dates with) requires. Beyond it the units are not a date.
    if hours >= 24 || minutes >= 60 {
        return None;
    }
    Some(sign * (hours * 60 + minutes))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn attrs(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    /// Zones of hostile units are no dates, never a panic: a character of several bytes
    /// where digits belong (it was sliced mid-character), an offset past any zone (chrono's
    /// `TimeDelta::minutes` panicked out of range), and one past `i64` when multiplied.
    #[test]
    fn hostile_zones_are_not_dates() {
        for text in [
            "2000-01-01 00:00:00 +€",
            "2000-01-01 00:00:00 +1€",
            "2000-01-01 00:00:00 +€00",
            "2000-01-01 00:00:00 +9999999999999:00",
            "2000-01-01 00:00:00 +99999999999999999",
            "2000-01-01 00:00:00 -9223372036854775807:00",
            "2000-01-01 00:00:00 +24:00",
            "2000-01-01 00:00:00 +05:60",
            "2000-01-01 00:00:00 UTC+€",
            "2000-01-01 00:00:00 +１",
        ] {
            assert_eq!(reference_date(text), None, "{text}");
        }
        let attrs = attrs(json!({"units": "days since 2000-01-01 00:00:00 +€"}));
        assert_eq!(time("days since 2000-01-01 00:00:00 +€", &attrs), None);
        let far = "days since 2000-01-01 00:00:00 +9999999999999:00";
        assert_eq!(time(far, &attrs), None);
        assert_eq!(
            reference_date("2000-01-01 00:00 +23:59"),
            NaiveDate::from_ymd_opt(1999, 12, 31).and_then(|d| d.and_hms_opt(0, 1, 0))
        );
    }

    #[test]
    fn integer_fills_are_read_exactly() {
        let big = attrs(
            json!({"_FillValue": 9007199254740993u64, "missing_value": [18446744073709551614u64, 2.0, 2.5]}),
        );
        let cf = decoding(&ArrowType::Int64, &big, None).unwrap();
        assert_eq!(
            cf.missing_integers,
            vec![9_007_199_254_740_993, 18_446_744_073_709_551_614, 2]
        );
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
        assert_eq!(at("1970-01"), Some(0));
        assert_eq!(at("1971"), Some(365 * 86_400_000_000));
        assert_eq!(at("1970-01-01 01:00:00 GMT"), Some(3_600_000_000));
        // As pandas reads them for xarray: 8 digits, and UTC+h as a POSIX zone (reversed).
        assert_eq!(at("19700102"), Some(86_400_000_000));
        assert_eq!(at("1970-01-01 00:00:00 UTC+1"), Some(3_600_000_000));
        assert_eq!(at("1970-01-01 00:00:00 GMT+1"), Some(3_600_000_000));
        assert_eq!(at("1970-01-01T00:00:00+01:00"), Some(-3_600_000_000));
        for bad in [
            "",
            "yesterday",
            "2000-13-01",
            "2000-01-01 25:00",
            "2000-01-01 +5x",
            "2000-01-01 UTC+",
            "200001011",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn bytes_are_text_by_their_encoding() {
        let text = |bytes: bool, encoding: &str| {
            let attributes = json!({"_Encoding": encoding});
            text_encoding(bytes, attributes.as_object().unwrap())
        };
        let utf8 = Some(TextEncoding::Utf8);
        assert!(text(true, "utf-8") == utf8 && text(true, "UTF8") == utf8);
        assert_eq!(text(true, "ascii"), Some(TextEncoding::Ascii));
        assert!(text(true, "latin-1").is_none() && text(true, "utf-16").is_none());
        assert!(text(false, "utf-8").is_none());
        assert!(text_encoding(true, &Map::new()).is_none());
    }

    #[test]
    fn attributes_choose_the_decoding() {
        let decode = |stored: ArrowType, attributes: Value, v2_fill: Option<Value>| {
            decoding(&stored, &attrs(attributes), v2_fill.as_ref())
        };
        let time = decode(
            ArrowType::Int64,
            json!({"units": "hours since 2020-01-01 00:00:00", "calendar": "proleptic_gregorian"}),
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
        let ns = decode(ArrowType::Int64, json!({"units": "ns since 1970-01"}), None).unwrap();
        assert_eq!(
            ns.arrow_type(),
            ArrowType::Timestamp(TimeUnit::Nanosecond, None)
        );
        // Calendars no Arrow type holds keep their numbers: a 360-day year, months, and the
        // standard calendar from a reference date before the Gregorian reform (Julian days,
        // which xarray leaves to cftime).
        for kept in [
            json!({"units": "days since 2000-01-01", "calendar": "360_day"}),
            json!({"units": "months since 2000-01-01"}),
            json!({"units": "days since 1-1-1"}),
            json!({"units": "days since 1500-01-01", "calendar": "Standard"}),
        ] {
            assert_eq!(decode(ArrowType::Int64, kept.clone(), None), None, "{kept}");
        }
        let proleptic = json!({"units": "days since 1-1-1", "calendar": "proleptic_gregorian"});
        assert!(decode(ArrowType::Int64, proleptic, None).is_some());

        // Timedeltas: the dtype's unit, finer where the stored unit or a fraction needs it.
        for (stored, attributes, step, unit) in [
            (
                ArrowType::Int64,
                json!({"units": "seconds", "dtype": "timedelta64[s]"}),
                1,
                TimeUnit::Second,
            ),
            (
                ArrowType::Int64,
                json!({"units": "milliseconds", "dtype": "timedelta64[s]"}),
                1,
                TimeUnit::Millisecond,
            ),
            (
                ArrowType::Float64,
                json!({"units": "seconds", "dtype": "timedelta64[s]"}),
                1_000_000,
                TimeUnit::Microsecond,
            ),
        ] {
            let got = decode(stored, attributes.clone(), None).unwrap();
            assert_eq!(got.kind, CfKind::Duration { step, unit }, "{attributes}");
        }

        // Packed numbers, with a dtype attribute that is not a timedelta and one-element lists.
        let packed = decode(
            ArrowType::Int16,
            json!({"scale_factor": [0.1], "add_offset": 10, "missing_value": [-1, -2],
                   "dtype": "int16"}),
            Some(json!(-999)),
        )
        .unwrap();
        assert_eq!(packed.kind, CfKind::Scaled);
        assert_eq!(packed.scale, Some((0.1, 10.0)));
        assert_eq!(packed.missing, vec![-999.0, -1.0, -2.0]);
        assert_eq!(packed.arrow_type(), ArrowType::Float64);
        // A V2 xarray array's fill_value is its _FillValue, over the attribute.
        let v2 = decode(
            ArrowType::Int16,
            json!({"_FillValue": -1, "scale_factor": 2.0}),
            Some(json!(0)),
        );
        assert_eq!(v2.unwrap().missing, vec![0.0]);
        // Packed times: scaled first.
        let packed_time = decode(
            ArrowType::Int16,
            json!({"units": "hours since 2000-01-01", "scale_factor": 0.5, "add_offset": 1.0}),
            None,
        )
        .unwrap();
        assert!(matches!(packed_time.kind, CfKind::Time { .. }));
        assert_eq!(packed_time.scale, Some((0.5, 1.0)));
        // _Unsigned: the fill in the unsigned type; alone it reads the numbers as unsigned.
        let unsigned = decode(
            ArrowType::Int8,
            json!({"_Unsigned": "true", "_FillValue": -1, "scale_factor": 0.5}),
            None,
        )
        .unwrap();
        assert!(unsigned.reinterpret);
        assert_eq!(unsigned.missing, vec![255.0]);
        let bare = decode(ArrowType::Int16, json!({"_Unsigned": "true"}), None).unwrap();
        assert_eq!(
            (bare.arrow_type(), bare.kind),
            (ArrowType::UInt16, CfKind::Masked)
        );
        // "false" on unsigned bytes reads them signed (xarray's twin), the fill too.
        let signed = decode(
            ArrowType::UInt8,
            json!({"_Unsigned": "false", "_FillValue": 255, "missing_value": -3}),
            None,
        )
        .unwrap();
        assert!(signed.reinterpret);
        assert_eq!(signed.arrow_type(), ArrowType::Int8);
        assert_eq!(signed.missing, vec![-1.0, -3.0]);
        // "false" on signed ones and "true" on unsigned ones change nothing; nor do other
        // spellings, which xarray ignores.
        for ignored in [json!(true), json!("TRUE"), json!("yes")] {
            let attributes = json!({"_Unsigned": ignored});
            assert_eq!(decode(ArrowType::Int8, attributes, None), None);
        }
        assert_eq!(
            decode(ArrowType::Int8, json!({"_Unsigned": "false"}), None),
            None
        );
        assert_eq!(
            decode(ArrowType::UInt8, json!({"_Unsigned": "true"}), None),
            None
        );
        // A _FillValue alone masks, keeping the type; xarray's base64 float fills are read.
        let masked = decode(
            ArrowType::Float32,
            json!({"_FillValue": "AAAAAAAA+H8=", "missing_value": "AAAgQQ=="}),
            None,
        )
        .unwrap();
        assert_eq!(masked.kind, CfKind::Masked);
        assert_eq!(masked.arrow_type(), ArrowType::Float32);
        assert!(masked.missing[0].is_nan() && masked.missing[1] == 10.0);
        // A scale that is not a number is refused by name; a boolean fill is 1 or 0.
        let packed = |scale: Value| attrs(json!({ "scale_factor": scale }));
        let int16 = ArrowType::Int16;
        let e = check_packing(&int16, &packed(json!("0.5"))).unwrap_err();
        assert!(
            e.starts_with("scale_factor is \"0.5\", not a number"),
            "{e}"
        );
        assert!(check_packing(&int16, &packed(json!([0.5]))).is_ok());
        assert!(check_packing(&ArrowType::Boolean, &packed(json!("x"))).is_ok());
        let flag = decode(ArrowType::Int8, json!({"_FillValue": true}), None).unwrap();
        assert_eq!(flag.missing, vec![1.0]);
        // Booleans and plain numbers are left as they are.
        let flags = decode(
            ArrowType::Boolean,
            json!({"units": "days since 2000-01-01"}),
            None,
        );
        assert_eq!(flags, None);
        assert_eq!(decode(ArrowType::Int64, json!({"units": "m"}), None), None);
    }
}

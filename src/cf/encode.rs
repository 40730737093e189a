//! The CF conventions written: the attributes a time, date or duration column gets (as xarray
//! writes them, in the units of `units.rs`), and a table's values encoded into the CF units
//! of an existing array (`INSERT INTO`), exactly or refused.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use arrow::error::ArrowError;
use serde_json::{Map, Value, json};

use super::attributes::{CfDecoding, CfKind};
use super::units::{self, DAYS};

/// The CF attributes of a column of Arrow type `t` stored as NumPy's `int64`, as xarray
/// writes them: a time or date counts `units: "<unit> since 1970-01-01"` in the proleptic
/// Gregorian calendar; a duration (a timedelta) its `units` beside NumPy's
/// `dtype: "timedelta64[<unit>]"` to decode to. `None` for other types.
pub(crate) fn attributes(t: &DataType) -> Option<Map<String, Value>> {
    let since_1970 = |unit: &units::Unit| {
        let mut cf = Map::new();
        let units = format!("{} since 1970-01-01", unit.cf_name());
        cf.insert("units".into(), json!(units));
        cf.insert("calendar".into(), json!("proleptic_gregorian"));
        cf
    };
    Some(match t {
        DataType::Timestamp(unit, _) => since_1970(units::of_arrow(*unit)),
        DataType::Date32 => since_1970(&DAYS),
        DataType::Date64 => since_1970(units::of_arrow(TimeUnit::Millisecond)),
        DataType::Duration(unit) => {
            let unit = units::of_arrow(*unit);
            let mut cf = Map::new();
            cf.insert("units".into(), json!(unit.cf_name()));
            let dtype = format!("timedelta64[{}]", unit.numpy);
            cf.insert("dtype".into(), json!(dtype));
            cf
        }
        _ => return None,
    })
}

/// Why values could not be encoded.
#[derive(Debug)]
pub(crate) enum EncodeError {
    /// The values (or their encoded numbers) cannot be cast to `to`.
    Cast {
        /// The type cast to.
        to: DataType,
        /// Arrow's error.
        error: ArrowError,
    },
    /// The values cannot be read as times or durations of the array's Arrow unit.
    Temporal(ArrowError),
    /// The value at `index` is not a whole number of the array's units since its reference
    /// date.
    NotWhole {
        /// The value's index in the values.
        index: usize,
    },
    /// The value at `index` is beyond what the stored type holds, or (packing, asked to be
    /// exact) the packed number does not give it back.
    DoesNotFit {
        /// The value's index in the values.
        index: usize,
    },
}

/// `values` as an existing array stores them under its CF decoding `cf` (the inverse of
/// `decode.rs`): times and durations as whole counts of its units since its reference date
/// (an inexact one is refused), packed numbers as `(value - offset) / scale` (rounded for
/// integers), in the stored type `cf.stored`.
pub(crate) fn encode(values: &ArrayRef, cf: &CfDecoding) -> Result<ArrayRef, EncodeError> {
    let cast_to = |values: &ArrayRef, to: &DataType| {
        cast(values, to).map_err(|error| EncodeError::Cast {
            to: to.clone(),
            error,
        })
    };
    let counts = match &cf.kind {
        CfKind::Time { step, epoch, unit } => Some(counts(
            values,
            &DataType::Timestamp(*unit, None),
            *step,
            *epoch,
        )?),
        CfKind::Duration { step, unit } => {
            Some(counts(values, &DataType::Duration(*unit), *step, 0)?)
        }
        CfKind::Scaled => {
            let (scale, offset) = cf.scale.unwrap_or((1.0, 0.0));
            let floats = cast_to(values, &DataType::Float64)?;
            let scaled: Float64Array = floats.as_primitive::<Float64Type>().unary(|v| {
                let s = (v - offset) / scale;
                if cf.stored.is_integer() { s.round() } else { s }
            });
            Some(Arc::new(scaled) as ArrayRef)
        }
        CfKind::Masked => None,
    };
    let encoded = match counts {
        Some(counts) => cast_to(&counts, &cf.stored)?,
        None => cast_to(values, &cf.stored)?,
    };
    // A value beyond the stored type's range is cast to NULL: refused, not lost.
    if encoded.null_count() != values.null_count() {
        let index = (0..values.len()).find(|&i| encoded.is_null(i) && values.is_valid(i));
        return Err(EncodeError::DoesNotFit {
            index: index.unwrap_or(0),
        });
    }
    Ok(encoded)
}

/// [`encode`], and for packed numbers only where unpacking gives every value back bit for bit
/// (a value packing would round, or that would unpack as missing, is refused by its index):
/// numbers read from a packed array and written again under the same packing always are.
pub(crate) fn encode_exactly(values: &ArrayRef, cf: &CfDecoding) -> Result<ArrayRef, EncodeError> {
    let encoded = encode(values, cf)?;
    if cf.kind != CfKind::Scaled {
        return Ok(encoded);
    }
    let first = |index: Option<usize>| EncodeError::DoesNotFit {
        index: index.unwrap_or(0),
    };
    let back = super::decode::decode(&encoded, cf).map_err(|f| first(f.index))?;
    let given = cast(values, &DataType::Float64).map_err(|error| EncodeError::Cast {
        to: DataType::Float64,
        error,
    })?;
    let (back, given) = (
        back.as_primitive::<Float64Type>(),
        given.as_primitive::<Float64Type>(),
    );
    let same = |i: usize| match (given.is_valid(i), back.is_valid(i)) {
        (true, true) => given.value(i).to_bits() == back.value(i).to_bits(),
        (given_valid, back_valid) => given_valid == back_valid,
    };
    match (0..given.len()).find(|&i| !same(i)) {
        Some(index) => Err(first(Some(index))),
        None => Ok(encoded),
    }
}

/// Times or durations as counts of `step` units (of the Arrow unit of `typed`) since `epoch`:
/// exact, or the index of the first that is not.
fn counts(
    values: &ArrayRef,
    typed: &DataType,
    step: i64,
    epoch: i64,
) -> Result<ArrayRef, EncodeError> {
    let typed = cast(values, typed).map_err(EncodeError::Temporal)?;
    let raw = cast(&typed, &DataType::Int64).map_err(EncodeError::Temporal)?;
    let raw = raw.as_primitive::<Int64Type>();
    let mut out = Vec::with_capacity(raw.len());
    for (index, v) in raw.iter().enumerate() {
        let Some(v) = v else {
            out.push(None);
            continue;
        };
        let count = v
            .checked_sub(epoch)
            .filter(|d| step != 0 && d % step == 0)
            .and_then(|d| d.checked_div(step));
        let Some(count) = count else {
            return Err(EncodeError::NotWhole { index });
        };
        out.push(Some(count));
    }
    Ok(Arc::new(Int64Array::from(out)))
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int16Array, TimestampSecondArray};

    use super::*;
    use crate::cf::attributes::decoding;
    use crate::cf::decode::decode;

    /// The attributes written for each temporal type decode back to the same instants, through
    /// the one table of units: a time's step in its decoded unit is the written unit's length.
    #[test]
    fn written_attributes_decode_to_the_written_unit() {
        let units = [
            TimeUnit::Second,
            TimeUnit::Millisecond,
            TimeUnit::Microsecond,
            TimeUnit::Nanosecond,
        ];
        let mut types: Vec<(DataType, i64)> = units
            .iter()
            .map(|&u| (DataType::Timestamp(u, None), units::per(u)))
            .collect();
        types.push((DataType::Date32, DAYS.nanoseconds));
        types.push((DataType::Date64, 1_000_000));
        for (t, nanoseconds) in types {
            let written = attributes(&t).unwrap();
            let cf = decoding(&DataType::Int64, &written, None).unwrap();
            let CfKind::Time { step, epoch, unit } = cf.kind else {
                panic!("{t}: {cf:?}");
            };
            assert_eq!(epoch, 0, "{t}");
            assert_eq!(step * units::per(unit), nanoseconds, "{t}");
        }
        for u in units {
            let written = attributes(&DataType::Duration(u)).unwrap();
            let cf = decoding(&DataType::Int64, &written, None).unwrap();
            assert_eq!(cf.kind, CfKind::Duration { step: 1, unit: u }, "{u:?}");
        }
        assert_eq!(attributes(&DataType::Int64), None);
        assert_eq!(attributes(&DataType::Utf8), None);
    }

    /// Encoding is decoding's inverse where the values are whole units; an inexact time is
    /// named by its index.
    #[test]
    fn encoding_inverts_decoding() {
        let written = attributes(&DataType::Timestamp(TimeUnit::Second, None)).unwrap();
        let mut hours = written.clone();
        hours.insert("units".into(), json!("hours since 2000-01-01"));
        let cf = decoding(&DataType::Int16, &hours, None).unwrap();
        let stored: ArrayRef = Arc::new(Int16Array::from(vec![Some(0), None, Some(-3)]));
        let decoded = decode(&stored, &cf).ok().unwrap();
        let encoded = encode(&decoded, &cf).unwrap();
        assert_eq!(encoded.as_ref(), stored.as_ref());
        let half_hour: ArrayRef = Arc::new(TimestampSecondArray::from(vec![946_686_600]));
        assert!(matches!(
            encode(&half_hour, &cf),
            Err(EncodeError::NotWhole { index: 0 })
        ));
        let mut packed = Map::new();
        packed.insert("scale_factor".into(), json!(0.5));
        packed.insert("add_offset".into(), json!(10.0));
        let cf = decoding(&DataType::Int16, &packed, None).unwrap();
        let stored: ArrayRef = Arc::new(Int16Array::from(vec![0, 7, -4]));
        let decoded = decode(&stored, &cf).ok().unwrap();
        assert_eq!(encode(&decoded, &cf).unwrap().as_ref(), stored.as_ref());
    }

    /// A value beyond the stored type is refused by its index, never cast to NULL; packing
    /// asked to be exact refuses a value it would round, and one that would unpack as missing.
    #[test]
    fn what_the_stored_type_cannot_hold_is_refused() {
        let mut packed = Map::new();
        packed.insert("scale_factor".into(), json!(0.5));
        packed.insert("add_offset".into(), json!(10.0));
        packed.insert("_FillValue".into(), json!(-32767));
        let cf = decoding(&DataType::Int16, &packed, None).unwrap();
        let values: ArrayRef = Arc::new(Float64Array::from(vec![Some(10.0), None, Some(1e9)]));
        assert!(matches!(
            encode(&values, &cf),
            Err(EncodeError::DoesNotFit { index: 2 })
        ));
        let values: ArrayRef = Arc::new(Float64Array::from(vec![Some(10.5), None, Some(10.25)]));
        assert!(encode(&values, &cf).is_ok(), "packing rounds, as xarray's");
        assert!(matches!(
            encode_exactly(&values, &cf),
            Err(EncodeError::DoesNotFit { index: 2 })
        ));
        let fill = 10.0 + 0.5 * -32767.0;
        let values: ArrayRef = Arc::new(Float64Array::from(vec![10.5, fill]));
        assert!(matches!(
            encode_exactly(&values, &cf),
            Err(EncodeError::DoesNotFit { index: 1 })
        ));
        let values: ArrayRef = Arc::new(Float64Array::from(vec![Some(10.5), None, Some(-5.0)]));
        let exact = encode_exactly(&values, &cf).unwrap();
        let exact = exact.as_primitive::<arrow::datatypes::Int16Type>();
        assert_eq!(exact.iter().collect::<Vec<_>>(), [Some(1), None, Some(-30)]);
    }
}

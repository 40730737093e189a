//! Stored numbers decoded as their CF attributes ask (`attributes.rs` reads them): `_Unsigned`
//! bits, times and timedeltas in whole units of their Arrow type, packed numbers as
//! `value × scale + offset` in `f64`, as xarray computes them. Values named missing are NULL,
//! and so are NaN times and int64 times at the smallest int64 (how xarray writes NaT).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, make_array};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};

use super::attributes::{CfDecoding, CfKind};
use super::units::NAT;

/// Why a batch could not be decoded: the element (in the batch), if one is at fault.
pub(crate) struct Failure {
    pub(crate) index: Option<usize>,
    pub(crate) message: String,
}

/// Validity of the integer array `raw`: not NULL in `nulls`, and not one of `missing`,
/// compared exactly in 64-bit integers of `raw`'s signedness.
fn integer_validity(
    raw: &ArrayRef,
    missing: &[i128],
    nulls: Option<&NullBuffer>,
) -> Result<BooleanBuffer, arrow::error::ArrowError> {
    let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
    Ok(if raw.data_type().is_unsigned_integer() {
        let values = cast(raw, &DataType::UInt64)?;
        let values = values.as_primitive::<UInt64Type>().values();
        BooleanBuffer::collect_bool(raw.len(), |i| {
            valid(i) && !missing.contains(&i128::from(values[i]))
        })
    } else {
        let values = cast(raw, &DataType::Int64)?;
        let values = values.as_primitive::<Int64Type>().values();
        BooleanBuffer::collect_bool(raw.len(), |i| {
            valid(i) && !missing.contains(&i128::from(values[i]))
        })
    })
}

/// `raw` (the stored numbers) decoded by `cf` into `cf.arrow_type()`, in xarray's order:
/// `_Unsigned`, the missing values, `scale_factor`/`add_offset`, the time.
pub(crate) fn decode(raw: &ArrayRef, cf: &CfDecoding) -> Result<ArrayRef, Failure> {
    let failure = |e: arrow::error::ArrowError| Failure {
        index: None,
        message: e.to_string(),
    };
    let raw = if cf.reinterpret {
        // The same bits, read as the type of their width and the other signedness.
        make_array(
            raw.to_data()
                .into_builder()
                .data_type(cf.stored.clone())
                .build()
                .map_err(failure)?,
        )
    } else {
        Arc::clone(raw)
    };
    let floats = cast(&raw, &DataType::Float64).map_err(failure)?;
    let floats = floats.as_primitive::<Float64Type>();
    // Valid: not NULL already, and not a value named missing (64 elements per word).
    let stored = floats.values();
    let nulls = floats.nulls();
    let nan_missing = cf.missing.iter().any(|m| m.is_nan());
    let valid = match (nulls, cf.missing.is_empty()) {
        (Some(nulls), true) => nulls.inner().clone(),
        (None, true) => BooleanBuffer::new_set(raw.len()),
        // Integers compared as integers: through f64 a fill of 2^53 + 1 masked 2^53 too.
        _ if raw.data_type().is_integer() => {
            integer_validity(&raw, &cf.missing_integers, nulls).map_err(failure)?
        }
        _ => BooleanBuffer::collect_bool(raw.len(), |i| {
            let v = stored[i];
            nulls.is_none_or(|n| n.is_valid(i))
                && !cf.missing.contains(&v)
                && !(nan_missing && v.is_nan())
        }),
    };
    let scaled = cf.scale.map(|(scale, offset)| {
        // arrow's `unary` writes through a trusted-length iterator: vectorised.
        let scaled: Float64Array = floats.unary(|v| v * scale + offset);
        scaled
    });
    let (step, epoch) = match cf.kind {
        CfKind::Masked => {
            let data = raw
                .to_data()
                .into_builder()
                .nulls(Some(NullBuffer::new(valid)));
            return Ok(make_array(data.build().map_err(failure)?));
        }
        CfKind::Scaled => {
            let scaled = scaled.unwrap_or_else(|| floats.clone());
            let decoded = Float64Array::new(scaled.values().clone(), Some(NullBuffer::new(valid)));
            return Ok(Arc::new(decoded));
        }
        CfKind::Time { step, epoch, .. } => (step, epoch),
        CfKind::Duration { step, .. } => (step, 0),
    };
    // The stored number as stored (an int64 printed through f64 would lose its digits), or
    // after its scale.
    let out_of_range = |index: usize| Failure {
        index: Some(index),
        message: format!(
            "a time of {} stored units is beyond what {} holds",
            match &scaled {
                Some(scaled) => scaled.value(index).to_string(),
                None => arrow::util::display::array_value_to_string(&raw, index)
                    .unwrap_or_else(|_| floats.value(index).to_string()),
            },
            cf.arrow_type()
        ),
    };
    let values: Vec<i64>;
    let valid = if scaled.is_some() || raw.data_type().is_floating() {
        let numbers = scaled.as_ref().unwrap_or(floats).values();
        // NaN, and (as pandas reads it) NaT's -2^63 stored in a float, are NULL.
        let valid = BooleanBuffer::collect_bool(raw.len(), |i| {
            valid.value(i) && !numbers[i].is_nan() && numbers[i] != NAT as f64
        });
        let mut out = Vec::with_capacity(raw.len());
        for (i, &v) in numbers.iter().enumerate() {
            // The offset from the reference date in whole units, then the reference date added
            // in integers, as xarray does: an f64 sum would lose nanoseconds from an epoch far
            // from 1970. Both bounds are powers of two, exact in f64.
            let offset = (v * step as f64).round();
            let t = (-(2f64.powi(63))..2f64.powi(63))
                .contains(&offset)
                .then(|| (offset as i64).checked_add(epoch))
                .flatten();
            match t {
                Some(t) => out.push(t),
                None if valid.value(i) => return Err(out_of_range(i)),
                None => out.push(0),
            }
        }
        values = out;
        valid
    } else {
        // Integers beyond i64 (uint64) become NULL here; a valid one is an error below.
        let ints = cast(&raw, &DataType::Int64).map_err(failure)?;
        let ints = ints.as_primitive::<Int64Type>();
        // xarray writes NaT as the smallest int64, with no _FillValue.
        let nat = *raw.data_type() == DataType::Int64;
        let mut out = Vec::with_capacity(raw.len());
        for (i, &v) in ints.values().iter().enumerate() {
            let t = ints
                .is_valid(i)
                .then(|| v.checked_mul(step).and_then(|t| t.checked_add(epoch)));
            match t.flatten() {
                Some(t) => out.push(t),
                None if valid.value(i) && !(nat && v == NAT) => return Err(out_of_range(i)),
                None => out.push(0),
            }
        }
        values = out;
        BooleanBuffer::collect_bool(raw.len(), |i| {
            valid.value(i) && !(nat && ints.values()[i] == NAT)
        })
    };
    let data = Int64Array::new(values.into(), Some(NullBuffer::new(valid)))
        .into_data()
        .into_builder()
        .data_type(cf.arrow_type())
        .build()
        .map_err(failure)?;
    Ok(make_array(data))
}

#[cfg(test)]
mod tests {
    use arrow::array::{Float32Array, Int8Array, Int16Array, UInt64Array};
    use arrow::datatypes::{
        DurationMillisecondType, TimeUnit, TimestampMicrosecondType, UInt8Type,
    };

    use super::*;

    fn cf(kind: CfKind, stored: DataType) -> CfDecoding {
        CfDecoding {
            kind,
            stored,
            reinterpret: false,
            missing: vec![],
            missing_integers: vec![],
            scale: None,
        }
    }

    /// `values` as the missing values of `cf`, for floats and (those that are integers) for
    /// integers, as the attributes' reading sets both.
    fn set_missing(cf: &mut CfDecoding, values: Vec<f64>) {
        cf.missing_integers = values
            .iter()
            .filter(|v| v.fract() == 0.0)
            .map(|&v| v as i128)
            .collect();
        cf.missing = values;
    }

    fn decoded(raw: ArrayRef, cf: &CfDecoding) -> ArrayRef {
        decode(&raw, cf).ok().unwrap()
    }

    const HOURS_FROM_DAY_1: CfKind = CfKind::Time {
        step: 3_600_000_000,
        epoch: 86_400_000_000,
        unit: TimeUnit::Microsecond,
    };

    #[test]
    fn times() {
        let mut hours = cf(HOURS_FROM_DAY_1, DataType::Int16);
        set_missing(&mut hours, vec![-999.0]);
        let out = decoded(Arc::new(Int16Array::from(vec![0, -24, 1, -999])), &hours);
        assert_eq!(
            out.data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        let out = out.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(&out.values()[..3], &[86_400_000_000, 0, 90_000_000_000]);
        assert!(out.is_null(3));

        // Floats round to the unit; NaN and NaT's -2^63 are NULL.
        let hours = cf(HOURS_FROM_DAY_1, DataType::Float32);
        let raw = Float32Array::from(vec![0.5, f32::NAN, -(2f32.powi(63))]);
        let out = decoded(Arc::new(raw), &hours);
        let out = out.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(out.value(0), 86_400_000_000 + 1_800_000_000);
        assert!(out.is_null(1) && out.is_null(2));

        // The reference date is added in integers: nanoseconds since 2000 keep every digit.
        let ns_since_2000 = cf(
            CfKind::Time {
                step: 1,
                epoch: 946_684_800_000_000_000,
                unit: TimeUnit::Nanosecond,
            },
            DataType::Float64,
        );
        let out = decoded(Arc::new(Float64Array::from(vec![1.0, 3.0])), &ns_since_2000);
        let out = out.as_primitive::<arrow::datatypes::TimestampNanosecondType>();
        assert_eq!(
            out.values().as_ref(),
            &[946_684_800_000_000_001, 946_684_800_000_000_003]
        );

        // Packed times are scaled first: 0.5 × value + 1 hours.
        let mut packed = cf(HOURS_FROM_DAY_1, DataType::Int16);
        packed.scale = Some((0.5, 1.0));
        let out = decoded(Arc::new(Int16Array::from(vec![0, 10])), &packed);
        let out = out.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(
            out.values().as_ref(),
            &[90_000_000_000, 86_400_000_000 + 6 * 3_600_000_000]
        );

        // Beyond i64: the element is named; a uint64 fill beyond i64 is only NULL.
        let mut big = cf(HOURS_FROM_DAY_1, DataType::UInt64);
        let e = decode(
            &(Arc::new(UInt64Array::from(vec![1, u64::MAX / 2])) as ArrayRef),
            &big,
        )
        .err()
        .unwrap();
        assert_eq!(e.index, Some(1));
        assert!(
            e.message
                .contains(&format!("a time of {} stored units", u64::MAX / 2))
                && e.message.contains("beyond what Timestamp(µs) holds"),
            "{}",
            e.message
        );
        big.missing = vec![u64::MAX as f64];
        big.missing_integers = vec![i128::from(u64::MAX)];
        let out = decoded(Arc::new(UInt64Array::from(vec![1, u64::MAX])), &big);
        assert!(out.is_valid(0) && out.is_null(1));
    }

    /// Integer fills are compared as integers, as xarray compares them: through `f64`, a fill
    /// of 2^53 + 1 masked its neighbour 2^53 (and a uint64 fill its neighbours near 2^64).
    #[test]
    fn integer_fills_mask_only_themselves() {
        let mut signed = cf(CfKind::Masked, DataType::Int64);
        let fill = (1i64 << 53) + 1;
        signed.missing = vec![fill as f64];
        signed.missing_integers = vec![i128::from(fill)];
        let values = vec![1i64 << 53, fill, fill + 1, -fill];
        let out = decoded(Arc::new(arrow::array::Int64Array::from(values)), &signed);
        let valid: Vec<bool> = (0..4).map(|i| out.is_valid(i)).collect();
        assert_eq!(valid, [true, false, true, true]);

        let mut unsigned = cf(CfKind::Masked, DataType::UInt64);
        unsigned.missing = vec![(u64::MAX - 1) as f64];
        unsigned.missing_integers = vec![i128::from(u64::MAX - 1)];
        let values = vec![u64::MAX, u64::MAX - 1, u64::MAX - 2, u64::MAX - 1024];
        let out = decoded(Arc::new(UInt64Array::from(values)), &unsigned);
        let valid: Vec<bool> = (0..4).map(|i| out.is_valid(i)).collect();
        assert_eq!(valid, [true, false, true, true]);
    }

    #[test]
    fn timedeltas_packed_numbers_unsigned_and_masks() {
        let seconds = cf(
            CfKind::Duration {
                step: 1000,
                unit: TimeUnit::Millisecond,
            },
            DataType::Int16,
        );
        let out = decoded(Arc::new(Int16Array::from(vec![-3, 7])), &seconds);
        assert_eq!(out.data_type(), &DataType::Duration(TimeUnit::Millisecond));
        let out = out.as_primitive::<DurationMillisecondType>();
        assert_eq!(out.values().as_ref(), &[-3000, 7000]);

        let mut packed = cf(CfKind::Scaled, DataType::Int16);
        packed.scale = Some((0.1, 273.15));
        set_missing(&mut packed, vec![-32767.0]);
        let out = decoded(Arc::new(Int16Array::from(vec![0, 15, -32767])), &packed);
        let out = out.as_primitive::<Float64Type>();
        assert_eq!(out.value(0), 273.15);
        assert_eq!(out.value(1), 15.0 * 0.1 + 273.15);
        assert!(out.is_null(2));

        // _Unsigned int8: -2 is 254; the fill -1 was made 255.
        let mut unsigned = cf(CfKind::Scaled, DataType::UInt8);
        unsigned.reinterpret = true;
        unsigned.scale = Some((0.5, 0.0));
        set_missing(&mut unsigned, vec![255.0]);
        let out = decoded(Arc::new(Int8Array::from(vec![0, -1, -2, 5])), &unsigned);
        let out = out.as_primitive::<Float64Type>();
        assert_eq!(
            (out.value(0), out.value(2), out.value(3)),
            (0.0, 127.0, 2.5)
        );
        assert!(out.is_null(1));
        unsigned.kind = CfKind::Masked;
        let out = decoded(Arc::new(Int8Array::from(vec![-1, -2])), &unsigned);
        let out = out.as_primitive::<UInt8Type>();
        assert!(out.is_null(0));
        assert_eq!(out.value(1), 254);

        // A NaN _FillValue makes NaN NULL; the type stays.
        let mut masked = cf(CfKind::Masked, DataType::Float32);
        set_missing(&mut masked, vec![f64::NAN, -9999.0]);
        let out = decoded(
            Arc::new(Float32Array::from(vec![1.5, f32::NAN, -9999.0])),
            &masked,
        );
        assert_eq!(out.data_type(), &DataType::Float32);
        assert!(out.is_valid(0) && out.is_null(1) && out.is_null(2));
    }
}

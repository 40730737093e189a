//! Stored numbers decoded as their CF attributes ask (`node/cf.rs` reads them): times and
//! timedeltas in whole units of their Arrow type, packed numbers as `value × scale + offset`
//! in `f64`, as xarray computes them. Values named missing are NULL, and so are NaN times and
//! int64 times at the smallest int64 (how xarray writes NaT).

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, make_array};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Float64Type, Int64Type};

use crate::node::cf::{CfDecoding, CfKind};

/// Why a batch could not be decoded: the element (in the batch), if one is at fault.
pub(crate) struct Failure {
    pub(crate) index: Option<usize>,
    pub(crate) message: String,
}

/// `raw` (the stored numbers) decoded by `cf` into `cf.arrow_type()`.
pub(crate) fn decode(raw: &ArrayRef, cf: &CfDecoding) -> Result<ArrayRef, Failure> {
    let exact = CastOptions {
        safe: false,
        ..Default::default()
    };
    let failure = |e: arrow::error::ArrowError| Failure {
        index: None,
        message: e.to_string(),
    };
    let floats = cast_with_options(raw, &DataType::Float64, &exact).map_err(failure)?;
    let floats = floats.as_primitive::<Float64Type>();
    // Valid: not NULL already, and not a value named missing (64 elements per word).
    let stored = floats.values();
    let nulls = floats.nulls();
    let valid = match (nulls, cf.missing.is_empty()) {
        (Some(nulls), true) => nulls.inner().clone(),
        (None, true) => BooleanBuffer::new_set(raw.len()),
        _ => BooleanBuffer::collect_bool(raw.len(), |i| {
            nulls.is_none_or(|n| n.is_valid(i)) && !cf.missing.contains(&stored[i])
        }),
    };
    let (step, epoch) = match cf.kind {
        CfKind::Scale { scale, offset } => {
            // arrow's `unary` writes through a trusted-length iterator: vectorised.
            let decoded: Float64Array = floats.unary(|v| v * scale + offset);
            let decoded = Float64Array::new(decoded.values().clone(), Some(NullBuffer::new(valid)));
            return Ok(std::sync::Arc::new(decoded));
        }
        CfKind::Time { step, epoch, .. } => (step, epoch),
        CfKind::Duration { step, .. } => (step, 0),
    };
    let out_of_range = |index: usize| Failure {
        index: Some(index),
        message: format!(
            "a time of {} stored units is beyond what {} holds",
            floats.value(index),
            cf.arrow_type()
        ),
    };
    let values: Vec<i64>;
    let valid = if raw.data_type().is_floating() {
        let valid =
            BooleanBuffer::collect_bool(raw.len(), |i| valid.value(i) && !stored[i].is_nan());
        let mut out = Vec::with_capacity(raw.len());
        for (i, &v) in stored.iter().enumerate() {
            let t = (v * step as f64).round() + epoch as f64;
            // Both bounds are powers of two, exact in f64.
            let in_range = (-(2f64.powi(63))..2f64.powi(63)).contains(&t);
            if valid.value(i) && !in_range {
                return Err(out_of_range(i));
            }
            out.push(if in_range { t as i64 } else { 0 });
        }
        values = out;
        valid
    } else {
        let ints = cast_with_options(raw, &DataType::Int64, &exact).map_err(failure)?;
        let ints = ints.as_primitive::<Int64Type>().values();
        // xarray writes NaT as the smallest int64, with no _FillValue.
        let nat = *raw.data_type() == DataType::Int64;
        let valid = BooleanBuffer::collect_bool(raw.len(), |i| {
            valid.value(i) && !(nat && ints[i] == i64::MIN)
        });
        let mut out = Vec::with_capacity(raw.len());
        for (i, &v) in ints.iter().enumerate() {
            let t = v.checked_mul(step).and_then(|t| t.checked_add(epoch));
            match t {
                Some(t) => out.push(t),
                None if valid.value(i) => return Err(out_of_range(i)),
                None => out.push(0),
            }
        }
        values = out;
        valid
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
    use std::sync::Arc;

    use arrow::array::{Float32Array, Int16Array, UInt64Array};
    use arrow::datatypes::TimeUnit;

    use super::*;

    fn decoded(raw: ArrayRef, kind: CfKind, missing: Vec<f64>) -> Result<ArrayRef, Failure> {
        decode(&raw, &CfDecoding { kind, missing })
    }

    #[test]
    fn times_timedeltas_and_packed_numbers() {
        let hours = CfKind::Time {
            step: 3_600_000_000,
            epoch: 86_400_000_000,
            unit: TimeUnit::Microsecond,
        };
        let raw = Arc::new(Int16Array::from(vec![0, -24, 1, -999])) as ArrayRef;
        let out = decoded(raw, hours.clone(), vec![-999.0]).ok().unwrap();
        assert_eq!(
            out.data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        let out = out.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        assert_eq!(&out.values()[..3], &[86_400_000_000, 0, 90_000_000_000]);
        assert!(out.is_null(3));

        // Floats round to the unit; NaN is NULL.
        let raw = Arc::new(Float32Array::from(vec![0.5, f32::NAN])) as ArrayRef;
        let out = decoded(raw, hours.clone(), vec![]).ok().unwrap();
        let out = out.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        assert_eq!(out.value(0), 86_400_000_000 + 1_800_000_000);
        assert!(out.is_null(1));

        // Beyond i64: the element is named.
        let raw = Arc::new(UInt64Array::from(vec![1, u64::MAX / 2])) as ArrayRef;
        let e = decoded(raw, hours, vec![]).err().unwrap();
        assert_eq!(e.index, Some(1));
        assert!(
            e.message.contains("beyond what Timestamp(µs) holds"),
            "{}",
            e.message
        );

        let seconds = CfKind::Duration {
            step: 1000,
            unit: TimeUnit::Millisecond,
        };
        let raw = Arc::new(Int16Array::from(vec![-3, 7])) as ArrayRef;
        let out = decoded(raw, seconds, vec![]).ok().unwrap();
        assert_eq!(out.data_type(), &DataType::Duration(TimeUnit::Millisecond));
        let out = out.as_primitive::<arrow::datatypes::DurationMillisecondType>();
        assert_eq!(out.values().as_ref(), &[-3000, 7000]);

        let packed = CfKind::Scale {
            scale: 0.1,
            offset: 273.15,
        };
        let raw = Arc::new(Int16Array::from(vec![0, 15, -32767])) as ArrayRef;
        let out = decoded(raw, packed, vec![-32767.0]).ok().unwrap();
        let out = out.as_primitive::<Float64Type>();
        assert_eq!(out.value(0), 273.15);
        assert_eq!(out.value(1), 15.0 * 0.1 + 273.15);
        assert!(out.is_null(2));
    }
}

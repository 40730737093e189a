//! The one table of time units: each unit's CF and UDUNITS names (as xarray reads them), its
//! NumPy `datetime64` code, its Arrow `TimeUnit` where Arrow has one, and its length in
//! nanoseconds; and NumPy's `NaT`.
//!
//! Reading, `attributes.rs` looks CF names up here (`units: "hours since …"`, `units:
//! "seconds"`) and NumPy codes (`dtype: "timedelta64[s]"`); `node/numpy_types.rs` reads
//! NumPy's `<M8[ns]`; writing, `encode.rs` names an Arrow unit in CF and NumPy.

use arrow::datatypes::TimeUnit;

/// NumPy's NaT, the smallest `i64`: how NumPy, and so xarray, stores a missing time.
pub const NAT: i64 = i64::MIN;

/// One time unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Its CF and UDUNITS names (matched ignoring ASCII case); the first is the one written.
    pub names: &'static [&'static str],
    /// NumPy's code for it (`datetime64[D]`, `timedelta64[s]`).
    pub numpy: &'static str,
    /// The Arrow unit of the same length, where Arrow has one.
    pub arrow: Option<TimeUnit>,
    /// Its length in nanoseconds.
    pub nanoseconds: i64,
}

/// A day: CF's `days`, NumPy's `D` (Arrow's `Date32` counts them; no `TimeUnit` does).
pub const DAYS: Unit = Unit {
    names: &["days", "day", "d"],
    numpy: "D",
    arrow: None,
    nanoseconds: 86_400_000_000_000,
};

/// Every unit, longest first.
pub const UNITS: [Unit; 7] = [
    DAYS,
    Unit {
        names: &["hours", "hour", "hr", "hrs", "h"],
        numpy: "h",
        arrow: None,
        nanoseconds: 3_600_000_000_000,
    },
    Unit {
        names: &["minutes", "minute", "min", "mins"],
        numpy: "m",
        arrow: None,
        nanoseconds: 60_000_000_000,
    },
    Unit {
        names: &["seconds", "second", "sec", "secs", "s"],
        numpy: "s",
        arrow: Some(TimeUnit::Second),
        nanoseconds: 1_000_000_000,
    },
    Unit {
        names: &["milliseconds", "millisecond", "msec", "msecs", "ms"],
        numpy: "ms",
        arrow: Some(TimeUnit::Millisecond),
        nanoseconds: 1_000_000,
    },
    Unit {
        names: &["microseconds", "microsecond", "usec", "usecs", "us"],
        numpy: "us",
        arrow: Some(TimeUnit::Microsecond),
        nanoseconds: 1_000,
    },
    Unit {
        names: &["nanoseconds", "nanosecond", "nsec", "nsecs", "ns"],
        numpy: "ns",
        arrow: Some(TimeUnit::Nanosecond),
        nanoseconds: 1,
    },
];

/// The unit a CF `units` name (`days`, `hr`, `Seconds`) names, if any.
pub fn by_cf_name(name: &str) -> Option<&'static Unit> {
    UNITS
        .iter()
        .find(|unit| unit.names.iter().any(|n| n.eq_ignore_ascii_case(name)))
}

/// The unit of NumPy's code `code` (`D`, `s`, `ns`), if any.
pub fn by_numpy(code: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|unit| unit.numpy == code)
}

/// The unit of the Arrow unit `unit`.
pub fn of_arrow(unit: TimeUnit) -> &'static Unit {
    match unit {
        TimeUnit::Second => &UNITS[3],
        TimeUnit::Millisecond => &UNITS[4],
        TimeUnit::Microsecond => &UNITS[5],
        TimeUnit::Nanosecond => &UNITS[6],
    }
}

/// Nanoseconds in one of the unit CF names `name` (CF's and UDUNITS' names xarray reads).
pub fn nanoseconds(name: &str) -> Option<i64> {
    by_cf_name(name).map(|unit| unit.nanoseconds)
}

/// Nanoseconds in one of the Arrow unit `unit`.
pub fn per(unit: TimeUnit) -> i64 {
    of_arrow(unit).nanoseconds
}

impl Unit {
    /// The CF name written for it (`seconds`).
    pub fn cf_name(&self) -> &'static str {
        self.names[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARROW: [TimeUnit; 4] = [
        TimeUnit::Second,
        TimeUnit::Millisecond,
        TimeUnit::Microsecond,
        TimeUnit::Nanosecond,
    ];

    /// Every unit's names (in any ASCII case) and NumPy code read back as that unit, with the
    /// same Arrow unit and nanoseconds; every Arrow unit's written CF name and NumPy code read
    /// back as it; no name names two units; and each unit is a whole number of the next.
    #[test]
    fn every_name_reads_back_as_its_unit() {
        for unit in &UNITS {
            let spellings = unit.names.iter().flat_map(|name| {
                [
                    name.to_string(),
                    name.to_ascii_uppercase(),
                    name[..1].to_ascii_uppercase() + &name[1..],
                ]
            });
            for name in spellings {
                assert_eq!(by_cf_name(&name), Some(unit), "{name}");
                assert_eq!(nanoseconds(&name), Some(unit.nanoseconds), "{name}");
            }
            assert_eq!(by_numpy(unit.numpy), Some(unit), "{}", unit.numpy);
            assert_eq!(
                by_cf_name(unit.cf_name()).map(|u| u.numpy),
                Some(unit.numpy)
            );
            if let Some(arrow) = unit.arrow {
                assert_eq!(of_arrow(arrow), unit);
                assert_eq!(per(arrow), unit.nanoseconds);
            }
        }
        for arrow in ARROW {
            let unit = of_arrow(arrow);
            assert_eq!(unit.arrow, Some(arrow));
            assert_eq!(
                by_cf_name(unit.cf_name()).and_then(|u| u.arrow),
                Some(arrow)
            );
            assert_eq!(by_numpy(unit.numpy).and_then(|u| u.arrow), Some(arrow));
        }
        let names: Vec<&str> = UNITS.iter().flat_map(|u| u.names.iter().copied()).collect();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} names two units");
        }
        for pair in UNITS.windows(2) {
            assert!(pair[0].nanoseconds > pair[1].nanoseconds);
            assert_eq!(pair[0].nanoseconds % pair[1].nanoseconds, 0);
        }
        assert_eq!(DAYS.nanoseconds, 24 * by_cf_name("h").unwrap().nanoseconds);
        for unknown in ["", "months", "years", "weeks", "M", "Y", "day since"] {
            assert_eq!(by_cf_name(unknown), None, "{unknown}");
        }
        assert_eq!(by_numpy("S"), None);
        assert_eq!(by_numpy("d"), None);
    }
}

//! Helpers shared by the runner benches (`export.rs`, `remote.rs`): medians, lists of
//! seconds, and numbers from the environment.
#![allow(dead_code)]

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Seconds as `1.23, 4.56`.
pub fn list(v: &[f64]) -> String {
    v.iter()
        .map(|s| format!("{s:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The number in environment variable `name`, or `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
        })
        .unwrap_or(default)
}

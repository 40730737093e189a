//! Helpers shared by the runner benches (`export.rs`, `remote.rs`, `icechunk.rs`): child
//! processes measured alone (wall and CPU time, peak RSS), the count a query printed, medians,
//! lists of seconds, numbers from the environment.
#![allow(dead_code)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The count in zarr-sql's CSV output (`n\n518189\n`) or the peer's JSON line.
pub fn count_of(output: &str) -> u64 {
    let last = output.lines().last().unwrap_or_default();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(last)
        && let Some(n) = v["count"].as_u64()
    {
        return n;
    }
    last.trim()
        .parse()
        .unwrap_or_else(|_| panic!("no count in {output:?}"))
}

/// One finished child process.
pub struct Run {
    /// Wall time, start to exit.
    pub seconds: f64,
    /// CPU time of the child alone (user + system), from `wait4`.
    pub cpu_seconds: f64,
    /// Peak resident set of the child alone, KiB.
    pub peak_rss_kib: i64,
    /// What it printed.
    pub stdout: String,
}

/// Runs `cmd` to completion (it must succeed): its wall time, and its own CPU time and peak RSS
/// from `wait4`, which gives the rusage of the one child it reaps.
// The child is reaped by `wait4` below, not `wait()`.
#[allow(clippy::zombie_processes)]
pub fn run(cmd: &mut Command) -> Run {
    let shown = format!("{cmd:?}");
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let mut status = 0;
    // SAFETY: `rusage` is plain old data; wait4 fills it for the child it reaps.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: valid pointers to locals; `pid` is our child, not yet reaped.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(
        reaped,
        pid,
        "wait4 {shown}: {}",
        std::io::Error::last_os_error()
    );
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{shown} failed (wait status {status:#x})"
    );
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Run {
        seconds,
        cpu_seconds: time(usage.ru_utime) + time(usage.ru_stime),
        peak_rss_kib: usage.ru_maxrss,
        stdout,
    }
}

/// CPU time (user + system) this process has used so far, from `getrusage`: in the remote
/// bench, the in-process proxy's share of the machine.
pub fn own_cpu_seconds() -> f64 {
    // SAFETY: `rusage` is plain old data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    time(usage.ru_utime) + time(usage.ru_stime)
}

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

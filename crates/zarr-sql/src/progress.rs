//! The progress display of `export` and `convert` on stderr: an indicatif bar or spinner on a
//! terminal, plain lines when forced elsewhere (`--progress`), nothing with `-q`.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use datafusion_zarr::ProgressCounter;
use indicatif::{ProgressBar, ProgressStyle};

/// What the display follows.
pub(crate) enum Tracked {
    /// A Zarr scan's counter: rows and chunks done out of the total, throughput, time left.
    Scan(Arc<ProgressCounter>),
    /// Rows counted as they pass, with no known total: a spinner with the count.
    Rows(Arc<AtomicU64>),
    /// Nothing this process can count (a cluster's scan, a writer that counts only when done):
    /// a spinner with the elapsed time and this message, or one plain line saying it.
    Elapsed(String),
}

/// The progress display, from [`Display::start`] to [`Display::finish`].
pub(crate) struct Display {
    bar: Option<ProgressBar>,
    ticker: Option<tokio::task::JoinHandle<()>>,
    tracked: Tracked,
    plain: bool,
}

impl Display {
    /// Starts showing `tracked`: on a terminal unless `quiet`, elsewhere only when `forced`
    /// (`--progress`), then as plain lines.
    pub(crate) fn start(tracked: Tracked, quiet: bool, forced: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let show = !quiet && (terminal || forced);
        let mut display = Self {
            bar: None,
            ticker: None,
            tracked,
            plain: false,
        };
        if !show {
            return display;
        }
        if let Tracked::Elapsed(message) = &display.tracked {
            match terminal {
                true => {
                    let bar = spinner("{spinner} [{elapsed_precise}] {msg}");
                    bar.set_message(message.clone());
                    bar.enable_steady_tick(Duration::from_millis(100));
                    display.bar = Some(bar);
                }
                false => eprintln!("progress: {message}"),
            }
            return display;
        }
        if !terminal {
            display.plain = true;
            return display;
        }
        let bar = match &display.tracked {
            Tracked::Scan(_) => {
                let bar = ProgressBar::new(0);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} rows {msg} ({per_sec}, ETA {eta})",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar
            }
            _ => {
                let bar = spinner("{spinner} [{elapsed_precise}] {human_pos} rows {msg}");
                bar.enable_steady_tick(Duration::from_millis(100));
                bar
            }
        };
        let ticker_bar = bar.clone();
        let ticker_tracked = display.tracked.share();
        display.ticker = Some(tokio::spawn(async move {
            loop {
                update(&ticker_bar, &ticker_tracked);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
        display.bar = Some(bar);
        display
    }

    /// Stops the display: the bar's last frame, kept (`ok`) or abandoned, or the plain line
    /// of the final count.
    pub(crate) fn finish(self, ok: bool) {
        if let Some(t) = &self.ticker {
            t.abort();
        }
        if let Some(bar) = &self.bar {
            if self.ticker.is_some() {
                update(bar, &self.tracked);
            }
            if ok {
                bar.finish()
            } else {
                bar.abandon()
            }
            // indicatif leaves the cursor after the bar's last frame: what follows starts on
            // a line of its own.
            if !bar.is_hidden() {
                eprintln!();
            }
        }
        if self.plain {
            match &self.tracked {
                Tracked::Scan(progress) => {
                    let p = progress.snapshot();
                    eprintln!(
                        "progress: {}/{} rows, {}/{} chunks",
                        p.rows, p.total_rows, p.chunks, p.total_chunks
                    );
                }
                Tracked::Rows(rows) => {
                    eprintln!("progress: {} rows", rows.load(Ordering::Relaxed));
                }
                Tracked::Elapsed(_) => {}
            }
        }
    }
}

impl Tracked {
    /// Another handle on the same counter, for the ticker.
    fn share(&self) -> Self {
        match self {
            Tracked::Scan(p) => Tracked::Scan(p.clone()),
            Tracked::Rows(r) => Tracked::Rows(r.clone()),
            Tracked::Elapsed(m) => Tracked::Elapsed(m.clone()),
        }
    }
}

fn spinner(template: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar
}

fn update(bar: &ProgressBar, tracked: &Tracked) {
    match tracked {
        Tracked::Scan(progress) => {
            let p = progress.snapshot();
            bar.set_length(p.total_rows);
            bar.set_position(p.rows);
            bar.set_message(format!("{}/{} chunks", p.chunks, p.total_chunks));
        }
        Tracked::Rows(rows) => {
            let rows = rows.load(Ordering::Relaxed);
            bar.set_position(rows);
            let seconds = bar.elapsed().as_secs_f64();
            if seconds > 0.0 {
                bar.set_message(format!("({:.0} rows/s)", rows as f64 / seconds));
            }
        }
        Tracked::Elapsed(_) => {}
    }
}

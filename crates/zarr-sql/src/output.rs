//! Result printing: `table`, `csv`, `json` and `ndjson` on stdout; row counts and timings on
//! stderr.

use std::io::Write;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use datafusion::error::Result;

/// Writes `text` to stdout. A reader that went away (`| head`) ends the output quietly, as it
/// ends other command-line tools; `println!` would panic.
pub fn print_text(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(
            datafusion::error::DataFusionError::Execution(format!("cannot write the output: {e}")),
        ),
        _ => Ok(()),
    }
}

/// An output format (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A boxed table, like datafusion-cli's (`inspect`: its text tree).
    #[value(alias = "text")]
    Table,
    /// CSV with a header row.
    Csv,
    /// One JSON array of objects.
    Json,
    /// One JSON object per line.
    #[value(alias = "nd-json")]
    Ndjson,
}

/// Prints results.
#[derive(Debug, Clone)]
pub struct Printer {
    /// The format.
    pub format: Format,
    /// Suppress row counts and timings.
    pub quiet: bool,
}

/// Writes one result's batches as they arrive.
pub enum Sink {
    Table(SchemaRef, Vec<RecordBatch>),
    /// The schema, for the header of a result without batches.
    Csv(SchemaRef, Box<arrow::csv::Writer<std::io::Stdout>>, bool),
    Json(arrow::json::ArrayWriter<std::io::Stdout>),
    Ndjson(arrow::json::LineDelimitedWriter<std::io::Stdout>),
}

impl Printer {
    /// A sink for one result with `schema`.
    pub fn sink(&self, schema: SchemaRef) -> Result<Sink> {
        let out = std::io::stdout();
        Ok(match self.format {
            Format::Table => Sink::Table(schema, Vec::new()),
            Format::Csv => Sink::Csv(
                schema,
                Box::new(
                    arrow::csv::WriterBuilder::new()
                        .with_header(true)
                        .build(out),
                ),
                false,
            ),
            Format::Json => Sink::Json(arrow::json::ArrayWriter::new(out)),
            Format::Ndjson => Sink::Ndjson(arrow::json::LineDelimitedWriter::new(out)),
        })
    }

    /// The row count and time on stderr, as datafusion-cli prints them.
    pub fn summary(&self, rows: usize, elapsed: Duration) {
        if !self.quiet {
            let noun = if rows == 1 { "row" } else { "rows" };
            eprintln!(
                "{rows} {noun} fetched. Elapsed {:.3} seconds.\n",
                elapsed.as_secs_f64()
            );
        }
    }
}

impl Sink {
    /// Writes a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            Sink::Table(_, batches) => batches.push(batch.clone()),
            Sink::Csv(_, w, wrote) => {
                w.write(batch)?;
                *wrote = true;
            }
            Sink::Json(w) => w.write(batch)?,
            Sink::Ndjson(w) => w.write(batch)?,
        }
        Ok(())
    }

    /// Finishes the result.
    pub fn finish(self) -> Result<()> {
        match self {
            Sink::Table(schema, batches) => {
                let table =
                    arrow::util::pretty::pretty_format_batches_with_schema(schema, &batches)?;
                let mut out = std::io::stdout().lock();
                writeln!(out, "{table}").map_err(ArrowError::from)?;
            }
            Sink::Csv(schema, mut w, wrote) => {
                // The header of a result of no rows, as `--help` promises a header row.
                if !wrote {
                    w.write(&RecordBatch::new_empty(schema))?;
                }
                w.into_inner().flush().map_err(ArrowError::from)?;
            }
            Sink::Json(mut w) => {
                w.finish()?;
                let mut out = w.into_inner();
                writeln!(out).map_err(ArrowError::from)?;
                out.flush().map_err(ArrowError::from)?;
            }
            Sink::Ndjson(mut w) => {
                w.finish()?;
                w.into_inner().flush().map_err(ArrowError::from)?;
            }
        }
        Ok(())
    }
}

//! The floor of writing a Parquet file's strings to Zarr (issue #38): what `zarr-sql convert
//! strings.parquet out.zarr -w chunk_rows=100000 -w compression=zstd -w compression_level=3`
//! cannot go below. The Parquet file is read with parquet-rs's Arrow reader (59.3.2, as the
//! workspace), in batches of one chunk (100,000 rows); each chunk's strings are encoded with the
//! writer's own kernel, `zarr_utf32::utf8_to_utf32` (64 bytes a string: `<U16`, this machine's
//! byte order), and compressed with zstd level 3 (the zstd crate zarrs uses, a
//! `bulk::Compressor` without checksum, as zarrs's codec does); nothing is written to disk. All
//! cores work: each thread takes the next row group (an atomic counter), reads it, encodes and
//! compresses its chunks, reusing its buffers. Prints the wall time.
//!
//! ```sh
//! zarr-sql export benches/data/strings_20m.zarr benches/data/strings_20m.parquet
//! cd benches/write_floor && cargo run --release -- ../data/strings_20m.parquet
//! cargo run --release -- ../data/strings_20m.parquet --phases   # read, encode, compress apart
//! cargo run --release -- ../data/strings_20m.parquet --threads 1
//! ```
//!
//! `--column NAME` picks the string column (default: the first string column). `--phases` also
//! times the steps apart, each on all cores: the read alone (the batches kept in memory), the
//! encoding alone, and zstd alone on the encoded chunks.
//!
//! `--rechunk STORE` is the floor of rechunking a 1-D zstd array of a local Zarr V3 store (such
//! as `strings_20m.zarr`, whose chunks are the files `c/0`, `c/1`, …) from `--from` (100,000)
//! to `--to` (1,000,000) elements a chunk: each thread takes the next output chunk, reads its
//! input chunks' files, decompresses them into one buffer and compresses it with zstd level 3;
//! nothing is transcoded (the bytes stay UTF-32) and nothing is written. `--rows` (20,000,000)
//! and `--width` (64 bytes) give the array's length and element size.
//!
//! ```sh
//! cargo run --release -- --rechunk ../data/strings_20m.zarr
//! ```

use std::error::Error;
use std::fs::File;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use zarr_utf32::{ByteOrder, Overflow};

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// Rows per Zarr chunk, and per batch read.
const CHUNK: usize = 100_000;
/// Bytes per string: `<U16`.
const WIDTH: usize = 64;
/// zstd level.
const LEVEL: i32 = 3;

struct Args {
    path: String,
    column: Option<String>,
    threads: usize,
    phases: bool,
    rechunk: bool,
    rows: usize,
    from: usize,
    to: usize,
    width: usize,
}

fn args() -> Result<Args> {
    let mut path = None;
    let mut column = None;
    let mut threads = std::thread::available_parallelism()?.get();
    let mut phases = false;
    let (mut rechunk, mut rows, mut from, mut to, mut width) =
        (false, 20_000_000, CHUNK, 1_000_000, WIDTH);
    let mut it = std::env::args().skip(1);
    let number = |it: &mut std::iter::Skip<std::env::Args>, flag: &str| -> Result<usize> {
        Ok(it.next().ok_or(format!("{flag} N"))?.parse()?)
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--column" => column = Some(it.next().ok_or("--column NAME")?),
            "--threads" => threads = number(&mut it, "--threads")?,
            "--phases" => phases = true,
            "--rechunk" => {
                rechunk = true;
                path = Some(it.next().ok_or("--rechunk STORE")?);
            }
            "--rows" => rows = number(&mut it, "--rows")?,
            "--from" => from = number(&mut it, "--from")?,
            "--to" => to = number(&mut it, "--to")?,
            "--width" => width = number(&mut it, "--width")?,
            _ if path.is_none() => path = Some(a),
            _ => return Err(format!("unexpected argument {a}").into()),
        }
    }
    let path = path.ok_or(
        "usage: write-floor FILE.parquet [--column NAME] [--threads N] [--phases]\n       \
         write-floor --rechunk STORE [--rows N] [--from N] [--to N] [--width BYTES] [--threads N]",
    )?;
    if from == 0 || to == 0 || to % from != 0 {
        return Err("--to must be a multiple of --from".into());
    }
    Ok(Args {
        path,
        column,
        threads: threads.max(1),
        phases,
        rechunk,
        rows,
        from,
        to,
        width,
    })
}

/// The row groups of the file and the leaf index of the string column.
fn layout(args: &Args) -> Result<(usize, usize, String)> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&args.path)?)?;
    let schema = builder.schema().clone();
    let field = match &args.column {
        Some(name) => schema.field_with_name(name)?.clone(),
        None => schema
            .fields()
            .iter()
            .find(|f| {
                matches!(
                    f.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                )
            })
            .ok_or("no string column")?
            .as_ref()
            .clone(),
    };
    let leaf = builder
        .parquet_schema()
        .columns()
        .iter()
        .position(|c| c.path().parts() == [field.name().as_str()])
        .ok_or("the column is not a top-level leaf")?;
    Ok((
        builder.metadata().num_row_groups(),
        leaf,
        field.name().clone(),
    ))
}

/// Reads row group `rg` (the column alone) in batches of `CHUNK` rows, handing each to `each`.
fn read_row_group(
    path: &str,
    leaf: usize,
    rg: usize,
    mut each: impl FnMut(ArrayRef) -> Result<()>,
) -> Result<()> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
    let mask = ProjectionMask::leaves(builder.parquet_schema(), [leaf]);
    let reader = builder
        .with_projection(mask)
        .with_row_groups(vec![rg])
        .with_batch_size(CHUNK)
        .build()?;
    for batch in reader {
        each(batch?.column(0).clone())?;
    }
    Ok(())
}

/// Appends the strings of `array` to `out` as `<U16`, with the writer's kernel.
fn encode(array: &dyn Array, out: &mut Vec<u8>) -> Result<()> {
    match array.data_type() {
        DataType::Utf8 => zarr_utf32::utf8_to_utf32(
            array.as_string::<i32>(),
            WIDTH,
            ByteOrder::NATIVE,
            Overflow::Error,
            out,
        )?,
        DataType::LargeUtf8 => zarr_utf32::utf8_to_utf32(
            array.as_string::<i64>(),
            WIDTH,
            ByteOrder::NATIVE,
            Overflow::Error,
            out,
        )?,
        DataType::Utf8View => zarr_utf32::utf8_view_to_utf32(
            array.as_string_view(),
            WIDTH,
            ByteOrder::NATIVE,
            Overflow::Error,
            out,
        )?,
        t => return Err(format!("not a string column: {t}").into()),
    }
    Ok(())
}

/// One thread's reusable state: the encoded chunk, the compressed chunk, the compressor.
struct Worker {
    raw: Vec<u8>,
    packed: Vec<u8>,
    zstd: zstd::bulk::Compressor<'static>,
    chunks: usize,
    rows: usize,
    packed_bytes: usize,
}

impl Worker {
    fn new() -> Result<Self> {
        let mut zstd = zstd::bulk::Compressor::new(LEVEL)?;
        zstd.include_checksum(false)?;
        Ok(Worker {
            raw: Vec::new(),
            packed: Vec::new(),
            zstd,
            chunks: 0,
            rows: 0,
            packed_bytes: 0,
        })
    }

    fn compress_raw(&mut self) -> Result<()> {
        self.packed.clear();
        self.packed
            .reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
        let n = self.zstd.compress_to_buffer(&self.raw, &mut self.packed)?;
        self.packed_bytes += n;
        self.chunks += 1;
        Ok(())
    }

    fn chunk(&mut self, array: &dyn Array) -> Result<()> {
        self.raw.clear();
        encode(array, &mut self.raw)?;
        self.rows += array.len();
        self.compress_raw()
    }
}

#[derive(Default)]
struct Totals {
    chunks: usize,
    rows: usize,
    packed_bytes: usize,
}

impl Totals {
    fn add(&mut self, w: &Worker) {
        self.chunks += w.chunks;
        self.rows += w.rows;
        self.packed_bytes += w.packed_bytes;
    }
}

/// Runs `work(item, worker)` for items 0..n, each thread taking the next item.
fn parallel(
    threads: usize,
    n: usize,
    work: impl Fn(usize, &mut Worker) -> Result<()> + Sync,
) -> Result<Totals> {
    let next = AtomicUsize::new(0);
    let totals = Mutex::new(Totals::default());
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    let mut w = Worker::new()?;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        work(i, &mut w)?;
                    }
                    totals.lock().unwrap().add(&w);
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| "a thread panicked")??;
        }
        Ok(())
    })?;
    Ok(totals.into_inner().unwrap())
}

/// The floor of a rechunk: decompress `to / from` input chunks into one buffer, compress it.
fn rechunk(args: &Args) -> Result<()> {
    let outputs = args.rows.div_ceil(args.to);
    let inputs = args.rows.div_ceil(args.from);
    let per = args.to / args.from;
    let start = Instant::now();
    let t = parallel(args.threads, outputs, |j, w| {
        let mut unzstd = zstd::bulk::Decompressor::new()?;
        w.raw.clear();
        w.raw.resize(args.to * args.width, 0);
        let mut at = 0;
        for k in j * per..((j + 1) * per).min(inputs) {
            let encoded = std::fs::read(format!("{}/c/{k}", args.path))?;
            let n = unzstd
                .decompress_to_buffer(&encoded, &mut w.raw[at..at + args.from * args.width])?;
            at += n;
        }
        // The last chunk is padded with zeros to the whole chunk, as a writer does.
        w.rows += (args.rows - j * args.to).min(args.to);
        w.compress_raw()
    })?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "floor: {seconds:.3} s  (rechunk of {} elements of {} bytes from {} to {} a chunk: {inputs} chunks \
         decompressed, {} compressed with zstd {LEVEL}, {:.1} MiB; {} threads)",
        t.rows,
        args.width,
        args.from,
        args.to,
        t.chunks,
        t.packed_bytes as f64 / 1048576.0,
        args.threads
    );
    Ok(())
}

fn main() -> Result<()> {
    let args = args()?;
    if args.rechunk {
        return rechunk(&args);
    }
    let (row_groups, leaf, name) = layout(&args)?;

    // The floor: read, encode and compress, streaming, on all cores.
    let start = Instant::now();
    let t = parallel(args.threads, row_groups, |rg, w| {
        read_row_group(&args.path, leaf, rg, |a| w.chunk(a.as_ref()))
    })?;
    let floor = start.elapsed().as_secs_f64();
    println!(
        "floor: {floor:.3} s  ({} rows of {name:?}, {} chunks of <= {CHUNK} rows, {row_groups} row groups, \
         {} threads; {:.1} MiB as <U16, {:.1} MiB zstd {LEVEL})",
        t.rows,
        t.chunks,
        args.threads,
        (t.rows * WIDTH) as f64 / 1048576.0,
        t.packed_bytes as f64 / 1048576.0
    );

    if args.phases {
        // The read alone, the batches kept.
        let start = Instant::now();
        let groups: Vec<Mutex<Vec<ArrayRef>>> =
            (0..row_groups).map(|_| Mutex::new(Vec::new())).collect();
        parallel(args.threads, row_groups, |rg, _| {
            let mut v = Vec::new();
            read_row_group(&args.path, leaf, rg, |a| {
                v.push(a);
                Ok(())
            })?;
            *groups[rg].lock().unwrap() = v;
            Ok(())
        })?;
        let read = start.elapsed().as_secs_f64();
        let batches: Vec<ArrayRef> = groups
            .into_iter()
            .flat_map(|g| g.into_inner().unwrap())
            .collect();

        // Encoding alone.
        let start = Instant::now();
        parallel(args.threads, batches.len(), |i, w| {
            w.raw.clear();
            encode(batches[i].as_ref(), &mut w.raw)
        })?;
        let encode_only = start.elapsed().as_secs_f64();

        // zstd alone, on chunks encoded beforehand.
        let encoded: Vec<Vec<u8>> = batches
            .iter()
            .map(|a| {
                let mut v = Vec::new();
                encode(a.as_ref(), &mut v).map(|_| v)
            })
            .collect::<Result<_>>()?;
        drop(batches);
        let start = Instant::now();
        parallel(args.threads, encoded.len(), |i, w| {
            w.raw.clear();
            w.raw.extend_from_slice(&encoded[i]);
            w.compress_raw()
        })?;
        let zstd_only = start.elapsed().as_secs_f64();
        println!(
            "phases ({} threads): read {read:.3} s, encode {encode_only:.3} s, zstd {zstd_only:.3} s (includes a memcpy of each chunk)",
            args.threads
        );
    }
    Ok(())
}

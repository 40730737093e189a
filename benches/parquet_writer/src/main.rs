//! The Parquet writer alone, on the rows of an export (issue #14): parquet-rs 59.3.2 writing
//! them with the export's settings on one thread, beside variants (no statistics, Arrow
//! dictionary arrays as input, no dictionary) and beside the lower bound of any dictionary
//! encoder: one hash-table probe per row into a dictionary reset every row group, in our own
//! code (hashbrown + foldhash, values in one arena). Each variant runs `RUNS` times (default 3),
//! alternating; prints the medians.
//!
//! ```sh
//! zarr-sql export benches/data/strings_20m.zarr /tmp/export20m.parquet
//! cd benches/parquet_writer && cargo run --release -- /tmp/export20m.parquet
//! ```

use std::error::Error;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Rows per row group, as `zarr-sql export` writes them.
const ROW_GROUP: usize = 1_000_000;

/// The export's settings: zstd(3), row groups of a million rows, the index column `i`
/// delta-encoded without a dictionary.
fn export_settings() -> Result<WriterPropertiesBuilder> {
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_column_encoding(ColumnPath::from("i"), Encoding::DELTA_BINARY_PACKED)
        .set_column_dictionary_enabled(ColumnPath::from("i"), false))
}

/// Seconds to write `batches` to a file in /tmp with `props`.
fn write(batches: &[RecordBatch], props: WriterProperties) -> Result<f64> {
    let schema = batches.first().ok_or("no rows")?.schema();
    let start = Instant::now();
    let out = std::fs::File::create(std::env::temp_dir().join("parquet-writer-bench.parquet"))?;
    let mut writer = ArrowWriter::try_new(out, schema, Some(props))?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.close()?;
    Ok(start.elapsed().as_secs_f64())
}

/// `batches` with the string column `value` as `Dictionary(UInt32, Utf8)`.
fn as_dictionaries(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    let dict = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
    batches
        .iter()
        .map(|b| {
            let schema = b.schema();
            let index = schema.index_of("value")?;
            let mut columns = b.columns().to_vec();
            columns[index] = arrow::compute::cast(&columns[index], &dict)?;
            let fields: Vec<Field> = schema
                .fields()
                .iter()
                .enumerate()
                .map(|(i, f)| match i == index {
                    true => Field::new(f.name(), dict.clone(), f.is_nullable()),
                    false => f.as_ref().clone(),
                })
                .collect();
            Ok(RecordBatch::try_new(
                Arc::new(Schema::new(fields)),
                columns,
            )?)
        })
        .collect()
}

/// Seconds to intern every value of the column `value` (a key per row), the dictionary reset
/// every row group: what any dictionary encoder must at least do. Also the entries interned.
fn intern_only(batches: &[RecordBatch]) -> Result<(f64, usize)> {
    let state = foldhash::fast::FixedState::with_seed(7);
    let start = Instant::now();
    let mut table: hashbrown::HashTable<u32> = hashbrown::HashTable::with_capacity(1 << 16);
    let mut arena: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = vec![0];
    let mut keys: Vec<u32> = Vec::with_capacity(ROW_GROUP);
    let (mut rows, mut entries) = (0usize, 0usize);
    for batch in batches {
        let values = batch
            .column_by_name("value")
            .ok_or("no column `value`")?
            .as_string::<i32>();
        for i in 0..values.len() {
            let value = values.value(i).as_bytes();
            let hash = state.hash_one(value);
            let entry = |k: u32| &arena[ends[k as usize]..ends[k as usize + 1]];
            let key = match table.find(hash, |&k| entry(k) == value) {
                Some(&k) => k,
                None => {
                    let k = u32::try_from(ends.len() - 1)?;
                    arena.extend_from_slice(value);
                    ends.push(arena.len());
                    let entry = |k: u32| &arena[ends[k as usize]..ends[k as usize + 1]];
                    table.insert_unique(hash, k, |&k| state.hash_one(entry(k)));
                    k
                }
            };
            keys.push(key);
            rows += 1;
            if rows % ROW_GROUP == 0 {
                entries += ends.len() - 1;
                table.clear();
                arena.clear();
                ends.truncate(1);
                keys.clear();
            }
        }
    }
    entries += ends.len() - 1;
    Ok((start.elapsed().as_secs_f64(), entries))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() -> Result<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: parquet-writer-bench EXPORT.parquet")?;
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path)?)?
        .with_batch_size(8192)
        .build()?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let dictionaries = as_dictionaries(&batches)?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    println!("{path}: {rows} rows; {runs} runs each, alternating, one thread");
    let names = [
        "parquet-rs, the export's settings",
        "  without statistics",
        "  with Arrow dictionary arrays",
        "  without a dictionary",
        "interning alone (the lower bound)",
        "the index column alone (delta)",
    ];
    let mut times = vec![Vec::new(); names.len()];
    let mut entries = 0;
    for _ in 0..runs {
        times[0].push(write(&batches, export_settings()?.build())?);
        let no_stats = export_settings()?.set_statistics_enabled(EnabledStatistics::None);
        times[1].push(write(&batches, no_stats.build())?);
        times[2].push(write(&dictionaries, export_settings()?.build())?);
        let no_dict = export_settings()?.set_dictionary_enabled(false);
        times[3].push(write(&batches, no_dict.build())?);
        let (seconds, n) = intern_only(&batches)?;
        times[4].push(seconds);
        entries = n;
        let index_only: Vec<RecordBatch> = batches
            .iter()
            .map(|b| b.project(&[0]))
            .collect::<std::result::Result<_, _>>()?;
        times[5].push(write(&index_only, export_settings()?.build())?);
    }
    for (name, t) in names.iter().zip(times) {
        let shown: Vec<String> = t.iter().map(|s| format!("{s:.2}")).collect();
        println!(
            "{name:36} median {:.2} s   runs [{}]",
            median(t),
            shown.join(", ")
        );
    }
    println!("dictionary entries over the row groups: {entries}");
    Ok(())
}

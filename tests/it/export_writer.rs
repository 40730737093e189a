//! The export's Parquet writer (`write_parquet`: our row-group pipeline and our string and
//! numeric encoders) against parquet-rs's `ArrowWriter` given the same rows and settings: the
//! same values and types read back, the same chunk statistics, a column index whose every
//! page's min, max and null count are those of the page's rows, a dictionary where parquet-rs
//! has one, and files of about the same size; for every codec, every string type, integers of
//! every width and sign, floats with NaN and both zeros, nulls, all-null and all-NaN pages,
//! strings too long for untruncated statistics, and dictionaries over the size limit.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float32Array, Float64Array, Int8Array, Int32Array, Int64Array,
    LargeStringArray, RecordBatch, StringArray, StringViewArray, UInt32Array, UInt64Array,
};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::datatypes::{
    Float32Type, Float64Type, Int8Type, Int32Type, Int64Type, UInt32Type, UInt64Type,
};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_zarr::export::{ParquetCompression, ParquetExport, write_parquet};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::basic::Encoding;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::properties::WriterPropertiesBuilder;
use parquet::file::statistics::Statistics;

use zarr_test_support::Rng;

/// `n` labels drawn from a skewed vocabulary of `distinct` strings (ASCII, accented, CJK,
/// emoji, empty, long), with runs of repeats and, when `null_every` > 0, nulls (whole pages of them
/// from row 30,000 to 55,000).
fn labels(rng: &mut Rng, n: usize, distinct: u64, null_every: u64) -> Vec<Option<String>> {
    let words = [
        "",
        "berlin",
        "Zürich",
        "東京",
        "🚀 launch",
        "a",
        "station-",
        "ÿ",
        // Sorts after "a" and its head equals "a"'s: told apart by the full comparison.
        "a\u{0}",
        // Over 16 bytes: compared beyond the dictionary's 16-byte heads.
        "a rather long station name, ",
    ];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let r = rng.next();
        let pick = (r % distinct).min(r % (distinct / 4 + 1)) + (r >> 60) % 3;
        let value = format!("{}{}", words[(pick % 9) as usize], pick / 9);
        let repeat = if r.is_multiple_of(17) {
            1 + (r >> 32) % 40
        } else {
            1
        };
        for _ in 0..repeat {
            let row = out.len() as u64;
            let null = null_every > 0 && ((30_000..55_000).contains(&row) || row % null_every == 3);
            out.push((!null).then(|| value.clone()));
        }
    }
    out.truncate(n);
    out
}

/// Batches of `batch` rows: an index, a nullable label column of `string_type`, a non-null
/// label column, a column with strings over 64 bytes, and a high-cardinality column.
fn batches(string_type: &DataType, rows: usize, batch: usize) -> Vec<RecordBatch> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let nullable = labels(&mut rng, rows, 5_000, 11);
    let plain = labels(&mut rng, rows, 300, 0);
    let long: Vec<Option<String>> = labels(&mut rng, rows, 50, 0)
        .into_iter()
        .map(|v| v.map(|s| format!("{s}{}", "ü".repeat(40))))
        .collect();
    let unique: Vec<Option<String>> = (0..rows)
        .map(|i| Some(format!("{:016x}-{i}", rng.next())))
        .collect();
    let as_array = |values: &[Option<String>]| -> ArrayRef {
        let it = values.iter().map(|v| v.as_deref());
        match string_type {
            DataType::Utf8 => Arc::new(it.collect::<StringArray>()),
            DataType::LargeUtf8 => Arc::new(it.collect::<LargeStringArray>()),
            DataType::Utf8View => Arc::new(it.collect::<StringViewArray>()),
            other => panic!("{other}"),
        }
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::UInt64, false),
        Field::new("label", string_type.clone(), true),
        Field::new("code", string_type.clone(), false),
        Field::new("long", string_type.clone(), false),
        Field::new("unique", string_type.clone(), false),
        Field::new("n", DataType::Int64, true),
        Field::new("small", DataType::Int8, true),
        Field::new("big", DataType::UInt32, false),
        Field::new("temp", DataType::Float32, true),
        Field::new("unique_f64", DataType::Float64, false),
        Field::new("nan_page", DataType::Float32, false),
        Field::new("hour", DataType::UInt64, false),
        Field::new("signed", DataType::Int32, false),
    ]));
    // Floats with NaN, both zeros, infinities and subnormals among ordinary values.
    let special = [
        f32::NAN,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-40,
        -1e-40,
    ];
    let temp: Vec<Option<f32>> = (0..rows)
        .map(|_| {
            let r = rng.next();
            match r % 50 {
                0 => None,
                1 => Some(special[(r >> 8) as usize % special.len()]),
                _ => Some(((r >> 16) % 4_000) as f32 / 100.0 - 15.0),
            }
        })
        .collect();
    // Zero is the largest value of some pages and the smallest of others.
    let temp: Vec<Option<f32>> = temp
        .into_iter()
        .enumerate()
        .map(|(i, v)| match (i / 20_000) % 3 {
            0 => v.map(|x| -x.abs()),
            1 => v.map(f32::abs),
            _ => v,
        })
        .collect();
    (0..rows)
        .step_by(batch)
        .map(|start| {
            let end = (start + batch).min(rows);
            let columns: Vec<ArrayRef> = vec![
                Arc::new(UInt64Array::from_iter_values(start as u64..end as u64)),
                as_array(&nullable[start..end]),
                as_array(&plain[start..end]),
                as_array(&long[start..end]),
                as_array(&unique[start..end]),
                Arc::new(Int64Array::from_iter(
                    (start..end).map(|i| (i % 7 != 0).then_some(i as i64 * 3)),
                )),
                Arc::new(Int8Array::from_iter((start..end).map(|i| {
                    (i % 5 != 0 && !(40_000..60_000).contains(&i)).then_some((i % 251) as i8)
                }))),
                Arc::new(UInt32Array::from_iter_values(
                    (start..end).map(|i| (i as u32 % 1000).wrapping_mul(0x9e37_79b9)),
                )),
                Arc::new(Float32Array::from(temp[start..end].to_vec())),
                // Written PLAIN by ours in the first row group (read from the arrays, no
                // nulls): NaN, both zeros and infinities in its first pages, -inf in its
                // fourth, finite values (a zero at row 90,000) elsewhere.
                Arc::new(Float64Array::from_iter_values((start..end).map(
                    |i| match i % 1009 {
                        0 if i < 60_000 => [f64::NAN, -0.0, 0.0, f64::INFINITY][(i / 1009) % 4],
                        _ if i == 70_001 => f64::NEG_INFINITY,
                        _ => (i as f64).sqrt() - 300.0,
                    },
                ))),
                Arc::new(Float32Array::from_iter_values((start..end).map(|i| {
                    if (40_000..60_000).contains(&i) {
                        f32::NAN
                    } else {
                        i as f32
                    }
                }))),
                Arc::new(UInt64Array::from_iter_values(
                    (start..end).map(|i| u64::MAX - (i as u64 / 1000) % 24),
                )),
                // Signed, no nulls (read in place), spread too widely to be keyed densely:
                // -100,000..100,000 with i32::MIN and i32::MAX in the first page.
                Arc::new(Int32Array::from_iter_values((start..end).map(
                    |i| match i {
                        3 => i32::MIN,
                        5 => i32::MAX,
                        _ => (i as i64 * 2_654_435_761 % 200_000 - 100_000) as i32,
                    },
                ))),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        })
        .collect()
}

fn read(path: &Path) -> (RecordBatch, ParquetMetaData) {
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
    let builder =
        ParquetRecordBatchReaderBuilder::try_new_with_options(File::open(path).unwrap(), options)
            .unwrap();
    let metadata = builder.metadata().as_ref().clone();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
    (concat_batches(&schema, &batches).unwrap(), metadata)
}

/// Writes `input` with `write_parquet` and with parquet-rs's `ArrowWriter` (the same
/// properties), and returns both files' rows and metadata.
async fn write_both(
    input: &[RecordBatch],
    export: &ParquetExport,
    dir: &Path,
) -> [(RecordBatch, ParquetMetaData, u64); 2] {
    let ours = dir.join("ours.parquet");
    // One partition: DataFusion would otherwise deal the batches out to several and interleave
    // them (an export keeps its order through the ordered scan instead).
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    let df = ctx.read_batches(input.to_vec()).unwrap();
    let rows = write_parquet(df, &ours, export).await.unwrap();
    let total: usize = input.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, total as u64);

    let reference = dir.join("parquet-rs.parquet");
    let schema = input[0].schema();
    let mut options = export.writer_options().unwrap();
    options.arrow_schema(&schema);
    let props = WriterPropertiesBuilder::try_from(&options).unwrap().build();
    let mut writer =
        ArrowWriter::try_new(File::create(&reference).unwrap(), schema, Some(props)).unwrap();
    for batch in input {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
    [ours, reference].map(|p| {
        let (rows, metadata) = read(&p);
        (rows, metadata, std::fs::metadata(&p).unwrap().len())
    })
}

fn bytes_of(stats: &Statistics) -> (Option<Vec<u8>>, Option<Vec<u8>>, Option<u64>) {
    (
        stats.min_bytes_opt().map(<[u8]>::to_vec),
        stats.max_bytes_opt().map(<[u8]>::to_vec),
        stats.null_count_opt(),
    )
}

/// Checks every page of every column in the column index against the rows it covers.
fn check_column_index(rows: &RecordBatch, metadata: &ParquetMetaData) {
    let column_index = metadata.column_index().expect("a column index");
    let offset_index = metadata.offset_index().expect("an offset index");
    let mut first_row = 0;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for (c, column) in rows.columns().iter().enumerate() {
            if !matches!(
                column.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) {
                check_numeric_column_index(
                    &column_index[g][c],
                    &offset_index[g][c],
                    column,
                    first_row,
                    group.num_rows() as usize,
                    &format!("rg {g} col {c}"),
                );
                continue;
            }
            let ColumnIndexMetaData::BYTE_ARRAY(index) = &column_index[g][c] else {
                panic!("row group {g} column {c}: {:?}", column_index[g][c]);
            };
            let pages = offset_index[g][c].page_locations();
            for (p, page) in pages.iter().enumerate() {
                let start = first_row + page.first_row_index as usize;
                let end = first_row
                    + pages
                        .get(p + 1)
                        .map_or(group.num_rows() as usize, |n| n.first_row_index as usize);
                let values =
                    arrow::compute::cast(&column.slice(start, end - start), &DataType::Utf8)
                        .unwrap();
                let values = values.as_string::<i32>();
                let present: Vec<&[u8]> = values.iter().flatten().map(str::as_bytes).collect();
                let nulls = values.null_count() as i64;
                assert_eq!(index.null_count(p), Some(nulls), "rg {g} col {c} page {p}");
                if present.is_empty() {
                    assert!(index.is_null_page(p));
                    continue;
                }
                let (min, max) = (present.iter().min(), present.iter().max());
                let truncated = max.is_some_and(|m| m.len() > 64);
                if !truncated {
                    assert_eq!(index.min_value(p), min.copied(), "rg {g} col {c} page {p}");
                    assert_eq!(index.max_value(p), max.copied(), "rg {g} col {c} page {p}");
                }
            }
        }
        first_row += group.num_rows() as usize;
    }
}

/// The smallest and largest value of `values` as a column index stores them (little-endian
/// bytes), by parquet-rs's rules: NaN skipped, a zero minimum as -0.0, a zero maximum as +0.0.
fn numeric_bounds(values: &ArrayRef) -> Option<(Vec<u8>, Vec<u8>)> {
    fn bounds<T: PartialOrd + Copy>(
        values: impl Iterator<Item = T>,
        bytes: impl Fn(T, bool) -> Vec<u8>,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        #[allow(clippy::eq_op)]
        let mut present = values.filter(|v| v == v);
        let first = present.next()?;
        let (min, max) = present.fold((first, first), |(min, max), v| {
            (if v < min { v } else { min }, if v > max { v } else { max })
        });
        Some((bytes(min, false), bytes(max, true)))
    }
    let float = |v: f64, max: bool| {
        if v == 0.0 && !max {
            -0.0
        } else if v == 0.0 {
            0.0
        } else {
            v
        }
    };
    match values.data_type() {
        DataType::Int8 => bounds(
            values.as_primitive::<Int8Type>().iter().flatten(),
            |v, _| i32::from(v).to_le_bytes().to_vec(),
        ),
        DataType::Int32 => bounds(
            values.as_primitive::<Int32Type>().iter().flatten(),
            |v, _| v.to_le_bytes().to_vec(),
        ),
        DataType::UInt32 => bounds(
            values.as_primitive::<UInt32Type>().iter().flatten(),
            |v, _| v.to_le_bytes().to_vec(),
        ),
        DataType::Int64 => bounds(
            values.as_primitive::<Int64Type>().iter().flatten(),
            |v, _| v.to_le_bytes().to_vec(),
        ),
        DataType::UInt64 => bounds(
            values.as_primitive::<UInt64Type>().iter().flatten(),
            |v, _| v.to_le_bytes().to_vec(),
        ),
        DataType::Float32 => bounds(
            values.as_primitive::<Float32Type>().iter().flatten(),
            |v, max| (float(f64::from(v), max) as f32).to_le_bytes().to_vec(),
        ),
        DataType::Float64 => bounds(
            values.as_primitive::<Float64Type>().iter().flatten(),
            |v, max| float(v, max).to_le_bytes().to_vec(),
        ),
        other => panic!("{other}"),
    }
}

/// Checks every page of a numeric column in the column index against the rows it covers.
fn check_numeric_column_index(
    index: &ColumnIndexMetaData,
    offsets: &parquet::file::page_index::offset_index::OffsetIndexMetaData,
    column: &ArrayRef,
    first_row: usize,
    group_rows: usize,
    at: &str,
) {
    let pages = offsets.page_locations();
    if matches!(index, ColumnIndexMetaData::NONE) {
        // parquet-rs writes no column index for a chunk with a page of only NaN.
        return;
    }
    for (p, page) in pages.iter().enumerate() {
        let start = first_row + page.first_row_index as usize;
        let end = first_row
            + pages
                .get(p + 1)
                .map_or(group_rows, |n| n.first_row_index as usize);
        let values = column.slice(start, end - start);
        let want = numeric_bounds(&values);
        let (min, max, nulls) = match index {
            ColumnIndexMetaData::INT32(i) => (
                i.min_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.max_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.null_count(p),
            ),
            ColumnIndexMetaData::INT64(i) => (
                i.min_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.max_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.null_count(p),
            ),
            ColumnIndexMetaData::FLOAT(i) => (
                i.min_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.max_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.null_count(p),
            ),
            ColumnIndexMetaData::DOUBLE(i) => (
                i.min_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.max_value(p).map(|v| v.to_le_bytes().to_vec()),
                i.null_count(p),
            ),
            other => panic!("{at}: {other:?}"),
        };
        assert_eq!(nulls, Some(values.null_count() as i64), "{at} page {p}");
        assert_eq!(min.zip(max), want, "{at} page {p}");
    }
}

async fn compare(string_type: DataType, compression: ParquetCompression, rows: usize) {
    let dir = tempfile::tempdir().unwrap();
    let input = batches(&string_type, rows, 8192);
    let export = ParquetExport {
        compression,
        // Over 131,072 rows: the unique doubles outgrow the 1 MiB dictionary in the first row
        // group (ours writes it PLAIN, parquet-rs falls back part way) and fit in the second.
        row_group_size: Some(150_000),
        // Besides the index, integers with nulls and with deltas that wrap.
        delta_encoded: vec!["i".into(), "small".into(), "big".into()],
        metadata: vec![("zarr.store".into(), "test".into())],
        parallelism: Some(3),
        ..ParquetExport::default()
    };
    let [
        (ours, ours_meta, ours_size),
        (theirs, theirs_meta, theirs_size),
    ] = write_both(&input, &export, dir.path()).await;
    let what = format!("{string_type} {compression:?}");
    assert_eq!(ours.schema(), theirs.schema(), "{what}");
    let want = concat_batches(&input[0].schema(), &input).unwrap();
    for (c, field) in want.schema().fields().iter().enumerate() {
        for (name, got) in [("ours", &ours), ("parquet-rs", &theirs)] {
            let (got, want) = (got.column(c), want.column(c));
            if let Some(row) = (0..want.len()).find(|&r| got.slice(r, 1) != want.slice(r, 1)) {
                panic!(
                    "{what}: {name}'s {} differs first at row {row}: {:?} vs {:?}",
                    field.name(),
                    got.slice(row, 1),
                    want.slice(row, 1)
                );
            }
        }
    }
    assert_eq!(ours_meta.num_row_groups(), theirs_meta.num_row_groups());
    let kv = ours_meta.file_metadata().key_value_metadata().unwrap();
    assert!(kv.iter().any(|e| e.key == "zarr.store"));
    assert!(kv.iter().any(|e| e.key == "ARROW:schema"));
    for (g, (a, b)) in ours_meta
        .row_groups()
        .iter()
        .zip(theirs_meta.row_groups())
        .enumerate()
    {
        assert_eq!(a.num_rows(), b.num_rows());
        for (x, y) in a.columns().iter().zip(b.columns()) {
            let name = x.column_path().string();
            let at = format!("{what} row group {g} column {name}");
            assert_eq!(x.num_values(), y.num_values(), "{at}");
            assert_eq!(x.compression(), y.compression(), "{at}");
            let (xs, ys) = (x.statistics().unwrap(), y.statistics().unwrap());
            assert_eq!(bytes_of(xs), bytes_of(ys), "{at}");
            assert_eq!(
                xs.is_min_max_backwards_compatible(),
                ys.is_min_max_backwards_compatible(),
                "{at}"
            );
            let encodings = |c: &parquet::file::metadata::ColumnChunkMetaData| {
                let mut e: Vec<Encoding> = c.encodings().collect();
                e.sort_by_key(|e| *e as i32);
                e
            };
            if name == "unique_f64" && g == 0 && a.num_rows() > 131_072 {
                // Ours: PLAIN throughout; parquet-rs: a dictionary, then PLAIN.
                assert!(x.dictionary_page_offset().is_none(), "{at}");
                assert_eq!(encodings(x), [Encoding::PLAIN, Encoding::RLE], "{at}");
                assert!(y.dictionary_page_offset().is_some(), "{at}");
                continue;
            }
            assert_eq!(
                x.dictionary_page_offset().is_some(),
                y.dictionary_page_offset().is_some(),
                "{at}"
            );
            assert_eq!(encodings(x), encodings(y), "{at}");
            assert_eq!(
                x.unencoded_byte_array_data_bytes(),
                y.unencoded_byte_array_data_bytes(),
                "{at}"
            );
            assert_eq!(
                x.definition_level_histogram(),
                y.definition_level_histogram(),
                "{at}"
            );
        }
    }
    check_column_index(&ours, &ours_meta);
    // Which encoder wrote a chunk shows in its page boundaries: ours cuts pages at exactly
    // `data_page_row_count_limit` (20,000) rows, parquet-rs after whole write batches (20,480).
    // `label` and `code` are ours; `long` (statistics over 64 bytes) and `unique` (a dictionary
    // over 1 MiB) fell back to parquet-rs.
    let second_page = |metadata: &ParquetMetaData, column: usize| {
        metadata.offset_index().unwrap()[0][column].page_locations()[1].first_row_index
    };
    // Of the numbers, all are ours but `nan_page` in the first row group (a page of only NaN).
    let mut columns = vec![(1, true), (2, true), (3, false), (4, false)];
    columns.extend([
        (5, true),
        (6, true),
        (7, true),
        (8, true),
        (9, true),
        (10, false),
        (11, true),
        (12, true),
    ]);
    for (column, ours_wrote) in columns {
        assert_eq!(
            second_page(&ours_meta, column) == 20_000,
            ours_wrote,
            "{what} {column}"
        );
        assert_ne!(second_page(&theirs_meta, column), 20_000);
    }
    let ratio = ours_size as f64 / theirs_size as f64;
    assert!(
        (0.9..1.05).contains(&ratio),
        "{what}: {ours_size} vs {theirs_size} bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_match_parquet_rs_for_every_codec() {
    for compression in [
        ParquetCompression::Zstd,
        ParquetCompression::Snappy,
        ParquetCompression::Lz4,
        ParquetCompression::Gzip,
        ParquetCompression::None,
    ] {
        compare(DataType::Utf8, compression, 250_000).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_string_type_matches_parquet_rs() {
    for string_type in [DataType::LargeUtf8, DataType::Utf8View] {
        compare(string_type, ParquetCompression::Zstd, 120_000).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_and_single_row_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = SessionContext::new();
    let input = batches(&DataType::Utf8, 1, 8192);
    let out = dir.path().join("one.parquet");
    let df = ctx.read_batches(input.clone()).unwrap();
    let rows = write_parquet(df, &out, &ParquetExport::default())
        .await
        .unwrap();
    assert_eq!(rows, 1);
    assert_eq!(read(&out).0, input[0]);

    let empty = dir.path().join("empty.parquet");
    let df = ctx.read_batches(input).unwrap().limit(0, Some(0)).unwrap();
    let rows = write_parquet(df, &empty, &ParquetExport::default())
        .await
        .unwrap();
    assert_eq!(rows, 0);
    let (rows, metadata) = read(&empty);
    assert_eq!((rows.num_rows(), metadata.num_row_groups()), (0, 0));
    assert_eq!(rows.schema().field(1).name(), "label");
}

/// The plan's text (EXPLAIN's physical plan) of `sql`.
async fn physical_plan(ctx: &SessionContext, sql: &str) -> String {
    let explained = ctx.sql(&format!("EXPLAIN {sql}")).await.unwrap();
    let batches = explained.collect().await.unwrap();
    arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_to_one_local_file_goes_through_our_writer() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    datafusion_zarr::register(&ctx);
    let input = batches(&DataType::Utf8, 60_000, 8192);
    ctx.register_batch("t", concat_batches(&input[0].schema(), &input).unwrap())
        .unwrap();
    let want = concat_batches(&input[0].schema(), &input).unwrap();

    // A single file: our sink, the rows in the order asked, that order in the footer.
    let file = dir.path().join("copy.parquet");
    let sql = format!(
        "COPY (SELECT * FROM t ORDER BY i) TO '{}' OPTIONS ('format.max_row_group_size' '25000')",
        file.display()
    );
    let plan = physical_plan(&ctx, &sql).await;
    assert!(plan.contains("ZarrParquetSink(file="), "{plan}");
    let done = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let count = done[0]
        .column(0)
        .as_primitive::<arrow::datatypes::UInt64Type>();
    assert_eq!(count.value(0), 60_000);
    let (rows, metadata) = read(&file);
    assert_eq!(metadata.num_row_groups(), 3);
    assert_eq!(rows.columns(), want.columns());
    let sorting = metadata.row_group(0).sorting_columns().unwrap();
    assert_eq!(
        (sorting.len(), sorting[0].column_idx, sorting[0].descending),
        (1, 0, false)
    );
    // The sort key, an integer, is delta-encoded without a dictionary, as exports write it.
    let index = metadata.row_group(0).column(0);
    assert!(index.dictionary_page_offset().is_none());
    assert!(
        index
            .encodings()
            .any(|e| e == Encoding::DELTA_BINARY_PACKED)
    );
    // Our encoder wrote the strings (see `compare` on page boundaries).
    let pages = metadata.offset_index().unwrap()[0][2].page_locations();
    assert_eq!(pages[1].first_row_index, 20_000);
    // The statement's options reach the writer.
    assert!(matches!(
        metadata.row_group(0).column(2).compression(),
        parquet::basic::Compression::ZSTD(_)
    ));

    // A directory, or partitioned output: DataFusion's sink, as before.
    let directory = dir.path().join("parts");
    let sql = format!("COPY t TO '{}/' STORED AS PARQUET", directory.display());
    let plan = physical_plan(&ctx, &sql).await;
    assert!(!plan.contains("ZarrParquetSink"), "{plan}");
    ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let written: usize = std::fs::read_dir(&directory)
        .unwrap()
        .map(|f| read(&f.unwrap().path()).0.num_rows())
        .sum();
    assert_eq!(written, 60_000);

    // Reading Parquet through the wrapped format is DataFusion's.
    let sql = format!(
        "CREATE EXTERNAL TABLE back STORED AS PARQUET LOCATION '{}'",
        file.display()
    );
    ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let back = ctx
        .sql("SELECT count(*), count(label), max(code) FROM back WHERE i >= 100")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = arrow::util::pretty::pretty_format_batches(&back)
        .unwrap()
        .to_string();
    let labels =
        want.column(1).slice(100, 59_900).len() - want.column(1).slice(100, 59_900).null_count();
    assert!(text.contains(&format!("| 59900    | {labels}")), "{text}");
}

//! Hundreds of random predicates, from a fixed seed, over corpus stores and fixtures, with
//! pushdown on and off (chunk pruning on dimension columns, string predicates evaluated on
//! UTF-32 code units, predicates on data variables evaluated on their decoded values before the
//! other columns are read, and, for the queries given a TopK or a join, dynamic filters pruning
//! while they run): the results must be identical, every `fill_as_null` and
//! `invalid_utf32` mode, NULL and fill-value case included.
//!
//! One deliberate difference: in `invalid_utf32 = 'error'` mode, data that pushdown skips (a
//! pruned chunk, or the other columns of a chunk where no row passes) is never read, so its
//! invalid code units cannot fail the query, as a Parquet reader does not validate row groups
//! it skips. Where pushdown off fails, pushdown on must fail the same way or succeed.

use arrow::util::pretty::pretty_format_batches;

use zarr_test_support::*;

/// A table to query: location, options, its dimension columns with their lengths, extra atoms,
/// and the columns that order its rows without ties when it has no dimension columns.
struct Target {
    store: String,
    order: Option<&'static str>,
    options: &'static str,
    dims: Vec<(&'static str, u64)>,
    extra: Vec<&'static str>,
}

/// The fixed_length_utf32 columns of a table and some of their values (read with pushdown off).
async fn string_columns(t: &Target) -> Vec<(String, Vec<String>)> {
    let ctx = context();
    let sql = format!(
        "SELECT * FROM read_zarr('{}', ''{}, 'pushdown', 'false')",
        t.store, t.options
    );
    let Ok(df) = ctx.sql(&sql).await else {
        return Vec::new();
    };
    let names: Vec<String> = df
        .schema()
        .fields()
        .iter()
        .filter(|f| f.data_type() == &arrow::datatypes::DataType::Utf8)
        .map(|f| f.name().clone())
        .collect();
    let Ok(batches) = df.collect().await else {
        return names.into_iter().map(|n| (n, Vec::new())).collect();
    };
    // The partitions' batches come in any order: the samples are taken from the values sorted,
    // so that the same seed draws the same queries on every run.
    names
        .into_iter()
        .map(|n| {
            let mut all: Vec<String> = to_json(column(&batches, &n).as_ref())
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            all.sort_unstable();
            let values: Vec<String> = all.into_iter().step_by(7).take(30).collect();
            (n, values)
        })
        .collect()
}

fn atom(rng: &mut Rng, t: &Target) -> String {
    if !t.extra.is_empty() && rng.below(5) == 0 {
        return t.extra[rng.below(t.extra.len() as u64) as usize].to_string();
    }
    let (d, len) = t.dims[rng.below(t.dims.len() as u64) as usize];
    let v = |rng: &mut Rng| rng.below(len + 3);
    match rng.below(7) {
        0 => format!("{d} = {}", v(rng)),
        1 => format!("{d} < {}", v(rng)),
        2 => format!("{d} >= {}", v(rng)),
        3 => format!("{d} <= {}", v(rng)),
        4 => {
            let a = v(rng);
            format!("{d} BETWEEN {a} AND {}", a + rng.below(len / 3 + 2))
        }
        5 => format!("{d} IN ({}, {}, {})", v(rng), v(rng), v(rng)),
        _ => format!("{d} <> {}", v(rng)),
    }
}

/// A predicate on a string column, with a literal from the data or a made-up one.
fn string_atom(rng: &mut Rng, column: &str, pool: &[String]) -> String {
    let made_up = [
        "", "a", "ma", "n/a", "ST-01", "é", "日本", "zzz", "r1", "\u{FFFD}",
    ];
    let lit = if !pool.is_empty() && rng.below(3) > 0 {
        pool[rng.below(pool.len() as u64) as usize].clone()
    } else {
        made_up[rng.below(made_up.len() as u64) as usize].to_string()
    };
    let prefix: String = lit.chars().take(1 + rng.below(3) as usize).collect();
    // A piece from inside the literal, and a pattern with `_` in place of some characters.
    let chars: Vec<char> = lit.chars().collect();
    let from = rng.below(chars.len() as u64 + 1) as usize;
    let to = (from + 1 + rng.below(3) as usize).min(chars.len());
    let middle: String = chars[from.min(to)..to].iter().collect();
    let blanked: String = chars
        .iter()
        .map(|&c| if rng.below(3) == 0 { '_' } else { c })
        .collect();
    let [lit, prefix, middle, blanked] =
        [lit, prefix, middle, blanked].map(|s| s.replace('\'', "''"));
    let many: Vec<String> = (0..12)
        .map(|_| {
            let l = &pool.get(rng.below(pool.len() as u64) as usize);
            format!("'{}'", l.map_or("x", |s| s.as_str()).replace('\'', "''"))
        })
        .collect();
    match rng.below(16) {
        0 => format!("{column} = '{lit}'"),
        1 => format!("{column} <> '{lit}'"),
        2 => format!("{column} IN ('{lit}', '{prefix}', 'n/a')"),
        3 => format!("{column} LIKE '{prefix}%'"),
        4 => format!("starts_with({column}, '{prefix}')"),
        5 => format!("{column} < '{lit}'"),
        6 => format!("{column} >= '{lit}'"),
        7 => format!("'{lit}' > {column}"),
        9 => format!("{column} LIKE '%{middle}%'"),
        10 => format!("{column} NOT LIKE '%{middle}%'"),
        11 => format!("{column} LIKE '{blanked}'"),
        12 => format!("{column} LIKE '%{middle}'"),
        13 => format!("{column} LIKE '_%{middle}%_'"),
        14 => format!("{column} IN ({}, '{lit}')", many.join(", ")),
        _ => format!("{column} <= '{prefix}'"),
    }
}

fn predicate(rng: &mut Rng, t: &Target) -> String {
    let mut p = atom(rng, t);
    for _ in 0..rng.below(3) {
        let op = if rng.below(3) == 0 { "OR" } else { "AND" };
        p = format!("({p}) {op} ({})", atom(rng, t));
    }
    if rng.below(6) == 0 {
        p = format!("NOT ({p})");
    }
    p
}

async fn run(sql: &str) -> Result<String, String> {
    let ctx = context();
    match ctx.sql(sql).await {
        Ok(df) => match df.collect().await {
            Ok(b) => Ok(pretty_format_batches(&b).unwrap().to_string()),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushdown_never_changes_results() {
    let station_atoms = vec![
        "station = 'ST-015'",
        "station < 'ST-010'",
        "station IN ('ST-003', 'ST-026', 'nope')",
        "station >= 'ST-020' AND label LIKE '%a%'",
        "value > 0",
    ];
    let targets = vec![
        Target {
            store: corpus_store("01_1d_le_uncompressed"),
            order: None,
            options: "",
            dims: vec![("dim_0", 103)],
            extra: vec!["value LIKE 'a%'", "length(value) > 5"],
        },
        Target {
            store: corpus_store("06_2d_transpose_dimnames"),
            order: None,
            options: "",
            dims: vec![("row", 37), ("col", 23)],
            extra: vec!["value LIKE '%ar%'"],
        },
        Target {
            store: corpus_store("07_sharding_index_end"),
            order: None,
            options: "",
            dims: vec![("dim_0", 250)],
            extra: vec!["value = ''"],
        },
        Target {
            store: corpus_store("08_sharding_index_start"),
            order: None,
            options: ", 'fill_as_null', 'true'",
            dims: vec![("y", 30), ("x", 20)],
            extra: vec!["value IS NULL"],
        },
        Target {
            store: corpus_store("09_fill_value_missing_chunks"),
            order: None,
            options: ", 'fill_as_null', 'true'",
            dims: vec![("dim_0", 50)],
            extra: vec!["value IS NULL", "value = ''"],
        },
        Target {
            store: corpus_store("09_fill_value_missing_chunks"),
            order: None,
            options: "",
            dims: vec![("dim_0", 50)],
            extra: vec!["value = 'n/a'"],
        },
        Target {
            store: corpus_store("14_chunk_key_encoding_v2_dot"),
            order: None,
            options: "",
            dims: vec![("dim_0", 9), ("dim_1", 7)],
            extra: vec![],
        },
        Target {
            store: corpus_store("16_zarr_v2_U12_2d_blosc_fill"),
            order: None,
            options: ", 'fill_as_null', 'true'",
            dims: vec![("dim_0", 11), ("dim_1", 6)],
            extra: vec!["value IS NOT NULL"],
        },
        Target {
            store: corpus_store("13_group_consolidated_metadata"),
            order: None,
            options: "",
            dims: vec![],
            extra: station_atoms.clone(),
        },
        // Monotonic numeric coordinates (binary search): time ascending, level descending.
        Target {
            store: fixture("monotonic.zarr"),
            order: None,
            options: "",
            dims: vec![("time", 50), ("level", 1000)],
            extra: vec![
                "level IN (850, 100)",
                "time BETWEEN 10 AND 14.5",
                "time > 12.25 AND level <= 700",
                "label LIKE 't1%'",
                "temp > 50",
                "time IN (0.5, 49.5, 60)",
            ],
        },
        Target {
            store: fixture("mixed_chunks.zarr"),
            order: None,
            options: "",
            dims: vec![("y", 10), ("x", 6)],
            extra: vec!["b % 3 = 0", "a LIKE 'a1%'"],
        },
        Target {
            store: fixture("fills.zarr"),
            order: None,
            options: ", 'fill_as_null', 'true'",
            dims: vec![("i", 8)],
            extra: vec!["ints IS NULL", "floats > 2"],
        },
        // Predicates on data variables as the table shows them (CF decoded: packed numbers,
        // times and durations, masked integers), evaluated on each unit's decoded values
        // before the other columns are read.
        Target {
            store: fixture("cf_v3.zarr"),
            order: Some("time, station"),
            options: "",
            dims: vec![],
            extra: vec![
                "temp > 290",
                "temp IS NULL",
                "flags IS NOT NULL AND level IN (1, 3)",
                "packed_time > TIMESTAMP '2000-01-01T03:00:00'",
                "lag > INTERVAL '1 second'",
                "model_day BETWEEN 0 AND 50",
                "raw_u < 65535",
                "NOT (temp < 289.5)",
                "signed = 1 OR site LIKE 'B%'",
                "temp * 2 > level",
            ],
        },
        Target {
            store: fixture("cf_v2.zarr"),
            order: Some("time, station"),
            options: ", 'fill_as_null', 'true'",
            dims: vec![],
            extra: vec![
                "temp >= 293.4",
                "level IS NULL",
                "raw_u IS NULL OR signed < 0",
                "when < TIMESTAMP '1850-01-02T00:00:00'",
                "lead <> INTERVAL '90 seconds'",
                "coalesce(temp, 0) < 1",
            ],
        },
        Target {
            store: fixture("invalid_utf32.zarr"),
            order: None,
            options: ", 'invalid_utf32', 'replace'",
            dims: vec![("dim_0", 6)],
            extra: vec!["value LIKE '%\u{FFFD}%'"],
        },
        Target {
            store: fixture("invalid_utf32.zarr"),
            order: None,
            options: ", 'invalid_utf32', 'null'",
            dims: vec![("dim_0", 6)],
            extra: vec!["value IS NULL"],
        },
        Target {
            store: fixture("invalid_utf32.zarr"),
            order: None,
            options: "",
            dims: vec![("dim_0", 6)],
            extra: vec![],
        },
    ];
    let mut rng = Rng(0x005E_ED0F_2A11_C0DE);
    let mut compared = 0;
    let mut succeeded = 0;
    // Queries that failed with pushdown on and off: on the invalid_utf32 target (how many of
    // its TopK queries reach the invalid chunk depends on the partitions' timing), and others.
    let (mut invalid_failures, mut other_failures, mut invalid_queries) = (0, 0, 0);
    for t in &targets {
        let strings = string_columns(t).await;
        let n = if t.dims.is_empty() { 20 } else { 30 };
        for _ in 0..n {
            let pred = if !strings.is_empty() && rng.below(2) == 0 {
                let (col, pool) = &strings[rng.below(strings.len() as u64) as usize];
                let mut p = string_atom(&mut rng, col, pool);
                match rng.below(4) {
                    0 if !t.dims.is_empty() => p = format!("({p}) AND ({})", atom(&mut rng, t)),
                    1 => p = format!("({p}) AND ({})", string_atom(&mut rng, col, pool)),
                    _ => {}
                }
                p
            } else if t.dims.is_empty() {
                let mut p = t.extra[rng.below(t.extra.len() as u64) as usize].to_string();
                if rng.below(2) == 0 {
                    p = format!(
                        "({p}) OR ({})",
                        t.extra[rng.below(t.extra.len() as u64) as usize]
                    );
                }
                p
            } else {
                predicate(&mut rng, t)
            };
            let order = if t.dims.is_empty() {
                t.order.unwrap_or("station").to_string()
            } else {
                t.dims.iter().map(|d| d.0).collect::<Vec<_>>().join(", ")
            };
            // Some queries also get a TopK (ORDER BY … LIMIT) or a hash join on the first
            // dimension, whose dynamic filters prune chunks while the query runs.
            let variant = rng.below(4);
            let (direction, limit) = match variant {
                0 => (
                    if rng.below(2) == 0 { " DESC" } else { "" },
                    format!(" LIMIT {}", 1 + rng.below(20)),
                ),
                _ => ("", String::new()),
            };
            let order = order
                .split(", ")
                .map(|c| format!("{c}{direction}"))
                .collect::<Vec<_>>()
                .join(", ");
            let join = match (variant, t.dims.first()) {
                (1, Some((d, len))) => {
                    let keys: Vec<String> = (0..3)
                        .map(|_| format!("({})", rng.below(len + 3)))
                        .collect();
                    format!(" JOIN (VALUES {}) AS v(k) ON t.{d} = v.k", keys.join(", "))
                }
                _ => String::new(),
            };
            let query = |pushdown: &str| {
                format!(
                    "SELECT t.* FROM read_zarr('{}', ''{}, 'pushdown', '{pushdown}') AS t{join} WHERE {pred} ORDER BY {order}{limit}",
                    t.store, t.options
                )
            };
            let on = run(&query("true")).await;
            let off = run(&query("false")).await;
            match (&on, &off) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{}", query("true"));
                    succeeded += 1;
                }
                // Plans printed in an error differ (the scan shows its pushed filters).
                (Err(a), Err(b)) => {
                    assert_eq!(
                        a.split("Plan: [").next(),
                        b.split("Plan: [").next(),
                        "{}",
                        query("true")
                    );
                    if a.contains("is not a Unicode scalar value") {
                        invalid_failures += 1;
                    } else {
                        other_failures += 1;
                    }
                }
                (Ok(_), Err(e)) => assert!(
                    e.contains("is not a Unicode scalar value"),
                    "pushdown on succeeded where off failed: {e}\n{}",
                    query("true")
                ),
                (Err(e), Ok(_)) => panic!(
                    "pushdown on failed where off succeeded: {e}\n{}",
                    query("true")
                ),
            }
            compared += 1;
            if t.store.contains("invalid_utf32") {
                invalid_queries += 1;
            }
        }
    }
    assert!(compared >= 400, "{compared}");
    // Only the invalid_utf32 = 'error' target fails; every other query must run (with one known
    // exception, the same with pushdown on and off: DataFusion 55 rejects a join whose probe side
    // is filtered to a constant, e.g. `WHERE dim_0 <= 0` on a UInt64, with a SanityCheckPlan
    // error about the ORDER BY).
    assert!(
        other_failures <= 5,
        "{other_failures} queries failed for another reason"
    );
    assert!(
        succeeded + invalid_queries >= compared - other_failures,
        "{succeeded} of {compared} queries succeeded; {invalid_failures} of the \
         {invalid_queries} on the invalid target failed"
    );
}

//! The bodies of the fuzz targets (`fuzz/`), kept in the library so that the regression test
//! (`tests/it/fuzz_regressions.rs`) runs every saved input through exactly the same code.
//! Each function must return normally, or with an error, on any input; a panic is a bug.
//! `metadata`, `chunk`, `kernel` and `references` call the parsing, decoding and transcoding
//! directly; `cf` and `vlen` write an array to an in-memory store and scan it as a query does.

use std::sync::Arc;

use arrow::array::Array;
use datafusion::catalog::TableProvider;
use datafusion::execution::{SessionState, SessionStateBuilder, TaskContext};
use datafusion::prelude::SessionConfig;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};

use crate::limits::Limits;
use crate::node::{ArrayNode, parse_array};
use crate::options::{InvalidUtf32, StringType, ZarrOptions};
use crate::provider::ZarrTable;
use crate::scan::{Elements, decode_chunk};

/// Kerchunk reference sets: any bytes as a JSON reference set (spec version 0 or 1, with
/// templates and generators, at most 10,000 references), its URLs resolved and checked
/// against the allowed places.
pub fn references(data: &[u8]) {
    crate::references::fuzz_parse(data, 10_000);
}

/// Metadata parsing: any bytes as a `zarr.json` (or `.zarray`), then the fill chunk of a
/// small array.
pub fn metadata(data: &[u8]) {
    let options = ZarrOptions {
        max_chunk_bytes: 1 << 20,
        ..ZarrOptions::default()
    };
    let Ok(node) = parse_array("fuzz://store", "a", data, &Limits::of(&options)) else {
        return;
    };
    if node.array.is_some() {
        let zeros = vec![0u64; node.shape.len()];
        let _ = decode_chunk(&node, &zeros, None, &Limits::of(&options));
    }
}

/// Array metadata the chunk target decodes its input with: the corpus' codec combinations.
const ARRAYS: &[&str] = &[
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"x","codecs":[{"name":"bytes","configuration":{"endian":"big"}},{"name":"zstd","configuration":{"level":3,"checksum":false}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"gzip","configuration":{"level":5}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"blosc","configuration":{"cname":"lz4","clevel":5,"shuffle":"shuffle","typesize":12,"blocksize":0}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":3,"checksum":false}},{"name":"crc32c"}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[4],"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":3,"checksum":false}}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[9,7],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":8}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4,3]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"bytes","configuration":{"endian":"little"}}]}"#,
    r#"{"zarr_format":2,"shape":[11,6],"chunks":[4,4],"dtype":"<U3","fill_value":null,"order":"F","filters":null,"dimension_separator":".","compressor":{"id":"zlib","level":1}}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"numcodecs.lz4","configuration":{"acceleration":1}}]}"#,
    r#"{"zarr_format":2,"shape":[9],"chunks":[4],"dtype":">U2","fill_value":"","order":"C","filters":null,"dimension_separator":".","compressor":{"id":"lz4","acceleration":1}}"#,
];

/// One chunk: the first byte picks an array (and an `invalid_utf32` mode), the rest is the
/// encoded chunk, decoded and transcoded.
pub fn chunk(data: &[u8]) {
    let Some((&pick, encoded)) = data.split_first() else {
        return;
    };
    let Some(node) = array(pick as usize % ARRAYS.len()) else {
        return;
    };
    let options = ZarrOptions {
        max_chunk_bytes: 1 << 20,
        invalid_utf32: [
            InvalidUtf32::Error,
            InvalidUtf32::Replace,
            InvalidUtf32::Null,
        ][(pick as usize / ARRAYS.len()) % 3],
        ..ZarrOptions::default()
    };
    let zeros = vec![0u64; node.shape.len()];
    let Ok(chunk) = decode_chunk(&node, &zeros, Some(encoded), &Limits::of(&options)) else {
        return;
    };
    if let Elements::Fixed { bytes, size } = &chunk.elements {
        let _ = zarr_utf32::to_utf8::<i32>(bytes, *size, options.invalid_utf32, None);
        let _ = zarr_utf32::to_utf8_view(bytes, *size, options.invalid_utf32, None);
        let _ = zarr_utf32::to_fixed_size_binary(bytes, *size, options.invalid_utf32, None);
    }
}

fn array(i: usize) -> Option<ArrayNode> {
    let limits = Limits::of(&ZarrOptions::default());
    parse_array("fuzz://store", "a", ARRAYS[i].as_bytes(), &limits).ok()
}

/// The transcoding kernels against the reference decoder: the first byte picks the element
/// width and the mode; any difference panics.
pub fn kernel(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let width = 4 * (1 + (pick as usize % 16));
    let mode = [
        InvalidUtf32::Error,
        InvalidUtf32::Replace,
        InvalidUtf32::Null,
    ][(pick as usize / 16) % 3];
    let input = &rest[..rest.len() - rest.len() % width];
    let expected = zarr_utf32::reference_decode(input, width, mode);
    let got = zarr_utf32::to_utf8::<i32>(input, width, mode, None)
        .map(|a| a.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>());
    assert_eq!(got, expected, "to_utf8 differs from the reference");
    let view = zarr_utf32::to_utf8_view(input, width, mode, None)
        .map(|a| a.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>());
    assert_eq!(view, expected, "to_utf8_view differs from the reference");
    // The raw code units: the same elements NULL (or the same error) as the reference.
    let fixed = zarr_utf32::to_fixed_size_binary(input, width, mode, None)
        .map(|a| (0..a.len()).map(|i| a.is_valid(i)).collect::<Vec<_>>());
    let valid = (expected.as_ref())
        .map(|v| v.iter().map(Option::is_some).collect::<Vec<_>>())
        .map_err(Clone::clone);
    assert_eq!(
        fixed, valid,
        "to_fixed_size_binary differs from the reference"
    );
}

/// A session, a Tokio runtime and (per input) an in-memory store: the `cf` and `vlen` targets
/// write an array's documents and chunks to the store and scan it as a table, through the same
/// opening, table model, decoding and conversion to Arrow as any query.
struct Scanner {
    runtime: tokio::runtime::Runtime,
    state: SessionState,
    task: Arc<TaskContext>,
}

thread_local! {
    static SCANNER: Option<Scanner> = Scanner::new();
}

impl Scanner {
    fn new() -> Option<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().ok()?;
        // Small batches: a chunk is converted in several row ranges, as a scan does.
        let config = SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(3);
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build();
        let task = state.task_ctx();
        Some(Self {
            runtime,
            state,
            task,
        })
    }

    /// Writes `objects` (key, bytes) to a fresh in-memory store, opens its root as a table
    /// under `options` and reads every row.
    fn scan(&self, objects: &[(&str, &[u8])], options: ZarrOptions) {
        let Ok(url) = url::Url::parse(MEMORY_STORE) else {
            return;
        };
        self.runtime.block_on(async {
            let memory = Arc::new(InMemory::new());
            for (key, bytes) in objects {
                let payload = PutPayload::from(bytes.to_vec());
                if memory.put(&ObjectPath::from(*key), payload).await.is_err() {
                    return;
                }
            }
            let runtime = self.state.runtime_env();
            runtime.register_object_store(&url, memory);
            let Ok(table) = ZarrTable::open(runtime, MEMORY_STORE, options).await else {
                return;
            };
            let Ok(plan) = table.scan(&self.state, None, &[], None).await else {
                return;
            };
            let partitions = plan.properties().output_partitioning().partition_count();
            for partition in 0..partitions {
                if let Ok(stream) = plan.execute(partition, Arc::clone(&self.task)) {
                    let _ = datafusion::physical_plan::common::collect(stream).await;
                }
            }
        });
    }
}

const MEMORY_STORE: &str = "memory:///";

/// Writes `objects` to a store and scans its root array as a table.
fn scan(objects: &[(&str, &[u8])], options: ZarrOptions) {
    SCANNER.with(|scanner| {
        if let Some(scanner) = scanner {
            scanner.scan(objects, options);
        }
    });
}

/// The string types a column may be read as.
const STRING_TYPES: [StringType; 4] = [
    StringType::Utf8,
    StringType::Utf8View,
    StringType::LargeUtf8,
    StringType::FixedSizeBinary,
];

/// The stored types of the `cf` target: the V3 `data_type`, the V2 `dtype` and the element
/// size; the last two are NumPy `S` (`S{k}`) and a netCDF character array (`S1`, `k` per
/// string), whose size is the string length.
const CF_TYPES: &[(&str, &str, usize)] = &[
    ("\"int8\"", "|i1", 1),
    ("\"int16\"", "<i2", 2),
    ("\"int32\"", "<i4", 4),
    ("\"int64\"", "<i8", 8),
    ("\"uint8\"", "|u1", 1),
    ("\"uint16\"", "<u2", 2),
    ("\"uint32\"", "<u4", 4),
    ("\"uint64\"", "<u8", 8),
    ("\"float16\"", "<f2", 2),
    ("\"float32\"", "<f4", 4),
    ("\"float64\"", "<f8", 8),
    ("S", "|S", 0),
    ("S1", "|S1", 0),
];

/// CF attributes as any JSON, on a stored number or bytes type, through the scan of a table.
///
/// Byte 0 picks the stored type (`CF_TYPES`), Zarr V2 or V3, the string type and whether
/// `decode_cf` is on; byte 1 the element count `n` (1–8), the string length `k` (1–16) and
/// `fill_as_null`. The next `n × size` bytes are the one chunk (raw, little-endian), the rest
/// the attributes: V3 `attributes` as written, or V2 `.zattrs`, whose `_FillValue` becomes the
/// `.zarray`'s `fill_value` as xarray writes it. Every dimension is named (a character array
/// is joined into strings only then).
pub fn cf(data: &[u8]) {
    let [pick, sizes, rest @ ..] = data else {
        return;
    };
    let (pick, sizes) = (usize::from(*pick), usize::from(*sizes));
    let (v3_type, v2_type, size) = CF_TYPES[pick % CF_TYPES.len()];
    let mode = pick / CF_TYPES.len();
    let v2 = mode % 2 == 1;
    let n = 1 + (sizes & 7);
    let k = 1 + ((sizes >> 3) & 15);
    let options = ZarrOptions {
        max_chunk_bytes: 1 << 20,
        string_type: STRING_TYPES[(mode / 2) % 4],
        decode_cf: mode / 8 != 1,
        fill_as_null: sizes & 0x80 != 0,
        ..ZarrOptions::default()
    };
    let characters = v3_type == "S1";
    let chunk_bytes = n * if size == 0 { k } else { size };
    if rest.len() < chunk_bytes {
        return;
    }
    let (chunk, attributes) = rest.split_at(chunk_bytes);
    let (shape, dims) = if characters {
        (format!("[{n},{k}]"), r#"["x","strlen"]"#)
    } else {
        (format!("[{n}]"), r#"["x"]"#)
    };
    if v2 {
        let dtype = match v3_type {
            "S" => format!("|S{k}"),
            _ => v2_type.to_string(),
        };
        let (fill, zattrs) = v2_attributes(attributes, dims);
        let zarray = format!(
            r#"{{"zarr_format":2,"shape":{shape},"chunks":{shape},"dtype":"{dtype}","fill_value":{fill},"order":"C","filters":null,"compressor":null,"dimension_separator":"."}}"#
        );
        let key = if characters { "0.0" } else { "0" };
        let objects = [
            (".zarray", zarray.as_bytes()),
            (".zattrs", zattrs.as_slice()),
            (key, chunk),
        ];
        scan(&objects, options);
    } else {
        let (data_type, fill, codec) = match (v3_type, size) {
            ("S", _) => (
                format!(
                    r#"{{"name":"null_terminated_bytes","configuration":{{"length_bytes":{k}}}}}"#
                ),
                "\"\"",
                r#"{"name":"bytes"}"#,
            ),
            ("S1", _) => (
                r#"{"name":"null_terminated_bytes","configuration":{"length_bytes":1}}"#.into(),
                "\"\"",
                r#"{"name":"bytes"}"#,
            ),
            (name, 1) => (name.to_string(), "0", r#"{"name":"bytes"}"#),
            (name, _) => (
                name.to_string(),
                "0",
                r#"{"name":"bytes","configuration":{"endian":"little"}}"#,
            ),
        };
        let mut document = format!(
            r#"{{"zarr_format":3,"node_type":"array","shape":{shape},"data_type":{data_type},"chunk_grid":{{"name":"regular","configuration":{{"chunk_shape":{shape}}}}},"chunk_key_encoding":{{"name":"default","configuration":{{"separator":"/"}}}},"fill_value":{fill},"codecs":[{codec}],"dimension_names":{dims},"attributes":"#
        )
        .into_bytes();
        document.extend_from_slice(attributes);
        document.push(b'}');
        let key = if characters { "c/0/0" } else { "c/0" };
        scan(&[("zarr.json", &document), (key, chunk)], options);
    }
}

/// A V2 array's `fill_value` and `.zattrs` from the `cf` target's attributes: `_FillValue`
/// moved to the fill value and `_ARRAY_DIMENSIONS` added when absent, as xarray writes them.
/// Attributes that are not a JSON object (or JSON Python's writer alone writes, `NaN`) are the
/// `.zattrs` as they are.
fn v2_attributes(attributes: &[u8], dims: &str) -> (String, Vec<u8>) {
    match serde_json::from_slice::<serde_json::Value>(attributes) {
        Ok(serde_json::Value::Object(mut map)) => {
            let fill = map
                .remove("_FillValue")
                .map_or_else(|| "null".to_string(), |f| f.to_string());
            if !map.contains_key("_ARRAY_DIMENSIONS") {
                let dims = serde_json::from_str(dims).unwrap_or_default();
                map.insert("_ARRAY_DIMENSIONS".into(), dims);
            }
            let zattrs = serde_json::Value::Object(map).to_string().into_bytes();
            (fill, zattrs)
        }
        _ => ("null".to_string(), attributes.to_vec()),
    }
}

/// The arrays of the `vlen` target: their metadata documents (key, text) and the keys of
/// their chunks, each of which holds the input.
struct VlenArray {
    documents: &'static [(&'static str, &'static str)],
    chunks: &'static [&'static str],
}

/// A V3 array as zarr-python writes `types.zarr/s` (7 elements, chunks of 3): its data type,
/// variable-length codec, the codecs after it and its attributes.
macro_rules! v3_vlen {
    ($data_type:literal, $codec:literal, $codecs:literal, $attributes:literal) => {
        concat!(
            r#"{"zarr_format":3,"node_type":"array","shape":[7],"data_type":""#,
            $data_type,
            r#"","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[3]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":""#,
            $codec,
            r#"","configuration":{}}"#,
            $codecs,
            r#"],"attributes":"#,
            $attributes,
            r#","dimension_names":["i"]}"#
        )
    };
}

/// A V2 `|O` array as zarr-python 2 writes `zarr2_group.zarr/words` (4 elements, chunks of 2):
/// its object codec (filter), fill value and compressor.
macro_rules! v2_vlen {
    ($filter:literal, $fill:literal, $compressor:literal) => {
        concat!(
            r#"{"zarr_format":2,"shape":[4],"chunks":[2],"dtype":"|O","fill_value":"#,
            $fill,
            r#","filters":[{"id":""#,
            $filter,
            r#""}],"order":"C","compressor":"#,
            $compressor,
            r#","dimension_separator":"."}"#
        )
    };
}

const V3_CHUNKS: &[&str] = &["c/0", "c/1", "c/2"];
const V2_CHUNKS: &[&str] = &["0", "1"];

const VLEN_ARRAYS: &[VlenArray] = &[
    VlenArray {
        documents: &[("zarr.json", v3_vlen!("string", "vlen-utf8", "", "{}"))],
        chunks: V3_CHUNKS,
    },
    VlenArray {
        documents: &[(
            "zarr.json",
            v3_vlen!(
                "string",
                "vlen-utf8",
                r#",{"name":"zstd","configuration":{"level":0,"checksum":false}}"#,
                "{}"
            ),
        )],
        chunks: V3_CHUNKS,
    },
    VlenArray {
        documents: &[(
            "zarr.json",
            v3_vlen!(
                "string",
                "vlen-utf8",
                r#",{"name":"gzip","configuration":{"level":5}}"#,
                "{}"
            ),
        )],
        chunks: V3_CHUNKS,
    },
    VlenArray {
        documents: &[(
            "zarr.json",
            v3_vlen!(
                "variable_length_bytes",
                "vlen-bytes",
                r#",{"name":"zstd","configuration":{"level":0,"checksum":false}}"#,
                "{}"
            ),
        )],
        chunks: V3_CHUNKS,
    },
    VlenArray {
        documents: &[(
            "zarr.json",
            v3_vlen!(
                "variable_length_bytes",
                "vlen-bytes",
                r#",{"name":"zstd","configuration":{"level":0,"checksum":false}}"#,
                r#"{"_Encoding":"utf-8"}"#
            ),
        )],
        chunks: V3_CHUNKS,
    },
    VlenArray {
        documents: &[(
            "zarr.json",
            v3_vlen!(
                "variable_length_bytes",
                "vlen-bytes",
                "",
                r#"{"_Encoding":"ascii"}"#
            ),
        )],
        chunks: V3_CHUNKS,
    },
    VlenArray {
        documents: &[(
            ".zarray",
            v2_vlen!(
                "vlen-utf8",
                "0",
                r#"{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0}"#
            ),
        )],
        chunks: V2_CHUNKS,
    },
    VlenArray {
        documents: &[(".zarray", v2_vlen!("vlen-utf8", "\"\"", "null"))],
        chunks: V2_CHUNKS,
    },
    VlenArray {
        documents: &[(
            ".zarray",
            v2_vlen!("vlen-utf8", "\"\"", r#"{"id":"zlib","level":1}"#),
        )],
        chunks: V2_CHUNKS,
    },
    // zarr-python 2's `|O` bytes (`numpy_types_v2.zarr/blob`).
    VlenArray {
        documents: &[(
            ".zarray",
            r#"{"zarr_format":2,"shape":[7],"chunks":[3],"dtype":"|O","fill_value":"","filters":[{"id":"vlen-bytes"}],"order":"C","compressor":{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0},"dimension_separator":"."}"#,
        )],
        chunks: &["0", "1", "2"],
    },
    // An array-to-array codec before the strings: the chain decodes the checked chunk again.
    VlenArray {
        documents: &[(
            "zarr.json",
            r#"{"zarr_format":3,"node_type":"array","shape":[3,2],"data_type":"string","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[3,2]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"vlen-utf8","configuration":{}}],"attributes":{},"dimension_names":["i","j"]}"#,
        )],
        chunks: &["c/0/0"],
    },
];

/// Variable-length string and bytes chunks (numcodecs' `vlen-utf8`/`vlen-bytes` framing: V3
/// `string` and `variable_length_bytes`, V2 `|O`), through the scan of a table. Byte 0 picks
/// the array (`VLEN_ARRAYS`), `fill_as_null`, `binary_as_string` and the string type; the
/// rest is the encoded chunk, stored at every chunk key of the array.
pub fn vlen(data: &[u8]) {
    let Some((&pick, encoded)) = data.split_first() else {
        return;
    };
    let pick = usize::from(pick);
    let array = &VLEN_ARRAYS[pick % VLEN_ARRAYS.len()];
    let mode = pick / VLEN_ARRAYS.len();
    let options = ZarrOptions {
        max_chunk_bytes: 1 << 20,
        fill_as_null: mode % 2 == 1,
        binary_as_string: (mode / 2) % 2 == 1,
        string_type: STRING_TYPES[(mode / 4) % 4],
        ..ZarrOptions::default()
    };
    let mut objects: Vec<(&str, &[u8])> = array
        .documents
        .iter()
        .map(|(key, text)| (*key, text.as_bytes()))
        .collect();
    objects.extend(array.chunks.iter().map(|key| (*key, encoded)));
    scan(&objects, options);
}

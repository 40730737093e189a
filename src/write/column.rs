//! Which array a column becomes: its Zarr data type, storage, CF attributes and NULL rule for
//! each Arrow type (as NumPy, zarr-python and xarray write them), and its metadata documents
//! in Zarr V3 (`zarr.json`) and V2 (`.zarray`, `.zattrs`) with the chosen codecs.

use crate::field_metadata;
use arrow::datatypes::{DataType, Field};
use serde_json::{Map, Value, json};

use super::options::{ChunkCompression, StringEncoding, WriteOptions, ZarrVersion};
use crate::cf::{self, CfDecoding, CfKind};
use crate::error::{Result, ZarrError};
use crate::node::ElementKind;

/// How a column's elements are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Storage {
    /// NumPy's fixed-size numbers and booleans: `size` bytes each, in native byte order.
    Fixed {
        /// Bytes per element.
        size: usize,
    },
    /// `fixed_length_utf32` (`<U`): its width is `string_length` or the longest string.
    Utf32,
    /// Variable-length UTF-8 (V3 `string`, V2 `|O` with `vlen-utf8`).
    VlenUtf8,
    /// Variable-length bytes (V3 `variable_length_bytes`, V2 `|O` with `vlen-bytes`).
    VlenBytes,
}

/// The width of a `fixed_length_utf32` element in bytes: 4 a code point, at least one code
/// unit (a string array of only empty strings is one code unit wide), saturating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Utf32Width(u64);

impl Utf32Width {
    /// The bytes of one code unit (UTF-32).
    pub(crate) const CODE_UNIT_BYTES: u64 = 4;

    /// The narrowest width: one code unit.
    pub(crate) const MIN: Self = Self(Self::CODE_UNIT_BYTES);

    /// The width of strings of up to `code_points` code points.
    pub(crate) fn of_code_points(code_points: u64) -> Self {
        Self(code_points.max(1).saturating_mul(Self::CODE_UNIT_BYTES))
    }

    /// The width of an existing array of `length_bytes` (a positive multiple of 4, as
    /// `node/validate.rs` requires).
    pub(crate) fn of_length_bytes(length_bytes: u64) -> Self {
        Self::of_code_points(length_bytes / Self::CODE_UNIT_BYTES)
    }

    /// In bytes (`length_bytes`).
    pub(crate) fn bytes(self) -> u64 {
        self.0
    }

    /// In code points (NumPy's `<U{n}`).
    pub(crate) fn code_points(self) -> u64 {
        self.0 / Self::CODE_UNIT_BYTES
    }
}

/// What a NULL becomes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NullRule {
    /// NaN (floats; NumPy's missing value).
    NaN,
    /// NumPy's NaT, the smallest `int64` (times and durations; xarray decodes it as NaT).
    NaT,
    /// The `null_value` option: these element bytes (native order), this fill value.
    Value {
        /// The element as stored.
        bytes: Vec<u8>,
        /// Its JSON form (`fill_value`, `_FillValue`).
        json: Value,
    },
    /// An error naming the column and row.
    Refused,
}

/// One column's array.
#[derive(Debug, Clone)]
pub(crate) struct ColumnSpec {
    /// The column and array name.
    pub name: String,
    /// The V3 data type name (`int32`, `fixed_length_utf32`, `string`, …).
    pub v3_type: &'static str,
    /// How elements are stored.
    pub storage: Storage,
    /// The Arrow type the column is cast to before storing (times to `Int64`, dictionaries to
    /// their values), if not its own.
    pub cast_to: Option<DataType>,
    /// What a NULL becomes.
    pub null: NullRule,
    /// Its attributes: CF's the writer sets (times' `units` and `calendar`, durations'
    /// `dtype`) over those its source array had (`keep_attributes`).
    pub attributes: Map<String, Value>,
    /// Strings: the width of its source array (`<U16` stays `<U16` where its strings fit;
    /// `keep_attributes`), the least the column is written at without `string_length`.
    pub source_width: Option<Utf32Width>,
    /// The CF encoding of its source array that its values are encoded with again
    /// (`keep_attributes`): times and durations counted in the source's `units`, packed
    /// numbers packed with its `scale_factor` and `add_offset`, exactly, in its stored type.
    pub cf: Option<CfDecoding>,
}

impl ColumnSpec {
    /// The column of an existing array named `name` whose elements are of `kind` (as zarrs
    /// reads them), for an append: its own data type and storage, values stored as they come
    /// (no cast; no attributes, the array has its own), a NULL as `null` says. `Err` says why
    /// such an array is not written.
    pub(crate) fn of_existing(
        name: &str,
        kind: &ElementKind,
        null: NullRule,
    ) -> std::result::Result<Self, &'static str> {
        let (v3_type, storage) = match kind {
            ElementKind::Utf32 { .. } => ("fixed_length_utf32", Storage::Utf32),
            ElementKind::String => ("string", Storage::VlenUtf8),
            ElementKind::VariableBytes => ("variable_length_bytes", Storage::VlenBytes),
            ElementKind::Bytes { .. } => return Err("NumPy S arrays are not appended to yet"),
            ElementKind::Primitive(t) => {
                let (v3_type, size) = fixed_type(t).ok_or("its type has no fixed width")?;
                (v3_type, Storage::Fixed { size })
            }
        };
        Ok(Self {
            name: name.to_string(),
            v3_type,
            storage,
            cast_to: None,
            null,
            attributes: Map::new(),
            source_width: None,
            cf: None,
        })
    }
}

/// The V3 data type and element size of fixed-size values of Arrow type `t`, as NumPy stores
/// them: times, dates and durations as `int64` (`datetime64`, `timedelta64`).
fn fixed_type(t: &DataType) -> Option<(&'static str, usize)> {
    Some(match t {
        DataType::Boolean => ("bool", 1),
        DataType::Int8 => ("int8", 1),
        DataType::Int16 => ("int16", 2),
        DataType::Int32 => ("int32", 4),
        DataType::Int64 => ("int64", 8),
        DataType::UInt8 => ("uint8", 1),
        DataType::UInt16 => ("uint16", 2),
        DataType::UInt32 => ("uint32", 4),
        DataType::UInt64 => ("uint64", 8),
        DataType::Float16 => ("float16", 2),
        DataType::Float32 => ("float32", 4),
        DataType::Float64 => ("float64", 8),
        DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64 | DataType::Duration(_) => {
            ("int64", 8)
        }
        _ => return None,
    })
}

/// The array of `field`, or the error naming its type.
pub(crate) fn column_spec(field: &Field, options: &WriteOptions) -> Result<ColumnSpec> {
    check_name(field.name())?;
    let value_type = match field.data_type() {
        DataType::Dictionary(_, values) => values.as_ref().clone(),
        other => other.clone(),
    };
    let (v3_type, storage) = match (fixed_type(&value_type), &value_type) {
        (Some((v3_type, size)), _) => (v3_type, Storage::Fixed { size }),
        (None, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
            match options.string_encoding {
                StringEncoding::Utf32 => ("fixed_length_utf32", Storage::Utf32),
                StringEncoding::Vlen => ("string", Storage::VlenUtf8),
            }
        }
        (None, DataType::Binary | DataType::LargeBinary | DataType::BinaryView) => {
            ("variable_length_bytes", Storage::VlenBytes)
        }
        (None, other) => {
            return Err(ZarrError::Option(format!(
                "column {} is {other}, which Zarr cannot hold (the writer writes booleans, \
                 integers, floats, strings, binary, timestamps, dates and durations, and \
                 dictionaries of them): cast it with CAST(… AS …)",
                field.name()
            )));
        }
    };
    if let Some(spec) = encoded_as_its_source(field, &value_type, options)? {
        return Ok(spec);
    }
    // Times, dates and durations: NumPy's int64 with CF's attributes, NULL as NaT.
    let written = cf::encode::attributes(&value_type).unwrap_or_default();
    let source = match options.keep_attributes {
        true => field_metadata::attributes_in(field.metadata(), field_metadata::ATTRIBUTES),
        false => None,
    };
    let mut attributes = source
        .as_ref()
        .map(|source| carried(source, &value_type))
        .unwrap_or_default();
    attributes.extend(written);
    let (cast_to, null) = match &value_type {
        DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64 | DataType::Duration(_) => {
            (Some(DataType::Int64), NullRule::NaT)
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => (None, NullRule::NaN),
        _ => {
            let null = null_value(field.name(), v3_type, options)?;
            // A masked integer's NULL is its source's `_FillValue` again (xarray masks it).
            let fill = match options.keep_attributes {
                true => field_metadata::mask_in(field.metadata()),
                false => None,
            };
            match (null, fill.and_then(|f| integer_fill(v3_type, &f))) {
                (NullRule::Refused, Some((bytes, json))) => {
                    attributes.insert("_FillValue".into(), json.clone());
                    (None, NullRule::Value { bytes, json })
                }
                (null, _) => (None, null),
            }
        }
    };
    let cast_to = match (&value_type, field.data_type()) {
        (_, DataType::Dictionary(_, _)) if cast_to.is_none() => Some(value_type.clone()),
        _ => cast_to,
    };
    let source_width = match (storage, options.keep_attributes) {
        (Storage::Utf32, true) => field
            .metadata()
            .get(field_metadata::DATA_TYPE)
            .and_then(|data_type| utf32_width_of(data_type)),
        _ => None,
    };
    Ok(ColumnSpec {
        name: field.name().clone(),
        v3_type,
        storage,
        cast_to,
        null,
        attributes,
        source_width,
        cf: None,
    })
}

/// The array of a column read from a CF-encoded array (times counted in `units`, packed
/// numbers), encoded again as its source was, if it was and `keep_attributes` holds: the
/// source's stored type and attributes (but `_ARRAY_DIMENSIONS`, which the writer sets), its
/// `_FillValue` for a NULL (`null_value` wins). `None` where the stored type would have no
/// value for a NULL (no `_FillValue`, not a float, not a time in `int64`): such a column is
/// written as the writer writes its type.
fn encoded_as_its_source(
    field: &Field,
    value_type: &DataType,
    options: &WriteOptions,
) -> Result<Option<ColumnSpec>> {
    let metadata = field.metadata();
    let source = || {
        let attributes = field_metadata::attributes_in(metadata, field_metadata::ATTRIBUTES)?;
        let stored = stored_type(metadata.get(field_metadata::DATA_TYPE)?)?;
        let v2_fill = field_metadata::v2_fill_in(metadata);
        let cf = cf::attributes::decoding(&stored, &attributes, v2_fill.as_ref())?;
        Some((attributes, cf))
    };
    let Some((mut attributes, cf)) = options.keep_attributes.then(source).flatten() else {
        return Ok(None);
    };
    let decoded_as_read = matches!(
        (&cf.kind, value_type),
        (
            CfKind::Time { .. },
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64
        ) | (CfKind::Duration { .. }, DataType::Duration(_))
            | (CfKind::Scaled, DataType::Float64)
    );
    let Some((v3_type, size)) = fixed_type(&cf.stored) else {
        return Ok(None);
    };
    if !decoded_as_read || cf.reinterpret {
        return Ok(None);
    }
    attributes.remove("_ARRAY_DIMENSIONS");
    attributes.remove("_FillValue");
    let fill = field_metadata::mask_in(metadata);
    let null = match null_value(field.name(), v3_type, options)? {
        NullRule::Refused => match fill.and_then(|f| stored_fill(v3_type, &f)) {
            Some((bytes, json)) => {
                attributes.insert("_FillValue".into(), json.clone());
                NullRule::Value { bytes, json }
            }
            None if cf.stored.is_floating() => NullRule::NaN,
            None if v3_type == "int64" && cf.kind != CfKind::Scaled => NullRule::NaT,
            None => return Ok(None),
        },
        given => given,
    };
    Ok(Some(ColumnSpec {
        name: field.name().clone(),
        v3_type,
        storage: Storage::Fixed { size },
        cast_to: None,
        null,
        attributes,
        source_width: None,
        cf: Some(cf),
    }))
}

/// The Arrow type of fixed-size numbers a source data type names: V3's `int16`, `float32`, …;
/// V2's NumPy `<i2`, `>f4`, `|u1`, ….
fn stored_type(data_type: &str) -> Option<DataType> {
    let name = match data_type.strip_prefix(['<', '>', '|', '=']) {
        Some(code) => match code {
            "i1" => "int8",
            "i2" => "int16",
            "i4" => "int32",
            "i8" => "int64",
            "u1" => "uint8",
            "u2" => "uint16",
            "u4" => "uint32",
            "u8" => "uint64",
            "f2" => "float16",
            "f4" => "float32",
            "f8" => "float64",
            _ => return None,
        },
        None => data_type,
    };
    Some(match name {
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "uint8" => DataType::UInt8,
        "uint16" => DataType::UInt16,
        "uint32" => DataType::UInt32,
        "uint64" => DataType::UInt64,
        "float16" => DataType::Float16,
        "float32" => DataType::Float32,
        "float64" => DataType::Float64,
        _ => return None,
    })
}

/// `fill` (a source's `_FillValue`) as an element of the number type `v3_type` and its JSON
/// form: integers as [`integer_fill`], floats as NumPy's (`"NaN"`, or a number).
fn stored_fill(v3_type: &str, fill: &Value) -> Option<(Vec<u8>, Value)> {
    let float = match fill {
        Value::String(text) if text == "NaN" => f64::NAN,
        Value::Number(n) => n.as_f64()?,
        _ => return integer_fill(v3_type, fill),
    };
    match v3_type {
        "float32" => Some(((float as f32).to_ne_bytes().to_vec(), fill.clone())),
        "float64" => Some((float.to_ne_bytes().to_vec(), fill.clone())),
        _ => integer_fill(v3_type, fill),
    }
}

/// The attributes a column keeps of its source array's, `source`: all but those that described
/// how the source stored its values and no longer hold for the column as it is written (the
/// writer sets its own): `_FillValue` and `missing_value` (a masked integer's comes back as
/// its NULL's value), CF packing (`scale_factor`, `add_offset`: the column holds the unpacked
/// floats), `_Unsigned`, `_Encoding`, xarray's `_ARRAY_DIMENSIONS` and `dtype`, and for a time,
/// date or duration column its `units` and `calendar` (written anew in the writer's units).
fn carried(source: &Map<String, Value>, value_type: &DataType) -> Map<String, Value> {
    const STORAGE: [&str; 8] = [
        "_FillValue",
        "missing_value",
        "scale_factor",
        "add_offset",
        "_Unsigned",
        "_Encoding",
        "_ARRAY_DIMENSIONS",
        "dtype",
    ];
    let time = matches!(
        value_type,
        DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64 | DataType::Duration(_)
    );
    source
        .iter()
        .filter(|(key, _)| !STORAGE.contains(&key.as_str()))
        .filter(|(key, _)| !(time && (key.as_str() == "units" || key.as_str() == "calendar")))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// The string width a source data type names: V3 `fixed_length_utf32`'s `length_bytes` (as
/// JSON), V2 `<U{n}` / `>U{n}`; at most `MAX_SOURCE_CODE_POINTS`.
fn utf32_width_of(data_type: &str) -> Option<Utf32Width> {
    const MAX_SOURCE_CODE_POINTS: u64 = 1 << 20;
    let code_points = match data_type.strip_prefix(['<', '>', '|']) {
        Some(rest) => rest.strip_prefix('U')?.parse::<u64>().ok()?,
        None => {
            let parsed: Value = serde_json::from_str(data_type).ok()?;
            (parsed.get("name")? == "fixed_length_utf32")
                .then(|| parsed["configuration"]["length_bytes"].as_u64())??
                / Utf32Width::CODE_UNIT_BYTES
        }
    };
    (code_points <= MAX_SOURCE_CODE_POINTS).then(|| Utf32Width::of_code_points(code_points))
}

/// `fill` (a JSON integer, or a list of one) as an element of the integer type `v3_type`.
fn integer_fill(v3_type: &str, fill: &Value) -> Option<(Vec<u8>, Value)> {
    let fill = match fill {
        Value::Array(values) if values.len() == 1 => values.first()?,
        other => other,
    };
    let value = fill
        .as_i64()
        .map(i128::from)
        .or(fill.as_u64().map(i128::from))?;
    integer_element(v3_type, value)
}

/// `value` as an element of the integer type `v3_type` (native order) and its JSON form, if
/// `v3_type` is one and `value` fits it.
fn integer_element(v3_type: &str, value: i128) -> Option<(Vec<u8>, Value)> {
    macro_rules! integer {
        ($t:ty) => {{
            let v = <$t>::try_from(value).ok()?;
            Some((v.to_ne_bytes().to_vec(), json!(v)))
        }};
    }
    match v3_type {
        "int8" => integer!(i8),
        "int16" => integer!(i16),
        "int32" => integer!(i32),
        "int64" => integer!(i64),
        "uint8" => integer!(u8),
        "uint16" => integer!(u16),
        "uint32" => integer!(u32),
        "uint64" => integer!(u64),
        _ => None,
    }
}

/// The `null_value` option as an element of `v3_type`, or [`NullRule::Refused`] without it.
fn null_value(column: &str, v3_type: &str, options: &WriteOptions) -> Result<NullRule> {
    let Some(text) = options.null_value.as_deref() else {
        return Ok(NullRule::Refused);
    };
    let wrong = || {
        ZarrError::Option(format!(
            "null_value '{text}' is not a {v3_type} value, for column {column}"
        ))
    };
    let integer = || {
        let value = text.trim().parse::<i128>().map_err(|_| wrong())?;
        integer_element(v3_type, value).ok_or_else(wrong)
    };
    let (bytes, json) = match v3_type {
        "bool" => match text.trim().to_ascii_lowercase().as_str() {
            "true" => (vec![1], json!(true)),
            "false" => (vec![0], json!(false)),
            _ => return Err(wrong()),
        },
        "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16" | "uint32" | "uint64" => {
            integer()?
        }
        "fixed_length_utf32" | "string" => {
            if text.ends_with('\0') {
                return Err(wrong());
            }
            (text.as_bytes().to_vec(), json!(text))
        }
        _ => (text.as_bytes().to_vec(), json!(text)),
    };
    Ok(NullRule::Value { bytes, json })
}

/// The names of the metadata documents a Zarr node keeps beside its children: a child by one
/// of these names would be read as the group's own metadata.
const METADATA_NAMES: [&str; 5] = ["zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"];

/// Refuses a column name that cannot name an array: one that collides with a node's metadata
/// documents, is empty, holds a `/` (a path, not a name), is made of periods only (`.`, `..`),
/// or starts with `__`, which the Zarr V3 specification reserves. Anything else names an array
/// (`c` too: a child array `c` keeps its chunks at `c/c/0`, beside no other key).
fn check_name(name: &str) -> Result<()> {
    let unsafe_name = name.is_empty()
        || name.contains('/')
        || name.chars().all(|c| c == '.')
        || name.starts_with("__")
        || METADATA_NAMES.contains(&name);
    if unsafe_name {
        return Err(ZarrError::Option(format!(
            "column '{name}' cannot name a Zarr array (it is empty, holds a '/', is only \
             periods, starts with '__', which Zarr reserves, or is one of {}): rename it with \
             AS",
            METADATA_NAMES.join(", ")
        )));
    }
    Ok(())
}

/// The shape of one array as written.
#[derive(Debug, Clone)]
pub(crate) struct ArrayShape {
    /// Its length along each dimension.
    pub shape: Vec<u64>,
    /// The chunk (or shard) grid's chunk shape.
    pub grid: Vec<u64>,
    /// The inner chunk shape when sharded.
    pub inner: Option<Vec<u64>>,
    /// Its dimension names.
    pub dimensions: Vec<String>,
}

/// The metadata documents of an array: `(key, document)` pairs relative to the array's
/// directory (`zarr.json`; or `.zarray` and `.zattrs`).
pub(crate) fn array_documents(
    spec: &ColumnSpec,
    width: Option<Utf32Width>,
    shape: &ArrayShape,
    saw_null: bool,
    options: &WriteOptions,
) -> Vec<(&'static str, Value)> {
    let fill = &fill_value(spec, saw_null, options.zarr_format);
    let mut attributes = spec.attributes.clone();
    // `null_value` stood in for a NULL: xarray masks it (V3 reads `_FillValue`).
    if let (true, NullRule::Value { json, .. }) = (saw_null, &spec.null) {
        attributes.insert("_FillValue".into(), json.clone());
    }
    match options.zarr_format {
        ZarrVersion::V3 => vec![(
            "zarr.json",
            v3_document(spec, width, shape, fill, attributes, options),
        )],
        ZarrVersion::V2 => {
            attributes.insert("_ARRAY_DIMENSIONS".into(), json!(shape.dimensions));
            vec![
                (".zarray", v2_document(spec, width, shape, fill, options)),
                (".zattrs", Value::Object(attributes)),
            ]
        }
    }
}

fn endian() -> &'static str {
    if cfg!(target_endian = "big") {
        "big"
    } else {
        "little"
    }
}

/// The element size in bytes (blosc's `typesize`), strings of `width` (one code unit when
/// `None`); a variable-length element counts 1.
pub(crate) fn element_size(spec: &ColumnSpec, width: Option<Utf32Width>) -> u64 {
    match spec.storage {
        Storage::Fixed { size } => size as u64,
        Storage::Utf32 => width.unwrap_or(Utf32Width::MIN).bytes(),
        Storage::VlenUtf8 | Storage::VlenBytes => 1,
    }
}

fn v3_compressor(
    spec: &ColumnSpec,
    width: Option<Utf32Width>,
    options: &WriteOptions,
) -> Option<Value> {
    let level = options.compression_level;
    match options.compression {
        ChunkCompression::Zstd => Some(
            json!({"name": "zstd", "configuration": {"level": level.unwrap_or(3), "checksum": false}}),
        ),
        ChunkCompression::Blosc => {
            let typesize = element_size(spec, width);
            let shuffle = if typesize > 1 { "shuffle" } else { "noshuffle" };
            Some(
                json!({"name": "blosc", "configuration": {"typesize": typesize, "cname": "zstd",
                "clevel": level.unwrap_or(5), "shuffle": shuffle, "blocksize": 0}}),
            )
        }
        ChunkCompression::Gzip => {
            Some(json!({"name": "gzip", "configuration": {"level": level.unwrap_or(5)}}))
        }
        ChunkCompression::Lz4 => Some(
            json!({"name": "numcodecs.lz4", "configuration": {"acceleration": level.unwrap_or(1)}}),
        ),
        ChunkCompression::None => None,
    }
}

fn v3_document(
    spec: &ColumnSpec,
    width: Option<Utf32Width>,
    shape: &ArrayShape,
    fill: &Value,
    attributes: Map<String, Value>,
    options: &WriteOptions,
) -> Value {
    let data_type = match (spec.storage, width) {
        (Storage::Utf32, Some(width)) => {
            json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": width.bytes()}})
        }
        _ => json!(spec.v3_type),
    };
    let serializer = match spec.storage {
        Storage::Fixed { size: 1 } => json!({"name": "bytes"}),
        Storage::Fixed { .. } | Storage::Utf32 => {
            json!({"name": "bytes", "configuration": {"endian": endian()}})
        }
        Storage::VlenUtf8 => json!({"name": "vlen-utf8", "configuration": {}}),
        Storage::VlenBytes => json!({"name": "vlen-bytes", "configuration": {}}),
    };
    let mut codecs = vec![serializer];
    codecs.extend(v3_compressor(spec, width, options));
    if let Some(inner) = &shape.inner {
        codecs = vec![json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner,
            "codecs": codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}})];
    }
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape.shape,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape.grid}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill,
        "codecs": codecs,
        "attributes": attributes,
        "dimension_names": shape.dimensions,
        "storage_transformers": [],
    })
}

fn v2_document(
    spec: &ColumnSpec,
    width: Option<Utf32Width>,
    shape: &ArrayShape,
    fill: &Value,
    options: &WriteOptions,
) -> Value {
    let order = if cfg!(target_endian = "big") {
        ">"
    } else {
        "<"
    };
    let dtype = match (spec.storage, spec.v3_type) {
        (Storage::Utf32, _) => {
            let width = width.unwrap_or(Utf32Width::MIN);
            format!("{order}U{}", width.code_points())
        }
        (Storage::VlenUtf8 | Storage::VlenBytes, _) => "|O".into(),
        (_, "bool") => "|b1".into(),
        (_, "int8") => "|i1".into(),
        (_, "uint8") => "|u1".into(),
        (_, name) => {
            let (kind, bits) = name.split_at(name.find(|c: char| c.is_ascii_digit()).unwrap_or(0));
            let kind = match kind {
                "int" => "i",
                "uint" => "u",
                _ => "f",
            };
            let bytes = bits.parse::<u32>().unwrap_or(8) / 8;
            format!("{order}{kind}{bytes}")
        }
    };
    let level = options.compression_level;
    let compressor = match options.compression {
        ChunkCompression::Zstd => json!({"id": "zstd", "level": level.unwrap_or(3)}),
        ChunkCompression::Blosc => {
            let shuffle = if element_size(spec, width) > 1 { 1 } else { 0 };
            json!({"id": "blosc", "cname": "zstd", "clevel": level.unwrap_or(5), "shuffle": shuffle, "blocksize": 0})
        }
        ChunkCompression::Gzip => json!({"id": "gzip", "level": level.unwrap_or(5)}),
        ChunkCompression::Lz4 => json!({"id": "lz4", "acceleration": level.unwrap_or(1)}),
        ChunkCompression::None => Value::Null,
    };
    let filters = match spec.storage {
        Storage::VlenUtf8 => json!([{"id": "vlen-utf8"}]),
        Storage::VlenBytes => json!([{"id": "vlen-bytes"}]),
        _ => Value::Null,
    };
    json!({
        "zarr_format": 2,
        "shape": shape.shape,
        "chunks": shape.grid,
        "dtype": dtype,
        "fill_value": fill,
        "order": "C",
        "filters": filters,
        "dimension_separator": ".",
        "compressor": compressor,
    })
}

/// The fill value of an array: its NULL's value, else NumPy's zero (V3), or none (V2, as
/// xarray writes: there a fill value masks, and `0` or `""` would read as missing).
pub(crate) fn fill_value(spec: &ColumnSpec, saw_null: bool, version: ZarrVersion) -> Value {
    match (&spec.null, version) {
        (NullRule::NaN, _) => json!("NaN"),
        // The NULL's value, when it stood in for one or is the source's `_FillValue`.
        (NullRule::Value { json, .. }, _)
            if saw_null || spec.attributes.get("_FillValue") == Some(json) =>
        {
            json.clone()
        }
        (_, ZarrVersion::V2) => Value::Null,
        (_, ZarrVersion::V3) => match spec.storage {
            Storage::Utf32 | Storage::VlenUtf8 => json!(""),
            Storage::VlenBytes => json!(""),
            Storage::Fixed { .. } if spec.v3_type == "bool" => json!(false),
            Storage::Fixed { .. } => json!(0),
        },
    }
}

/// The metadata documents of the group: `(key, document)` pairs relative to its directory,
/// with `arrays` (each array's name and documents) consolidated as zarr-python writes them.
pub(crate) fn group_documents(
    arrays: &[(String, Vec<(&'static str, Value)>)],
    options: &WriteOptions,
) -> Vec<(String, Value)> {
    let attributes = Value::Object(options.attributes.clone());
    match options.zarr_format {
        ZarrVersion::V3 => {
            let mut group =
                json!({"zarr_format": 3, "node_type": "group", "attributes": attributes});
            if options.consolidated {
                let metadata: Map<String, Value> = arrays
                    .iter()
                    .filter_map(|(name, docs)| Some((name.clone(), docs.first()?.1.clone())))
                    .collect();
                group["consolidated_metadata"] =
                    json!({"kind": "inline", "must_understand": false, "metadata": metadata});
            }
            vec![("zarr.json".into(), group)]
        }
        ZarrVersion::V2 => {
            let mut documents = vec![
                (".zgroup".to_string(), json!({"zarr_format": 2})),
                (".zattrs".to_string(), attributes.clone()),
            ];
            if options.consolidated {
                let mut metadata = Map::new();
                metadata.insert(".zgroup".into(), json!({"zarr_format": 2}));
                metadata.insert(".zattrs".into(), attributes);
                for (name, docs) in arrays {
                    for (key, doc) in docs {
                        metadata.insert(format!("{name}/{key}"), doc.clone());
                    }
                }
                documents.push((
                    ".zmetadata".into(),
                    json!({"metadata": metadata, "zarr_consolidated_format": 1}),
                ));
            }
            documents
        }
    }
}

/// The key of chunk `index` (its position in the chunk grid) below the array's directory.
pub(crate) fn chunk_key(index: &[u64], version: ZarrVersion) -> String {
    let parts: Vec<String> = index.iter().map(u64::to_string).collect();
    match version {
        ZarrVersion::V3 => format!("c/{}", parts.join("/")),
        ZarrVersion::V2 => parts.join("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A string width is 4 bytes a code point, at least one code unit, saturating; an existing
    /// array's `length_bytes` reads back as itself.
    #[test]
    fn string_widths_are_whole_code_units() {
        assert_eq!(Utf32Width::of_code_points(0), Utf32Width::MIN);
        assert_eq!(Utf32Width::of_code_points(1).bytes(), 4);
        assert_eq!(Utf32Width::of_code_points(7).bytes(), 28);
        assert_eq!(Utf32Width::of_code_points(7).code_points(), 7);
        assert_eq!(Utf32Width::of_code_points(u64::MAX).bytes(), u64::MAX);
        assert_eq!(
            Utf32Width::of_length_bytes(28),
            Utf32Width::of_code_points(7)
        );
        assert!(Utf32Width::of_code_points(2) < Utf32Width::of_code_points(3));
    }
}

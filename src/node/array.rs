//! An [`ArrayNode`] from parsed metadata: the zarrs array (metadata and codecs), the element
//! kind (the Arrow mapping), and for sharded arrays the shard index layout and inner chunks.

use std::sync::Arc;

use arrow::datatypes::DataType as ArrowType;
use serde_json::Value;
use zarrs::array::data_type::{
    BoolDataType, BytesDataType, FixedLengthUTF32DataType, Float16DataType, Float32DataType,
    Float64DataType, Int8DataType, Int16DataType, Int32DataType, Int64DataType, StringDataType,
    UInt8DataType, UInt16DataType, UInt32DataType, UInt64DataType,
};
use zarrs::array::{ArrayCreateError, ArrayMetadata, ArrayMetadataV3, DataType};
use zarrs::metadata_ext::chunk_grid::regular::RegularChunkGridConfiguration;
use zarrs::metadata_ext::codec::sharding::ShardingCodecConfiguration;

use super::{ArrayNode, Attributes, ElementKind, InnerChunks, ZarrsArray, validate};
use crate::cf;
use crate::codecs::shard_index::ShardIndexLayout;
use crate::error::{Result, ZarrError};
use crate::limits::{Limits, VARIABLE_ELEMENT_BYTES};

/// One array's metadata, as the V3 and V2 readers parse it.
pub(super) struct Parsed {
    /// The store and path, as shown in errors.
    pub(super) display: String,
    /// 2 or 3.
    pub(super) zarr_format: u8,
    /// The data type as written.
    pub(super) data_type_name: String,
    /// One entry per dimension.
    pub(super) dimension_names: Vec<Option<String>>,
    /// What zarrs parsed.
    pub(super) meta: ArrayMetadata,
    /// The document as JSON, without its attributes.
    pub(super) doc: Value,
    /// Its attributes.
    pub(super) attributes: Attributes,
    /// The element kind of a type zarrs was given as its storage (`numpy_types.rs`).
    pub(super) kind: Option<ElementKind>,
}

/// Builds the node of the array at `path` from its parsed metadata, within `limits`.
pub(super) fn finish(parsed: Parsed, path: &str, limits: &Limits) -> Result<ArrayNode> {
    let Parsed {
        display,
        zarr_format,
        data_type_name,
        dimension_names,
        meta,
        doc,
        attributes,
        kind: mapped,
    } = parsed;
    let shape = match &meta {
        ArrayMetadata::V3(m) => m.shape.clone(),
        ArrayMetadata::V2(m) => m.shape.clone(),
    };
    // zarrs multiplies shapes unchecked: reject element counts that overflow first.
    validate::element_count(&display, &shape)?;
    // The shard layout, read from the parsed V3 metadata before zarrs takes it.
    let sharding = match &meta {
        ArrayMetadata::V3(m) => {
            let shard_shape = regular_chunk_shape(m).unwrap_or_default();
            ShardIndexLayout::from_metadata(&doc, &shard_shape).map(|layout| {
                layout.map(|layout| {
                    let inner = inner_chunks(m, &layout);
                    (layout, inner)
                })
            })
        }
        ArrayMetadata::V2(_) => Ok(None),
    };
    // zarrs allocates the fill value (one element) when it builds the array, and every read
    // decodes a chunk: both sizes come from the metadata, so they are held to the table's
    // limit before zarrs sees them.
    let read_chunk_shape = match (&sharding, &meta) {
        (Ok(Some((_, Some(inner)))), _) => Some(inner.shape.clone()),
        (_, ArrayMetadata::V3(m)) => regular_chunk_shape(m),
        (_, ArrayMetadata::V2(m)) => Some(m.chunks.iter().map(|d| d.get()).collect()),
    };
    check_sizes(&display, &meta, read_chunk_shape.as_deref(), limits)?;
    let node_path = format!("/{path}");
    let (array, kind) = match ZarrsArray::new_with_metadata(Arc::new(()), &node_path, meta) {
        Ok(array) => {
            let kind = mapped.or_else(|| element_kind(&array));
            (kind.is_some().then(|| Arc::new(array)), kind)
        }
        // A data type zarrs does not know: the array is unsupported, which is an error only
        // when it is used.
        Err(ArrayCreateError::DataTypeCreateError(_)) => (None, None),
        Err(e) => {
            // Our reading of the sharding configuration names the rule zarrs' does not.
            let message = match &sharding {
                Err(rule) => rule.clone(),
                Ok(_) => format!("invalid array metadata: {e}"),
            };
            return Err(ZarrError::metadata(&display, message));
        }
    };
    // The shard layout matters (and its errors count) only for arrays that are read.
    let sharding = match array {
        Some(_) => sharding.map_err(|e| ZarrError::metadata(&display, e))?,
        None => None,
    };
    let (shard_index, inner) = match sharding {
        Some((layout, inner)) => (Some(layout), inner.map(Arc::new)),
        None => (None, None),
    };
    // xarray keeps a V2 array's `_FillValue` in its `fill_value`.
    let used = attributes.used();
    let v2_fill = match zarr_format == 2 && used.contains_key("_ARRAY_DIMENSIONS") {
        true => doc.get("fill_value").filter(|f| !f.is_null()),
        false => None,
    };
    let cf = match &kind {
        Some(ElementKind::Primitive(stored)) => cf::attributes::decoding(stored, used, v2_fill),
        _ => None,
    };
    let bytes = matches!(
        kind,
        Some(ElementKind::Bytes { .. } | ElementKind::VariableBytes)
    );
    let text = cf::attributes::text_encoding(bytes, used);
    Ok(ArrayNode {
        display,
        path: path.to_string(),
        name: array_name(path),
        zarr_format,
        data_type_name,
        kind,
        array,
        dimension_names,
        shape,
        metadata: Arc::from(doc.to_string()),
        attributes,
        shard_index,
        inner,
        cf,
        text,
        characters: None,
        chunk_keys_of: None,
    })
}

/// Holds one element and one chunk as read (`chunk_shape`, an inner chunk for sharded arrays)
/// to `limits.chunk`, from the data type's size as zarrs would compute it, before zarrs
/// allocates anything from them. A variable-length element counts as the offset zarrs keeps
/// for it ([`crate::limits::VARIABLE_ELEMENT_BYTES`]). Data types zarrs does not know are
/// left to the other checks.
fn check_sizes(
    display: &str,
    meta: &ArrayMetadata,
    chunk_shape: Option<&[u64]>,
    limits: &Limits,
) -> Result<()> {
    let data_type = match meta {
        ArrayMetadata::V3(m) => DataType::from_metadata(&m.data_type),
        ArrayMetadata::V2(m) => DataType::from_metadata(&m.dtype),
    };
    let Ok(data_type) = data_type else {
        return Ok(());
    };
    let element = match data_type.fixed_size() {
        Some(size) => {
            let size = size as u64;
            limits
                .chunk
                .check(display, "one element of the data type", Some(size))?;
            size
        }
        None => VARIABLE_ELEMENT_BYTES,
    };
    if let Some(shape) = chunk_shape {
        let bytes = shape.iter().try_fold(element, |acc, &d| acc.checked_mul(d));
        limits.chunk.check(
            display,
            "a chunk as declared (chunk shape × element size)",
            bytes,
        )?;
    }
    Ok(())
}

/// The chunk (for a sharded array, shard) shape of a regular chunk grid.
fn regular_chunk_shape(meta: &ArrayMetadataV3) -> Option<Vec<u64>> {
    if meta.chunk_grid.name() != "regular" {
        return None;
    }
    let config: RegularChunkGridConfiguration = meta.chunk_grid.to_typed_configuration().ok()?;
    Some(config.chunk_shape.iter().map(|d| d.get()).collect())
}

fn element_kind(array: &ZarrsArray) -> Option<ElementKind> {
    let dt = array.data_type();
    if let Some(t) = dt.downcast_ref::<FixedLengthUTF32DataType>() {
        return usize::try_from(t.length_bytes().get())
            .ok()
            .map(|length_bytes| ElementKind::Utf32 { length_bytes });
    }
    if dt.is::<StringDataType>() {
        return Some(ElementKind::String);
    }
    if dt.is::<BytesDataType>() {
        return Some(ElementKind::VariableBytes);
    }
    let arrow = if dt.is::<BoolDataType>() {
        ArrowType::Boolean
    } else if dt.is::<Int8DataType>() {
        ArrowType::Int8
    } else if dt.is::<Int16DataType>() {
        ArrowType::Int16
    } else if dt.is::<Int32DataType>() {
        ArrowType::Int32
    } else if dt.is::<Int64DataType>() {
        ArrowType::Int64
    } else if dt.is::<UInt8DataType>() {
        ArrowType::UInt8
    } else if dt.is::<UInt16DataType>() {
        ArrowType::UInt16
    } else if dt.is::<UInt32DataType>() {
        ArrowType::UInt32
    } else if dt.is::<UInt64DataType>() {
        ArrowType::UInt64
    } else if dt.is::<Float16DataType>() {
        ArrowType::Float16
    } else if dt.is::<Float32DataType>() {
        ArrowType::Float32
    } else if dt.is::<Float64DataType>() {
        ArrowType::Float64
    } else {
        return None;
    };
    Some(ElementKind::Primitive(arrow))
}

/// The inner chunk reader of an exclusively sharded V3 array with a regular grid, if it is one.
fn inner_chunks(meta: &ArrayMetadataV3, layout: &ShardIndexLayout) -> Option<InnerChunks> {
    let [sharding] = meta.codecs.as_slice() else {
        return None;
    };
    let shard_shape = regular_chunk_shape(meta)?;
    let Ok(ShardingCodecConfiguration::V1(config)) = sharding.to_typed_configuration() else {
        return None;
    };
    let shape: Vec<u64> = config.chunk_shape.iter().map(|d| d.get()).collect();
    if shape.len() != shard_shape.len() || shape.iter().zip(&shard_shape).any(|(i, s)| s % i != 0) {
        return None;
    }
    let per_shard = shard_shape.iter().zip(&shape).map(|(s, i)| s / i).collect();
    let codecs = zarrs::array::CodecChain::from_metadata(&config.codecs).ok()?;
    Some(InnerChunks {
        shape,
        per_shard,
        codecs: Arc::new(codecs),
        layout: layout.clone(),
    })
}

pub(crate) fn display_in(location: &str, path: &str) -> String {
    if path.is_empty() {
        location.to_string()
    } else {
        format!("{location}/{path}")
    }
}

pub(super) fn array_name(path: &str) -> String {
    match path.rsplit('/').next() {
        Some(last) if !last.is_empty() => last.to_string(),
        _ => "value".to_string(),
    }
}

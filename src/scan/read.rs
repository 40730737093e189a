//! Decoding chunks, and assembling the elements of a region (a box of the array) from the
//! chunks that intersect it.
//!
//! zarrs decodes; `fetch.rs` fetches through the object store (so remote stores and I/O
//! counting work the same way); here rows of elements are copied between chunk and region
//! layouts.

use std::borrow::Cow;

use arrow::buffer::Buffer;
use bytes::Bytes;
use std::num::NonZeroU64;
use std::ops::Range;
use std::sync::Arc;

use zarrs::array::{
    ArrayBytes, ArrayBytesRaw, ArrayToBytesCodecTraits, BytesRepresentation, CodecChain, CodecError,
};

use crate::codecs::{decode_options, vlen_framing};
use crate::error::{Result, ZarrError};
use crate::limits::{Limit, Limits};
use crate::node::ArrayNode;
use crate::scan::fetch::{
    Objects, ReadCounts, ShardIndexes, check_declared_shape, chunk_key, chunk_shape, fetch_chunks,
};
use crate::scan::grid::ReadGrid;
use crate::store::ZarrStore;

/// Decoded elements in C order.
#[derive(Debug, Clone)]
pub(crate) enum Elements {
    /// Fixed-size elements: `size` bytes each, native byte order.
    Fixed {
        /// The bytes: an Arrow buffer, so that a filter reads a unit's values without a copy
        /// (see `convert::to_arrow_shared`).
        bytes: Buffer,
        /// Bytes per element.
        size: usize,
    },
    /// Variable-length elements (`string`): element `i` is `bytes[offsets[i]..offsets[i + 1]]`.
    Variable {
        /// The concatenated bytes.
        bytes: Vec<u8>,
        /// `len + 1` offsets.
        offsets: Vec<usize>,
    },
}

impl Elements {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            Elements::Fixed { bytes, size } => bytes.len() / (*size).max(1),
            Elements::Variable { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    /// The elements at `rows`, in that order.
    pub(crate) fn gather(&self, rows: &[usize]) -> Elements {
        match self {
            Elements::Fixed { bytes, size } => {
                let mut out = Vec::with_capacity(rows.len() * size);
                for &r in rows {
                    out.extend_from_slice(&bytes[r * size..(r + 1) * size]);
                }
                Elements::Fixed {
                    bytes: Buffer::from_vec(out),
                    size: *size,
                }
            }
            Elements::Variable { bytes, offsets } => {
                let mut out = Vec::new();
                let mut out_offsets = Vec::with_capacity(rows.len() + 1);
                out_offsets.push(0);
                for &r in rows {
                    out.extend_from_slice(&bytes[offsets[r]..offsets[r + 1]]);
                    out_offsets.push(out.len());
                }
                Elements::Variable {
                    bytes: out,
                    offsets: out_offsets,
                }
            }
        }
    }
}

/// One decoded chunk.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// Grid indices of the chunk.
    pub indices: Vec<u64>,
    /// Origin of the chunk in the array.
    pub origin: Vec<u64>,
    /// The chunk's full shape (edge chunks extend past the array).
    pub shape: Vec<u64>,
    /// The elements, C order over `shape`.
    pub elements: Elements,
}

/// What a partition keeps between the regions of one column: the last decoded chunk, the
/// encoded objects fetched ahead for the next region, and for sharded arrays the shard indexes.
#[derive(Debug, Default)]
pub(crate) struct ColumnCache {
    chunk: Option<Arc<Chunk>>,
    /// Objects fetched ahead (by the prefetcher) for the next region.
    pub prefetched: Objects,
    /// Shard indexes, shared with the prefetcher's fetches of this column.
    pub shard_indexes: Arc<ShardIndexes>,
}

impl ColumnCache {
    /// The grid indices of the chunk kept decoded, if any.
    pub(crate) fn decoded(&self) -> Option<&[u64]> {
        self.chunk.as_ref().map(|c| c.indices.as_slice())
    }
}

/// Fetches and decodes the chunk at `indices`. An absent chunk reads as the fill value.
pub(crate) async fn read_chunk(
    store: &ZarrStore,
    node: &ArrayNode,
    indices: &[u64],
    limits: &Limits,
) -> Result<Chunk> {
    let mut objects = fetch_chunks(
        store,
        node,
        &[indices.to_vec()],
        limits,
        &ShardIndexes::default(),
        &mut ReadCounts::default(),
    )
    .await?;
    let object = objects.remove(indices).flatten();
    decode_owned(node, indices, object, limits)
}

/// Decodes the encoded bytes of the chunk at `indices` (`None`: the chunk is absent and reads
/// as the fill value). No I/O: the part of [`read_chunk`] that tools and fuzzing call directly.
pub(crate) fn decode_chunk(
    node: &ArrayNode,
    indices: &[u64],
    encoded: Option<&[u8]>,
    limits: &Limits,
) -> Result<Chunk> {
    decode_owned(node, indices, encoded.map(Bytes::copy_from_slice), limits)
}

/// [`decode_chunk`] taking the fetched object.
fn decode_owned(
    node: &ArrayNode,
    indices: &[u64],
    object: Option<Bytes>,
    limits: &Limits,
) -> Result<Chunk> {
    let array = node.zarrs()?;
    let target = ChunkToDecode::of(node, indices, limits)?;
    let origin = array
        .chunk_origin(indices)
        .map_err(|e| target.error(e.to_string()))?;
    if let (Some(layout), Some(encoded)) = (&node.shard_index, &object) {
        layout.check(encoded).map_err(|e| target.error(e))?;
    }
    let elements = target.decode(&array.codecs(), object)?;
    Ok(Chunk {
        indices: indices.to_vec(),
        origin,
        shape: target.shape.iter().map(|d| d.get()).collect(),
        elements,
    })
}

/// One chunk (or inner chunk of a shard) about to be decoded: its array, key, declared shape
/// and element count (checked against `max_chunk_bytes`), and the limit it decodes within.
/// The one decode path of the reader.
struct ChunkToDecode<'a> {
    node: &'a ArrayNode,
    /// The key as shown in errors.
    key: String,
    shape: Vec<NonZeroU64>,
    num_elements: u64,
    limit: Limit,
}

impl<'a> ChunkToDecode<'a> {
    /// The chunk at `indices` of `node`'s chunk grid.
    fn of(node: &'a ArrayNode, indices: &[u64], limits: &Limits) -> Result<Self> {
        let (key, shape) = chunk_shape(node, indices)?;
        Self::with_shape(node, key, shape, limits)
    }

    /// A chunk of `shape` known by `key`.
    fn with_shape(
        node: &'a ArrayNode,
        key: String,
        shape: Vec<NonZeroU64>,
        limits: &Limits,
    ) -> Result<Self> {
        let num_elements = check_declared_shape(node, &key, &shape, limits)?;
        Ok(Self {
            node,
            key,
            shape,
            num_elements,
            limit: limits.chunk,
        })
    }

    fn error(&self, message: String) -> ZarrError {
        ZarrError::Chunk {
            array: self.node.display.clone(),
            chunk: self.key.clone(),
            message,
        }
    }

    /// Decodes `object` with `codecs`, or builds the fill value when it is absent. When the
    /// codecs leave the bytes as they are (an uncompressed, native-endian chunk), the object
    /// becomes the chunk's buffer without a copy.
    fn decode(&self, codecs: &CodecChain, object: Option<Bytes>) -> Result<Elements> {
        let array = self.node.zarrs()?;
        let decoded = match object.as_deref() {
            Some(encoded) => {
                let decoded = self
                    .limit
                    .decode_within(|| {
                        if vlen_framing::is_vlen_v2(codecs.array_to_bytes_codec().as_ref()) {
                            return self.decode_variable(codecs, encoded);
                        }
                        codecs.decode(
                            Cow::Borrowed(encoded),
                            &self.shape,
                            array.data_type(),
                            array.fill_value(),
                            &decode_options(),
                        )
                    })
                    .map_err(|e| self.error(format!("cannot decode: {e}")))?;
                let unchanged = matches!(&decoded, ArrayBytes::Fixed(Cow::Borrowed(b))
                    if b.as_ptr() == encoded.as_ptr() && b.len() == encoded.len());
                if unchanged {
                    // Zero-copy when the object's buffer is not shared (a fresh read).
                    ArrayBytes::Fixed(Cow::Owned(object.map(Vec::from).unwrap_or_default()))
                } else {
                    decoded.into_owned()
                }
            }
            None => {
                ArrayBytes::new_fill_value(array.data_type(), self.num_elements, array.fill_value())
                    .map_err(|e| self.error(format!("cannot build the fill value: {e}")))?
            }
        };
        into_elements(decoded, self.node, self.num_elements).map_err(|e| self.error(e))
    }
}

impl ChunkToDecode<'_> {
    /// Decodes a chunk of numcodecs' variable-length framing: its bytes-to-bytes codecs
    /// (compressors) first, then the framing checked ([`vlen_framing::check`]), then zarrs'
    /// variable-length codec and any array-to-array codec.
    fn decode_variable<'a>(
        &self,
        codecs: &CodecChain,
        encoded: &'a [u8],
    ) -> std::result::Result<ArrayBytes<'a>, CodecError> {
        let array = self
            .node
            .zarrs()
            .map_err(|e| CodecError::Other(e.to_string()))?;
        let options = decode_options();
        // A variable-length codec's output has no size known in advance, nor do the
        // compressors' after it: each decodes within the table's chunk limit.
        let mut bytes: ArrayBytesRaw<'a> = Cow::Borrowed(encoded);
        for codec in codecs.bytes_to_bytes_codecs().iter().rev() {
            bytes = codec.decode(bytes, &BytesRepresentation::UnboundedSize, &options)?;
        }
        vlen_framing::check(&bytes, self.num_elements).map_err(CodecError::Other)?;
        if codecs.array_to_array_codecs().is_empty() {
            return codecs.array_to_bytes_codec().decode(
                bytes,
                &self.shape,
                array.data_type(),
                array.fill_value(),
                &options,
            );
        }
        // Checked; an array-to-array codec (rare with strings) needs the chain's own
        // representations, so the chain decodes the chunk again.
        codecs.decode(
            Cow::Borrowed(encoded),
            &self.shape,
            array.data_type(),
            array.fill_value(),
            &options,
        )
    }
}

/// Decoded bytes as [`Elements`], checked against the declared element count.
fn into_elements(
    decoded: ArrayBytes<'_>,
    node: &ArrayNode,
    num_elements: u64,
) -> std::result::Result<Elements, String> {
    let size = node
        .zarrs()
        .map_err(|e| e.to_string())?
        .data_type()
        .fixed_size()
        .unwrap_or(1);
    let elements = match decoded {
        ArrayBytes::Fixed(bytes) => Elements::Fixed {
            bytes: Buffer::from_vec(bytes.into_owned()),
            size,
        },
        ArrayBytes::Variable(v) => {
            let (bytes, offsets) = v.into_parts();
            Elements::Variable {
                bytes: bytes.into_owned(),
                offsets: offsets.to_vec(),
            }
        }
        ArrayBytes::Optional(_) => {
            return Err("optional (masked) data types are not supported".into());
        }
    };
    if elements.len() as u64 != num_elements {
        return Err(format!(
            "decoded {} elements, the chunk shape declares {num_elements}",
            elements.len()
        ));
    }
    Ok(elements)
}

/// Decodes one inner chunk of a shard (grid indices over the inner chunk grid) from its
/// encoded bytes (`None`: absent, the fill value).
fn decode_inner(
    node: &ArrayNode,
    indices: &[u64],
    object: Option<Bytes>,
    limits: &Limits,
) -> Result<Chunk> {
    let inner = node
        .inner
        .as_ref()
        .ok_or_else(|| ZarrError::internal(format!("reading {} by inner chunks", node.display)))?;
    let (shard, within) = inner.locate(indices);
    let (_, shard_key) = chunk_key(node, &shard)?;
    let shape: Vec<NonZeroU64> = inner
        .shape
        .iter()
        .filter_map(|&d| NonZeroU64::new(d))
        .collect();
    let key = format!("{shard_key} (inner chunk {within})");
    let target = ChunkToDecode::with_shape(node, key, shape, limits)?;
    let elements = target.decode(&inner.codecs, object)?;
    // Inside the array: an inner chunk's origin is below the array's shape (checked rather
    // than trusted, as for indices from elsewhere).
    let origin = indices
        .iter()
        .zip(&inner.shape)
        .map(|(i, s)| i.checked_mul(*s))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| target.error(format!("inner chunk {indices:?} lies past u64")))?;
    Ok(Chunk {
        indices: indices.to_vec(),
        origin,
        shape: inner.shape.clone(),
        elements,
    })
}

/// A region's elements: either a whole decoded chunk (no copy) or an assembled copy.
#[derive(Debug, Clone)]
pub(crate) enum Region {
    /// The region is exactly one chunk.
    Whole(Arc<Chunk>),
    /// Elements copied from one or more chunks.
    Assembled(Elements),
}

impl Region {
    /// The elements, C order over the region.
    pub(crate) fn elements(&self) -> &Elements {
        match self {
            Region::Whole(c) => &c.elements,
            Region::Assembled(e) => e,
        }
    }
}

/// Reads the elements of `region` (one range per dimension) of `node`, keeping the last
/// decoded chunk (and shard index) in `cache` so that neighbouring regions inside one chunk
/// decode it once.
pub(crate) async fn read_region(
    store: &ZarrStore,
    node: &ArrayNode,
    region: &[Range<u64>],
    limits: &Limits,
    cache: &mut ColumnCache,
    counts: &mut ReadCounts,
) -> Result<Region> {
    let chunks = ReadGrid::of(node).intersecting(region)?;
    let region_start: Vec<u64> = region.iter().map(|r| r.start).collect();
    let region_shape: Vec<u64> = region
        .iter()
        .map(|r| r.end.saturating_sub(r.start))
        .collect();
    // Fetch, concurrently, what is neither decoded already nor fetched ahead.
    let missing: Vec<Vec<u64>> = chunks
        .iter()
        .filter(|c| cache.decoded() != Some(c.as_slice()) && !cache.prefetched.contains_key(*c))
        .cloned()
        .collect();
    if !missing.is_empty() {
        let fetched =
            fetch_chunks(store, node, &missing, limits, &cache.shard_indexes, counts).await?;
        cache.prefetched.extend(fetched);
    }
    // The chunk kept from the previous region, whatever this loop decodes after it.
    let kept = cache.chunk.clone();
    let mut pieces: Vec<Arc<Chunk>> = Vec::new();
    for indices in chunks {
        let chunk = match &kept {
            Some(c) if c.indices == indices => c.clone(),
            _ => {
                let object = cache.prefetched.remove(&indices).ok_or_else(|| {
                    ZarrError::internal(format!(
                        "reading {}: chunk {indices:?} was neither fetched nor kept",
                        node.display
                    ))
                })?;
                let c = if node.inner.is_some() {
                    decode_inner(node, &indices, object, limits)?
                } else {
                    decode_owned(node, &indices, object, limits)?
                };
                let c = Arc::new(c);
                cache.chunk = Some(c.clone());
                c
            }
        };
        pieces.push(chunk);
    }
    // Objects fetched ahead but not needed (the region was smaller than planned) are dropped.
    cache.prefetched.clear();
    if let [only] = pieces.as_slice()
        && only.origin == region_start
        && only.shape == region_shape
    {
        // A chunk that is the whole region is needed by no other region of the partition (they
        // do not overlap): it is not kept, so it is freed with the region.
        cache.chunk = None;
        return Ok(Region::Whole(only.clone()));
    }
    // The region's elements, and below its bytes, as memory holds them: a region is a unit's
    // box, assembled in memory, whatever its chunks' sizes.
    let too_large = |what: &str| {
        ZarrError::metadata(
            &node.display,
            format!("region {region:?} holds more {what} than memory can address"),
        )
    };
    let total = region_shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| too_large("elements"))?;
    match pieces.first().map(|c| &c.elements) {
        Some(Elements::Fixed { size, .. }) => {
            let size = *size;
            let bytes = total.checked_mul(size).ok_or_else(|| too_large("bytes"))?;
            let mut out = vec![0u8; bytes];
            for chunk in &pieces {
                let Elements::Fixed { bytes, .. } = &chunk.elements else {
                    continue;
                };
                for_each_run(
                    &chunk.origin,
                    &chunk.shape,
                    &region_start,
                    &region_shape,
                    |src, dst, len| {
                        out[dst * size..(dst + len) * size]
                            .copy_from_slice(&bytes[src * size..(src + len) * size]);
                    },
                );
            }
            Ok(Region::Assembled(Elements::Fixed {
                bytes: Buffer::from_vec(out),
                size,
            }))
        }
        Some(Elements::Variable { .. }) => {
            let mut runs: Vec<(usize, usize, usize, usize)> = Vec::new();
            for (ci, chunk) in pieces.iter().enumerate() {
                for_each_run(
                    &chunk.origin,
                    &chunk.shape,
                    &region_start,
                    &region_shape,
                    |src, dst, len| {
                        runs.push((dst, ci, src, len));
                    },
                );
            }
            runs.sort_unstable();
            let mut bytes = Vec::new();
            let mut offsets = Vec::with_capacity(total + 1);
            offsets.push(0);
            for (_, ci, src, len) in runs {
                if let Elements::Variable {
                    bytes: b,
                    offsets: o,
                } = &pieces[ci].elements
                {
                    for i in src..src + len {
                        bytes.extend_from_slice(&b[o[i]..o[i + 1]]);
                        offsets.push(bytes.len());
                    }
                }
            }
            Ok(Region::Assembled(Elements::Variable { bytes, offsets }))
        }
        None => Ok(Region::Assembled(Elements::Fixed {
            bytes: Buffer::from_vec(Vec::<u8>::new()),
            size: 1,
        })),
    }
}

/// Calls `f(src, dst, len)` for each run of elements that a chunk (`origin`, `shape`) and a
/// region (`start`, `extent`) share along the last dimension: `len` elements starting at linear
/// index `src` in the chunk and `dst` in the region, both in C order.
pub(crate) fn for_each_run(
    origin: &[u64],
    shape: &[u64],
    start: &[u64],
    extent: &[u64],
    mut f: impl FnMut(usize, usize, usize),
) {
    let ndim = shape.len();
    if ndim == 0 {
        f(0, 0, 1);
        return;
    }
    // The intersection, in array coordinates.
    let mut lo = vec![0u64; ndim];
    let mut hi = vec![0u64; ndim];
    for d in 0..ndim {
        lo[d] = origin[d].max(start[d]);
        // Saturating: an edge chunk may reach past u64 where the array ends below it.
        hi[d] = (origin[d].saturating_add(shape[d])).min(start[d].saturating_add(extent[d]));
        if lo[d] >= hi[d] {
            return;
        }
    }
    let run = (hi[ndim - 1] - lo[ndim - 1]) as usize;
    let mut pos = lo.clone();
    loop {
        let mut src = 0u64;
        let mut dst = 0u64;
        for d in 0..ndim {
            src = src * shape[d] + (pos[d] - origin[d]);
            dst = dst * extent[d] + (pos[d] - start[d]);
        }
        f(src as usize, dst as usize, run);
        // Advance the odometer over all but the last dimension.
        let mut d = ndim - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            pos[d] += 1;
            if pos[d] < hi[d] {
                break;
            }
            pos[d] = lo[d];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::for_each_run;

    #[test]
    fn runs_cover_the_intersection() {
        // Chunk [4..8) x [3..6) of a 9x7 array, region [5..9) x [0..7).
        let mut runs = Vec::new();
        for_each_run(&[4, 3], &[4, 3], &[5, 0], &[4, 7], |s, d, l| {
            runs.push((s, d, l))
        });
        assert_eq!(runs, vec![(3, 3, 3), (6, 10, 3), (9, 17, 3)]);
        let mut one = Vec::new();
        for_each_run(&[], &[], &[], &[], |s, d, l| one.push((s, d, l)));
        assert_eq!(one, vec![(0, 0, 1)]);
    }
}

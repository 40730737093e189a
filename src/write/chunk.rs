//! Chunks through zarrs' codecs ([`ChunkEncoder`]: the array's own codec chain, from the
//! metadata written, so a chunk is what zarr-python would write), encoded on the blocking
//! pool while the query goes on and written as they finish ([`Pipeline`], a bounded number in
//! flight, so memory holds that many chunks).

use std::num::NonZeroU64;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::task::JoinSet;
use zarrs::array::{
    ArrayBytes, ArrayBytesOffsets, ArrayMetadata, ArrayMetadataV2, ArrayMetadataV3,
    ArrayToBytesCodecTraits, CodecOptions,
};

use super::target::Target;
use crate::error::{Result, ZarrError};
use crate::node::ZarrsArray;

/// The codecs of one array, for chunks of one shape.
#[derive(Debug, Clone)]
pub(crate) struct ChunkEncoder {
    array: Arc<ZarrsArray>,
    shape: Vec<NonZeroU64>,
    /// The array, as errors name it.
    name: String,
}

impl ChunkEncoder {
    /// The encoder of the array `documents` describe (`zarr.json`, or `.zarray` and
    /// `.zattrs`), for chunks of `shape`.
    pub(crate) fn new(name: &str, documents: &[(&str, Value)], shape: &[u64]) -> Result<Self> {
        let failed = |e: String| ZarrError::Write {
            target: name.to_string(),
            message: format!("its metadata does not make an array: {e}"),
        };
        crate::codecs::register();
        let metadata = match documents {
            [("zarr.json", document)] => ArrayMetadata::V3(
                serde_json::from_value::<ArrayMetadataV3>(document.clone())
                    .map_err(|e| failed(e.to_string()))?,
            ),
            [(".zarray", array), (".zattrs", _)] => {
                // A V2 array may have no fill value (xarray's way: there it masks); zarrs
                // wants one to encode with, and it does not change a chunk's bytes.
                let mut array = array.clone();
                if array["fill_value"].is_null() {
                    let text = array["dtype"].as_str().unwrap_or_default();
                    array["fill_value"] = match text.get(1..2) {
                        Some("U" | "O" | "S") => Value::from(""),
                        Some("b") => Value::from(false),
                        _ => Value::from(0),
                    };
                }
                ArrayMetadata::V2(
                    serde_json::from_value::<ArrayMetadataV2>(array)
                        .map_err(|e| failed(e.to_string()))?,
                )
            }
            _ => return Err(ZarrError::internal("array documents")),
        };
        let array = ZarrsArray::new_with_metadata(Arc::new(()), "/", metadata)
            .map_err(|e| failed(e.to_string()))?;
        let shape = shape
            .iter()
            .map(|&n| NonZeroU64::new(n).unwrap_or(NonZeroU64::MIN))
            .collect();
        Ok(Self {
            array: Arc::new(array),
            shape,
            name: name.to_string(),
        })
    }

    /// The encoder of an existing array (`zarrs`), for chunks of `shape` (an append).
    pub(crate) fn from_array(name: &str, zarrs: Arc<ZarrsArray>, shape: &[u64]) -> Self {
        let shape = shape
            .iter()
            .map(|&n| NonZeroU64::new(n).unwrap_or(NonZeroU64::MIN))
            .collect();
        Self {
            array: zarrs,
            shape,
            name: name.to_string(),
        }
    }

    /// `count` elements of the fill value: fixed-size bytes, or variable-length bytes and
    /// each element's end.
    pub(crate) fn fill_elements(&self, count: usize) -> Result<(Vec<u8>, Option<Vec<usize>>)> {
        let array = &self.array;
        let fill = ArrayBytes::new_fill_value(array.data_type(), count as u64, array.fill_value())
            .map_err(|e| self.error(e))?;
        match fill {
            ArrayBytes::Variable(vlen) => {
                let (bytes, offsets) = vlen.into_parts();
                Ok((
                    bytes.to_vec(),
                    Some(offsets.get(1..).unwrap_or_default().to_vec()),
                ))
            }
            other => Ok((
                other.into_fixed().map_err(|e| self.error(e))?.to_vec(),
                None,
            )),
        }
    }

    /// Decodes a chunk of variable-length elements: the bytes, and the offsets (with the
    /// leading 0).
    pub(crate) fn decode_vlen(&self, encoded: &[u8]) -> Result<(Vec<u8>, Vec<usize>)> {
        let decoded = self.decode(encoded)?;
        let (bytes, offsets) = decoded
            .into_variable()
            .map_err(|e| self.error(e))?
            .into_parts();
        Ok((bytes.to_vec(), offsets.to_vec()))
    }

    /// Decodes a chunk this encoder's codecs wrote.
    fn decode(&self, encoded: &[u8]) -> Result<ArrayBytes<'static>> {
        let array = &self.array;
        let decoded = array
            .codecs()
            .decode(
                encoded.to_vec().into(),
                &self.shape,
                array.data_type(),
                array.fill_value(),
                &CodecOptions::default(),
            )
            .map_err(|e| self.error(e))?;
        Ok(decoded.into_owned())
    }

    fn error(&self, e: impl std::fmt::Display) -> ZarrError {
        ZarrError::Write {
            target: self.name.clone(),
            message: format!("encoding a chunk: {e}"),
        }
    }

    fn encode(&self, bytes: ArrayBytes<'_>) -> Result<Vec<u8>> {
        let array = &self.array;
        let encoded = array
            .codecs()
            .encode(
                bytes,
                &self.shape,
                array.data_type(),
                array.fill_value(),
                &CodecOptions::default(),
            )
            .map_err(|e| self.error(e))?;
        Ok(encoded.into_owned())
    }

    /// The number of elements of a chunk.
    pub(crate) fn elements(&self) -> u64 {
        self.shape.iter().map(|n| n.get()).product()
    }

    /// Encodes a chunk of fixed-size elements (`bytes` holds at most a whole chunk; the rest
    /// is padded with zeros).
    pub(crate) fn encode_fixed(&self, mut bytes: Vec<u8>, element_size: u64) -> Result<Vec<u8>> {
        let full = chunk_bytes(&self.name, self.elements(), element_size)?;
        bytes.resize(full, 0);
        self.encode(ArrayBytes::new_flen(bytes))
    }

    /// Encodes a chunk of variable-length elements (`offsets`: each element's end; missing
    /// elements at the end are empty).
    pub(crate) fn encode_vlen(&self, bytes: Vec<u8>, mut offsets: Vec<usize>) -> Result<Vec<u8>> {
        let count = usize::try_from(self.elements()).map_err(|_| self.error("a chunk"))?;
        offsets.insert(0, 0);
        offsets.resize(count.saturating_add(1), bytes.len());
        let offsets = ArrayBytesOffsets::new(offsets).map_err(|e| self.error(e))?;
        let bytes = ArrayBytes::new_vlen(bytes, offsets).map_err(|e| self.error(e))?;
        self.encode(bytes)
    }

    /// Decodes a chunk of fixed-size elements this encoder wrote.
    pub(crate) fn decode_fixed(&self, encoded: &[u8]) -> Result<Vec<u8>> {
        let decoded = self.decode(encoded)?;
        let fixed = decoded.into_fixed().map_err(|e| self.error(e))?;
        Ok(fixed.into_owned())
    }
}

/// The largest chunk the writer makes, decoded: the reader's default `max_chunk_bytes`, so
/// what is written can be read back with the default limits.
pub(crate) const MAX_CHUNK_BYTES: u64 = 1 << 30;

/// The bytes of a chunk of `elements` elements of `element_size` bytes, or the error naming
/// the options that make it larger than [`MAX_CHUNK_BYTES`].
pub(crate) fn chunk_bytes(array: &str, elements: u64, element_size: u64) -> Result<usize> {
    let bytes = elements.saturating_mul(element_size);
    if bytes > MAX_CHUNK_BYTES {
        return Err(ZarrError::Option(format!(
            "array {array}: a chunk of {elements} elements of {element_size} bytes is {bytes} \
             bytes, more than the 1 GiB a chunk may hold (readers refuse larger ones by \
             default): lower chunk_rows, shard_rows or chunks"
        )));
    }
    usize::try_from(bytes).map_err(|_| ZarrError::internal("a chunk's size"))
}

/// Chunks encoded on the blocking pool and written as they finish, at most `limit` at once.
pub(crate) struct Pipeline {
    tasks: JoinSet<Result<()>>,
    limit: usize,
    target: Arc<Target>,
}

impl Pipeline {
    /// A pipeline writing to `target`, as many chunks at once as there are cores (and one
    /// more, so a core is not idle while a chunk is written).
    pub(crate) fn new(target: Arc<Target>) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            tasks: JoinSet::new(),
            limit: cores.saturating_add(1),
            target,
        }
    }

    /// The target written to.
    pub(crate) fn target(&self) -> &Arc<Target> {
        &self.target
    }

    /// Encodes a chunk with `job` and writes it as `key`; waits while `limit` chunks are in
    /// flight (and fails with the first that failed).
    pub(crate) async fn submit(
        &mut self,
        key: String,
        job: impl FnOnce() -> Result<Vec<u8>> + Send + 'static,
    ) -> Result<()> {
        while self.tasks.len() >= self.limit {
            self.join_one().await?;
        }
        let target = self.target.clone();
        self.tasks.spawn(async move {
            let encoded = tokio::task::spawn_blocking(job)
                .await
                .map_err(|e| ZarrError::internal(format!("a chunk's encoding: {e}")))??;
            target.put(&key, Bytes::from(encoded)).await
        });
        Ok(())
    }

    async fn join_one(&mut self) -> Result<()> {
        match self.tasks.join_next().await {
            Some(Ok(result)) => result,
            Some(Err(e)) => Err(ZarrError::internal(format!("a chunk's write: {e}"))),
            None => Ok(()),
        }
    }

    /// Waits for the chunks in flight of a failed write, their errors dropped: a write in
    /// progress cannot be stopped midway (object_store's local puts finish on the blocking
    /// pool), so it is waited for, and then removed with the rest.
    pub(crate) async fn shutdown(&mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    /// Waits for every chunk.
    pub(crate) async fn finish(&mut self) -> Result<()> {
        while !self.tasks.is_empty() {
            self.join_one().await?;
        }
        Ok(())
    }
}

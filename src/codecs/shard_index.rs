//! Checks a shard's index before zarrs reads it: checksum, bounds, overflow and overlap.

use serde_json::Value;

/// How a sharded array lays out the index of each shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardIndexLayout {
    /// Inner chunks per shard.
    pub inner_chunks: u64,
    /// The index sits at the start of the shard (else at the end).
    pub at_start: bool,
    /// Index entries are big-endian.
    pub big_endian: bool,
    /// A CRC32C follows the index entries.
    pub crc32c: bool,
}

impl ShardIndexLayout {
    /// Bytes the index takes.
    pub fn index_size(&self) -> Option<u64> {
        self.inner_chunks
            .checked_mul(16)?
            .checked_add(if self.crc32c { 4 } else { 0 })
    }

    /// The layout of a V3 array's `sharding_indexed` codec, if it has one; an error for
    /// index codecs other than `bytes` (optionally followed by `crc32c`), which we do not check.
    pub fn from_metadata(metadata: &Value, shard_shape: &[u64]) -> Result<Option<Self>, String> {
        let Some(codecs) = metadata.get("codecs").and_then(Value::as_array) else {
            return Ok(None);
        };
        let mut permutation: Option<Vec<usize>> = None;
        for codec in codecs {
            match codec.get("name").and_then(Value::as_str) {
                Some("transpose") => {
                    permutation = codec
                        .pointer("/configuration/order")
                        .and_then(Value::as_array)
                        .map(|o| {
                            o.iter()
                                .filter_map(|v| v.as_u64().and_then(|v| usize::try_from(v).ok()))
                                .collect()
                        });
                }
                Some("sharding_indexed") => {
                    return Self::from_codec(codec, shard_shape, permutation.as_deref()).map(Some);
                }
                _ => {}
            }
        }
        Ok(None)
    }

    fn from_codec(
        codec: &Value,
        shard_shape: &[u64],
        permutation: Option<&[usize]>,
    ) -> Result<Self, String> {
        let config = codec
            .get("configuration")
            .ok_or("sharding_indexed has no configuration")?;
        let inner: Vec<u64> = config
            .get("chunk_shape")
            .and_then(Value::as_array)
            .ok_or("sharding_indexed has no chunk_shape")?
            .iter()
            .map(|v| {
                v.as_u64()
                    .filter(|&n| n > 0)
                    .ok_or("inner chunk_shape must hold positive integers")
            })
            .collect::<Result<_, _>>()?;
        if inner.len() != shard_shape.len() {
            return Err(format!(
                "inner chunk_shape {inner:?} does not have the rank of the shard shape {shard_shape:?}"
            ));
        }
        let mut inner_chunks = 1u64;
        for (d, &n) in inner.iter().enumerate() {
            let extent = match permutation {
                Some(p) => *p
                    .get(d)
                    .and_then(|&i| shard_shape.get(i))
                    .ok_or("invalid transpose order")?,
                None => shard_shape[d],
            };
            if extent % n != 0 {
                return Err(format!(
                    "inner chunk_shape {inner:?} does not divide the shard shape {shard_shape:?}, \
                     as the sharding codec requires"
                ));
            }
            inner_chunks = inner_chunks
                .checked_mul(extent.div_ceil(n))
                .ok_or("the number of inner chunks per shard overflows u64")?;
        }
        let at_start = match config.get("index_location").and_then(Value::as_str) {
            None | Some("end") => false,
            Some("start") => true,
            Some(other) => {
                return Err(format!("index_location '{other}' is neither start nor end"));
            }
        };
        let index_codecs = config
            .get("index_codecs")
            .and_then(Value::as_array)
            .ok_or("sharding_indexed has no index_codecs")?;
        let names: Vec<&str> = index_codecs
            .iter()
            .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
            .collect();
        let crc32c = match names.as_slice() {
            ["bytes"] => false,
            ["bytes", "crc32c"] => true,
            _ => {
                return Err(format!(
                    "index_codecs {names:?} are not read here: only bytes, optionally followed by crc32c"
                ));
            }
        };
        let big_endian = index_codecs[0]
            .pointer("/configuration/endian")
            .and_then(Value::as_str)
            == Some("big");
        let layout = Self {
            inner_chunks,
            at_start,
            big_endian,
            crc32c,
        };
        layout
            .index_size()
            .ok_or("the shard index size overflows u64")?;
        Ok(layout)
    }

    /// Checks `shard` (a whole shard object) against this layout.
    pub fn check(&self, shard: &[u8]) -> Result<(), String> {
        let len = shard.len() as u64;
        let range = self.index_range(len)?;
        self.parse(&shard[range.start as usize..range.end as usize], len)
            .map(|_| ())
    }

    /// The byte range of the index in a shard of `len` bytes.
    pub fn index_range(&self, len: u64) -> Result<std::ops::Range<u64>, String> {
        let index_size = self
            .index_size()
            .ok_or("the shard index size overflows u64")?;
        if len < index_size {
            return Err(format!(
                "truncated shard: {len} bytes, but its index alone takes {index_size}"
            ));
        }
        Ok(if self.at_start {
            0..index_size
        } else {
            len - index_size..len
        })
    }

    /// Validates `index` (the index bytes of a shard of `len` bytes) and returns each inner
    /// chunk's byte range, `None` for absent ones.
    pub fn parse(
        &self,
        index: &[u8],
        len: u64,
    ) -> Result<Vec<Option<std::ops::Range<u64>>>, String> {
        let index_size = self
            .index_size()
            .ok_or("the shard index size overflows u64")?;
        if index.len() as u64 != index_size || len < index_size {
            return Err(format!(
                "truncated shard: {len} bytes, but its index alone takes {index_size}"
            ));
        }
        let entries_len = (self.inner_chunks * 16) as usize;
        if self.crc32c {
            let stored = u32::from_le_bytes([
                index[entries_len],
                index[entries_len + 1],
                index[entries_len + 2],
                index[entries_len + 3],
            ]);
            let computed = crc32c::crc32c(&index[..entries_len]);
            if stored != computed {
                return Err(format!(
                    "shard index checksum mismatch: stored 0x{stored:08X}, computed 0x{computed:08X}"
                ));
            }
        }
        let (data_start, data_end) = if self.at_start {
            (index_size, len)
        } else {
            (0, len - index_size)
        };
        let read = |b: &[u8]| {
            let a = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
            if self.big_endian {
                u64::from_be_bytes(a)
            } else {
                u64::from_le_bytes(a)
            }
        };
        let mut ranges = Vec::with_capacity(self.inner_chunks as usize);
        for (i, entry) in index[..entries_len].chunks_exact(16).enumerate() {
            let (offset, nbytes) = (read(&entry[..8]), read(&entry[8..]));
            if offset == u64::MAX && nbytes == u64::MAX {
                ranges.push(None); // an absent inner chunk
                continue;
            }
            let end = offset.checked_add(nbytes).ok_or_else(|| {
                format!("inner chunk {i}: offset {offset} + length {nbytes} overflows u64")
            })?;
            if offset < data_start || end > data_end {
                return Err(format!(
                    "inner chunk {i}: bytes {offset}..{end} lie outside the shard's data ({data_start}..{data_end} of {len} bytes; the index takes the rest)"
                ));
            }
            ranges.push(Some(offset..end));
        }
        Ok(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(entries: &[(u64, u64)], data: usize, crc: bool) -> Vec<u8> {
        let mut out = vec![7u8; data];
        let mut index = Vec::new();
        for (o, n) in entries {
            index.extend_from_slice(&o.to_le_bytes());
            index.extend_from_slice(&n.to_le_bytes());
        }
        let c = crc32c::crc32c(&index);
        out.extend_from_slice(&index);
        if crc {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    #[test]
    fn index_checks() {
        let layout = ShardIndexLayout {
            inner_chunks: 2,
            at_start: false,
            big_endian: false,
            crc32c: true,
        };
        assert!(
            layout
                .check(&shard(&[(0, 10), (u64::MAX, u64::MAX)], 10, true))
                .is_ok()
        );
        let e = layout
            .check(&shard(&[(0, 11), (u64::MAX, u64::MAX)], 10, true))
            .unwrap_err();
        assert!(e.contains("outside"), "{e}");
        let e = layout
            .check(&shard(&[(5, u64::MAX - 1), (0, 1)], 10, true))
            .unwrap_err();
        assert!(e.contains("overflows"), "{e}");
        let mut bad = shard(&[(0, 10), (0, 1)], 10, true);
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert!(layout.check(&bad).unwrap_err().contains("checksum"));
        assert!(layout.check(&[0u8; 20]).unwrap_err().contains("truncated"));
    }
}

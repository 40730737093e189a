//! numcodecs' 32-bit checksum codecs, which zarrs 0.23 lacks (crc32, adler32, jenkins_lookup3)
//! or has only under other names and placements: V2 ids `crc32`, `adler32`, `fletcher32`,
//! `crc32c`, `jenkins_lookup3` and their V3 names `numcodecs.<id>` (zarr-python 3's
//! `zarr.codecs.numcodecs`).
//!
//! numcodecs puts the 4-byte little-endian checksum at the **start** of the chunk for crc32
//! and adler32, at the **end** for fletcher32, crc32c and jenkins_lookup3. Decoding verifies it
//! and strips it; a mismatch is an error naming the codec (the reader adds the chunk).
//!
//! The sums come from crates already in the tree where one exists (`crc32fast`, `adler2`,
//! `crc32c`); fletcher32 (HDF5's variant over big-endian 16-bit words) and Bob Jenkins'
//! lookup3 (`hashlittle`) are written here, each checked against numcodecs' own output below.

use std::borrow::Cow;

use zarrs::array::{ArrayBytesRaw, BytesRepresentation, CodecError};
use zarrs::metadata::Configuration;
use zarrs::plugin::PluginCreateError;

use super::plugin::{self, NumcodecsDecoder};

/// The checksum algorithms, by numcodecs id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Crc32,
    Adler32,
    Fletcher32,
    Crc32c,
    JenkinsLookup3,
}

impl Algorithm {
    fn of(id: &str) -> Option<Self> {
        match id {
            "crc32" => Some(Self::Crc32),
            "adler32" => Some(Self::Adler32),
            "fletcher32" => Some(Self::Fletcher32),
            "crc32c" => Some(Self::Crc32c),
            "jenkins_lookup3" => Some(Self::JenkinsLookup3),
            _ => None,
        }
    }

    fn id(self) -> &'static str {
        match self {
            Self::Crc32 => "crc32",
            Self::Adler32 => "adler32",
            Self::Fletcher32 => "fletcher32",
            Self::Crc32c => "crc32c",
            Self::JenkinsLookup3 => "jenkins_lookup3",
        }
    }

    /// numcodecs stores crc32 and adler32 before the data, the others after it.
    fn at_start(self) -> bool {
        matches!(self, Self::Crc32 | Self::Adler32)
    }
}

/// Registers the codecs with zarrs (see [`super::register`]).
pub(super) fn register() {
    for id in [
        "crc32",
        "adler32",
        "fletcher32",
        "crc32c",
        "jenkins_lookup3",
    ] {
        plugin::register(id, move |configuration| Checksum::new(id, configuration));
    }
}

/// One numcodecs checksum codec.
#[derive(Debug, Clone)]
struct Checksum {
    algorithm: Algorithm,
    /// jenkins_lookup3's seed.
    initval: u32,
    /// jenkins_lookup3's bytes hashed before the data.
    prefix: Vec<u8>,
}

impl Checksum {
    fn new(id: &str, configuration: Option<&Configuration>) -> Result<Self, PluginCreateError> {
        let algorithm = Algorithm::of(id)
            .ok_or_else(|| PluginCreateError::Other(format!("{id} is not a checksum codec")))?;
        let get = |key: &str| {
            configuration
                .and_then(|c| c.get(key))
                .filter(|v| !v.is_null())
        };
        let initval = match get("initval") {
            None => 0,
            Some(v) => v
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| {
                    PluginCreateError::Other(format!("{id} initval {v} is not a 32-bit integer"))
                })?,
        };
        let prefix = match get("prefix") {
            None => Vec::new(),
            Some(v) => v
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                        .collect::<Option<Vec<u8>>>()
                })
                .ok_or_else(|| {
                    PluginCreateError::Other(format!(
                        "{id} prefix {v} is unsupported (a list of byte values is)"
                    ))
                })?,
        };
        Ok(Self {
            algorithm,
            initval,
            prefix,
        })
    }

    /// The chunk numcodecs would write for `data` (the reader itself never encodes).
    #[cfg(test)]
    fn encode(&self, data: &[u8]) -> Vec<u8> {
        let sum = self.sum(data).to_le_bytes();
        match self.algorithm.at_start() {
            true => [sum.as_slice(), data].concat(),
            false => [data, sum.as_slice()].concat(),
        }
    }

    fn sum(&self, data: &[u8]) -> u32 {
        match self.algorithm {
            Algorithm::Crc32 => crc32fast::hash(data),
            Algorithm::Adler32 => {
                let mut adler = adler2::Adler32::new();
                adler.write_slice(data);
                adler.checksum()
            }
            Algorithm::Fletcher32 => fletcher32(data),
            Algorithm::Crc32c => crc32c::crc32c(data),
            Algorithm::JenkinsLookup3 if self.prefix.is_empty() => hashlittle(data, self.initval),
            Algorithm::JenkinsLookup3 => {
                hashlittle(&[self.prefix.as_slice(), data].concat(), self.initval)
            }
        }
    }
}

impl NumcodecsDecoder for Checksum {
    fn id(&self) -> &'static str {
        self.algorithm.id()
    }

    fn configuration(&self) -> Configuration {
        let mut c = serde_json::Map::new();
        if self.algorithm == Algorithm::JenkinsLookup3 {
            c.insert("initval".into(), self.initval.into());
            if !self.prefix.is_empty() {
                c.insert("prefix".into(), self.prefix.clone().into());
            }
        }
        Configuration::from(c)
    }

    fn encoded_representation(&self, decoded: &BytesRepresentation) -> BytesRepresentation {
        match decoded {
            // Saturating: a chunk declared near u64::MAX (a max_chunk_bytes raised that far)
            // is refused by its size, not by an overflow here.
            BytesRepresentation::FixedSize(n) => {
                BytesRepresentation::FixedSize(n.saturating_add(4))
            }
            BytesRepresentation::BoundedSize(n) => {
                BytesRepresentation::BoundedSize(n.saturating_add(4))
            }
            BytesRepresentation::UnboundedSize => BytesRepresentation::UnboundedSize,
        }
    }

    fn decode<'a>(
        &self,
        encoded_value: ArrayBytesRaw<'a>,
        _decoded_representation: &BytesRepresentation,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let id = self.algorithm.id();
        let len = encoded_value.len();
        if len < 4 {
            return Err(CodecError::Other(format!(
                "{id} data is {len} bytes, shorter than its 4-byte checksum"
            )));
        }
        let (stored, data) = if self.algorithm.at_start() {
            (&encoded_value[..4], 4..len)
        } else {
            (&encoded_value[len - 4..], 0..len - 4)
        };
        let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
        let computed = self.sum(&encoded_value[data.clone()]);
        if stored != computed {
            return Err(CodecError::Other(format!(
                "{id} checksum mismatch: the chunk stores 0x{stored:08x}, its data sums to \
                 0x{computed:08x} (a corrupt chunk)"
            )));
        }
        Ok(match encoded_value {
            Cow::Borrowed(b) => Cow::Borrowed(&b[data]),
            Cow::Owned(mut v) => {
                v.truncate(data.end);
                v.drain(..data.start);
                Cow::Owned(v)
            }
        })
    }
}

/// HDF5's Fletcher-32 (as numcodecs computes it): sums of big-endian 16-bit words, reduced
/// every 360 words; an odd last byte is the high byte of a final word.
fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let fold = |s: u32| (s & 0xffff) + (s >> 16);
    let words = data.chunks_exact(2);
    let odd = words.remainder().first().copied();
    let words: Vec<u32> = words
        .map(|w| u32::from(w[0]) << 8 | u32::from(w[1]))
        .collect();
    for block in words.chunks(360) {
        for &w in block {
            sum1 = sum1.wrapping_add(w);
            sum2 = sum2.wrapping_add(sum1);
        }
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    if let Some(b) = odd {
        sum1 = sum1.wrapping_add(u32::from(b) << 8);
        sum2 = sum2.wrapping_add(sum1);
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    sum1 = fold(sum1);
    sum2 = fold(sum2);
    (sum2 << 16) | sum1
}

/// Bob Jenkins' lookup3 `hashlittle` (as HDF5 and numcodecs compute it).
fn hashlittle(key: &[u8], initval: u32) -> u32 {
    fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
        *a = a.wrapping_sub(*c) ^ c.rotate_left(4);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a) ^ a.rotate_left(6);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b) ^ b.rotate_left(8);
        *b = b.wrapping_add(*a);
        *a = a.wrapping_sub(*c) ^ c.rotate_left(16);
        *c = c.wrapping_add(*b);
        *b = b.wrapping_sub(*a) ^ a.rotate_left(19);
        *a = a.wrapping_add(*c);
        *c = c.wrapping_sub(*b) ^ b.rotate_left(4);
        *b = b.wrapping_add(*a);
    }
    fn last(a: &mut u32, b: &mut u32, c: &mut u32) {
        *c = (*c ^ *b).wrapping_sub(b.rotate_left(14));
        *a = (*a ^ *c).wrapping_sub(c.rotate_left(11));
        *b = (*b ^ *a).wrapping_sub(a.rotate_left(25));
        *c = (*c ^ *b).wrapping_sub(b.rotate_left(16));
        *a = (*a ^ *c).wrapping_sub(c.rotate_left(4));
        *b = (*b ^ *a).wrapping_sub(a.rotate_left(14));
        *c = (*c ^ *b).wrapping_sub(b.rotate_left(24));
    }
    let word = |k: &[u8]| u32::from_le_bytes([k[0], k[1], k[2], k[3]]);
    let start = 0xdead_beefu32
        .wrapping_add(key.len() as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (start, start, start);
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(word(&k[0..4]));
        b = b.wrapping_add(word(&k[4..8]));
        c = c.wrapping_add(word(&k[8..12]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    // The last 1 to 12 bytes, zero-padded: what lookup3's fall-through switch adds.
    let mut tail = [0u8; 12];
    tail[..k.len()].copy_from_slice(k);
    a = a.wrapping_add(word(&tail[0..4]));
    b = b.wrapping_add(word(&tail[4..8]));
    c = c.wrapping_add(word(&tail[8..12]));
    last(&mut a, &mut b, &mut c);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(id: &str, configuration: serde_json::Value) -> Checksum {
        let c: Configuration = serde_json::from_value(configuration).unwrap();
        Checksum::new(id, Some(&c)).unwrap()
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Inputs and numcodecs 0.16.6's encodings of them (`codec.encode(np.frombuffer(d, "u1"))`).
    fn inputs() -> Vec<Vec<u8>> {
        let utf32: Vec<u8> = "βeta日本"
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect();
        vec![
            b"a".to_vec(),
            b"abcdefgh".to_vec(),
            (0..13).collect(),
            (0..40).collect(),
            utf32,
            (0..=255u8).cycle().take(768).collect(),
        ]
    }

    #[test]
    fn sums_match_numcodecs() {
        let none = serde_json::json!({});
        let cases: [(&str, serde_json::Value, [&str; 6]); 4] = [
            (
                "fletcher32",
                none.clone(),
                [
                    "00610061", "9591ebe1", "242a7f70", "917d406f", "d1fd9c1e", "bf400060",
                ],
            ),
            (
                "jenkins_lookup3",
                none.clone(),
                [
                    "0887d658", "bec39529", "16689dbc", "88a89f1c", "73f1b4c5", "cf5ace9d",
                ],
            ),
            (
                "crc32",
                none.clone(),
                [
                    "43beb7e8", "502aefae", "b846fee6", "3c2ea60d", "a031f7c9", "",
                ],
            ),
            (
                "adler32",
                none,
                [
                    "62006200", "2503000e", "4f007901", "0d03cc29", "cd038d30", "",
                ],
            ),
        ];
        for (id, configuration, sums) in cases {
            let c = codec(id, configuration);
            for (input, want) in inputs().iter().zip(sums).filter(|(_, w)| !w.is_empty()) {
                let encoded = c.encode(input);
                let sum = if c.algorithm.at_start() {
                    &encoded[..4]
                } else {
                    &encoded[encoded.len() - 4..]
                };
                assert_eq!(hex(sum), want, "{id} of {} bytes", input.len());
            }
        }
        let seeded = codec("jenkins_lookup3", serde_json::json!({"initval": 7}));
        assert_eq!(hex(&seeded.sum(b"abcdefgh").to_le_bytes()), "a24389c7");
        let prefixed = codec(
            "jenkins_lookup3",
            serde_json::json!({"initval": 7, "prefix": [122, 97, 114, 114]}),
        );
        assert_eq!(hex(&prefixed.sum(b"abcdefgh").to_le_bytes()), "d403cf67");
        assert_eq!(
            hex(&codec("crc32c", none_config())
                .sum(b"abcdefgh")
                .to_le_bytes()),
            "b721940a"
        );
    }

    fn none_config() -> serde_json::Value {
        serde_json::json!({})
    }

    #[test]
    fn decoding_verifies_and_strips() {
        for id in [
            "crc32",
            "adler32",
            "fletcher32",
            "crc32c",
            "jenkins_lookup3",
        ] {
            let c = codec(id, none_config());
            let data = b"fixed_length_utf32".to_vec();
            let encoded = c.encode(&data);
            let repr = BytesRepresentation::FixedSize(data.len() as u64);
            let decoded = c.decode(Cow::Owned(encoded.to_vec()), &repr).unwrap();
            assert_eq!(decoded.as_ref(), data.as_slice(), "{id}");
            let mut corrupt = encoded.to_vec();
            corrupt[6] ^= 1;
            let e = c.decode(Cow::Owned(corrupt), &repr).unwrap_err();
            assert!(
                e.to_string().contains(&format!("{id} checksum mismatch")),
                "{e}"
            );
            let e = c.decode(Cow::Owned(vec![1, 2]), &repr).unwrap_err();
            assert!(
                e.to_string().contains("shorter than its 4-byte checksum"),
                "{e}"
            );
        }
    }

    /// The encoded size of a chunk declared near `u64::MAX` (a `max_chunk_bytes` raised that
    /// far) is a bound, not an overflow: `n + 4` panicked in debug builds.
    #[test]
    fn encoded_sizes_do_not_overflow() {
        let c = codec("crc32c", none_config());
        for (decoded, encoded) in [
            (
                BytesRepresentation::FixedSize(u64::MAX),
                BytesRepresentation::FixedSize(u64::MAX),
            ),
            (
                BytesRepresentation::BoundedSize(u64::MAX - 1),
                BytesRepresentation::BoundedSize(u64::MAX),
            ),
            (
                BytesRepresentation::FixedSize(10),
                BytesRepresentation::FixedSize(14),
            ),
        ] {
            assert_eq!(c.encoded_representation(&decoded), encoded);
        }
    }
}

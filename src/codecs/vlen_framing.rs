//! Checks a variable-length chunk's framing before zarrs decodes it. numcodecs' `vlen-utf8` and
//! `vlen-bytes` (V3 `string` and `variable_length_bytes`, V2 `|O`; zarrs' `vlen_v2`) write a
//! little-endian `u32` count, then each item as a `u32` length and its bytes. zarrs 0.23
//! checks the count but trusts each length, slicing past the end of the chunk (a panic that
//! ends the process) when one runs over; here every length is walked with checked arithmetic
//! first, and a chunk that breaks the rule is an error naming the item.

use zarrs::array::ArrayToBytesCodecTraits;
use zarrs::array::codec::{VlenBytesCodec, VlenUtf8Codec, VlenV2Codec};

/// Whether `codec` decodes numcodecs' variable-length framing.
pub(crate) fn is_vlen_v2(codec: &dyn ArrayToBytesCodecTraits) -> bool {
    let any = codec.as_any();
    any.is::<VlenUtf8Codec>() || any.is::<VlenBytesCodec>() || any.is::<VlenV2Codec>()
}

/// Checks that `bytes` (a decompressed chunk) frames `num_elements` items within itself.
pub(crate) fn check(bytes: &[u8], num_elements: u64) -> Result<(), String> {
    let word = |at: usize| -> Option<u64> {
        let end = at.checked_add(4)?;
        let b: [u8; 4] = bytes.get(at..end)?.try_into().ok()?;
        Some(u64::from(u32::from_le_bytes(b)))
    };
    let count = word(0).ok_or_else(|| {
        format!(
            "the variable-length chunk is {} bytes, too short for its item count",
            bytes.len()
        )
    })?;
    if count != num_elements {
        return Err(format!(
            "the variable-length chunk holds {count} items, its shape declares {num_elements}"
        ));
    }
    let mut at = 4usize;
    for item in 0..count {
        let length = word(at).ok_or_else(|| {
            format!(
                "item {item}'s length would be at byte {at}, past the end of the chunk ({} \
                 bytes)",
                bytes.len()
            )
        })?;
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| at.checked_add(4)?.checked_add(length))
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| {
                format!(
                    "item {item} of {length} bytes runs past the end of the chunk ({} bytes)",
                    bytes.len()
                )
            })?;
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(items: &[&[u8]]) -> Vec<u8> {
        let mut out = (items.len() as u32).to_le_bytes().to_vec();
        for item in items {
            out.extend((item.len() as u32).to_le_bytes());
            out.extend(*item);
        }
        out
    }

    #[test]
    fn framing_within_the_chunk_passes() {
        assert_eq!(check(&framed(&[b"ab", b"", b"xyz"]), 3), Ok(()));
        assert_eq!(check(&framed(&[]), 0), Ok(()));
    }

    #[test]
    fn lengths_past_the_end_are_named() {
        let mut chunk = framed(&[b"ab", b"cd"]);
        chunk[10..14].copy_from_slice(&1000u32.to_le_bytes());
        let e = check(&chunk, 2).unwrap_err();
        assert!(e.contains("item 1 of 1000 bytes runs past the end"), "{e}");
        let mut chunk = framed(&[b"ab"]);
        chunk[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            check(&chunk, 1)
                .unwrap_err()
                .contains("item 0 of 4294967295 bytes")
        );
        let chunk = framed(&[b"ab", b"cd"]);
        let e = check(&chunk[..11], 2).unwrap_err();
        assert!(e.contains("item 1"), "{e}");
        assert!(check(&chunk, 3).unwrap_err().contains("holds 2 items"));
        assert!(check(&[1, 0], 1).unwrap_err().contains("too short"));
    }
}

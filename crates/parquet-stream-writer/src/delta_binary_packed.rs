//! Parquet's DELTA_BINARY_PACKED encoding of a page of integers, for `numbers.rs` (the index
//! columns of an export). Written here because parquet-rs keeps its encoder private (its
//! `encodings` module is public only with the `experimental` feature) and its generic encoder
//! was 6.5% of an export's CPU: an index column's deltas are all 1, and a block of
//! them here is a few instructions. The format is the Parquet specification's (Encodings.md,
//! "Delta Encoding"), with parquet-rs's shape: blocks of 128 values in 4 miniblocks of 32.

use super::rle::uleb128;

/// Values per block.
const BLOCK: usize = 128;
/// Miniblocks per block.
const MINIBLOCKS: usize = 4;
/// Values per miniblock.
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// Appends `len` values (the physical bits of INT32 values when `width` is 4, of INT64 values
/// when it is 8) to `out`, delta-encoded; `values` yields exactly `len`. Deltas wrap in the
/// physical type, as readers undo them. An iterator rather than a slice, so that a column read
/// where it lies (`values.rs`) needs no copy first.
pub(super) fn encode(
    values: impl IntoIterator<Item = u64>,
    len: usize,
    width: usize,
    out: &mut Vec<u8>,
) {
    let as_signed = |bits: u64| -> i64 {
        match width {
            4 => i64::from(bits as u32 as i32),
            _ => bits as i64,
        }
    };
    // The difference `a - b` wrapped in the physical type, as its unsigned bits.
    let wrapped = |a: i64, b: i64| -> u64 {
        match width {
            4 => u64::from((a as i32).wrapping_sub(b as i32) as u32),
            _ => a.wrapping_sub(b) as u64,
        }
    };
    uleb128(BLOCK as u64, out);
    uleb128(MINIBLOCKS as u64, out);
    uleb128(len as u64, out);
    let mut values = values.into_iter();
    let first = values.next().map_or(0, as_signed);
    uleb128(zigzag(first), out);

    let mut deltas = [0i64; BLOCK];
    let mut previous = first;
    loop {
        // `deltas` first: the zip stops at a full block without taking a value more.
        let mut filled = 0;
        for (delta, bits) in deltas.iter_mut().zip(&mut values) {
            let value = as_signed(bits);
            *delta = as_signed(wrapped(value, previous));
            previous = value;
            filled += 1;
        }
        if filled == 0 {
            break;
        }
        let deltas = &deltas[..filled];
        let min = deltas.iter().copied().min().unwrap_or(0);
        uleb128(zigzag(min), out);
        let widths_at = out.len();
        out.extend_from_slice(&[0; MINIBLOCKS]);
        for (m, miniblock) in deltas.chunks(MINIBLOCK).enumerate() {
            let max = miniblock
                .iter()
                .map(|&d| wrapped(d, min))
                .max()
                .unwrap_or(0);
            let bits = (64 - max.leading_zeros()) as usize;
            out[widths_at + m] = bits as u8;
            pack(miniblock.iter().map(|&d| wrapped(d, min)), bits, out);
        }
        if filled < BLOCK {
            break;
        }
    }
}

/// Bit-packs `MINIBLOCK` values of `bits` bits each (the missing ones as zeros), least
/// significant bit first.
fn pack(values: impl Iterator<Item = u64>, bits: usize, out: &mut Vec<u8>) {
    if bits == 0 {
        return;
    }
    let mut padded = values.chain(std::iter::repeat(0)).take(MINIBLOCK);
    let (mut buffer, mut filled) = (0u128, 0usize);
    for _ in 0..MINIBLOCK {
        let value = padded.next().unwrap_or(0);
        buffer |= u128::from(value) << filled;
        filled += bits;
        while filled >= 8 {
            out.push(buffer as u8);
            buffer >>= 8;
            filled -= 8;
        }
    }
    if filled > 0 {
        out.push(buffer as u8);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_integers_take_a_few_bytes_per_block() {
        let values: Vec<u64> = (1000..1000 + 1 + 128 * 3).collect();
        let mut out = Vec::new();
        encode(values.iter().copied(), values.len(), 8, &mut out);
        // Header: 128, 4, 385, zigzag(1000) (two bytes each but 4); then per block the min
        // delta 1 (zigzag 2) and four zero widths.
        assert_eq!(&out[..3], &[0x80, 0x01, 4]);
        assert_eq!(out.len(), 2 + 1 + 2 + 2 + 3 * 5);
        assert_eq!(&out[7..12], &[2, 0, 0, 0, 0]);
    }
}

//! Parquet's RLE / bit-packing hybrid encoding of small unsigned integers (dictionary keys and
//! definition levels), for `strings.rs` and `numbers.rs`. Written here because parquet-rs keeps its
//! encoder private (its `encodings` module is public only with the `experimental` feature,
//! which also builds the Variant crates); the format is a page of the Parquet specification
//! (Encodings.md, "Run Length Encoding / Bit-Packing Hybrid").

/// Values repeated at least this many times in a row become a run (parquet-rs's threshold).
const MIN_RUN: usize = 8;

/// The bits needed to store every value up to `max` (at least 1, which every reader accepts).
pub(super) fn bit_width(max: u32) -> u8 {
    (32 - max.leading_zeros()).max(1) as u8
}

/// Appends `values`, each below `2^bit_width`, to `out` in the hybrid encoding: runs of at least
/// [`MIN_RUN`] equal values as RLE runs, the rest bit-packed in groups of 8 (the last group
/// padded with zeros, which readers ignore past the page's value count).
///
/// A run of [`MIN_RUN`] or more equal values covers a position that is `MIN_RUN - 1` modulo
/// [`MIN_RUN`], so runs are looked for only there: one or two comparisons per 8 values where
/// keys rarely repeat (comparing every value with the next cost 3% of a group table's
/// export). The runs chosen, and so the bytes, are those of a scan over every value
/// (`tests::encode_every_value`).
pub(super) fn encode(values: &[u32], bit_width: u8, out: &mut Vec<u8>) {
    let mut literal_start = 0;
    let mut at = MIN_RUN - 1;
    while at < values.len() {
        let value = values[at];
        let repeated = values[at - 1] == value || values.get(at + 1) == Some(&value);
        if !repeated {
            at += MIN_RUN;
            continue;
        }
        // The whole run of `value` around `at` (it cannot reach back past the last RLE run,
        // whose value differs).
        let mut start = at;
        while start > literal_start && values[start - 1] == value {
            start -= 1;
        }
        let mut end = at + 1;
        while end < values.len() && values[end] == value {
            end += 1;
        }
        // A bit-packed stretch must hold a multiple of 8 values: the first `pad` repeats
        // complete the literals before this run.
        let pad = (MIN_RUN - (start - literal_start) % MIN_RUN) % MIN_RUN;
        if end - start >= pad + MIN_RUN {
            bit_pack(&values[literal_start..start + pad], bit_width, out);
            run(value, end - start - pad, bit_width, out);
            literal_start = end;
        }
        // The next position that a later run would cover.
        at = end - end % MIN_RUN + MIN_RUN - 1;
    }
    bit_pack(&values[literal_start..], bit_width, out);
}

/// An RLE run: the header `count << 1`, then the value in `ceil(bit_width / 8)` bytes.
pub(super) fn run(value: u32, count: usize, bit_width: u8, out: &mut Vec<u8>) {
    uleb128((count as u64) << 1, out);
    let bytes = usize::from(bit_width).div_ceil(8);
    out.extend_from_slice(&value.to_le_bytes()[..bytes]);
}

/// A bit-packed stretch: the header `groups << 1 | 1`, then the values packed least
/// significant bit first, `bit_width` bytes per group of 8 (the last group padded with zeros).
fn bit_pack(values: &[u32], bit_width: u8, out: &mut Vec<u8>) {
    if values.is_empty() {
        return;
    }
    let groups = values.len().div_ceil(MIN_RUN);
    uleb128(((groups as u64) << 1) | 1, out);
    let start = out.len();
    out.resize(start + groups * usize::from(bit_width), 0);
    let packed = &mut out[start..];
    // One packer per width, so that every shift of a group is a constant.
    macro_rules! by_width {
        ($($w:literal)*) => {
            match bit_width {
                $($w => pack_groups::<$w>(values, packed),)*
                _ => unreachable_width(bit_width),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

/// Packs `values` in groups of 8 into `packed` (`W` bytes a group; a last group of fewer
/// values padded with zeros). A group's 8 values go into a 256-bit accumulator at shifts
/// known when compiling, then out as `W` bytes: carrying the bits from value to value (a
/// shift, an add and a test each) held every value up on the one before it (7% of a group
/// table's export when written a byte at a time, 1.75% in 64-bit steps).
fn pack_groups<const W: usize>(values: &[u32], packed: &mut [u8]) {
    let mut groups = values.chunks_exact(MIN_RUN);
    let mut outs = packed.chunks_exact_mut(W);
    for (group, out) in (&mut groups).zip(&mut outs) {
        out.copy_from_slice(&pack_group::<W>(group)[..W]);
    }
    let rest = groups.remainder();
    if !rest.is_empty() {
        let mut last = [0u32; MIN_RUN];
        last[..rest.len()].copy_from_slice(rest);
        if let Some(out) = outs.next() {
            out.copy_from_slice(&pack_group::<W>(&last)[..W]);
        }
    }
}

/// 8 values of `W` bits, packed: the group's `W` bytes are the first of the 32 returned.
#[inline(always)]
fn pack_group<const W: usize>(group: &[u32]) -> [u8; 32] {
    let mut words = [0u64; 4];
    for (i, &value) in group.iter().take(MIN_RUN).enumerate() {
        let (bit, value) = (i * W, u64::from(value));
        let (word, shift) = (bit / 64, bit % 64);
        words[word] |= value << shift;
        if shift + W > 64 {
            words[word + 1] |= value >> (64 - shift);
        }
    }
    let mut bytes = [0u8; 32];
    for (to, word) in bytes.chunks_exact_mut(8).zip(words) {
        to.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// A bit width outside 1..=32, which no caller passes: every width comes from [`bit_width`]
/// of a `u32` (1 to 32) or is 1 (definition levels). Debug builds stop; release builds leave
/// the bytes zero.
#[cold]
fn unreachable_width(bit_width: u8) {
    debug_assert!(false, "bit-packing at {bit_width} bits");
}

/// Unsigned LEB128, the hybrid encoding's header format (and the delta encoding's, `delta_binary_packed.rs`).
pub(super) fn uleb128(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decoder written from the specification, independent of the encoder's structure.
    fn decode(mut data: &[u8], bit_width: u8, count: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let read_uleb = |data: &mut &[u8]| {
            let (mut value, mut shift) = (0u64, 0);
            loop {
                let byte = data[0];
                *data = &data[1..];
                value |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte < 0x80 {
                    return value;
                }
            }
        };
        while out.len() < count {
            let header = read_uleb(&mut data);
            if header & 1 == 0 {
                let bytes = usize::from(bit_width).div_ceil(8);
                let mut le = [0u8; 4];
                le[..bytes].copy_from_slice(&data[..bytes]);
                data = &data[bytes..];
                out.extend(std::iter::repeat_n(
                    u32::from_le_bytes(le),
                    (header >> 1) as usize,
                ));
            } else {
                let n = (header >> 1) as usize * 8;
                for j in 0..n {
                    let mut value = 0u32;
                    for b in 0..usize::from(bit_width) {
                        let bit = j * usize::from(bit_width) + b;
                        value |= u32::from((data[bit / 8] >> (bit % 8)) & 1) << b;
                    }
                    out.push(value);
                }
                data = &data[n * usize::from(bit_width) / 8..];
            }
        }
        assert!(data.is_empty(), "{} bytes left over", data.len());
        out.truncate(count);
        out
    }

    /// The encoder as first written: every value compared with the next, each run of equal
    /// values considered in turn. `encode` must choose the same runs, byte for byte.
    fn encode_every_value(values: &[u32], bit_width: u8, out: &mut Vec<u8>) {
        let mut literal_start = 0;
        let mut i = 0;
        while i < values.len() {
            let value = values[i];
            let mut end = i + 1;
            while end < values.len() && values[end] == value {
                end += 1;
            }
            let pad = (MIN_RUN - (i - literal_start) % MIN_RUN) % MIN_RUN;
            if end - i >= pad + MIN_RUN {
                bit_pack(&values[literal_start..i + pad], bit_width, out);
                run(value, end - i - pad, bit_width, out);
                literal_start = end;
            }
            i = end;
        }
        bit_pack(&values[literal_start..], bit_width, out);
    }

    fn round_trip(values: &[u32]) -> Vec<u8> {
        let width = bit_width(values.iter().copied().max().unwrap_or(0));
        let mut out = Vec::new();
        encode(values, width, &mut out);
        assert_eq!(decode(&out, width, values.len()), values);
        let mut reference = Vec::new();
        encode_every_value(values, width, &mut reference);
        assert_eq!(out, reference, "runs chosen differently for {values:?}");
        out
    }

    #[test]
    fn runs_and_literals_round_trip() {
        assert_eq!(bit_width(0), 1);
        assert_eq!(bit_width(1), 1);
        assert_eq!(bit_width(255), 8);
        assert_eq!(bit_width(256), 9);
        assert_eq!(bit_width(u32::MAX), 32);
        round_trip(&[]);
        round_trip(&[5]);
        round_trip(&[1, 2, 3]);
        // A run after 3 literals: 5 of its values pad the literals to 8, 20 stay a run.
        let mut v = vec![1, 2, 3];
        v.extend([9; 25]);
        v.extend([4, 4, 7]);
        let bytes = round_trip(&v);
        // header + 1 group of 4 bits, header + 1 byte value, header + 1 group.
        assert_eq!(bytes.len(), 1 + 4 + 1 + 1 + 1 + 4);
        // Too short a run after literals stays bit-packed.
        round_trip(&[1, 2, 3, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 3]);
        round_trip(&[u32::MAX, 0, u32::MAX, u32::MAX]);
        round_trip(&[0; 1000]);
        assert_eq!(round_trip(&[1; 1000]).len(), 2 + 1);
    }

    #[test]
    fn pseudo_random_values_round_trip() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for width in 1u32..=32 {
            let values: Vec<u32> = (0..5000)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Runs of random lengths, so both kinds of stretch occur.
                    (state % (1u64 << width)) as u32
                        & if state.is_multiple_of(5) { 0 } else { u32::MAX }
                })
                .collect();
            round_trip(&values);
        }
    }

    /// Runs of every length from 1 to 20 of a few values, next to one another and merging, at
    /// every offset from the last RLE run: the runs chosen are the straightforward scan's.
    #[test]
    fn runs_of_every_length_choose_as_the_scan_does() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..200 {
            let mut values = Vec::new();
            while values.len() < 400 {
                // Mostly single values (as dictionary keys are), some runs; a few values,
                // so neighbouring runs merge at times.
                let value = next(if values.len() % 2 == 0 { 3 } else { 50 }) as u32;
                let length = if next(3) == 0 {
                    1 + next(20) as usize
                } else {
                    1
                };
                values.extend(std::iter::repeat_n(value, length));
            }
            round_trip(&values);
            round_trip(&values[..values.len() - 1 - next(30) as usize]);
        }
    }
}

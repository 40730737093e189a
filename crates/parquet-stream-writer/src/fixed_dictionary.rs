//! The dictionary of a numeric column chunk (`numbers.rs`): its distinct 4- or 8-byte values
//! in order of first appearance, keyed through our own hash table, and a sampled check that
//! tells a column whose dictionary cannot fit without building it.

use super::hash_prefetch::prefetch;

/// The distinct values of a column chunk, in order of first appearance, and a hash table from
/// value to key.
pub(super) struct Dictionary {
    /// An open-addressing table with linear probing, a power of two long, at most half full;
    /// ours rather than hashbrown's because a batch of rows prefetches its slots before
    /// probing them, and hashbrown does not say where a hash's slot is.
    slots: Vec<Slot>,
    /// Entry `k`'s bits.
    pub(super) values: Vec<u64>,
    /// For a chunk whose values lie close together (see [`dense_span`]): the key of each
    /// value by its offset from the smallest ([`EMPTY`] where not seen yet).
    dense: Vec<u32>,
}

/// Values spanning fewer bit patterns than this are always keyed through
/// [`Dictionary::dense`] rather than the hash table: 256 KiB of keys, which stay in L2 where
/// the table would not. A coordinate or code column (hours, years, small categories) is keyed
/// with one load per row, without hashing.
const DENSE_RANGE: u64 = 1 << 16;

/// The widest span keyed densely at all: 16 MiB of keys.
const DENSE_MAX: u64 = 1 << 22;

/// Whether `rows` values spanning `span + 1` bit patterns are keyed through the dense array:
/// under [`DENSE_RANGE`], or up to one slot per row (at most [`DENSE_MAX`]). Four bytes a
/// slot are no more than the hash table's sixteen per entry at half load once a quarter of
/// the span's values occur, and a slot is found without hashing (the group table's int32
/// column of 100,000 values over 1,000,000 rows spent 5.7% of its export in the hash table).
fn dense_span(span: u64, rows: usize) -> bool {
    span < DENSE_RANGE.max((rows as u64).min(DENSE_MAX))
}

/// A hash table slot: the value in the slot itself, so a probe reads nothing else.
#[derive(Clone, Copy)]
struct Slot {
    bits: u64,
    /// [`EMPTY`] in an empty slot.
    key: u32,
}

/// The key of an empty slot (a dictionary page holds far fewer entries).
const EMPTY: u32 = u32::MAX;

const EMPTY_SLOT: Slot = Slot {
    bits: 0,
    key: EMPTY,
};

/// Rows whose slots are prefetched together before they are probed.
const BATCH: usize = 16;

/// foldhash's folded multiply of `bits` by a constant: one multiplication per value.
#[inline]
fn hash(bits: u64) -> u64 {
    let full = u128::from(bits ^ 0x243f_6a88_85a3_08d3) * u128::from(0x1319_8a2e_0370_7344u64);
    (full as u64) ^ ((full >> 64) as u64)
}

impl Dictionary {
    pub(super) fn new() -> Self {
        Self {
            slots: vec![EMPTY_SLOT; 1024],
            values: Vec::new(),
            dense: Vec::new(),
        }
    }

    /// Empties the dictionary, keeping its memory.
    pub(super) fn reset(&mut self) {
        self.slots.fill(EMPTY_SLOT);
        self.values.clear();
    }

    /// The slot a probe for `bits` starts at.
    #[inline]
    fn home(&self, bits: u64) -> usize {
        hash(bits) as usize & (self.slots.len() - 1)
    }

    /// The key of `bits`, added if new; `None` once the dictionary holds `limit` entries.
    #[inline]
    fn intern(&mut self, bits: u64, limit: usize) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(bits);
        loop {
            let slot = self.slots[i];
            if slot.key == EMPTY {
                break;
            }
            if slot.bits == bits {
                return Some(slot.key);
            }
            i = (i + 1) & mask;
        }
        if self.values.len() >= limit {
            return None;
        }
        let key = u32::try_from(self.values.len())
            .ok()
            .filter(|&k| k != EMPTY)?;
        self.values.push(bits);
        if 2 * self.values.len() > self.slots.len() {
            let doubled = vec![EMPTY_SLOT; self.slots.len() * 2];
            self.slots = doubled;
            for key in 0..self.values.len() {
                let bits = self.values[key];
                self.place(Slot {
                    bits,
                    key: key as u32,
                });
            }
        } else {
            self.slots[i] = Slot { bits, key };
        }
        Some(key)
    }

    /// Puts `slot` in the first empty slot from its home.
    fn place(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(slot.bits);
        while self.slots[i].key != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }
}

/// One value in this many (by hash) is sampled by [`clearly_over`].
const SAMPLE_ONE_IN: u64 = 64;

/// Whether `bits` (`len` of them) clearly hold more than `limit` distinct values, estimated from the distinct
/// values whose hash falls in one 64th of the hash space (each distinct value is sampled or
/// not, however often it occurs, so 64 × the sampled count estimates the distinct count, to
/// within a few percent once it matters). "Clearly" is twice the limit: a column whose
/// dictionary would fit is never sampled that high, one near the limit is interned and
/// decides exactly, and a column of mostly distinct values (measurements, floats) skips the
/// hundreds of thousands of insertions the exact answer would cost (20% of an N-D float
/// export).
pub(super) fn clearly_over(
    bits: impl IntoIterator<Item = u64>,
    len: usize,
    limit: usize,
    sample: &mut hashbrown::HashSet<u64, foldhash::fast::FixedState>,
) -> bool {
    let over = (2 * limit as u64).div_ceil(SAMPLE_ONE_IN) as usize;
    if len <= 2 * limit {
        return false;
    }
    sample.clear();
    for value in bits {
        // The hash's top bits select; the set hashes with another function, so the sampled
        // values spread over its buckets.
        if hash(value) < u64::MAX / SAMPLE_ONE_IN && sample.insert(value) && sample.len() > over {
            return true;
        }
    }
    false
}

/// The smallest and largest of a column's value bits, as they are and with the sign bit
/// flipped: a signed column whose values straddle zero (-1000..100000 in an int32) is close
/// together only in the second order. A column `numbers.rs` gathers adds each Arrow array as
/// it copies it, while the values are in cache (a pass of its own over a row group's 8 MB of
/// gathered values waited on memory for a third of [`key_values`]'s time); a column read in
/// place (`values.rs`) is one pass over its arrays, each value read at its own width.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    sign: u64,
    lo: u64,
    hi: u64,
    flipped_lo: u64,
    flipped_hi: u64,
}

impl Span {
    /// No values yet, of a column whose sign bit (if it has one) is `sign`.
    pub(super) fn new(sign: u64) -> Self {
        Self {
            sign,
            lo: u64::MAX,
            hi: 0,
            flipped_lo: u64::MAX,
            flipped_hi: 0,
        }
    }

    /// Takes `bits` into account.
    pub(super) fn add(&mut self, bits: impl IntoIterator<Item = u64>) {
        let sign = self.sign;
        for b in bits {
            (self.lo, self.hi) = (self.lo.min(b), self.hi.max(b));
            (self.flipped_lo, self.flipped_hi) =
                (self.flipped_lo.min(b ^ sign), self.flipped_hi.max(b ^ sign));
        }
    }

    /// Takes into account values whose smallest and largest bits are `unsigned`, and whose
    /// smallest and largest read as signed integers (of the column's width) have the bits
    /// `signed`: what [`Span::add`] finds, from extremes found elsewhere.
    pub(super) fn add_extremes(&mut self, unsigned: (u64, u64), signed: (u64, u64)) {
        let sign = self.sign;
        (self.lo, self.hi) = (self.lo.min(unsigned.0), self.hi.max(unsigned.1));
        (self.flipped_lo, self.flipped_hi) = (
            self.flipped_lo.min(signed.0 ^ sign),
            self.flipped_hi.max(signed.1 ^ sign),
        );
    }

    /// The narrower of the two orders, as (the bits to flip, the smallest value once flipped,
    /// the span); `None` without values.
    pub(super) fn closest(&self) -> Option<(u64, u64, u64)> {
        if self.lo > self.hi {
            return None;
        }
        let (plain, flipped) = (self.hi - self.lo, self.flipped_hi - self.flipped_lo);
        Some(match plain <= flipped {
            true => (0, self.lo, plain),
            false => (self.sign, self.flipped_lo, flipped),
        })
    }
}

/// Keys `bits` (whose [`Span`] is `span`) into `dictionary` (emptied first); false once it
/// would hold over `limit` entries. Values close together ([`dense_span`]) are keyed by their
/// offset; others through the hash table, where a value equal to the one before takes its key
/// without a probe. Either way keys are given in order of first appearance, so the chunk is
/// the same. Values whose span is under `limit` fit whatever they are and are keyed at once;
/// others are first sampled ([`clearly_over`], with `sample` as its memory; `None` when the
/// caller has sampled them already), and a column clearly over the limit is not keyed at all
/// (the dictionary is then left as it was).
pub(super) fn key_values<I: Iterator<Item = u64>>(
    dictionary: &mut Dictionary,
    bits: impl Fn() -> I,
    len: usize,
    span: &Span,
    limit: usize,
    keys: &mut Vec<u32>,
    sample: Option<&mut hashbrown::HashSet<u64, foldhash::fast::FixedState>>,
) -> bool {
    let closest = span.closest();
    // A span under the limit holds at most `limit` distinct values: no sample needed (one
    // pass over the values fewer for a coordinate or code column, 1.6% of an N-D export).
    let fits = closest.is_some_and(|(_, _, span)| span < limit as u64);
    if let Some(sample) = sample
        && !fits
        && clearly_over(bits(), len, limit, sample)
    {
        return false;
    }
    dictionary.reset();
    keys.clear();
    keys.reserve(len);
    if let Some((flip, smallest, span)) = closest
        && dense_span(span, len)
    {
        return key_dense(dictionary, bits(), flip, smallest, span, limit, keys);
    }
    let mut values = bits();
    let mut batch = [0u64; BATCH];
    let (mut last_bits, mut last_key) = match values.next() {
        Some(first) => match dictionary.intern(first, limit) {
            Some(key) => (first, key),
            None => return false,
        },
        None => return true,
    };
    keys.push(last_key);
    loop {
        let mut n = 0;
        for (slot, value) in batch.iter_mut().zip(&mut values) {
            *slot = value;
            n += 1;
        }
        for &value in &batch[..n] {
            prefetch(&dictionary.slots[dictionary.home(value)]);
        }
        for &value in &batch[..n] {
            if value != last_bits {
                match dictionary.intern(value, limit) {
                    Some(key) => (last_bits, last_key) = (value, key),
                    None => return false,
                }
            }
            keys.push(last_key);
        }
        if n < BATCH {
            return true;
        }
    }
}

/// [`key_values`] for values that all lie in `smallest..=smallest + span` once `flip` is
/// XORed into them (the sign bit, or nothing).
fn key_dense(
    dictionary: &mut Dictionary,
    bits: impl Iterator<Item = u64>,
    flip: u64,
    smallest: u64,
    span: u64,
    limit: usize,
    keys: &mut Vec<u32>,
) -> bool {
    let Dictionary { values, dense, .. } = dictionary;
    dense.clear();
    // At most DENSE_MAX + 1 slots: the caller checked the span.
    dense.resize(span as usize + 1, EMPTY);
    for value in bits {
        let offset = ((value ^ flip) - smallest) as usize;
        let mut key = dense[offset];
        if key == EMPTY {
            if values.len() >= limit {
                return false;
            }
            key = values.len() as u32;
            values.push(value);
            dense[offset] = key;
        }
        keys.push(key);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span_of(bits: &[u64], sign: u64) -> Span {
        let mut span = Span::new(sign);
        span.add(bits.iter().copied());
        span
    }

    /// [`key_values`] of unsigned 64-bit values.
    fn key_unsigned(
        dictionary: &mut Dictionary,
        bits: &[u64],
        limit: usize,
        keys: &mut Vec<u32>,
        sample: &mut hashbrown::HashSet<u64, foldhash::fast::FixedState>,
    ) -> bool {
        key_values(
            dictionary,
            || bits.iter().copied(),
            bits.len(),
            &span_of(bits, 1 << 63),
            limit,
            keys,
            Some(sample),
        )
    }

    /// The sampled estimate says "clearly over" for mostly distinct values and never for a
    /// column whose dictionary fits, however many rows repeat it; the exact interning agrees.
    #[test]
    fn hopeless_dictionaries_are_recognised_and_fitting_ones_kept() {
        let mut sample = Default::default();
        let limit = 10_000;
        let distinct: Vec<u64> = (0..200_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9))
            .collect();
        assert!(clearly_over(
            distinct.iter().copied(),
            distinct.len(),
            limit,
            &mut sample
        ));
        // 9,999 distinct values, cycled over 200,000 rows: the dictionary fits.
        let cycle: Vec<u64> = (0..200_000u64).map(|i| i % 9_999).collect();
        assert!(!clearly_over(
            cycle.iter().copied(),
            cycle.len(),
            limit,
            &mut sample
        ));
        let mut dictionary = Dictionary::new();
        let mut keys = Vec::new();
        assert!(key_unsigned(
            &mut dictionary,
            &cycle,
            limit,
            &mut keys,
            &mut sample
        ));
        assert_eq!(dictionary.values.len(), 9_999);
        assert!(
            keys.iter()
                .zip(&cycle)
                .all(|(&k, &v)| dictionary.values[k as usize] == v)
        );
        // Mostly distinct values are refused by the sample: the dictionary is not even
        // emptied, let alone filled up to the limit.
        assert!(!key_unsigned(
            &mut dictionary,
            &distinct,
            limit,
            &mut keys,
            &mut sample
        ));
        assert_eq!(dictionary.values.len(), 9_999);
        // Without a sample (the caller sampled already) the same values are interned up to
        // the limit.
        let span = span_of(&distinct, 1 << 63);
        let all = || distinct.iter().copied();
        let unsampled = key_values(&mut dictionary, all, 200_000, &span, limit, &mut keys, None);
        assert!(!unsampled && dictionary.values.len() == limit);
        // A span under the limit cannot be over it: keyed without sampling (the sample's
        // memory, which sampling clears first, keeps a value put there).
        sample.clear();
        sample.insert(u64::MAX);
        assert!(key_unsigned(
            &mut dictionary,
            &cycle,
            limit,
            &mut keys,
            &mut sample
        ));
        assert!(sample.contains(&u64::MAX) && dictionary.values.len() == 9_999);
        // Over the limit but not twice over: left to the exact interning, which overflows.
        let over: Vec<u64> = (0..200_000u64).map(|i| i % 15_000).collect();
        assert!(!clearly_over(
            over.iter().copied(),
            over.len(),
            limit,
            &mut sample
        ));
        assert!(!key_unsigned(
            &mut dictionary,
            &over,
            limit,
            &mut keys,
            &mut sample
        ));
        // Too few rows to be twice over.
        assert!(!clearly_over(
            distinct[..20_000].iter().copied(),
            20_000,
            limit,
            &mut sample
        ));
    }

    /// A span gathered array by array is the span of all the values; no values, no span; an
    /// int32 straddling zero is narrower with its sign bit flipped.
    #[test]
    fn spans_add_up_piece_by_piece() {
        let straddling: Vec<u64> = (-1000i32..100_000)
            .map(|v| u64::from(v.wrapping_mul(7) as u32))
            .collect();
        let mut pieces = Span::new(1 << 31);
        assert_eq!(pieces.closest(), None);
        for piece in straddling.chunks(8192) {
            pieces.add(piece.iter().copied());
        }
        let whole = span_of(&straddling, 1 << 31);
        assert_eq!(pieces.closest(), whole.closest());
        let (flip, smallest, span) = whole.closest().unwrap();
        assert_eq!(
            (flip, smallest, span),
            (1 << 31, (1u64 << 31) - 7000, 706_993)
        );
    }

    /// Values within the dense span and values spread over the whole range (through the hash
    /// table) get the same keys for the same sequence: keys in order of first appearance.
    #[test]
    fn dense_and_hashed_keys_agree() {
        let sequence: Vec<u64> = (0..300_000u64)
            .map(|i| (i * 7919 + i / 1000) % 40_000)
            .collect();
        let spread: Vec<u64> = sequence
            .iter()
            .map(|&v| v.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        // Negative Int64 values sign-extended: a dense span at the top of the bit range.
        let negative: Vec<u64> = sequence.iter().map(|&v| (-(v as i64) - 1) as u64).collect();
        // Spanning 120,000 over 300,000 rows: dense by the rows, not by DENSE_RANGE.
        let wide: Vec<u64> = sequence.iter().map(|&v| v * 3).collect();
        assert!(dense_span(119_997, wide.len()) && !dense_span(119_997, 100_000));
        // Int32 values straddling zero, zero-extended as `numbers.rs` gives them: dense once
        // their sign bit is flipped.
        let straddling: Vec<u64> = sequence
            .iter()
            .map(|&v| u64::from((v as i32 - 20_000) as u32))
            .collect();
        let mut keyed = Vec::new();
        for (bits, sign, dense) in [
            (&sequence, 1 << 63, true),
            (&spread, 1 << 63, false),
            (&negative, 1 << 63, true),
            (&wide, 1 << 63, true),
            (&straddling, 1 << 31, true),
        ] {
            let mut dictionary = Dictionary::new();
            let mut keys = Vec::new();
            let mut sample = Default::default();
            assert!(key_values(
                &mut dictionary,
                || bits.iter().copied(),
                bits.len(),
                &span_of(bits, sign),
                50_000,
                &mut keys,
                Some(&mut sample)
            ));
            assert_eq!(!dictionary.dense.is_empty(), dense);
            assert_eq!(dictionary.values.len(), 40_000);
            assert!(
                keys.iter()
                    .zip(bits.iter())
                    .all(|(&k, &v)| dictionary.values[k as usize] == v)
            );
            keyed.push(keys);
        }
        assert_eq!(keyed[0], keyed[1]);
        assert_eq!(keyed[0], keyed[2]);
        assert_eq!(keyed[0], keyed[3]);
        assert_eq!(keyed[0], keyed[4]);
        // The limit holds in the dense path too.
        let mut dictionary = Dictionary::new();
        let mut keys = Vec::new();
        assert!(!key_values(
            &mut dictionary,
            || sequence.iter().copied(),
            sequence.len(),
            &span_of(&sequence, 1 << 63),
            39_999,
            &mut keys,
            Some(&mut Default::default())
        ));
        assert_eq!(dictionary.values.len(), 39_999);
    }
}

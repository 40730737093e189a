//! Predicate kernels on fixed-width UTF-32 elements: the building blocks of filters that run
//! before any UTF-8 is made (datafusion-zarr's `raw_filter`).
//!
//! Inputs are decoded chunk bytes as elsewhere in this crate: elements of `width` bytes,
//! native-endian code units, padded with U+0000. In UTF-32 one code unit is one character, so
//! SQL `LIKE` (`_` is one character, `%` any run) matches unit by unit with no decoding, and a
//! literal substring is a byte substring at a 4-byte-aligned offset: `LIKE '%ab%'` over a whole
//! chunk is one `memmem` scan (the `memchr` crate's SIMD searcher) with a check per hit.

use memchr::memmem;

/// True when `unit` is a Unicode scalar value (not a surrogate, at most U+10FFFF).
#[inline]
pub fn is_scalar_value(unit: u32) -> bool {
    unit.wrapping_sub(0xD800) >= 0x800 && unit <= 0x10FFFF
}

/// True when every code unit of `input` is a Unicode scalar value, at memory speed: blocks
/// of 256 code units are checked branch-free (so the loop vectorises; with AVX2 when the CPU
/// has it, detected at run time) and the first bad block ends the scan.
pub fn all_scalar_values(input: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { all_scalar_values_avx2(input) };
        }
    }
    all_scalar_values_body(input)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn all_scalar_values_avx2(input: &[u8]) -> bool {
    all_scalar_values_body(input)
}

#[inline(always)]
fn all_scalar_values_body(input: &[u8]) -> bool {
    #[inline(always)]
    fn bad(u: &[u8]) -> u32 {
        let u = u32::from_ne_bytes([u[0], u[1], u[2], u[3]]);
        u32::from(u > 0x10FFFF) | u32::from(u & 0xFFFF_F800 == 0xD800)
    }
    let mut blocks = input.chunks_exact(1024);
    for block in &mut blocks {
        if block.chunks_exact(4).fold(0, |acc, u| acc | bad(u)) != 0 {
            return false;
        }
    }
    blocks
        .remainder()
        .chunks_exact(4)
        .fold(0, |acc, u| acc | bad(u))
        == 0
}

/// One position of a `LIKE` segment: a code unit, or `_` (any one character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Unit(u32),
    Any,
}

/// A SQL `LIKE` pattern compiled to code units: segments of fixed length separated by `%`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LikePattern {
    /// `pattern.split('%')`: the first is anchored at the start, the last at the end.
    segments: Vec<Vec<Item>>,
    /// The needle of a `%literal%` pattern, as native-endian bytes (the `memmem` fast path).
    contains: Option<Vec<u8>>,
}

impl LikePattern {
    /// Compiles `pattern` (`%` and `_` are wildcards; no escape character). `None` when a
    /// literal character is U+0000, which could match the padding.
    pub fn new(pattern: &str) -> Option<Self> {
        let segments: Vec<Vec<Item>> = pattern
            .split('%')
            .map(|s| {
                s.chars()
                    .map(|c| match c {
                        '_' => Item::Any,
                        c => Item::Unit(u32::from(c)),
                    })
                    .collect()
            })
            .collect();
        if segments.iter().flatten().any(|&i| i == Item::Unit(0)) {
            return None;
        }
        let contains = match segments.as_slice() {
            [first, middle, last] if first.is_empty() && last.is_empty() && !middle.is_empty() => {
                middle
                    .iter()
                    .map(|i| match i {
                        Item::Unit(u) => Some(u.to_ne_bytes()),
                        Item::Any => None,
                    })
                    .collect::<Option<Vec<_>>>()
                    .map(|units| units.concat())
            }
            _ => None,
        };
        Some(Self { segments, contains })
    }

    /// The pattern `literal%`: values starting with `literal` (taken as is, no wildcards).
    /// `None` when `literal` holds U+0000.
    pub fn starts_with(literal: &str) -> Option<Self> {
        let first: Vec<Item> = literal.chars().map(|c| Item::Unit(u32::from(c))).collect();
        if first.contains(&Item::Unit(0)) {
            return None;
        }
        Some(Self {
            segments: vec![first, Vec::new()],
            contains: None,
        })
    }

    /// Whether `value` (code units, trailing padding removed) matches.
    pub fn matches(&self, value: &[u32]) -> bool {
        let fits = |seg: &[Item], at: &[u32]| {
            seg.iter().zip(at).all(|(i, &u)| match i {
                Item::Any => true,
                Item::Unit(p) => *p == u,
            })
        };
        let (first, rest) = match self.segments.split_first() {
            Some(x) => x,
            None => return value.is_empty(),
        };
        let Some((last, middle)) = rest.split_last() else {
            return value.len() == first.len() && fits(first, value);
        };
        if value.len() < first.len() + last.len() {
            return false;
        }
        let end = value.len() - last.len();
        if !fits(first, value) || !fits(last, &value[end..]) {
            return false;
        }
        // Fixed-length segments between `%`s: the leftmost match of each is never worse.
        let mut pos = first.len();
        for seg in middle {
            loop {
                if pos + seg.len() > end {
                    return false;
                }
                if fits(seg, &value[pos..]) {
                    pos += seg.len();
                    break;
                }
                pos += 1;
            }
        }
        true
    }

    /// Marks in `hits` the elements of `input` (`width` bytes each) that match. `hits` must
    /// hold one entry per element and start all `false`.
    pub fn find_matches(&self, input: &[u8], width: usize, hits: &mut [bool]) {
        if width == 0 || !width.is_multiple_of(4) {
            return;
        }
        if let Some(needle) = &self.contains {
            // A hit counts if it starts on a code unit and ends in the element it starts in
            // (the needle has no U+0000, so it can only match the element's value).
            let finder = memmem::Finder::new(needle);
            let mut start = 0;
            while let Some(found) = finder.find(&input[start..]) {
                let pos = start + found;
                let element = pos / width;
                if pos % 4 == 0 && (pos + needle.len() - 1) / width == element {
                    if let Some(h) = hits.get_mut(element) {
                        *h = true;
                    }
                    start = (element + 1) * width;
                } else {
                    start = pos + 1;
                }
                if start >= input.len() {
                    break;
                }
            }
            return;
        }
        let mut units = Vec::with_capacity(width / 4);
        for (element, hit) in input.chunks_exact(width).zip(hits.iter_mut()) {
            units.clear();
            let n = crate::trimmed_units(element);
            units.extend(
                element[..n * 4]
                    .chunks_exact(4)
                    .map(|u| u32::from_ne_bytes([u[0], u[1], u[2], u[3]])),
            );
            *hit = self.matches(&units);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> Vec<u32> {
        s.chars().map(u32::from).collect()
    }

    /// A plain recursive matcher over characters, as SQL defines `LIKE`.
    fn reference(pattern: &[char], value: &[char]) -> bool {
        match pattern.split_first() {
            None => value.is_empty(),
            Some(('%', rest)) => (0..=value.len()).any(|k| reference(rest, &value[k..])),
            Some(('_', rest)) => !value.is_empty() && reference(rest, &value[1..]),
            Some((c, rest)) => value.first() == Some(c) && reference(rest, &value[1..]),
        }
    }

    #[test]
    fn like_agrees_with_a_recursive_matcher() {
        let alphabet = ['a', 'b', 'é', '😀', '%', '_'];
        let values = [
            "", "a", "ab", "ba", "abab", "aab", "é😀a", "b😀", "abba", "aaaa",
        ];
        // Every pattern of up to 4 symbols over the alphabet.
        let mut patterns = vec![String::new()];
        for len in 1..=4 {
            let mut idx = vec![0usize; len];
            loop {
                patterns.push(idx.iter().map(|&i| alphabet[i]).collect());
                let mut k = 0;
                while k < len {
                    idx[k] += 1;
                    if idx[k] < alphabet.len() {
                        break;
                    }
                    idx[k] = 0;
                    k += 1;
                }
                if k == len {
                    break;
                }
            }
        }
        let width = 16;
        for p in &patterns {
            let pattern = LikePattern::new(p).unwrap();
            let pc: Vec<char> = p.chars().collect();
            let mut input = Vec::new();
            for v in values {
                let mut e: Vec<u8> = units(v).iter().flat_map(|u| u.to_ne_bytes()).collect();
                e.resize(width, 0);
                input.extend(e);
            }
            let mut hits = vec![false; values.len()];
            pattern.find_matches(&input, width, &mut hits);
            for (v, hit) in values.iter().zip(hits) {
                let vc: Vec<char> = v.chars().collect();
                let want = reference(&pc, &vc);
                assert_eq!(pattern.matches(&units(v)), want, "{v:?} LIKE {p:?}");
                assert_eq!(hit, want, "find_matches: {v:?} LIKE {p:?}");
            }
        }
    }

    #[test]
    fn contains_does_not_match_across_elements_or_misaligned() {
        let p = LikePattern::new("%ab%").unwrap();
        assert!(p.contains.is_some());
        // Element 0 ends with 'a' (full width), element 1 starts with 'b'.
        let input: Vec<u8> = ["xa", "bx", "ab", "  "]
            .iter()
            .flat_map(|s| units(s).into_iter().flat_map(|u| u.to_ne_bytes()))
            .collect();
        let mut hits = vec![false; 4];
        p.find_matches(&input, 8, &mut hits);
        assert_eq!(hits, [false, false, true, false]);
        // The needle's bytes at offset 3, not on a code unit boundary.
        let mut bytes = vec![0u8; 3];
        bytes.extend(units("ab").iter().flat_map(|u| u.to_ne_bytes()));
        bytes.resize(16, 0);
        let mut hits = vec![false; 1];
        p.find_matches(&bytes, 16, &mut hits);
        assert_eq!(hits, [false]);
    }

    #[test]
    fn scalar_values() {
        for (u, ok) in [
            (0, true),
            (0xD7FF, true),
            (0xD800, false),
            (0xDFFF, false),
            (0xE000, true),
            (0x10FFFF, true),
            (0x110000, false),
            (u32::MAX, false),
        ] {
            assert_eq!(is_scalar_value(u), ok, "{u:#x}");
            // In the tail, and in a full block of 256 units.
            for (len, at) in [(40, 37), (1000, 700), (1000, 3)] {
                let bytes: Vec<u8> = (0..len)
                    .flat_map(|i| if i == at { u } else { 0x41 }.to_ne_bytes())
                    .collect();
                assert_eq!(all_scalar_values(&bytes), ok, "{u:#x} at {at} of {len}");
            }
        }
        assert!(LikePattern::new("a\0%").is_none());
        let p = LikePattern::starts_with("a_%").unwrap();
        assert!(p.matches(&units("a_%b")) && !p.matches(&units("ab%")));
    }
}

//! Property tests of the decoding kernels: every encoder (the one this CPU runs, the scalar
//! one, and NEON — real on aarch64, emulated elsewhere), through every output (`Utf8`,
//! `LargeUtf8`, `Utf8View` with one or many data buffers), against an independent model and
//! [`reference_decode`], on seeded random input over every code point range (invalid ones
//! included), every length from 0 to the capacity, interior and leading NUL, widths from 4 to
//! 132 bytes, every [`InvalidUtf32`] mode, with and without `nulls_in`, misaligned input, and
//! input built from big- and little-endian code units converted to native order.

use super::*;
use crate::*;
use arrow_array::Array;

/// xorshift64: deterministic, dependency-free.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(crate) fn range(&mut self, lo: u32, hi_inclusive: u32) -> u32 {
        lo + self.below(u64::from(hi_inclusive - lo) + 1) as u32
    }
}

const BOUNDARIES: [u32; 20] = [
    0x01,
    0x7F,
    0x80,
    0x7FF,
    0x800,
    0xD7FF,
    0xD800,
    0xDBFF,
    0xDC00,
    0xDFFF,
    0xE000,
    0xFFFD,
    0xFFFF,
    0x10000,
    0x10FFFF,
    0x110000,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFE,
    0xFFFF_FFFF,
];

/// How a batch draws its code units: weights of
/// [ASCII, NUL, 2-byte, 3-byte, 4-byte, surrogate, above 0x10FFFF, boundary values].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Profile(pub(crate) [u32; 8]);

pub(crate) const PROFILES: [Profile; 7] = [
    Profile([8, 1, 1, 1, 1, 0, 0, 0]),  // valid, mostly ASCII
    Profile([1, 0, 0, 0, 0, 0, 0, 0]),  // ASCII only (16-unit fast path)
    Profile([2, 1, 2, 2, 2, 0, 0, 1]),  // valid mix (boundary values may be invalid)
    Profile([20, 1, 2, 2, 2, 1, 1, 1]), // rare invalid
    Profile([1, 1, 1, 1, 1, 1, 1, 1]),  // everything
    Profile([0, 0, 0, 1, 0, 0, 0, 0]),  // CJK-like
    Profile([1, 3, 0, 0, 1, 0, 0, 0]),  // many NUL, emoji
];

pub(crate) fn draw_unit(rng: &mut Rng, p: Profile) -> u32 {
    let total: u32 = p.0.iter().sum();
    let mut pick = rng.below(u64::from(total)) as u32;
    let mut category = 0;
    while pick >= p.0[category] {
        pick -= p.0[category];
        category += 1;
    }
    match category {
        0 => rng.range(0x01, 0x7F),
        1 => 0,
        2 => rng.range(0x80, 0x7FF),
        3 => {
            if rng.below(2) == 0 {
                rng.range(0x800, 0xD7FF)
            } else {
                rng.range(0xE000, 0xFFFF)
            }
        }
        4 => rng.range(0x10000, 0x10FFFF),
        5 => rng.range(0xD800, 0xDFFF),
        6 => rng.range(0x110000, 0xFFFF_FFFF),
        _ => BOUNDARIES[rng.below(BOUNDARIES.len() as u64) as usize],
    }
}

/// The expected output, computed from the code units alone.
fn model(
    elements: &[Vec<u32>],
    mode: InvalidUtf32,
    nulls: Option<&[bool]>,
) -> Result<Vec<Option<String>>, TranscodeError> {
    let mut out = Vec::new();
    for (index, units) in elements.iter().enumerate() {
        if nulls.is_some_and(|m| m[index]) {
            out.push(None);
            continue;
        }
        let end = units.iter().rposition(|&u| u != 0).map_or(0, |p| p + 1);
        let mut s = String::new();
        let mut null = false;
        for &u in &units[..end] {
            match (char::from_u32(u), mode) {
                (Some(c), _) => s.push(c),
                (None, InvalidUtf32::Error) => {
                    return Err(TranscodeError::Invalid {
                        index,
                        code_unit: u,
                    });
                }
                (None, InvalidUtf32::Replace) => s.push('\u{FFFD}'),
                (None, InvalidUtf32::Null) => null = true,
            }
        }
        out.push((!null).then_some(s));
    }
    Ok(out)
}

/// Native-endian input as zarrs produces it: each code unit stored in `endian` order, then
/// converted to native order; each element padded with U+0000 to `width / 4` units, plus
/// `width % 4` junk bytes that the kernels must ignore.
fn native_input(elements: &[Vec<u32>], width: usize, big_endian: bool) -> Vec<u8> {
    let mut stored = Vec::new();
    for units in elements {
        for &u in units {
            stored.extend_from_slice(&if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            });
        }
        stored.extend(std::iter::repeat_n(0xA5, width % 4));
    }
    let mut native = Vec::with_capacity(stored.len());
    for element in stored.chunks_exact(width) {
        for b in element[..width / 4 * 4].chunks_exact(4) {
            let b = [b[0], b[1], b[2], b[3]];
            let u = if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            };
            native.extend_from_slice(&u.to_ne_bytes());
        }
        native.extend_from_slice(&element[width / 4 * 4..]);
    }
    native
}

fn paths() -> Vec<Path> {
    let mut paths = vec![Path::detect(), Path::Scalar, Path::Neon];
    paths.dedup();
    paths
}

fn check_utf8<O: OffsetSizeTrait>(
    got: Result<GenericStringArray<O>, TranscodeError>,
) -> Result<Vec<Option<String>>, TranscodeError> {
    got.map(|a| {
        // Rebuilding with validation checks the offsets and the UTF-8.
        let checked = GenericStringArray::<O>::try_new(
            a.offsets().clone(),
            a.values().clone(),
            a.nulls().cloned(),
        )
        .expect("valid Utf8 array");
        for i in 0..a.len() {
            if a.is_null(i) {
                assert_eq!(
                    a.value_length(i).as_usize(),
                    0,
                    "NULL element {i} has bytes"
                );
            }
        }
        checked.iter().map(|v| v.map(str::to_string)).collect()
    })
}

fn check_view(
    got: Result<StringViewArray, TranscodeError>,
) -> Result<Vec<Option<String>>, TranscodeError> {
    got.map(|a| {
        let checked = StringViewArray::try_new(
            a.views().clone(),
            a.data_buffers().to_vec(),
            a.nulls().cloned(),
        )
        .expect("valid Utf8View array");
        checked.iter().map(|v| v.map(str::to_string)).collect()
    })
}

/// Runs every path and output on one batch and compares them with the model.
fn check_batch(rng: &mut Rng, elements: &[Vec<u32>], width: usize, what: &str) {
    let be = native_input(elements, width, true);
    let le = native_input(elements, width, false);
    assert_eq!(
        be, le,
        "{what}: native order must not depend on the stored order"
    );
    // Misaligned copies, so no encoder relies on 4-byte alignment.
    let shift = rng.below(4) as usize;
    let mut storage = vec![0u8; shift];
    storage.extend_from_slice(&be);
    let input = &storage[shift..];
    let n = elements.len();
    let nulls: Vec<bool> = (0..n).map(|_| rng.below(5) == 0).collect();
    for mode in [
        InvalidUtf32::Error,
        InvalidUtf32::Replace,
        InvalidUtf32::Null,
    ] {
        if width.is_multiple_of(4) {
            assert_eq!(
                reference_decode(input, width, mode),
                model(elements, mode, None),
                "{what}: reference_decode, mode {mode:?}"
            );
        }
        for mask in [None, Some(nulls.as_slice())] {
            let expected = model(elements, mode, mask);
            let ctx = format!("{what}, mode {mode:?}, nulls {}", mask.is_some());
            for path in paths() {
                let ctx = format!("{ctx}, path {}", path.name());
                let got = check_utf8(to_utf8_with::<i32>(path, input, width, mode, mask));
                assert_eq!(got, expected, "{ctx}, Utf8");
                let got = check_utf8(to_utf8_with::<i64>(path, input, width, mode, mask));
                assert_eq!(got, expected, "{ctx}, LargeUtf8");
                let got = check_view(to_utf8_view_with(
                    path,
                    input,
                    width,
                    mode,
                    mask,
                    VIEW_GROUP_BYTES,
                ));
                assert_eq!(got, expected, "{ctx}, Utf8View");
                // Small groups: many data buffers, and error indices offset by the group.
                let group = width * (1 + rng.below(4) as usize);
                let got = check_view(to_utf8_view_with(path, input, width, mode, mask, group));
                assert_eq!(got, expected, "{ctx}, Utf8View in groups of {group} bytes");
            }
        }
    }
}

fn random_element(rng: &mut Rng, units: usize, len: usize, profile: Profile) -> Vec<u32> {
    let mut e: Vec<u32> = (0..len).map(|_| draw_unit(rng, profile)).collect();
    e.resize(units, 0);
    e
}

#[test]
fn every_length_width_and_profile_matches_the_model() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut widths: Vec<usize> = (1..=21).map(|u| u * 4).collect();
    widths.extend([31 * 4, 32 * 4, 33 * 4, 5, 18, 67]);
    for &width in &widths {
        let units = width / 4;
        for profile in PROFILES {
            // Every length from 0 to the capacity, a few elements each, shuffled.
            let mut elements = Vec::new();
            for len in 0..=units {
                for _ in 0..3 {
                    elements.push(random_element(&mut rng, units, len, profile));
                }
            }
            for i in (1..elements.len()).rev() {
                elements.swap(i, rng.below(i as u64 + 1) as usize);
            }
            check_batch(
                &mut rng,
                &elements,
                width,
                &format!("width {width}, {profile:?}"),
            );
        }
    }
}

#[test]
fn leading_and_interior_nul_are_kept() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for units in 1..=40usize {
        let mut elements = Vec::new();
        for _ in 0..60 {
            let len = rng.below(units as u64 + 1) as usize;
            let mut e = random_element(&mut rng, units, len, PROFILES[2]);
            // Force NULs at the front and in the middle.
            for (k, unit) in e.iter_mut().take(len).enumerate() {
                if rng.below(3) == 0 || k < rng.below(3) as usize {
                    *unit = 0;
                }
            }
            elements.push(e);
        }
        check_batch(
            &mut rng,
            &elements,
            units * 4,
            &format!("NULs, units {units}"),
        );
    }
}

#[test]
fn long_random_batches_match_the_model() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for round in 0..40 {
        let units = 1 + rng.below(64) as usize;
        let profile = PROFILES[round % PROFILES.len()];
        let elements: Vec<Vec<u32>> = (0..500)
            .map(|_| {
                let len = match rng.below(4) {
                    0 => 0,
                    1 => units,
                    _ => rng.below(units as u64 + 1) as usize,
                };
                random_element(&mut rng, units, len, profile)
            })
            .collect();
        check_batch(
            &mut rng,
            &elements,
            units * 4,
            &format!("round {round}, units {units}"),
        );
    }
}

#[test]
fn the_first_invalid_element_and_unit_are_reported() {
    // Element 2 holds two invalid units and element 4 another: Error names element 2 and its
    // first invalid unit, on every path.
    let elements = vec![
        vec![0x41, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        vec![0x4E2D; 18],
        vec![
            0x41, 0x1F600, 0xDFFF, 0x110000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
        vec![0x41; 18],
        vec![0xFFFF_FFFF; 18],
    ];
    let input = native_input(&elements, 72, true);
    for path in paths() {
        let err = to_utf8_with::<i32>(path, &input, 72, InvalidUtf32::Error, None).unwrap_err();
        assert_eq!(
            err,
            TranscodeError::Invalid {
                index: 2,
                code_unit: 0xDFFF
            },
            "{}",
            path.name()
        );
        let err = to_utf8_view_with(path, &input, 72, InvalidUtf32::Error, None, 72).unwrap_err();
        assert_eq!(
            err,
            TranscodeError::Invalid {
                index: 2,
                code_unit: 0xDFFF
            },
            "{} view",
            path.name()
        );
        // NULL input elements are not validated.
        let mask = [false, false, true, false, true];
        let a = to_utf8_with::<i32>(path, &input, 72, InvalidUtf32::Error, Some(&mask)).unwrap();
        assert_eq!(a.null_count(), 2);
    }
}

#[test]
fn degenerate_widths_and_empty_input() {
    for path in paths() {
        for width in [0usize, 1, 2, 3] {
            let input = [0x41u8; 12];
            let a = to_utf8_with::<i32>(path, &input, width, InvalidUtf32::Error, None).unwrap();
            let v = to_utf8_view_with(
                path,
                &input,
                width,
                InvalidUtf32::Error,
                None,
                VIEW_GROUP_BYTES,
            )
            .unwrap();
            let n = input.len().checked_div(width).unwrap_or(0);
            assert_eq!(a.len(), n);
            assert_eq!(v.len(), n);
            assert!(a.iter().all(|s| s == Some("")));
        }
        let a = to_utf8_with::<i64>(path, &[], 64, InvalidUtf32::Error, None).unwrap();
        assert_eq!(a.len(), 0);
        // A trailing partial element is ignored.
        let input = native_input(&[vec![0x41, 0x42]], 8, true);
        let mut input = input.clone();
        input.extend_from_slice(&[0x43, 0, 0]);
        let a = to_utf8_with::<i32>(path, &input, 8, InvalidUtf32::Error, None).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a.value(0), "AB");
    }
}

#[test]
fn kernel_path_names_an_encoder() {
    let name = kernel_path();
    assert!(["avx2", "neon", "scalar"].contains(&name), "{name}");
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        assert_eq!(name, "avx2");
    }
}

#[test]
fn view_strings_of_12_and_13_bytes() {
    // 12 bytes are inline, 13 go to the data buffer; with a multi-byte character at the edge.
    let elements = vec![
        "abcdefghijkl".chars().map(u32::from).collect::<Vec<_>>(),
        "abcdefghijklm".chars().map(u32::from).collect(),
        "abcdefghijé".chars().map(u32::from).collect(),
        "abcdefghijkl€".chars().map(u32::from).collect(),
        "🚀🚀🚀".chars().map(u32::from).collect(),
        "🚀🚀🚀🚀".chars().map(u32::from).collect(),
    ];
    let elements: Vec<Vec<u32>> = elements
        .into_iter()
        .map(|mut e| {
            e.resize(16, 0);
            e
        })
        .collect();
    let input = native_input(&elements, 64, true);
    for path in paths() {
        let v = to_utf8_view_with(
            path,
            &input,
            64,
            InvalidUtf32::Error,
            None,
            VIEW_GROUP_BYTES,
        )
        .unwrap();
        let lens: Vec<u32> = v.views().iter().map(|&view| view as u32).collect();
        assert_eq!(lens, [12, 13, 12, 15, 12, 16]);
        assert_eq!(v.data_buffers().len(), 1);
        assert_eq!(v.data_buffers()[0].len(), 13 + 15 + 16);
        assert_eq!(v.value(3), "abcdefghijkl€");
    }
}

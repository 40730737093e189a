//! Property tests of the encoding kernels: both encoders (the one this CPU runs and the
//! portable one), through `Utf8`, `LargeUtf8` and `Utf8View` arrays (inline and out-of-line
//! strings, one or many data buffers), sliced or not, with and without NULLs, against a
//! reference encoder (`chars()` as `u32`, padded), on seeded random strings drawn like the
//! decoder's property tests (ASCII, 2-, 3- and 4-byte UTF-8, NUL), of every length around the
//! width, for widths from 0 to 132 bytes, both byte orders and both overflow modes; evenly
//! spaced characters; the round trip through [`to_utf8`]; [`max_code_points`] against
//! `chars().count()`; and arbitrary bytes and offsets, which must not panic.

use super::*;
use crate::decode::proptests::{PROFILES, Profile, Rng, draw_unit};
use crate::*;
use arrow_array::builder::StringViewBuilder;
use arrow_array::{Array, LargeStringArray, StringArray};

fn paths() -> Vec<Path> {
    let mut paths = vec![path(), Path::Scalar];
    paths.dedup();
    paths
}

/// The reference encoder: each string's `chars()` as `u32`, cut or refused past the width,
/// padded with zero code units.
fn reference(
    strings: &[Option<String>],
    width_bytes: usize,
    order: ByteOrder,
    overflow: Overflow,
) -> Result<Vec<u8>, EncodeError> {
    if !width_bytes.is_multiple_of(4) {
        return Err(EncodeError::Width { width_bytes });
    }
    let units = width_bytes / 4;
    let mut out = Vec::new();
    for (index, s) in strings.iter().enumerate() {
        let mut code: Vec<u32> = s.as_deref().unwrap_or("").chars().map(u32::from).collect();
        if code.len() > units {
            if overflow == Overflow::Error {
                return Err(EncodeError::TooLong(TooLong {
                    index,
                    code_points: code.len(),
                }));
            }
            code.truncate(units);
        }
        code.resize(units, 0);
        for u in code {
            out.extend_from_slice(&match order {
                ByteOrder::Little => u.to_le_bytes(),
                ByteOrder::Big => u.to_be_bytes(),
            });
        }
    }
    Ok(out)
}

/// A random valid string of `len` code points (invalid draws become U+FFFD).
fn random_string(rng: &mut Rng, len: usize, profile: Profile) -> String {
    (0..len)
        .map(|_| char::from_u32(draw_unit(rng, profile)).unwrap_or('\u{FFFD}'))
        .collect()
}

/// The arrays of one batch: `Utf8`, `LargeUtf8`, `Utf8View` (default and 64-byte data
/// buffers), each built with `pad` extra elements on both sides and sliced to `strings`.
struct Arrays {
    utf8: StringArray,
    large: LargeStringArray,
    view: StringViewArray,
    view_small_blocks: StringViewArray,
}

fn arrays(rng: &mut Rng, strings: &[Option<String>], pad: usize) -> Arrays {
    let junk = |rng: &mut Rng| -> Option<String> {
        let len = rng.below(20) as usize;
        (rng.below(3) != 0).then(|| random_string(rng, len, PROFILES[2]))
    };
    let before: Vec<Option<String>> = (0..pad).map(|_| junk(rng)).collect();
    let after: Vec<Option<String>> = (0..pad).map(|_| junk(rng)).collect();
    let all: Vec<Option<&str>> = before
        .iter()
        .chain(strings)
        .chain(&after)
        .map(Option::as_deref)
        .collect();
    let n = strings.len();
    let mut builder = StringViewBuilder::new().with_fixed_block_size(64);
    builder.extend(all.iter().copied());
    Arrays {
        utf8: StringArray::from(all.clone()).slice(pad, n),
        large: LargeStringArray::from(all.clone()).slice(pad, n),
        view: StringViewArray::from(all).slice(pad, n),
        view_small_blocks: builder.finish().slice(pad, n),
    }
}

/// Runs `encode_with` on `source` after a few bytes already in `out`, and checks that they
/// are kept and that an error leaves `out` as it was.
fn run<S: Source>(
    path: Path,
    source: &S,
    nulls: Option<&arrow_buffer::NullBuffer>,
    width_bytes: usize,
    order: ByteOrder,
    overflow: Overflow,
) -> Result<Vec<u8>, EncodeError> {
    let prefix = [0xA5u8, 0x5A, 0x01];
    let mut out = prefix.to_vec();
    let r = encode_with(path, source, nulls, width_bytes, order, overflow, &mut out);
    assert_eq!(&out[..3], &prefix, "the bytes already in `out` are kept");
    match r {
        Ok(()) => Ok(out[3..].to_vec()),
        Err(e) => {
            assert_eq!(out, prefix, "an error leaves `out` as it was");
            Err(e)
        }
    }
}

fn max_reference(strings: &[Option<String>]) -> usize {
    strings
        .iter()
        .map(|s| s.as_deref().map_or(0, |s| s.chars().count()))
        .max()
        .unwrap_or(0)
}

/// Checks every path, array type, byte order and overflow mode on one batch.
fn check_batch(rng: &mut Rng, strings: &[Option<String>], width_bytes: usize, what: &str) {
    let pad = rng.below(4) as usize;
    let a = arrays(rng, strings, pad);
    let max = max_reference(strings);
    for path in paths() {
        let ctx = format!("{what}, path {}", path.name());
        let offsets_utf8 = Offsets {
            offsets: a.utf8.value_offsets(),
            values: a.utf8.values().as_slice(),
        };
        let offsets_large = Offsets {
            offsets: a.large.value_offsets(),
            values: a.large.values().as_slice(),
        };
        let views = Views::new(&a.view);
        let views_small = Views::new(&a.view_small_blocks);
        assert_eq!(max_with(path, &offsets_utf8, a.utf8.nulls()), max, "{ctx}");
        assert_eq!(
            max_with(path, &offsets_large, a.large.nulls()),
            max,
            "{ctx}"
        );
        assert_eq!(max_with(path, &views, a.view.nulls()), max, "{ctx}");
        assert_eq!(
            max_with(path, &views_small, a.view_small_blocks.nulls()),
            max,
            "{ctx}"
        );
        for order in [ByteOrder::Little, ByteOrder::Big] {
            for overflow in [Overflow::Error, Overflow::Truncate] {
                let expected = reference(strings, width_bytes, order, overflow);
                let ctx = format!("{ctx}, {order:?}, {overflow:?}");
                let got = run(
                    path,
                    &offsets_utf8,
                    a.utf8.nulls(),
                    width_bytes,
                    order,
                    overflow,
                );
                assert_eq!(got, expected, "{ctx}, Utf8");
                let got = run(
                    path,
                    &offsets_large,
                    a.large.nulls(),
                    width_bytes,
                    order,
                    overflow,
                );
                assert_eq!(got, expected, "{ctx}, LargeUtf8");
                let got = run(path, &views, a.view.nulls(), width_bytes, order, overflow);
                assert_eq!(got, expected, "{ctx}, Utf8View");
                let got = run(
                    path,
                    &views_small,
                    a.view_small_blocks.nulls(),
                    width_bytes,
                    order,
                    overflow,
                );
                assert_eq!(got, expected, "{ctx}, Utf8View in 64-byte blocks");
            }
        }
    }
    // The public functions, once.
    let order = if rng.below(2) == 0 {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };
    let expected = reference(strings, width_bytes, order, Overflow::Truncate);
    let mut out = Vec::new();
    utf8_to_utf32(&a.utf8, width_bytes, order, Overflow::Truncate, &mut out).unwrap();
    assert_eq!(Ok(out), expected, "{what}, utf8_to_utf32");
    let mut out = Vec::new();
    utf8_view_to_utf32(&a.view, width_bytes, order, Overflow::Truncate, &mut out).unwrap();
    assert_eq!(Ok(out), expected, "{what}, utf8_view_to_utf32");
    assert_eq!(max_code_points(&a.utf8), max, "{what}");
    assert_eq!(max_code_points(&a.large), max, "{what}");
    assert_eq!(max_code_points_view(&a.view), max, "{what}");
}

/// A batch for `units` code units: every length from 0 to a few past the width, a few of
/// each, some NULL, shuffled.
fn batch(rng: &mut Rng, units: usize, profile: Profile) -> Vec<Option<String>> {
    let mut strings = Vec::new();
    for len in 0..=units + 3 {
        for _ in 0..3 {
            strings.push(if rng.below(6) == 0 {
                None
            } else {
                Some(random_string(rng, len, profile))
            });
        }
    }
    for i in (1..strings.len()).rev() {
        strings.swap(i, rng.below(i as u64 + 1) as usize);
    }
    strings
}

#[test]
fn every_width_length_and_profile_matches_the_reference() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut widths: Vec<usize> = (0..=21).map(|u| u * 4).collect();
    widths.extend([31 * 4, 32 * 4, 33 * 4]);
    for &width in &widths {
        for profile in PROFILES {
            let strings = batch(&mut rng, width / 4, profile);
            check_batch(
                &mut rng,
                &strings,
                width,
                &format!("width {width}, {profile:?}"),
            );
        }
    }
}

#[test]
fn too_long_strings_fit_when_short_enough() {
    // Batches where every string fits, so that Overflow::Error succeeds, over each profile.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..60 {
        let units = rng.below(40) as usize;
        let profile = PROFILES[round % PROFILES.len()];
        let strings: Vec<Option<String>> = (0..200)
            .map(|_| {
                let len = match rng.below(3) {
                    0 => units,
                    _ => rng.below(units as u64 + 1) as usize,
                };
                (rng.below(8) != 0).then(|| random_string(&mut rng, len, profile))
            })
            .collect();
        check_batch(
            &mut rng,
            &strings,
            units * 4,
            &format!("round {round}, units {units}"),
        );
    }
}

/// Strings of one character length only (the encoders' evenly-spaced case), of every length
/// around 16 characters and the width, with one other character put in at every position.
#[test]
fn evenly_spaced_characters() {
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    for c in ['é', 'Ж', '中', '한', '🚀', '😀', 'a'] {
        for units in [1usize, 3, 4, 8, 15, 16, 17, 31, 32, 33] {
            let mut strings: Vec<Option<String>> = Vec::new();
            for n in 0..=40usize {
                let s: String = std::iter::repeat_n(c, n).collect();
                strings.push(Some(s.clone()));
                for other in ['x', 'ü', '€', '𝄞'] {
                    let at = rng.below(n as u64 + 1) as usize;
                    let mut v: Vec<char> = s.chars().collect();
                    v.insert(at, other);
                    strings.push(Some(v.into_iter().collect()));
                }
            }
            check_batch(
                &mut rng,
                &strings,
                units * 4,
                &format!("{c:?} x n, units {units}"),
            );
        }
    }
}

#[test]
fn round_trip_through_to_utf8() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for round in 0..80 {
        let units = 1 + rng.below(40) as usize;
        let profile = PROFILES[round % PROFILES.len()];
        let strings: Vec<Option<String>> = (0..300)
            .map(|_| {
                let len = rng.below(units as u64 + 4) as usize;
                (rng.below(8) != 0).then(|| random_string(&mut rng, len, profile))
            })
            .collect();
        let array = StringArray::from(strings.clone());
        let mut out = Vec::new();
        utf8_to_utf32(
            &array,
            units * 4,
            ByteOrder::NATIVE,
            Overflow::Truncate,
            &mut out,
        )
        .unwrap();
        let back = to_utf8::<i32>(&out, units * 4, InvalidUtf32::Error, None).unwrap();
        assert_eq!(back.len(), strings.len());
        for (i, s) in strings.iter().enumerate() {
            // Cut at the width; decoding drops trailing U+0000, as NumPy does; NULL is "".
            let cut: String = s.as_deref().unwrap_or("").chars().take(units).collect();
            assert_eq!(
                back.value(i),
                cut.trim_end_matches('\0'),
                "round {round}, {i}"
            );
        }
    }
}

#[test]
fn the_first_too_long_element_is_reported() {
    let array = StringArray::from(vec![
        Some("abcd"),
        None,
        Some("ab€dé"),
        Some("abcdefgh"),
        Some("🚀🚀🚀🚀🚀🚀"),
    ]);
    for path in paths() {
        let source = Offsets {
            offsets: array.value_offsets(),
            values: array.values().as_slice(),
        };
        let err = run(
            path,
            &source,
            array.nulls(),
            16,
            ByteOrder::Little,
            Overflow::Error,
        );
        assert_eq!(
            err,
            Err(EncodeError::TooLong(TooLong {
                index: 2,
                code_points: 5
            })),
            "{}",
            path.name()
        );
        // Sliced past it: the next one, indexed within the slice.
        let sliced = array.slice(3, 2);
        let mut out = vec![1, 2];
        let err = utf8_to_utf32(&sliced, 16, ByteOrder::Big, Overflow::Error, &mut out);
        assert_eq!(
            err,
            Err(EncodeError::TooLong(TooLong {
                index: 0,
                code_points: 8
            }))
        );
        assert_eq!(out, [1, 2]);
        let err = EncodeError::TooLong(TooLong {
            index: 0,
            code_points: 8,
        });
        assert_eq!(
            err.to_string(),
            "string 0 has 8 code points, more than the width holds"
        );
    }
}

#[test]
fn view_strings_of_12_and_13_bytes() {
    let strings: Vec<Option<String>> = [
        "abcdefghijkl",
        "abcdefghijklm",
        "abcdefghijé",
        "abcdefghijkl€",
        "🚀🚀🚀",
        "🚀🚀🚀🚀",
        "",
    ]
    .iter()
    .map(|s| Some(s.to_string()))
    .collect();
    let view = StringViewArray::from(strings.clone());
    for path in paths() {
        for width in [0, 4, 12 * 4, 13 * 4, 16 * 4] {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let got = run(
                    path,
                    &Views::new(&view),
                    None,
                    width,
                    order,
                    Overflow::Truncate,
                );
                let expected = reference(&strings, width, order, Overflow::Truncate);
                assert_eq!(got, expected, "{} width {width}", path.name());
            }
        }
    }
}

#[test]
fn arbitrary_bytes_and_offsets_do_not_panic() {
    // What no checked arrow constructor builds: bytes that are not UTF-8, offsets out of order
    // or past the values. The encoders must not panic, and still write every slot.
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    for round in 0..300 {
        let values: Vec<u8> = (0..rng.below(200))
            .map(|_| match rng.below(4) {
                0 => 0x80 + rng.below(0x40) as u8,
                1 => 0xC0 + rng.below(0x40) as u8,
                _ => rng.below(256) as u8,
            })
            .collect();
        let offsets: Vec<i32> = (0..1 + rng.below(30))
            .map(|_| rng.below(values.len() as u64 + 20) as i32)
            .collect();
        let source = Offsets {
            offsets: &offsets,
            values: &values,
        };
        let width = 4 * rng.below(20) as usize;
        for path in paths() {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let got = run(path, &source, None, width, order, Overflow::Truncate);
                assert_eq!(
                    got.map(|o| o.len()),
                    Ok((offsets.len() - 1) * width),
                    "round {round}"
                );
                let _ = run(path, &source, None, width, order, Overflow::Error);
            }
            let _ = max_with(path, &source, None);
        }
    }
}

#[test]
fn kernel_path_names_an_encoder() {
    let name = encode::kernel_path();
    assert!(["avx2", "scalar"].contains(&name), "{name}");
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        assert_eq!(name, "avx2");
    }
}

#[test]
fn empty_arrays_and_all_null_arrays() {
    let empty = StringArray::from(Vec::<Option<&str>>::new());
    let nulls = StringArray::from(vec![None::<&str>; 5]);
    for path in paths() {
        let s = |a: &StringArray| run_array(path, a, 8);
        assert_eq!(s(&empty), Ok(vec![]));
        assert_eq!(s(&nulls), Ok(vec![0; 40]));
    }
    assert_eq!(max_code_points(&empty), 0);
    assert_eq!(max_code_points(&nulls), 0);
}

fn run_array(path: Path, a: &StringArray, width: usize) -> Result<Vec<u8>, EncodeError> {
    let source = Offsets {
        offsets: a.value_offsets(),
        values: a.values().as_slice(),
    };
    run(
        path,
        &source,
        a.nulls(),
        width,
        ByteOrder::Little,
        Overflow::Error,
    )
}

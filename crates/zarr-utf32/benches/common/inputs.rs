//! The strings both kernel benches run on (`kernel.rs` decodes them padded to UTF-32,
//! `encode.rs` encodes them from Arrow): a seeded generator, so every run sees the same ones.

/// Bytes per element, and code points.
pub const WIDTH: usize = 64;
pub const UNITS: usize = WIDTH / 4;

/// xorshift64, so the inputs are the same on every run.
pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn ascii(rng: &mut Rng) -> char {
    char::from(0x20 + rng.below(0x5F) as u8)
}

const ACCENTED: [char; 12] = ['é', 'è', 'ê', 'à', 'ç', 'ü', 'ö', 'ä', 'ñ', 'ø', 'å', 'í'];

/// `n` strings of `len(rng)` characters (at most [`UNITS`]) drawn by `unit(rng)`.
fn build(
    n: usize,
    rng: &mut Rng,
    mut len: impl FnMut(&mut Rng) -> usize,
    mut unit: impl FnMut(&mut Rng) -> char,
) -> Vec<String> {
    (0..n)
        .map(|_| {
            let l = len(rng).min(UNITS);
            (0..l).map(|_| unit(rng)).collect()
        })
        .collect()
}

/// The inputs, lengths uniform in 1..=16 unless noted: `ascii`; `mostly_ascii` (5% accented
/// Latin, 2-byte UTF-8); `cjk` (3-byte); `emoji` (70% emoji, 4-byte, 30% ASCII);
/// `empty_or_full` (half empty, half 16 ASCII).
pub fn strings(n: usize) -> Vec<(&'static str, Vec<String>)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let short = |r: &mut Rng| 1 + r.below(UNITS as u64) as usize;
    let cjk = |r: &mut Rng| char::from_u32(0x4E00 + r.below(0x5200) as u32).unwrap_or('?');
    let mostly_ascii = |r: &mut Rng| {
        if r.below(20) == 0 {
            ACCENTED[r.below(ACCENTED.len() as u64) as usize]
        } else {
            ascii(r)
        }
    };
    let emoji = |r: &mut Rng| {
        if r.below(10) < 7 {
            char::from_u32(0x1F300 + r.below(0x300) as u32).unwrap_or('?')
        } else {
            ascii(r)
        }
    };
    let empty_or_full = |r: &mut Rng| if r.below(2) == 0 { 0 } else { UNITS };
    vec![
        ("ascii", build(n, &mut rng, short, ascii)),
        ("mostly_ascii", build(n, &mut rng, short, mostly_ascii)),
        ("cjk", build(n, &mut rng, short, cjk)),
        ("emoji", build(n, &mut rng, short, emoji)),
        ("empty_or_full", build(n, &mut rng, empty_or_full, ascii)),
    ]
}

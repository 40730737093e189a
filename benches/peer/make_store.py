#!/usr/bin/env python3
"""Writes the benchmark store: a 1-D Zarr V3 array of fixed-length UTF-32 strings.

    python3 benches/peer/make_store.py                          # 20,000,000 strings -> benches/data/strings_20m.zarr
    python3 benches/peer/make_store.py --n 1000000 --out benches/data/strings_1m.zarr

The array: dtype `<U16` (zarr-python's `fixed_length_utf32`, length_bytes 64), shape (N,), chunks
of 100,000, zstd level 3, dimension name "i", written by zarr-python (see requirements.txt).

The values are drawn from a fixed vocabulary of ~50,000 strings built with a fixed seed (so the
store is the same on every machine): mostly lowercase ASCII words and word pairs made of
syllables, some capitalised, ~6% with Latin accents, ~2% CJK, ~1% with an emoji; ~2% of the
elements are empty strings. Word frequencies follow a Zipf-like law, as in real label columns.
"""

import argparse
import shutil
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import ZstdCodec

# zarr-python warns that fixed_length_utf32 has no V3 specification yet; we know.
warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")

CHUNK = 100_000
WIDTH = 16  # code points: <U16, length_bytes 64
SEED = 20240601

CONSONANTS = list("bcdfghjklmnprstvwz") + ["ch", "sh", "th", "st", "br", "tr", "gr", "pl"]
VOWELS = list("aeiou") + ["ai", "ea", "ou", "io"]
ACCENTS = {"a": "áàâäã", "e": "éèêë", "i": "íìîï", "o": "óòôöõ", "u": "úùûü", "n": "ñ", "c": "ç"}
EMOJI = [chr(c) for c in range(0x1F600, 0x1F640)] + ["🚀", "🌍", "🎉", "🔥", "✨", "🍕"]


def vocabulary(rng: np.random.Generator, size: int) -> np.ndarray:
    """`size` distinct strings of at most WIDTH code points; entry 0 is the empty string."""

    def syllable() -> str:
        s = ""
        if rng.random() < 0.85:
            s += CONSONANTS[rng.integers(len(CONSONANTS))]
        s += VOWELS[rng.integers(len(VOWELS))]
        if rng.random() < 0.3:
            s += "bdklmnrstx"[rng.integers(10)]
        return s

    def word(max_len: int) -> str:
        w = "".join(syllable() for _ in range(rng.integers(1, 4)))
        return w[:max_len]

    seen = {""}
    out = [""]
    while len(out) < size:
        r = rng.random()
        if r < 0.02:  # CJK, 2-8 ideographs
            s = "".join(chr(rng.integers(0x4E00, 0x9FFF)) for _ in range(rng.integers(2, 9)))
        else:
            s = word(WIDTH)
            if rng.random() < 0.25:  # a pair of words
                s = (s + " " + word(WIDTH))[:WIDTH].rstrip()
            if rng.random() < 0.2:
                s = s.capitalize()
            if rng.random() < 0.06:  # Latin accents
                chars = list(s)
                for k, c in enumerate(chars):
                    if c in ACCENTS and rng.random() < 0.5:
                        alts = ACCENTS[c]
                        chars[k] = alts[rng.integers(len(alts))]
                s = "".join(chars)
            if rng.random() < 0.01:  # an emoji
                s = (s[: WIDTH - 2] + " " + EMOJI[rng.integers(len(EMOJI))]).strip()
            if rng.random() < 0.02:  # digits, as in codes and names
                s = (s + str(rng.integers(1, 1000)))[:WIDTH]
        if s and s not in seen:
            seen.add(s)
            out.append(s)
    return np.array(out, dtype=f"<U{WIDTH}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000_000, help="number of strings (default 20,000,000)")
    ap.add_argument("--out", default="benches/data/strings_20m.zarr", help="output store (replaced)")
    ap.add_argument("--vocab", type=int, default=50_000, help="vocabulary size (default 50,000)")
    ap.add_argument("--empty", type=float, default=0.02, help="fraction of empty strings (default 0.02)")
    ap.add_argument("--uncompressed", action="store_true", help="no compressor (default: zstd level 3)")
    ap.add_argument("--chunk", type=int, default=CHUNK, help=f"strings per chunk (default {CHUNK:,})")
    args = ap.parse_args()

    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    vocab = vocabulary(rng, args.vocab)
    # Zipf-like weights over the non-empty entries (rank r has weight 1 / (r + 10)).
    weights = 1.0 / (np.arange(1, len(vocab), dtype=np.float64) + 10.0)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]

    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    arr = zarr.create_array(
        store=str(out),
        shape=(args.n,),
        chunks=(args.chunk,),
        dtype=f"<U{WIDTH}",
        compressors=None if args.uncompressed else ZstdCodec(level=3),
        dimension_names=["i"],
        zarr_format=3,
        fill_value="",
    )

    # Write 10 chunks per assignment so zarr-python compresses them concurrently.
    step = CHUNK * 10
    for start in range(0, args.n, step):
        stop = min(start + step, args.n)
        crng = np.random.default_rng([SEED, start])
        idx = 1 + np.searchsorted(cdf, crng.random(stop - start), side="right").clip(0, len(vocab) - 2)
        idx[crng.random(stop - start) < args.empty] = 0
        arr[start:stop] = vocab[idx]
        print(f"\r{stop:,}/{args.n:,}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(
        f"wrote {out}: {args.n:,} strings <U{WIDTH}, chunks {args.chunk:,}, {'uncompressed' if args.uncompressed else 'zstd 3'}, "
        f"vocabulary {len(vocab):,}, in {time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

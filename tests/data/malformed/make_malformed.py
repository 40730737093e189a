"""Writes the malformed chunk and shard cases (README.md says what each breaks).

Run from this directory:  python3 make_malformed.py   (needs numcodecs, numpy, pcodec; deterministic)
Metadata cases are made by the tests themselves, by editing a copy of a corpus store.
"""
import gzip
import json
import os
import shutil
import struct

import numcodecs
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus")


def array_json(shape, chunks, length_bytes, codecs, fill=""):
    return {
        "shape": shape, "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": length_bytes}},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": codecs, "attributes": {}, "zarr_format": 3,
        "node_type": "array", "storage_transformers": [],
    }


def store(name, meta, chunks):
    path = os.path.join(HERE, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "c"))
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(meta, f, indent=1)
    for key, data in chunks.items():
        with open(os.path.join(path, key), "wb") as f:
            f.write(data)


BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
RAW = np.array([s[:1] for s in ["a", "b", "", "c"] * 250], dtype="<U1").tobytes()  # 4000 bytes


def copy_corpus(case, name):
    dst = os.path.join(HERE, name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(CORPUS, case, "data.zarr"), dst)
    return dst


def main():
    # Decompression bombs: 1000 elements of 4 bytes are declared (4000 bytes); the chunk
    # inflates to 256 MiB.
    bomb = b"\0" * (256 << 20)
    store("gzip_bomb.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "gzip", "configuration": {"level": 1}}]),
          {"c/0": gzip.compress(bomb, compresslevel=9, mtime=0)})
    store("zstd_bomb.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]),
          {"c/0": numcodecs.Zstd(level=19).encode(bomb)})
    # A zstd frame whose header claims 1 TiB of content, followed by one raw 4-byte block.
    frame = struct.pack("<I", 0xFD2FB528) + bytes([0xE0]) + struct.pack("<Q", 1 << 40) + bytes([(4 << 3) | 1, 0, 0]) + b"abcd"
    store("zstd_lying_header.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]),
          {"c/0": frame})
    # A blosc header claiming 2 GiB of decompressed data.
    header = bytes([2, 1, 0x01, 4]) + struct.pack("<III", 0x7FFFFFF0, 4096, 16 + 4) + b"\0\0\0\0"
    store("lzma_bomb.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "numcodecs.lzma", "configuration": {"format": 1, "check": -1, "preset": None, "filters": None}}]),
          {"c/0": numcodecs.LZMA(preset=9).encode(bomb)})
    store("blosc_bomb.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]),
          {"c/0": header})
    # A pcodec chunk of 2^25 float64 zeros (256 MiB) in a few hundred bytes, for 1000 declared.
    from pcodec import ChunkConfig, standalone
    pcodec_meta = array_json([1000], [1000], 4, [{"name": "numcodecs.pcodec", "configuration": {"level": 8}}],
                             fill=0.0)
    pcodec_meta["data_type"] = "float64"
    store("pcodec_bomb.zarr", pcodec_meta,
          {"c/0": standalone.simple_compress(np.zeros(1 << 25), ChunkConfig())})
    # Truncated compressed chunks.
    store("gzip_truncated.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "gzip", "configuration": {"level": 1}}]),
          {"c/0": gzip.compress(RAW, mtime=0)[:30]})
    store("zstd_truncated.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]),
          {"c/0": numcodecs.Zstd(level=3).encode(RAW)[:20]})
    blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE).encode(np.frombuffer(RAW, dtype="<U1"))
    store("blosc_truncated.zarr", array_json([1000], [1000], 4, [BYTES, {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]),
          {"c/0": blosc[: len(blosc) // 2]})
    # Uncompressed chunks with too few and too many bytes.
    store("chunk_too_short.zarr", array_json([1000], [1000], 4, [BYTES]), {"c/0": RAW[:-8]})
    store("chunk_too_long.zarr", array_json([1000], [1000], 4, [BYTES]), {"c/0": RAW + b"\0\0\0\0"})
    # A CRC32C mismatch: corpus case 11 with the checksum of chunk c/0 flipped.
    path = copy_corpus("11_1d_zstd_crc32c", "crc32c_mismatch.zarr")
    with open(os.path.join(path, "c", "0"), "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))

    # Shards: corpus case 07 (index at the end: 5 inner chunks x 16 bytes + crc32c).
    def shard_case(name, edit):
        path = copy_corpus("07_sharding_index_end", name)
        key = os.path.join(path, "c", "0")
        with open(key, "rb") as f:
            data = bytearray(f.read())
        data = edit(data)
        with open(key, "wb") as f:
            f.write(data)

    def with_index(entries_edit):
        def edit(data):
            n = 5
            index = data[-(n * 16 + 4):-4]
            entries = [list(struct.unpack("<QQ", index[i * 16:(i + 1) * 16])) for i in range(n)]
            entries_edit(entries, len(data))
            raw = b"".join(struct.pack("<QQ", o, s) for o, s in entries)
            crc = bytes(numcodecs.CRC32C().encode(raw))[-4:]  # the checksum numcodecs appends
            return data[: -(n * 16 + 4)] + raw + crc
        return edit

    def first_present(entries):
        return next(i for i, (o, s) in enumerate(entries) if o != 2**64 - 1)

    shard_case("shard_truncated.zarr", lambda d: d[:50])

    def past_end(entries, total):
        entries[first_present(entries)][1] = total * 2
    shard_case("shard_past_end.zarr", with_index(past_end))

    def overflow(entries, total):
        entries[first_present(entries)] = [2**64 - 16, 32]
    shard_case("shard_offset_overflow.zarr", with_index(overflow))

    def overlap(entries, total):
        i = first_present(entries)
        entries[i] = [total - 84 - 8, 16]  # runs into the index
    shard_case("shard_overlaps_index.zarr", with_index(overlap))

    def bad_crc(data):
        data[-1] ^= 0xFF
        return data
    shard_case("shard_bad_checksum.zarr", bad_crc)


if __name__ == "__main__":
    main()

//! The bodies of the fuzz targets (`fuzz/`), kept in the library so that the regression test
//! (`tests/fuzz_regressions.rs`) runs every saved input through exactly the same code.
//! Each function must return normally, or with an error, on any input; a panic is a bug.

use crate::limits::Limits;
use crate::node::{ArrayNode, parse_array};
use crate::options::{InvalidUtf32, ZarrOptions};
use crate::scan::{Elements, decode_chunk};

/// Metadata parsing: any bytes as a `zarr.json` (or `.zarray`), then the fill chunk of a
/// small array.
pub fn metadata(data: &[u8]) {
    let options = ZarrOptions {
        max_chunk_bytes: 1 << 20,
        ..ZarrOptions::default()
    };
    let Ok(node) = parse_array("fuzz://store", "a", data, &Limits::of(&options)) else {
        return;
    };
    if node.array.is_some() {
        let zeros = vec![0u64; node.shape.len()];
        let _ = decode_chunk(&node, &zeros, None, &Limits::of(&options));
    }
}

/// Array metadata the chunk target decodes its input with: the corpus' codec combinations.
const ARRAYS: &[&str] = &[
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"x","codecs":[{"name":"bytes","configuration":{"endian":"big"}},{"name":"zstd","configuration":{"level":3,"checksum":false}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"gzip","configuration":{"level":5}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"blosc","configuration":{"cname":"lz4","clevel":5,"shuffle":"shuffle","typesize":12,"blocksize":0}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":3,"checksum":false}},{"name":"crc32c"}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[4],"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":3,"checksum":false}}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}}]}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[9,7],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":8}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4,3]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"bytes","configuration":{"endian":"little"}}]}"#,
    r#"{"zarr_format":2,"shape":[11,6],"chunks":[4,4],"dtype":"<U3","fill_value":null,"order":"F","filters":null,"dimension_separator":".","compressor":{"id":"zlib","level":1}}"#,
    r#"{"zarr_format":3,"node_type":"array","shape":[37],"data_type":{"name":"fixed_length_utf32","configuration":{"length_bytes":12}},"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[16]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":"","codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"numcodecs.lz4","configuration":{"acceleration":1}}]}"#,
    r#"{"zarr_format":2,"shape":[9],"chunks":[4],"dtype":">U2","fill_value":"","order":"C","filters":null,"dimension_separator":".","compressor":{"id":"lz4","acceleration":1}}"#,
];

/// One chunk: the first byte picks an array (and an `invalid_utf32` mode), the rest is the
/// encoded chunk, decoded and transcoded.
pub fn chunk(data: &[u8]) {
    let Some((&pick, encoded)) = data.split_first() else {
        return;
    };
    let Some(node) = array(pick as usize % ARRAYS.len()) else {
        return;
    };
    let options = ZarrOptions {
        max_chunk_bytes: 1 << 20,
        invalid_utf32: [
            InvalidUtf32::Error,
            InvalidUtf32::Replace,
            InvalidUtf32::Null,
        ][(pick as usize / ARRAYS.len()) % 3],
        ..ZarrOptions::default()
    };
    let zeros = vec![0u64; node.shape.len()];
    let Ok(chunk) = decode_chunk(&node, &zeros, Some(encoded), &Limits::of(&options)) else {
        return;
    };
    if let Elements::Fixed { bytes, size } = &chunk.elements {
        let _ = zarr_utf32::to_utf8::<i32>(bytes, *size, options.invalid_utf32, None);
        let _ = zarr_utf32::to_utf8_view(bytes, *size, options.invalid_utf32, None);
        let _ = zarr_utf32::to_fixed_size_binary(bytes, *size, options.invalid_utf32, None);
    }
}

fn array(i: usize) -> Option<ArrayNode> {
    let limits = Limits::of(&ZarrOptions::default());
    parse_array("fuzz://store", "a", ARRAYS[i].as_bytes(), &limits).ok()
}

/// The transcoding kernels against the reference decoder: the first byte picks the element
/// width and the mode; any difference panics.
pub fn kernel(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let width = 4 * (1 + (pick as usize % 16));
    let mode = [
        InvalidUtf32::Error,
        InvalidUtf32::Replace,
        InvalidUtf32::Null,
    ][(pick as usize / 16) % 3];
    let input = &rest[..rest.len() - rest.len() % width];
    let expected = zarr_utf32::reference_decode(input, width, mode);
    let got = zarr_utf32::to_utf8::<i32>(input, width, mode, None)
        .map(|a| a.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>());
    assert_eq!(got, expected, "to_utf8 differs from the reference");
    let view = zarr_utf32::to_utf8_view(input, width, mode, None)
        .map(|a| a.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>());
    assert_eq!(view, expected, "to_utf8_view differs from the reference");
}

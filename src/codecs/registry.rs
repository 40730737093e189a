//! Our codecs registered with zarrs once per process, and the options every decode runs with.

use std::sync::Once;

use zarrs::array::CodecOptions;

/// Registers our codec plugins with zarrs, once per process, before any metadata is parsed.
pub(crate) fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        super::bounded::register();
        super::checksum::register();
        super::lz4::register();
        super::lzma::register();
        super::delta::register();
        super::categorize::register();
        super::astype::register();
        super::fixedscaleoffset::register();
        super::bitround::register();
        super::packbits::register();
        super::pcodec::register();
    });
}

/// The options of every decode: one chunk is decoded on the calling thread (the scan's
/// parallelism is its partitions), which also keeps the table's decode bound in force
/// (see [`crate::limits::Limit::decode_within`]).
pub(crate) fn decode_options() -> CodecOptions {
    CodecOptions::default().with_concurrent_target(1)
}

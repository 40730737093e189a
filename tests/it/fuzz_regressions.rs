//! Every input saved under `tests/data/fuzz/<target>/` (seeds and crashes the fuzzers found)
//! runs through the fuzz target's body, `datafusion_zarr::fuzzing::<target>`: none may panic.

use std::path::Path;

fn run(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| body(&data));
        assert!(result.is_ok(), "{target}: {} panicked", path.display());
        n += 1;
    }
    assert!(n > 0, "no inputs for {target}");
}

#[test]
fn metadata_inputs() {
    run("metadata", datafusion_zarr::fuzzing::metadata);
}

#[test]
fn chunk_inputs() {
    run("chunk", datafusion_zarr::fuzzing::chunk);
}

#[test]
fn kernel_inputs() {
    run("kernel", datafusion_zarr::fuzzing::kernel);
}

#[test]
fn cf_inputs() {
    run("cf", datafusion_zarr::fuzzing::cf);
}

#[test]
fn vlen_inputs() {
    run("vlen", datafusion_zarr::fuzzing::vlen);
}

#[test]
fn references_inputs() {
    run("references", datafusion_zarr::fuzzing::references);
}

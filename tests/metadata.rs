//! Where zarr-python is looser than the `fixed_length_utf32` specification, the reader follows
//! the specification and says so. Each case edits the zarr.json of corpus case 00 in a copy.

mod common;

use serde_json::{Value, json};

use common::*;

/// Copies corpus case 00 into a temporary directory and applies `edit` to its zarr.json.
fn edited(edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = corpus().join("00_zarr_python_defaults_U7/data.zarr");
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    std::fs::copy(src.join("c/0"), dir.path().join("c/0")).unwrap();
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("zarr.json")).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(dir.path().join("zarr.json"), doc.to_string()).unwrap();
    dir
}

async fn open_error(dir: &tempfile::TempDir) -> String {
    let ctx = context();
    let sql = format!("SELECT * FROM read_zarr('{}')", dir.path().display());
    match ctx.sql(&sql).await {
        Ok(df) => match df.collect().await {
            Ok(_) => panic!("should fail"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn the_unedited_copy_reads() {
    let dir = edited(|_| {});
    let ctx = context();
    let b = query(
        &ctx,
        &format!("SELECT * FROM read_zarr('{}')", dir.path().display()),
    )
    .await
    .unwrap();
    assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 8);
}

#[tokio::test]
async fn a_fill_value_longer_than_the_capacity_is_rejected() {
    let dir = edited(|d| d["fill_value"] = json!("12345678"));
    let e = open_error(&dir).await;
    assert!(
        e.contains("fill_value has 8 code points, more than length_bytes / 4 = 7"),
        "{e}"
    );
    assert!(e.contains("specification"), "{e}");
}

#[tokio::test]
async fn length_bytes_must_be_a_positive_multiple_of_4() {
    for bad in [json!(0), json!(6), json!(-4), json!("8")] {
        let dir = edited(|d| d["data_type"]["configuration"]["length_bytes"] = bad.clone());
        let e = open_error(&dir).await;
        assert!(
            e.contains("length_bytes must be a positive multiple of 4"),
            "{bad}: {e}"
        );
    }
}

#[tokio::test]
async fn a_vlen_codec_on_this_type_is_rejected() {
    let dir = edited(|d| d["codecs"] = json!([{"name": "vlen-utf8"}]));
    let e = open_error(&dir).await;
    assert!(e.contains("codec 'vlen-utf8' is variable-length"), "{e}");
}

#[tokio::test]
async fn extra_configuration_keys_and_bare_names_are_rejected() {
    let dir = edited(|d| d["data_type"]["configuration"]["endian"] = json!("little"));
    let e = open_error(&dir).await;
    assert!(e.contains("unknown key 'endian'"), "{e}");
    let dir = edited(|d| d["data_type"] = json!("fixed_length_utf32"));
    let e = open_error(&dir).await;
    assert!(e.contains("needs a configuration with length_bytes"), "{e}");
}

#[tokio::test]
async fn wrong_zarr_format_and_bad_json_are_errors() {
    let dir = edited(|d| d["zarr_format"] = json!(2));
    let e = open_error(&dir).await;
    assert!(e.contains("zarr_format is 2, expected 3"), "{e}");
    let dir = edited(|_| {});
    std::fs::write(dir.path().join("zarr.json"), "{not json").unwrap();
    let e = open_error(&dir).await;
    assert!(e.contains("not valid JSON"), "{e}");
}

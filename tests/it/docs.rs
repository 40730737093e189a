//! The documents stay true to the code: the README's options table is the one the options'
//! declaration gives, and every document's Rust examples are doctests (`src/doc_examples.rs`).

use datafusion_zarr::ZarrOptions;

use zarr_test_support::root;

#[test]
fn the_readme_options_table_is_the_declared_options() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let table = ZarrOptions::markdown_table();
    assert!(
        readme.contains(&table),
        "README.md's options table differs from ZarrOptions' declaration (src/options.rs); \
         it should read:\n{table}"
    );
}

#[test]
fn every_document_is_compiled_for_its_rust_examples() {
    let included = std::fs::read_to_string(root().join("src/doc_examples.rs")).unwrap();
    let mut documents = vec!["README.md".to_string(), "python/README.md".to_string()];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".md") {
            documents.push(format!("docs/{name}"));
        }
    }
    for document in documents {
        assert!(
            included.contains(&format!("include_str!(\"../{document}\")")),
            "{document} is not in src/doc_examples.rs: its Rust examples would not run"
        );
    }
}

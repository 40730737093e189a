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

/// The opening sentence of a source file's `//!` paragraph (its job, by the project's rule),
/// joined onto one line: up to the first `.` outside backticks that ends a sentence.
fn opening_sentence(text: &str) -> Option<String> {
    // A heading (`//! # name`) and the blank lines after it come before the sentence.
    let paragraph: Vec<&str> = text
        .lines()
        .take_while(|line| line.starts_with("//!"))
        .map(|line| line.trim_start_matches("//!").trim())
        .skip_while(|line| line.is_empty() || line.starts_with('#'))
        .take_while(|line| !line.is_empty())
        .collect();
    if paragraph.is_empty() {
        return None;
    }
    let joined = paragraph.join(" ");
    let mut in_code = false;
    let mut end = joined.len();
    let chars: Vec<(usize, char)> = joined.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        match c {
            '`' => in_code = !in_code,
            '.' if !in_code => {
                let next = chars.get(i + 1).map(|&(_, n)| n);
                if next.is_none_or(char::is_whitespace) {
                    end = at + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    Some(without_link_brackets(&joined[..end]).replace('|', "\\|"))
}

/// `text` with rustdoc's intra-doc links (`` [`Name`] ``) as plain code (`` `Name` ``): the
/// names link nowhere from a Markdown page.
fn without_link_brackets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("[`") {
        let after = &rest[open + 1..];
        let close = after.find("`]").filter(|&c| !after[1..c].contains('`'));
        match close {
            Some(c) if !after[c + 2..].starts_with('(') => {
                out.push_str(&rest[..open]);
                out.push_str(&after[..c + 1]);
                rest = &after[c + 2..];
            }
            _ => {
                out.push_str(&rest[..open + 2]);
                rest = &rest[open + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every `.rs` file below `dir`, sorted, as paths relative to the repository root.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module map of docs/architecture.md: one row per source file of the library and the
/// workspace's crates, with its opening sentence.
fn module_map() -> String {
    let root = root();
    let mut dirs = vec![root.join("src")];
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    dirs.extend(crates);
    let mut table = String::from("| file | its job |\n|---|---|\n");
    for dir in dirs {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let shown = file.strip_prefix(&root).unwrap().display().to_string();
            let job = opening_sentence(&text)
                .unwrap_or_else(|| panic!("{shown} does not open with a //! sentence"));
            table.push_str(&format!("| `{shown}` | {job} |\n"));
        }
    }
    table
}

/// docs/architecture.md's module map is generated from each file's opening `//!` sentence.
/// `UPDATE_DOCS=1 cargo test --test it docs::` writes it anew.
#[test]
fn the_module_map_is_each_files_opening_sentence() {
    const START: &str = "<!-- module map: generated from each file's opening //! sentence -->\n";
    const END: &str = "<!-- end of the module map -->";
    let path = root().join("docs/architecture.md");
    let document = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (document.find(START), document.find(END)) else {
        panic!("docs/architecture.md has no module map between {START:?} and {END:?}");
    };
    let table = module_map();
    let current = &document[start + START.len()..end];
    if current != table && std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{START}{table}{}", &document[..start], &document[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        current, table,
        "docs/architecture.md's module map differs from the files' opening sentences; run \
         UPDATE_DOCS=1 cargo test --test it docs:: to write it anew"
    );
}

/// docs/testing.md names every module of every integration-test binary.
#[test]
fn the_testing_page_names_every_test_module() {
    let testing = std::fs::read_to_string(root().join("docs/testing.md")).unwrap();
    for main in ["tests/it/main.rs", "crates/zarr-sql/tests/it/main.rs"] {
        let text = std::fs::read_to_string(root().join(main)).unwrap();
        for line in text.lines() {
            let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) else {
                continue;
            };
            if name == "common" {
                continue;
            }
            assert!(
                testing.contains(&format!("`{name}.rs`")),
                "docs/testing.md does not name {main}'s module {name}.rs"
            );
        }
    }
}

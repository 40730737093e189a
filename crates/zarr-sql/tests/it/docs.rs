//! Every `sh` and `sql` example of the README and the user guide runs as written (`no_run`
//! marks the ones that need what a test machine lacks: real cloud credentials, a cluster's
//! hosts, an installation). Each document's examples run in order in one temporary directory
//! holding `tests/` and `queries/` (links to the repository's), with `zarr-sql` on PATH and
//! `cargo run -q --` meaning `zarr-sql`, so a later example may read what an earlier one wrote.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// One fenced example: its language, whether it runs, its first line's number, its text.
struct Example {
    language: String,
    runs: bool,
    line: usize,
    text: String,
}

/// The fenced code blocks of a Markdown document.
fn examples(markdown: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut open: Option<Example> = None;
    for (i, line) in markdown.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                let words: Vec<&str> = info.split([' ', ',']).filter(|w| !w.is_empty()).collect();
                open = Some(Example {
                    language: words.first().copied().unwrap_or("").to_string(),
                    runs: !words.contains(&"no_run") && !words.contains(&"ignore"),
                    line: i + 2,
                    text: String::new(),
                });
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(example), None) => {
                example.text.push_str(line);
                example.text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

fn documents() -> Vec<PathBuf> {
    let mut documents = vec![root().join("README.md"), root().join("python/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    documents.extend(docs);
    documents
}

/// A directory like the repository's root for the examples: links to its test data and
/// queries, room for what the examples write.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["tests", "queries"] {
        std::os::unix::fs::symlink(root().join(name), dir.path().join(name)).unwrap();
    }
    dir
}

fn run(example: &Example, document: &Path, dir: &Path) {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_zarr-sql"));
    let bin_dir = binary.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = match example.language.as_str() {
        "sh" | "bash" | "shell" => {
            let script = example.text.replace("cargo run -q --", "zarr-sql");
            Command::new("bash")
                .args(["-euo", "pipefail", "-c", &script])
                .current_dir(dir)
                .env("PATH", &path)
                .output()
                .unwrap()
        }
        "sql" => {
            let file = dir.join("example.sql");
            std::fs::write(&file, &example.text).unwrap();
            Command::new(&binary)
                .args(["-q", "-f"])
                .arg(&file)
                .current_dir(dir)
                .output()
                .unwrap()
        }
        _ => return,
    };
    assert!(
        out.status.success(),
        "the {} example at {}:{} failed:\n{}\n--- stdout\n{}\n--- stderr\n{}",
        example.language,
        document.display(),
        example.line,
        example.text,
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn every_shell_and_sql_example_of_the_documents_runs() {
    let mut ran = 0;
    for document in documents() {
        let markdown = std::fs::read_to_string(&document).unwrap();
        let dir = workdir();
        for example in examples(&markdown) {
            if example.runs && ["sh", "bash", "shell", "sql"].contains(&example.language.as_str()) {
                run(&example, &document, dir.path());
                ran += 1;
            }
        }
    }
    // The README alone has the demo and a zarr-sql example; the guide has many more.
    assert!(
        ran >= 10,
        "only {ran} examples ran: are the fences still ```sh / ```sql?"
    );
}

#[test]
fn the_readme_test_command_is_the_one_ci_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        readme.contains("\ntools/test\n"),
        "the README shows `tools/test`"
    );
    assert!(
        ci.lines().any(|l| l.trim() == "tools/test"),
        ".ci/run runs tools/test"
    );
    assert!(
        readme.contains("\ncargo run -q -- -f queries/demo.sql\n"),
        "the README shows the demo command"
    );
}

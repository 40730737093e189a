//! The `zarr-sql` binary: formats, stdout/stderr discipline, exit codes, the queries folder.

use crate::common::*;

const U7: &str = "tests/data/corpus/00_zarr_python_defaults_U7/data.zarr";

#[test]
fn every_query_file_gives_its_expected_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = std::fs::read_dir(root().join("queries"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 6);
    for file in files {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        // Files that write, write into a temporary directory.
        let sql = std::fs::read_to_string(&file)
            .unwrap()
            .replace("'target/demo/", &format!("'{}/", dir.path().display()));
        let script = dir.path().join(format!("{name}.sql"));
        std::fs::write(&script, sql).unwrap();
        let out = zarr_sql(&["-q", "--format", "csv", "-f", script.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let expected =
            std::fs::read_to_string(root().join(format!("queries/expected/{name}.csv"))).unwrap();
        assert_eq!(stdout(&out), expected, "{name}");
    }
}

#[test]
fn formats() {
    let sql = format!("SELECT dim_0, value FROM read_zarr('{U7}') WHERE dim_0 < 2 ORDER BY dim_0");
    let csv = zarr_sql(&["-q", "--format", "csv", "-c", &sql]);
    assert_eq!(stdout(&csv), "dim_0,value\n0,ab\n1,héllo\n");
    // A result of no rows still has its header.
    let none = format!("SELECT dim_0, value FROM read_zarr('{U7}') WHERE dim_0 > 1000");
    let empty = zarr_sql(&["-q", "--format", "csv", "-c", &none]);
    assert_eq!(stdout(&empty), "dim_0,value\n");
    let json = zarr_sql(&["-q", "--format", "json", "-c", &sql]);
    assert_eq!(
        stdout(&json),
        "[{\"dim_0\":0,\"value\":\"ab\"},{\"dim_0\":1,\"value\":\"héllo\"}]\n"
    );
    for f in ["ndjson", "nd-json"] {
        let nd = zarr_sql(&["-q", "--format", f, "-c", &sql]);
        assert_eq!(
            stdout(&nd),
            "{\"dim_0\":0,\"value\":\"ab\"}\n{\"dim_0\":1,\"value\":\"héllo\"}\n",
            "{f}"
        );
    }
    let table = zarr_sql(&["-c", &sql]);
    assert_eq!(
        stdout(&table),
        "+-------+-------+\n| dim_0 | value |\n+-------+-------+\n| 0     | ab    |\n| 1     | héllo |\n+-------+-------+\n"
    );
    // Row counts and timings go to stderr, and away with -q.
    assert!(
        stderr(&table).contains("2 rows fetched."),
        "{}",
        stderr(&table)
    );
    assert_eq!(stderr(&csv), "");
}

#[test]
fn location_is_registered_as_t() {
    let out = zarr_sql(&[
        U7,
        "-q",
        "--format",
        "csv",
        "-c",
        "SELECT count(*) AS n FROM t",
        "-c",
        "SELECT value FROM t WHERE dim_0 = 5",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "n\n8\nvalue\n日本\n");
    let out = zarr_sql(&[
        U7,
        "-o",
        "string_type=large_utf8",
        "-q",
        "--format",
        "csv",
        "-c",
        "SELECT arrow_typeof(value) AS t FROM t LIMIT 1",
    ]);
    assert_eq!(stdout(&out), "t\nLargeUtf8\n", "{}", stderr(&out));
}

#[test]
fn statements_from_piped_stdin() {
    let out = zarr_sql_with_input(
        &[U7, "-q", "--format", "csv"],
        "SELECT count(*) AS n FROM t;\nSELECT value FROM t WHERE dim_0 = 6;\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "n\n8\nvalue\n🦀rust\n");
}

#[test]
fn errors_go_to_stderr_with_a_nonzero_exit() {
    let cases = [
        vec!["-c", "SELECT * FROM read_zarr('/no/such/store')"],
        vec![
            "-c",
            "SELECT * FROM read_zarr('tests/data/fixtures/invalid_utf32.zarr')",
        ],
        vec!["-c", "SELEKT 1"],
        vec!["/no/such/store", "-c", "SELECT 1"],
        vec![U7, "-o", "colour=red", "-c", "SELECT 1"],
    ];
    for args in cases {
        let out = zarr_sql(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("Error: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(stdout(&out), "", "{args:?}");
    }
    let out = zarr_sql(&[
        "-c",
        "SELECT * FROM read_zarr('tests/data/fixtures/invalid_utf32.zarr')",
    ]);
    assert!(
        stderr(&out).contains("code unit 0x0000D800 is not a Unicode scalar value"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn copy_to_parquet_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.parquet");
    let sql = format!(
        "COPY (SELECT * FROM read_zarr('{U7}')) TO '{}' STORED AS PARQUET",
        target.display()
    );
    let out = zarr_sql(&["-q", "-c", &sql]);
    assert!(out.status.success(), "{}", stderr(&out));
    let check = zarr_sql(&[
        "-q",
        "--format",
        "csv",
        "-c",
        &format!(
            "SELECT count(*) AS n, max(value) AS m FROM '{}'",
            target.display()
        ),
    ]);
    assert_eq!(stdout(&check), "n,m\n8,🦀rust\n", "{}", stderr(&check));
}

#[test]
fn subcommands_are_discoverable_from_the_help() {
    let help = zarr_sql(&["--help"]);
    assert!(help.status.success(), "{}", stderr(&help));
    let text = stdout(&help);
    assert!(
        text.contains("Usage: zarr-sql [OPTIONS] [LOCATION]"),
        "{text}"
    );
    for line in ["  export ", "  inspect "] {
        assert!(text.contains(line), "top-level help lists '{line}': {text}");
    }
    for (sub, usage) in [
        (
            "export",
            "Usage: zarr-sql export [OPTIONS] <LOCATION> <OUTPUT>",
        ),
        ("inspect", "Usage: zarr-sql inspect [OPTIONS] <LOCATION>"),
    ] {
        let help = zarr_sql(&[sub, "--help"]);
        assert!(help.status.success(), "{}", stderr(&help));
        assert!(stdout(&help).contains(usage), "{}", stdout(&help));
    }
    // `help export` works as in cargo.
    let help = zarr_sql(&["help", "export"]);
    assert!(
        stdout(&help).contains("Usage: zarr-sql export"),
        "{}",
        stdout(&help)
    );
}

/// A secret typed where the tool cannot tell it is one never comes back in an error: an
/// `--option` without `=` (main command, `export`, `inspect`), a location that is not a URL,
/// and an endpoint with a password that object_store puts in its own message. No server is
/// needed: the endpoint is a closed port on 127.0.0.1.
#[test]
fn secrets_typed_in_the_wrong_place_are_not_shown() {
    const SECRET: &str = "SECRETMARKER123";
    let mistyped = format!("aws.secret_access_key:{SECRET}");
    let endpoint = format!("aws.endpoint=http://u:{SECRET}@127.0.0.1:1");
    let unparsed = format!("http://user:{SECRET}@127.0.0.1:99999/x.zarr");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.parquet");
    let out = out.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["s3://bkt/x", "-o", &mistyped, "-c", "SELECT 1"],
            "the 1st --option is not of the form key=value",
        ),
        (
            vec!["export", U7, out, "-o", "path=", "-o", &mistyped],
            "the 2nd --option is not of the form key=value",
        ),
        (
            vec!["inspect", U7, "-o", &mistyped],
            "the 1st --option is not of the form key=value",
        ),
        (
            vec![&unparsed, "-c", "SELECT 1"],
            "location 'http://***@127.0.0.1:99999/x.zarr' is not a URL",
        ),
        (
            vec![
                "s3://bkt/x",
                "-o",
                &endpoint,
                "-o",
                "aws.skip_signature=true",
                "-o",
                "aws.allow_http=true",
                "-o",
                "aws.region=us-east-1",
                "-o",
                "retry.max_retries=0",
                "-c",
                "SELECT 1",
            ],
            "http://***@127.0.0.1:1/bkt/x/zarr.json",
        ),
    ];
    for (args, says) in cases {
        let o = zarr_sql(&args);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains(SECRET), "{args:?}: {err}");
        assert!(!stdout(&o).contains(SECRET), "{args:?}");
    }
}

/// Counts of zero are refused where they parse (they wrote a file of one-row row groups, or
/// ran with batches of one row).
#[test]
fn zero_counts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.parquet");
    let out = out.to_str().unwrap();
    for (args, flag) in [
        (
            vec!["export", U7, out, "--row-group-size", "0"],
            "--row-group-size",
        ),
        (vec!["export", U7, out, "-p", "0"], "--partitions"),
        (vec![U7, "-b", "0", "-c", "SELECT 1"], "--batch-size"),
        (vec![U7, "-p", "0", "-c", "SELECT 1"], "--partitions"),
    ] {
        let o = zarr_sql(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains(&format!("invalid value '0' for '{flag}")),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!std::path::Path::new(out).exists(), "{args:?}");
    }
}

/// `-q`, `--format`, `-o`, `-p` and `-b` are accepted before a subcommand's name as after it,
/// and give the same output (they were refused before it, the store named as a subcommand).
#[test]
fn shared_flags_work_before_and_after_the_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.parquet").display().to_string();
    let b = dir.path().join("b.parquet").display().to_string();
    for args in [
        vec!["-q", "export", U7, &a],
        vec!["export", "-q", U7, &b],
        vec!["export", U7, &b, "-q"],
        vec![
            "-p",
            "1",
            "-b",
            "3",
            "-o",
            "string_type=utf8view",
            "export",
            U7,
            &a,
            "-q",
        ],
        vec![
            "export",
            U7,
            &b,
            "-p",
            "1",
            "-b",
            "3",
            "-o",
            "string_type=utf8view",
            "-q",
        ],
    ] {
        let out = zarr_sql(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}: -q prints nothing");
    }
    assert_eq!(
        std::fs::read(&a).unwrap().len(),
        std::fs::read(&b).unwrap().len()
    );

    let json = zarr_sql(&["--format", "json", "inspect", U7]);
    assert!(json.status.success(), "{}", stderr(&json));
    let after = zarr_sql(&["inspect", U7, "--format", "json"]);
    assert_eq!(stdout(&json), stdout(&after));
    let tree: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(tree["node_type"], "array");
    let text = zarr_sql(&["inspect", "--format", "text", U7]);
    assert!(
        stdout(&text).contains("fixed_length_utf32"),
        "{}",
        stdout(&text)
    );

    let options = zarr_sql(&["-o", "string_type=large_utf8", "inspect", U7]);
    assert!(
        stdout(&options).contains("LargeUtf8"),
        "{}",
        stdout(&options)
    );
    let options_after = zarr_sql(&["inspect", U7, "-o", "string_type=large_utf8"]);
    assert_eq!(stdout(&options), stdout(&options_after));

    let sql = "SELECT arrow_typeof(value) AS t FROM t LIMIT 1";
    for args in [
        vec![
            "-q",
            "--format",
            "csv",
            "-o",
            "string_type=large_utf8",
            U7,
            "-c",
            sql,
        ],
        vec![
            U7,
            "-c",
            sql,
            "-q",
            "--format",
            "csv",
            "-o",
            "string_type=large_utf8",
        ],
    ] {
        let out = zarr_sql(&args);
        assert_eq!(stdout(&out), "t\nLargeUtf8\n", "{args:?}: {}", stderr(&out));
    }

    let refused = zarr_sql(&["--format", "csv", "export", U7, &a]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("export writes Parquet"),
        "{}",
        stderr(&refused)
    );
    let refused = zarr_sql(&["--format", "csv", "inspect", U7]);
    assert!(
        stderr(&refused).contains("inspect prints text"),
        "{}",
        stderr(&refused)
    );
    let misplaced = zarr_sql(&["-c", "SELECT 1", "export", U7, &a]);
    assert!(!misplaced.status.success());
    assert!(
        stderr(&misplaced).contains("belongs to a query"),
        "{}",
        stderr(&misplaced)
    );
}

/// datafusion-cli's backslash commands, typed between statements (here piped, as the
/// interactive shell runs them too).
#[test]
fn the_shell_answers_datafusion_cli_backslash_commands() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("count.sql");
    std::fs::write(&file, "SELECT count(*) AS n FROM t;\n").unwrap();
    let script = format!(
        "\\d\n\\d t\n\\pset format csv\nSELECT count(*) AS n FROM t;\n\\quiet true\n\\pset\n\
         \\h upper\n\\i {}\n\\?\n\\q\nSELECT 'never' AS after_quit;\n",
        file.display()
    );
    let out = zarr_sql_with_input(&[U7], &script);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // \d lists the table, \d t its columns (in the table format of the start).
    assert!(
        text.contains("| datafusion    | public             | t "),
        "{text}"
    );
    assert!(text.contains("| dim_0       | UInt64"), "{text}");
    assert!(text.contains("| value       | Utf8 "), "{text}");
    // \pset format csv: the count as CSV; \pset shows the settings.
    assert!(text.contains("\nn\n8\n"), "{text}");
    assert!(text.contains("format csv\nquiet true\n"), "{text}");
    // \h upper describes the function; \i runs the file; \? lists the commands.
    assert!(text.contains("upper,SCALAR,"), "{text}");
    assert_eq!(text.matches("\nn\n8\n").count(), 2, "{text}");
    assert!(text.contains("\\d TABLE"), "{text}");
    // \q ends the script.
    assert!(!text.contains("never"), "{text}");
    // Row counts before \quiet, none after: 4 results, 4 summaries... until quiet.
    assert_eq!(
        stderr(&out).matches("fetched").count(),
        3,
        "{}",
        stderr(&out)
    );

    let unknown = zarr_sql_with_input(&[U7], "\\x\n");
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("\\? lists the commands"),
        "{}",
        stderr(&unknown)
    );
}

/// `COPY … STORED AS ZARR` from the command line: a second COPY to the same store is an error
/// without `mode 'overwrite'`, and replaces it with (the writer moves the store into place
/// itself, not the CLI's temporary file).
#[test]
fn copy_stored_as_zarr_writes_and_replaces_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out.zarr");
    for (n, want) in [(3, "3\n"), (5, "5\n")] {
        let copy = format!(
            "COPY (SELECT value FROM read_zarr('{U7}') LIMIT {n}) TO '{}' STORED AS ZARR",
            store.display()
        );
        if n == 5 {
            let out = zarr_sql(&["-q", "-c", &copy]);
            assert!(!out.status.success());
            assert!(
                stderr(&out).contains("mode 'overwrite'"),
                "{}",
                stderr(&out)
            );
        }
        let copy = format!("{copy} OPTIONS ('mode' 'overwrite')");
        let out = zarr_sql(&["-q", "-c", &copy]);
        assert!(out.status.success(), "{}", stderr(&out));
        let count = format!("SELECT count(*) AS n FROM read_zarr('{}')", store.display());
        let out = zarr_sql(&["-q", "--format", "csv", "-c", &count]);
        assert_eq!(stdout(&out), format!("n\n{want}"));
    }
    // The store, and its lock file (empty between writes): no temporary left.
    let mut names: Vec<_> = (std::fs::read_dir(dir.path()).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(names, [".out.zarr.lock", "out.zarr"]);
}

/// `COPY` and `INSERT` in `-c` show a spinner with the elapsed time on a terminal (`script`
/// gives the process one), and nothing with `-q` or without a terminal.
#[test]
fn copy_and_insert_show_progress_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("copied.zarr");
    let store = root().join("tests/data/corpus/17_large_200k_zstd/data.zarr");
    let sql = format!(
        "COPY (SELECT * FROM read_zarr('{}')) TO '{}' STORED AS ZARR",
        store.display(),
        out.display()
    );
    let binary = env!("CARGO_BIN_EXE_zarr-sql");
    let on_terminal = |quiet: bool| {
        let q = if quiet { "-q" } else { "" };
        let insert = format!(
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{}'",
            out.display()
        );
        let command = format!(
            "{binary} {q} -c \"{sql}\" && {binary} {q} -c \"{insert}\" -c \"INSERT INTO t SELECT * FROM t LIMIT 5\""
        );
        let _ = std::fs::remove_dir_all(&out);
        let run = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .output()
            .expect("script (util-linux) runs a command on a terminal");
        assert!(run.status.success(), "{}", stdout(&run));
        stdout(&run)
    };
    let shown = on_terminal(false);
    assert!(
        shown.contains(&format!("writing {}", out.display())),
        "{shown}"
    );
    assert!(shown.contains("200000"), "{shown}");
    assert!(shown.contains("inserting into t"), "{shown}");
    let quiet = on_terminal(true);
    assert!(!quiet.contains("writing"), "{quiet}");
    // Without a terminal: no progress on stderr.
    let _ = std::fs::remove_dir_all(&out);
    let piped = zarr_sql(&["-c", &sql]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(!stderr(&piped).contains("writing"), "{}", stderr(&piped));
}

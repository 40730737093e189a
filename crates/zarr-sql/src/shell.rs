//! The interactive shell (a terminal) and piped scripts (standard input that is not one).

use std::io::{IsTerminal, Read};

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::output::Printer;
use crate::run_sql;

/// Reads statements from standard input and runs them.
pub async fn run(ctx: &SessionContext, printer: &Printer) -> Result<()> {
    if !std::io::stdin().is_terminal() {
        let mut sql = String::new();
        std::io::stdin()
            .read_to_string(&mut sql)
            .map_err(|e| DataFusionError::Execution(format!("cannot read standard input: {e}")))?;
        return run_sql(ctx, &sql, printer).await;
    }
    let mut editor = DefaultEditor::new()
        .map_err(|e| DataFusionError::Execution(format!("cannot start the line editor: {e}")))?;
    let history =
        std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".zarr_sql_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "zarr-sql> "
        } else {
            "      -> "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                let trimmed = line.trim();
                if buffer.is_empty() && (trimmed == "\\q" || trimmed == "quit" || trimmed == "exit")
                {
                    break;
                }
                buffer.push_str(&line);
                buffer.push('\n');
                if trimmed.ends_with(';') {
                    let _ = editor.add_history_entry(buffer.trim_end());
                    if let Err(e) = run_sql(ctx, &buffer, printer).await {
                        eprintln!("Error: {}", crate::errors::message(&e));
                    }
                    buffer.clear();
                }
            }
            Err(ReadlineError::Interrupted) => buffer.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(DataFusionError::Execution(format!("line editor: {e}"))),
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(())
}

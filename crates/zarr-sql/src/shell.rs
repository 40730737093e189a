//! The interactive shell (a terminal) and piped scripts (standard input that is not one); in
//! both, a line beginning with `\\` between statements is a backslash command (`commands.rs`).

use std::io::{IsTerminal, Read};

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::commands::{self, Next};
use crate::output::Printer;
use crate::run_sql;

/// Reads statements from standard input and runs them.
pub async fn run(ctx: &SessionContext, printer: &Printer) -> Result<()> {
    let mut printer = printer.clone();
    if !std::io::stdin().is_terminal() {
        let mut script = String::new();
        std::io::stdin()
            .read_to_string(&mut script)
            .map_err(|e| DataFusionError::Execution(format!("cannot read standard input: {e}")))?;
        return run_script(ctx, &script, &mut printer).await;
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
                if buffer.is_empty() && (trimmed == "quit" || trimmed == "exit") {
                    break;
                }
                if buffer.is_empty() && trimmed.starts_with('\\') {
                    let _ = editor.add_history_entry(trimmed);
                    match commands::run(trimmed, ctx, &mut printer).await {
                        Ok(Next::Quit) => break,
                        Ok(Next::Continue) => {}
                        Err(e) => eprintln!("Error: {}", crate::errors::message(&e)),
                    }
                    continue;
                }
                buffer.push_str(&line);
                buffer.push('\n');
                if trimmed.ends_with(';') {
                    let _ = editor.add_history_entry(buffer.trim_end());
                    if let Err(e) = run_sql(ctx, &buffer, &printer).await {
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

/// A piped script: its SQL, and its backslash commands where a statement may begin. The first
/// error ends it, as a script's error does.
async fn run_script(ctx: &SessionContext, script: &str, printer: &mut Printer) -> Result<()> {
    let mut sql = String::new();
    for line in script.lines() {
        let trimmed = line.trim();
        let between_statements = sql.trim().is_empty() || sql.trim_end().ends_with(';');
        if trimmed.starts_with('\\') && between_statements {
            run_sql(ctx, &sql, printer).await?;
            sql.clear();
            if commands::run(trimmed, ctx, printer).await? == Next::Quit {
                return Ok(());
            }
        } else {
            sql.push_str(line);
            sql.push('\n');
        }
    }
    run_sql(ctx, &sql, printer).await
}

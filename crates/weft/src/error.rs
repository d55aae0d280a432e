//! The one error type commands return, and how it reaches the terminal.
//!
//! A [`CliError`] made from a library error keeps that error whole, so its `source()` chain
//! is printed as `caused by:` lines under the message, and its [`Hint`] as `hint:` lines.
//! Each cause is printed once: a cause whose text the line above already contains (a
//! library message that quotes its own source) is not repeated. With `--json` the same
//! three parts are one JSON object on one line of stderr, and the exit code is the same.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use weft_core::{EditError, Hint, WorkflowError};
use weft_engine::EngineError;
use weft_engine::planning::PlanningError;
use weft_store::StoreError;

/// Exit codes: 1 for a refused or failed command, 2 for bad usage (clap's, and a bad `-c`),
/// 75 when the database stayed busy (try again later), 130 when the user interrupted.
pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_BUSY: u8 = 75;
/// Ctrl-C (SIGINT): 128 + 2, as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The most `caused by:` lines one error prints (a source chain is finite, but a cycle in
/// a hand-written `source()` would not be).
const MAX_CAUSES: usize = 16;

#[derive(Debug)]
pub struct CliError {
    pub message: String,
    /// The library error this reports, kept for its source chain.
    error: Option<Box<dyn std::error::Error + 'static>>,
    /// Causes added by hand (a program's stderr), after the source chain.
    extra_causes: Vec<String>,
    pub hints: Vec<String>,
    pub code: u8,
}

/// What `--json` prints on stderr for an error.
#[derive(Debug, Serialize)]
struct JsonError<'a> {
    error: &'a str,
    /// Every hint, one per line; null when there is none.
    hint: Option<String>,
    causes: Vec<String>,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            error: None,
            extra_causes: Vec::new(),
            hints: Vec::new(),
            code: EXIT_FAILURE,
        }
    }

    /// A library error with its message, its hint and (kept) its source chain.
    pub fn from_error<E: Hint + 'static>(error: E) -> Self {
        CliError {
            message: error.to_string(),
            hints: error.hint().into_iter().collect(),
            error: Some(Box::new(error)),
            extra_causes: Vec::new(),
            code: EXIT_FAILURE,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// A cause added by hand (no front-end path adds one since `weft demo` stopped running
    /// git itself; the chain test uses it).
    #[cfg(test)]
    pub fn cause(mut self, cause: impl Into<String>) -> Self {
        self.extra_causes.push(cause.into());
        self
    }

    pub fn with_code(mut self, code: u8) -> Self {
        self.code = code;
        self
    }

    /// The `caused by:` lines: the source chain, then causes added by hand, each once.
    pub fn causes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut above = self.message.clone();
        let mut next = self.error.as_deref().and_then(|e| e.source());
        let chain = std::iter::from_fn(|| {
            let current = next?;
            next = current.source();
            Some(current.to_string())
        });
        for cause in chain.chain(self.extra_causes.iter().cloned()) {
            if out.len() == MAX_CAUSES {
                break;
            }
            let cause = cause.trim().to_owned();
            if cause.is_empty() || above.contains(&cause) {
                continue;
            }
            above.clone_from(&cause);
            out.push(cause);
        }
        out
    }

    /// Write the error for a person (`error:`, `caused by:`, `hint:` lines) or, with
    /// `json`, as one line of JSON.
    pub fn render(&self, out: &mut dyn Write, json: bool) -> std::io::Result<()> {
        if json {
            let object = JsonError {
                error: &self.message,
                hint: (!self.hints.is_empty()).then(|| self.hints.join("\n")),
                causes: self.causes(),
            };
            let line = serde_json::to_string(&object).map_err(std::io::Error::other)?;
            return writeln!(out, "{line}");
        }
        let red = anstyle::AnsiColor::Red.on_default().bold();
        let cyan = anstyle::AnsiColor::Cyan.on_default().bold();
        writeln!(out, "{red}error:{red:#} {}", self.message)?;
        for cause in self.causes() {
            writeln!(out, "  caused by: {cause}")?;
        }
        for hint in &self.hints {
            writeln!(out, "{cyan}hint:{cyan:#} {hint}")?;
        }
        Ok(())
    }

    /// Print the error on stderr; return the exit code.
    pub fn report(&self, json: bool) -> ExitCode {
        let _ = self.render(&mut anstream::stderr().lock(), json);
        ExitCode::from(self.code)
    }
}

/// A usage error from clap as a [`CliError`]: its first line is the message, its `tip:`
/// lines the hints (the usage synopsis is left to `--help`); exit 2.
pub fn usage_error(error: &clap::Error) -> CliError {
    let text = error.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad usage");
    let mut out = CliError::new(first.strip_prefix("error: ").unwrap_or(first));
    let mut details = Vec::new();
    for line in lines {
        if let Some(tip) = line.strip_prefix("tip: ") {
            out = out.hint(tip);
        } else if line.starts_with("Usage:") || line.starts_with("For more information") {
            continue;
        } else {
            details.push(line.to_owned());
        }
    }
    if !details.is_empty() {
        out.message = format!("{} {}", out.message, details.join(", "));
    }
    out.hint("`--help` shows the usage").with_code(EXIT_USAGE)
}

/// 75 for a database that stayed busy, else 1.
fn store_code(store: Option<&StoreError>) -> u8 {
    match store {
        Some(StoreError::Busy { .. }) => EXIT_BUSY,
        _ => EXIT_FAILURE,
    }
}

impl From<StoreError> for CliError {
    fn from(error: StoreError) -> Self {
        let code = store_code(Some(&error));
        CliError::from_error(error).with_code(code)
    }
}

impl From<EngineError> for CliError {
    fn from(error: EngineError) -> Self {
        let code = match &error {
            EngineError::Store(store) => store_code(Some(store)),
            _ => EXIT_FAILURE,
        };
        CliError::from_error(error).with_code(code)
    }
}

impl From<PlanningError> for CliError {
    fn from(error: PlanningError) -> Self {
        let code = match &error {
            PlanningError::Engine(EngineError::Store(store)) => store_code(Some(store)),
            _ => EXIT_FAILURE,
        };
        CliError::from_error(error).with_code(code)
    }
}

impl From<EditError> for CliError {
    fn from(error: EditError) -> Self {
        CliError::from_error(error)
    }
}

impl From<WorkflowError> for CliError {
    fn from(error: WorkflowError) -> Self {
        CliError::from_error(error)
    }
}

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        // fs-err puts the path and the OS error into the message; a plain io::Error has no
        // source to add.
        CliError {
            message: error.to_string(),
            error: Some(Box::new(error)),
            extra_causes: Vec::new(),
            hints: Vec::new(),
            code: EXIT_FAILURE,
        }
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

#[cfg(test)]
mod tests {
    use std::fmt;
    use std::path::PathBuf;

    use super::*;

    fn text(error: &CliError) -> String {
        let mut out = Vec::new();
        error.render(&mut out, false).unwrap();
        anstream::adapter::strip_str(&String::from_utf8(out).unwrap()).to_string()
    }

    fn io(message: &str) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, message.to_owned())
    }

    /// An error that quotes its source in its message and also returns it from
    /// `source()`: the shape that used to print a cause twice.
    #[derive(Debug)]
    struct Quoting(std::io::Error);

    impl fmt::Display for Quoting {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "cannot write /x: {}", self.0)
        }
    }

    impl std::error::Error for Quoting {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    impl Hint for Quoting {
        fn hint(&self) -> Option<String> {
            None
        }
    }

    #[test]
    fn a_chained_store_error_prints_its_cause_exactly_once() {
        let error = CliError::from(StoreError::Io {
            path: PathBuf::from("/w/.weft"),
            source: io("the disk said no"),
        });
        let shown = text(&error);
        assert_eq!(shown.matches("the disk said no").count(), 1, "{shown}");
        assert!(
            shown.starts_with("error: cannot use /w/.weft\n  caused by: the disk said no\n"),
            "{shown}"
        );
    }

    #[test]
    fn a_message_that_quotes_its_source_does_not_print_it_again() {
        let shown = text(&CliError::from_error(Quoting(io("quota exceeded"))));
        assert_eq!(shown, "error: cannot write /x: quota exceeded\n");
    }

    #[test]
    fn every_cause_of_a_wrapped_chain_prints_once_in_order() {
        let inner = StoreError::Io {
            path: PathBuf::from("/w/.weft"),
            source: io("read-only file system"),
        };
        let error = CliError::from(EngineError::Store(inner)).cause("git said: nope");
        assert_eq!(
            error.causes(),
            vec!["read-only file system".to_owned(), "git said: nope".into()]
        );
        let shown = text(&error);
        assert_eq!(shown.matches("read-only file system").count(), 1, "{shown}");
        assert!(shown.contains("hint: check that the workspace's .weft folder"));
    }

    #[test]
    fn a_busy_database_exits_75_through_every_wrapper() {
        let busy = || StoreError::Busy {
            path: PathBuf::from("/w/.weft/weft.db"),
            waited_ms: 5,
        };
        assert_eq!(CliError::from(busy()).code, EXIT_BUSY);
        assert_eq!(CliError::from(EngineError::Store(busy())).code, EXIT_BUSY);
        assert_eq!(
            CliError::from(PlanningError::Engine(EngineError::Store(busy()))).code,
            EXIT_BUSY
        );
    }

    #[test]
    fn the_json_form_is_one_line_with_error_hint_and_causes() {
        let error = CliError::from(StoreError::Io {
            path: PathBuf::from("/w/.weft"),
            source: io("no space left"),
        })
        .hint("free some space");
        let mut out = Vec::new();
        error.render(&mut out, true).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["error"], "cannot use /w/.weft");
        assert_eq!(value["causes"], serde_json::json!(["no space left"]));
        assert_eq!(
            value["hint"],
            "check that the workspace's .weft folder exists and is writable by you\nfree some space"
        );
        let bare: serde_json::Value = {
            let mut out = Vec::new();
            CliError::new("plain").render(&mut out, true).unwrap();
            serde_json::from_slice(&out).unwrap()
        };
        assert_eq!(
            bare,
            serde_json::json!({"error": "plain", "hint": null, "causes": []})
        );
    }
}

//! The one error type commands return, and how it reaches the terminal.

use std::io::Write;
use std::process::ExitCode;

use weft_core::{EditError, WorkflowError};
use weft_store::StoreError;

/// Exit codes: 1 for a refused or failed command, 2 for bad usage (clap's), 75 when the
/// database stayed busy (try again later), 130 when the user interrupted.
pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_BUSY: u8 = 75;
/// Ctrl-C (SIGINT): 128 + 2, as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub causes: Vec<String>,
    pub hints: Vec<String>,
    pub code: u8,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            causes: Vec::new(),
            hints: Vec::new(),
            code: EXIT_FAILURE,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    pub fn cause(mut self, cause: impl Into<String>) -> Self {
        self.causes.push(cause.into());
        self
    }

    /// Print `error:`, `caused by:` and `hint:` lines on stderr; return the exit code.
    pub fn report(&self) -> ExitCode {
        let mut err = anstream::stderr().lock();
        let red = anstyle::AnsiColor::Red.on_default().bold();
        let cyan = anstyle::AnsiColor::Cyan.on_default().bold();
        let _ = writeln!(err, "{red}error:{red:#} {}", self.message);
        for cause in &self.causes {
            let _ = writeln!(err, "  caused by: {cause}");
        }
        for hint in &self.hints {
            let _ = writeln!(err, "{cyan}hint:{cyan:#} {hint}");
        }
        ExitCode::from(self.code)
    }
}

/// Every `source()` below the top error, as `caused by:` lines.
fn causes(error: &dyn std::error::Error) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = error.source();
    while let Some(source) = next {
        out.push(source.to_string());
        next = source.source();
    }
    out
}

impl From<StoreError> for CliError {
    fn from(error: StoreError) -> Self {
        let code = if matches!(error, StoreError::Busy { .. }) {
            EXIT_BUSY
        } else {
            EXIT_FAILURE
        };
        CliError {
            message: error.to_string(),
            causes: causes(&error),
            hints: error.hint().into_iter().collect(),
            code,
        }
    }
}

impl From<EditError> for CliError {
    fn from(error: EditError) -> Self {
        CliError::from(StoreError::Edit(error))
    }
}

impl From<WorkflowError> for CliError {
    fn from(error: WorkflowError) -> Self {
        CliError::new(error.to_string()).hint(error.hint())
    }
}

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        // fs-err puts the path into the message already.
        CliError {
            message: error.to_string(),
            causes: causes(&error),
            hints: Vec::new(),
            code: EXIT_FAILURE,
        }
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;

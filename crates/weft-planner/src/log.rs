//! The research log: every step the planner took and how it ended, stored with the plan and
//! printed by `weft plan log`. Texts are masked and capped before they are kept.

use serde::{Deserialize, Serialize};

/// How a research step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// The tool ran and answered.
    Success,
    /// The tool ran (or tried to) and failed: a missing file, a bad regex, a non-zero exit.
    Failure,
    /// The envelope refused it without asking: a command that could write, a bad argument.
    Refused,
    /// The approval policy said no (a person, a remembered no, the mode, no channel, expiry).
    Denied,
    /// The step budget was spent; the call was answered without running.
    NotExecuted,
}

impl StepOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::Success => "success",
            StepOutcome::Failure => "failure",
            StepOutcome::Refused => "refused",
            StepOutcome::Denied => "denied",
            StepOutcome::NotExecuted => "not_executed",
        }
    }

    pub fn parse(text: &str) -> Option<StepOutcome> {
        Some(match text {
            "success" => StepOutcome::Success,
            "failure" => StepOutcome::Failure,
            "refused" => StepOutcome::Refused,
            "denied" => StepOutcome::Denied,
            "not_executed" => StepOutcome::NotExecuted,
            _ => return None,
        })
    }
}

/// Longest detail text kept per log entry.
pub const LOG_DETAIL_CHARS: usize = 2_000;

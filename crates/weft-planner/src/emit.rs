//! Plan emission: turning the planner model's text replies into plans, task edits and a PRD,
//! and writing the corrective messages of the repair loop.
//!
//! Everything here is pure (no I/O) so the whole repair loop can be tested on strings. The
//! rule that sets weft apart from tools that only parse what the model sends: every plan the
//! model emits goes through the same validation as a workflow file before it can be
//! committed, and every problem is fed back to the model in one corrective turn.

mod extract;
mod help;
mod ops;
mod plan;
mod prd;

use thiserror::Error;

pub use extract::{Extraction, ReplyKind, classify_reply, extract};
pub use help::{TASK_FIELDS, plan_format_help, task_ops_help};
pub use ops::{
    CHANGE_FIELDS, TaskOp, TaskRef, apply_task_ops, corrective_for_ops, parse_task_ops,
    terse_reemit_ops,
};
pub use plan::{
    MAX_REPAIRS, corrective_for_broken, corrective_for_problems, plan_from_value, terse_reemit,
};
pub use prd::{PRD_END, PRD_START, Prd, extract_prd, prd_unclosed, sanitize_slug, strip_prd};

/// How many problems one report lists (as `weft_core::validate` does).
pub const LISTED_PROBLEMS: usize = 50;

/// Everything wrong with an emitted plan or task-op batch, each problem as its own exact
/// text so a corrective turn can quote all of them at once (one repair round, not one per
/// problem).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}", numbered(&self.problems))]
pub struct PlanProblems {
    pub problems: Vec<String>,
}

impl PlanProblems {
    pub fn new(problems: Vec<String>) -> PlanProblems {
        PlanProblems { problems }
    }

    /// At most [`LISTED_PROBLEMS`] listed and the rest counted (with `unlisted`, problems
    /// already counted but not listed), so a corrective turn for a badly broken plan stays
    /// readable.
    pub(crate) fn bounded(mut problems: Vec<String>, unlisted: usize) -> PlanProblems {
        let more = problems.len().saturating_sub(LISTED_PROBLEMS) + unlisted;
        problems.truncate(LISTED_PROBLEMS);
        if more > 0 {
            problems.push(format!("and {more} more problems"));
        }
        PlanProblems { problems }
    }

    pub fn single(problem: impl Into<String>) -> PlanProblems {
        PlanProblems {
            problems: vec![problem.into()],
        }
    }
}

/// `1. first\n2. second`: the form the model and the user both read.
fn numbered(problems: &[String]) -> String {
    let mut out = String::new();
    for (index, problem) in problems.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}. {problem}", index + 1));
    }
    out
}

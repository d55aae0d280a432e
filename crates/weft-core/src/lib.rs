//! weft's pure domain: the plan model, its validation and edits, and workflow files.
//!
//! Nothing here does I/O, reads a clock or draws randomness: callers pass time and ids in,
//! so every rule can be tested directly and reused by every front end.

pub mod edit;
pub mod model;
pub mod refs;
pub mod slug;
pub mod validate;
pub mod workflow;

pub use edit::{Edit, EditError, EditReport, NewTask, TaskChanges};
pub use model::{
    Attempt, AttemptStatus, Check, Denial, OutputSummary, Plan, PlanStatus, Run, RunStatus, Task,
    TaskKind, TaskStatus, Timestamp, Verdict, VerdictOutcome,
};
pub use refs::{RefError, resolve_task_ref};
pub use validate::{ValidationError, ValidationErrors, Warning, validate_tasks};
pub use workflow::{WorkflowError, WorkflowFile, WorkflowFormat};

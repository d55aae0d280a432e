//! weft's pure domain: the plan model, its validation and edits, and workflow files.
//!
//! Nothing here does I/O, reads a clock or draws randomness: callers pass time and ids in,
//! so every rule can be tested directly and reused by every front end.

pub mod approval;
pub mod bisect;
pub mod edit;
pub mod event;
pub mod hint;
pub mod interrupt;
pub mod limits;
pub mod marker;
pub mod model;
pub mod note;
pub mod prompt;
pub mod refs;
pub mod schedule;
pub mod secrets;
pub mod slug;
pub mod spend;
pub mod terminal;
pub mod validate;
pub mod verdict;
pub mod workflow;

pub use edit::{Edit, EditError, EditReport, NewTask, TaskChanges};
pub use event::{ControlRequest, EVENT_SCHEMA_VERSION, Event, EventKind, FieldChange};
pub use hint::Hint;
pub use limits::TaskLimits;
pub use marker::{MARKER_ID_LEN, MARKER_PREFIX, Marker, defuse, flatten};
pub use model::{
    Attempt, AttemptStatus, Check, Denial, Landing, OutputSummary, Plan, PlanStatus, Run,
    RunStatus, Strings, StringsIter, Task, TaskKind, TaskStatus, TaskView, Timestamp, Verdict,
    VerdictOutcome,
};
pub use prompt::{MAP_ROWS, TAIL_CHARS, compose, plan_map, tail_chars};
pub use refs::{RefError, resolve_task_ref};
pub use schedule::{
    Blocker, Frontier, blockers, descendants, is_met, next_to_start, readiness, stopped_by_failure,
    waiting_for_person,
};
pub use validate::{ValidationError, ValidationErrors, Warning, validate_tasks};
pub use verdict::{
    Cancelled, CheckRun, ChecksDue, Evidence, Judgement, decide, judge, marked_complete, settle,
    summarize, with_landing,
};
pub use workflow::{WorkflowError, WorkflowFile, WorkflowFormat};

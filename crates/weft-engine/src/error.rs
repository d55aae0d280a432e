use thiserror::Error;
use weft_core::{EditError, Hint, RefError, TaskStatus};
use weft_store::StoreError;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Ref(#[from] RefError),
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error("task #{order} {task:?} uses the runner {runner:?}, which weft does not know")]
    UnknownRunner {
        order: u32,
        task: String,
        runner: String,
        known: String,
    },
    #[error("task #{order} {task:?} uses the runner {runner:?}, which is not available: {reason}")]
    RunnerUnavailable {
        order: u32,
        task: String,
        runner: String,
        reason: String,
    },
    #[error("task #{order} {task:?} cannot be launched: {detail}")]
    Launch {
        order: u32,
        task: String,
        detail: String,
    },
    #[error("task #{order} {task:?} is running")]
    TaskRunning { order: u32, task: String },
    #[error("task #{order} {task:?} is {status}: {why}")]
    WrongStatus {
        order: u32,
        task: String,
        status: TaskStatus,
        why: &'static str,
    },
    #[error("no run of this plan is active")]
    NoActiveRun,
    #[error("plan {plan} is a draft: the planner did not finish it")]
    Draft { plan: String },
    #[error(transparent)]
    Git(Box<weft_git::GitError>),
    #[error("cannot isolate this run: {detail}")]
    Isolation { detail: String, hint: String },
    /// A request refused for a reason the detail states whole (a handoff of a run still
    /// running, a manual step whose dependencies are not done).
    #[error("{detail}")]
    Refused { detail: String, hint: String },
    /// The OS error is part of the message and deliberately not a `source()`: the engine
    /// keeps launch failures as one line (a verdict's reason), and a front end printing the
    /// source chain would otherwise say it twice.
    #[error("cannot write {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

impl Hint for EngineError {
    fn hint(&self) -> Option<String> {
        match self {
            EngineError::Store(e) => e.hint(),
            EngineError::Ref(e) => e.hint(),
            EngineError::Edit(e) => e.hint(),
            EngineError::UnknownRunner { order, known, .. } => Some(format!(
                "pick a known runner with `weft task edit {order} --runner NAME` ({known}), or add a manifest in .weft/runners/"
            )),
            EngineError::RunnerUnavailable { runner, .. } => Some(format!(
                "`weft runners` shows what each runner needs; install it or point `command` in .weft/runners/{runner}.toml at it"
            )),
            EngineError::Launch { order, .. } => Some(format!(
                "check the runner manifest and the task's fields (`weft prompt {order}` previews the launch)"
            )),
            EngineError::TaskRunning { order, .. } => Some(format!(
                "wait for it, or cancel it first with `weft cancel {order}`"
            )),
            EngineError::WrongStatus { .. } => {
                Some("`weft status` shows every task's status".into())
            }
            EngineError::NoActiveRun => Some("start one with `weft run`".into()),
            EngineError::Draft { plan } => Some(format!(
                "plan again with `weft plan \"goal\"`, or load another plan with `weft sessions load`; `weft plan log --plan {plan}` shows what the planner did"
            )),
            EngineError::Git(e) => e.hint(),
            EngineError::Isolation { hint, .. } | EngineError::Refused { hint, .. } => {
                Some(hint.clone())
            }
            EngineError::Io { .. } => None,
        }
    }
}

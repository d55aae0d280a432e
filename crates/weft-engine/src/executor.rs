//! The executor seam: where an attempt's processes run.
//!
//! The run loop decides what runs and when (scheduling), judges it (evidence) and lands it
//! (the landing queue); an [`Executor`] only carries an attempt out: it prepares the
//! attempt's folder from the run's integration tip, starts argv with its environment and
//! stdin there, streams its output back as [`SupervisorEvent`]s, signals it on a cancel,
//! waits for it, runs its checks in the same place, and hands back the resulting commit
//! (what the agent left, committed on the attempt's branch). Everything the loop needs to
//! judge an attempt arrives through these calls, so another executor (an SSH host, a
//! Kubernetes Job: prepare = clone at the commit, collect = fetch the branch) can be added
//! without touching scheduling, evidence or landing, which stay central.
//!
//! [`LocalExecutor`] is the only implementation: git worktrees on this machine and process
//! groups supervised by `weft-agents`.
//!
//! Threads: an executor is shared by the loop (prepare, start, collect) and every
//! attempt's waiting thread (wait, checks), so it is `Send + Sync`. Bounds: the output of a
//! process is bounded by its [`SuperviseOptions`] (log cap, tail). Crash safety: a started
//! process's pid, group and start ticks are recorded by the loop before it waits, so a
//! later engine finds and kills what a dead one left behind.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::SystemTime;

use weft_agents::manifest::LaunchSpec;
use weft_agents::supervise::{
    Attempt as Supervised, Canceller, Outcome, SuperviseOptions, SupervisorEvent,
};
use weft_core::Task;

use crate::contain::SetupContainment;
use crate::error::EngineError;
use crate::isolation::{Collected, Cut, Isolation, Runnable};

/// Where an attempt is to work.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    /// The workspace itself (shared runs).
    Workspace,
    /// The run's integration checkout, at its tip (ops tasks of isolated runs).
    Integration,
    /// A fresh worktree and branch cut from the integration tip (AI tasks of isolated
    /// runs); for a repair, with the branch that could not land merged in.
    Cut {
        number: u32,
        repair_of: Option<String>,
    },
}

/// A prepared attempt folder.
#[derive(Debug, Clone)]
pub(crate) struct Folder {
    /// Where the attempt's processes run.
    pub path: PathBuf,
    /// Its worktree and branch, for [`Place::Cut`].
    pub cut: Option<Cut>,
    /// For a repair: the files that held conflict markers after the merge.
    pub repair_files: Option<Vec<String>>,
}

/// One started process.
pub(crate) trait Execution: Send {
    fn pid(&self) -> u32;
    fn process_group(&self) -> i32;
    fn started_at(&self) -> SystemTime;
    /// Signals the process group (then kills it after the grace period).
    fn canceller(&self) -> Canceller;
    /// Block until it ended; its output has then been streamed.
    fn wait(self: Box<Self>) -> Outcome;
}

/// Where an attempt's processes run. See the module documentation.
pub(crate) trait Executor: Send + Sync {
    /// Prepare the attempt's folder for `task`.
    fn prepare(&self, task: &Task, place: &Place) -> Result<Folder, EngineError>;

    /// Start `spec` (argv, environment, stdin, folder) under supervision; its output and
    /// progress go to `events`.
    fn start(
        &self,
        spec: &LaunchSpec,
        options: SuperviseOptions,
        events: Sender<SupervisorEvent>,
    ) -> Result<Box<dyn Execution>, String>;

    /// Commit what the attempt left uncommitted and set its branch to the result, after
    /// the worktree guard found the worktree as weft made it (else
    /// [`Collected::Refused`], and nothing is committed anywhere).
    fn collect(&self, cut: &Cut, task: &Task) -> Result<Collected, EngineError>;

    /// For an attempt that did not pass: bring its own commits into the repository and
    /// keep stray ones, so its work can be inspected; what the worktree guard found.
    fn secure(&self, cut: &Cut) -> Result<Vec<String>, EngineError>;

    /// Remove a landed attempt's folder (its branch stays).
    fn discard(&self, cut: &Cut);
}

/// Runs attempts on this machine.
#[derive(Debug)]
pub(crate) struct LocalExecutor {
    pub workspace: PathBuf,
    pub runnable: Runnable,
    /// How a `setup` command is contained (the `exec` runner's containment).
    pub setup: SetupContainment,
    pub isolation: Option<Arc<Isolation>>,
}

struct LocalExecution(Supervised);

impl Execution for LocalExecution {
    fn pid(&self) -> u32 {
        self.0.pid
    }
    fn process_group(&self) -> i32 {
        self.0.process_group
    }
    fn started_at(&self) -> SystemTime {
        self.0.started_at
    }
    fn canceller(&self) -> Canceller {
        self.0.canceller()
    }
    fn wait(self: Box<Self>) -> Outcome {
        self.0.wait()
    }
}

impl LocalExecutor {
    fn isolation(&self) -> Result<&Isolation, EngineError> {
        self.isolation.as_deref().ok_or_else(|| EngineError::Io {
            path: self.workspace.display().to_string(),
            error: std::io::Error::other("this run is not isolated: there is no worktree to cut"),
        })
    }
}

impl Executor for LocalExecutor {
    fn prepare(&self, task: &Task, place: &Place) -> Result<Folder, EngineError> {
        match place {
            Place::Workspace => Ok(Folder {
                path: self.workspace.clone(),
                cut: None,
                repair_files: None,
            }),
            Place::Integration => Ok(Folder {
                path: self.isolation()?.integration_checkout()?,
                cut: None,
                repair_files: None,
            }),
            Place::Cut { number, repair_of } => {
                let iso = self.isolation()?;
                let cut = iso.cut(task, *number, &self.runnable, &self.setup)?;
                let repair_files = match repair_of {
                    Some(branch) => Some(iso.merge_for_repair(&cut, branch)?),
                    None => None,
                };
                Ok(Folder {
                    path: cut.path.clone(),
                    cut: Some(cut),
                    repair_files,
                })
            }
        }
    }

    fn start(
        &self,
        spec: &LaunchSpec,
        options: SuperviseOptions,
        events: Sender<SupervisorEvent>,
    ) -> Result<Box<dyn Execution>, String> {
        let supervised = Supervised::start(spec, options, events).map_err(|e| e.to_string())?;
        Ok(Box::new(LocalExecution(supervised)))
    }

    fn collect(&self, cut: &Cut, task: &Task) -> Result<Collected, EngineError> {
        self.isolation()?.commit(cut, task)
    }

    fn secure(&self, cut: &Cut) -> Result<Vec<String>, EngineError> {
        Ok(self.isolation()?.inspect(cut)?.problems)
    }

    fn discard(&self, cut: &Cut) {
        if let Some(iso) = &self.isolation {
            iso.drop_worktree(cut);
        }
    }
}

//! The run loop: executes a stored plan until nothing more can start.
//!
//! [`run`] claims the plan's run, prepares isolation, reconciles what a dead engine left
//! behind and hands over to a [`RunLoop`](runloop::RunLoop), which owns everything a run
//! holds: the live attempts, the [`LandingQueue`](landing::LandingQueue), and an in-memory
//! [`PlanView`](view::PlanView) of the plan kept current from its own writes and from the
//! store (another process's edit is noticed by the plan's revision and read once).
//!
//! Threads: the loop is one thread; it alone writes run state to the store. Each attempt
//! has its own threads (see `attempt`), which talk to the loop over one channel; the loop
//! wakes on every message and at least once per poll interval (control requests and edits
//! from other processes are picked up then). A verification of the integration tip runs
//! its commands on a worker thread of its own, which reports on the same channel (see
//! `verify`); the loop goes on meanwhile, landing nothing until it has ended.
//!
//! Bounds: at most `parallel` attempts run at once; a scheduling pass costs the changed
//! tasks and their dependents, not the plan (the plan is read whole only at the start, at
//! the end, and after another process changed it); an attempt keeps at most 8 KiB of
//! assistant text and 100 refused tool calls in memory.
//!
//! Crash safety: every state change is one store transaction with its event. An attempt is
//! recorded running (with its process ids) before it is waited on, and a passing isolated
//! attempt is journaled (`landing_started`) before it lands, so a later engine kills what
//! a dead one left running, re-queues its tasks, and finishes its journaled landings.

mod landing;
mod launch;
mod live;
mod runloop;
mod settle;
mod startup;
pub(crate) mod verify;
mod view;

use std::time::{SystemTime, UNIX_EPOCH};

use weft_agents::supervise::{process_alive, process_start_ticks};
use weft_core::{RunStatus, Timestamp};

use crate::error::EngineError;
use crate::{EngineConfig, RunProgress};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    pub run_id: String,
    pub status: RunStatus,
    /// Every task completed or was skipped.
    pub all_done: bool,
}

/// Execute the plan until nothing more can start: every task done, or the rest blocked,
/// failed, held, waiting for a person, or stopped. `on_progress` receives every event
/// stored for the plan from the start of the run to its end, in sequence order (also when
/// the run fails), and the live progress in between (see [`RunProgress`]).
pub fn run(
    config: &EngineConfig,
    on_progress: &mut dyn FnMut(RunProgress),
) -> Result<RunSummary, EngineError> {
    // Told of transitions on a thread of its own; finished (last read, delivered) at the end.
    let notify = crate::notify::Follower::start(
        &config.notify,
        config.workspace.clone(),
        &config.state_dir,
        &config.plan_id,
        config.limits.busy_timeout,
        &config.supervision.secrets,
    );
    let mut reported = 0;
    let result = {
        let mut report = |progress: RunProgress| {
            if let RunProgress::Stored(event) = &progress {
                reported = reported.max(event.seq);
            }
            on_progress(progress);
        };
        runloop::RunLoop::start(config, &mut report).and_then(runloop::RunLoop::run)
    };
    // A notify command that failed on the run's last transitions (its end) was stored
    // after the loop's last report: reported here, so every notice is shown once.
    if let Some(notify) = notify {
        for event in notify.finish() {
            if event.seq > reported {
                on_progress(RunProgress::Stored(event));
            }
        }
    }
    result
}

pub(crate) fn now() -> Timestamp {
    to_millis(SystemTime::now())
}

fn to_millis(time: SystemTime) -> Timestamp {
    time.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// 16 random lowercase hex characters.
pub(crate) fn random_hex16() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..16].to_owned()
}

/// Whether a recorded process (pid and start ticks) is still that same process.
pub(crate) fn same_process_alive(pid: u32, ticks: Option<u64>) -> bool {
    if !process_alive(pid) {
        return false;
    }
    match (ticks, process_start_ticks(pid)) {
        (Some(recorded), Some(actual)) => recorded == actual,
        _ => true,
    }
}

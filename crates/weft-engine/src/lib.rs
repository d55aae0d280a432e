//! weft's runtime: executes a stored plan.
//!
//! The engine claims the plan's run in the store, reconciles what a crashed engine left
//! behind, starts ready tasks up to the slot cap, supervises each attempt on its own
//! threads, judges it by evidence, and writes every state change to the store, where any
//! other weft process can read it and leave control requests. It never prints: front ends
//! receive [`RunProgress`]: every event stored for the plan, in order (the very
//! `weft_core::Event`s `weft events` replays), and the live progress no store keeps.
//!
//! It is also the front ends' only way to the agents and to git: [`runners`] (manifests,
//! availability), [`transcripts`] (an attempt's transcript after the fact), [`preview`]
//! (what a task would be handed) and [`repository`] (a new repository for `weft demo`)
//! return typed data, and the front end writes the English.

mod approvals;
mod attempt;
pub mod contain;
pub mod control;
mod engine;
mod error;
pub mod evidence;
mod executor;
mod failpoint;
mod first_start;
mod guards;
pub mod handoff;
mod isolation;
pub mod kept;
mod links;
pub mod notify;
pub mod planning;
pub mod preview;
pub mod repository;
pub mod runners;
pub mod task_diff;
pub mod transcripts;
pub use weft_core::secrets;

use std::path::PathBuf;
use std::time::Duration;

use weft_agents::manifest::Registry;

pub use engine::verify::{ByHand, by_hand as verify_by_hand};
pub use engine::{RunSummary, run};
pub use error::EngineError;
pub use isolation::{NoIsolation, Runnable, isolation_unavailable};
pub use links::Links;

/// Everything the engine needs to know to run a plan, resolved once by the front end
/// into typed groups.
#[derive(Debug)]
pub struct EngineConfig {
    /// The workspace root: where tasks run in shared mode, the repository in isolated mode.
    pub workspace: PathBuf,
    /// `<workspace>/.weft`.
    pub state_dir: PathBuf,
    pub plan_id: String,
    pub isolation: IsolationConfig,
    pub limits: Limits,
    pub supervision: Supervision,
    pub approvals: Approvals,
    /// How failures shape the run.
    pub failures: Failures,
    /// How every process of the run is contained and confined (`contain` module).
    pub contain: contain::ContainConfig,
    /// Who is told of the run's transitions (`notify` module).
    pub notify: notify::NotifyConfig,
    /// What spending is priced at and allowed (the plan's budget; tasks carry their own).
    pub spending: Spending,
    /// How the integration tip is verified (`engine::verify`).
    pub verify: VerifyConfig,
}

/// Prices and the plan's budget: the `prices`, `budget_usd` and `budget_tokens` settings.
#[derive(Debug, Clone, Default)]
pub struct Spending {
    /// Per-model prices: weft's defaults with the `prices` setting on top.
    pub prices: weft_core::spend::PriceTable,
    /// The plan's budget: once its spend (every attempt, every run, retries included)
    /// reaches it, no new task starts; running ones finish.
    pub plan: weft_core::spend::Budget,
}

/// The run's verification of its integration tip (issue 15).
#[derive(Debug, Clone, Default)]
pub struct VerifyConfig {
    /// Shell commands run in the integration checkout; empty: no verification.
    pub commands: Vec<String>,
    /// `None`: verify whenever the landing queue has emptied; `Some(n)`: after every `n`
    /// landings. Either way, before the run ends.
    pub batch: Option<usize>,
    /// A landed task is met for its dependents only once a tip holding it verified green.
    pub gate: bool,
}

impl VerifyConfig {
    pub fn enabled(&self) -> bool {
        !self.commands.is_empty()
    }

    /// Whether the gate holds dependents back (only with commands to verify).
    pub fn gated(&self) -> bool {
        self.enabled() && self.gate
    }
}

/// Where tasks work: worktrees and branches, or the workspace itself.
#[derive(Debug, Clone)]
pub struct IsolationConfig {
    /// Each AI attempt in its own worktree and branch, landed onto the run's integration
    /// branch; ops tasks in the run's integration checkout.
    pub enabled: bool,
    /// The repositories of a multi-repo workspace (folder names); empty: the workspace
    /// itself, or every repository one level down when it is not one.
    pub repos: Vec<String>,
    /// How isolated worktrees are made runnable.
    pub runnable: Runnable,
    /// Stash uncommitted changes to tracked files at the start of an isolated run and
    /// restore them when it ends (instead of refusing to run).
    pub stash: bool,
    /// Keep a task's worktree after its work landed.
    pub keep_worktrees: bool,
    /// Land symlinks that point outside the task's worktree (else the task fails at
    /// landing, the links named).
    pub allow_outside_symlinks: bool,
}

/// How much runs at once, for how long, and how much of it is kept.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most attempts running at once (1..=64).
    pub parallel: usize,
    /// Wall-clock limit of one attempt (and of each of its checks).
    pub task_timeout: Duration,
    /// Silence after which a running attempt is reported idle.
    pub idle_after: Duration,
    /// No output, stream event or file change for this long ends an attempt (zero: never;
    /// longer than `idle_after`, the front end validates).
    pub idle_timeout: Duration,
    /// How long an agent may keep running after its marker was seen.
    pub marker_grace: Duration,
    /// Between the polite signal and the kill.
    pub kill_grace: Duration,
    pub log_cap_bytes: u64,
    /// Bound on a transcript's final answer, in characters.
    pub answer_chars: usize,
    pub busy_timeout: Duration,
    /// How often the loop looks at the store for control requests and edits.
    pub poll_interval: Duration,
    pub preflight_timeout: Duration,
}

/// Which runners start the attempts, and with what around them.
#[derive(Debug)]
pub struct Supervision {
    pub default_runner: String,
    pub registry: Registry,
    /// Values masked in logs, events and previews.
    pub secrets: Vec<String>,
    pub running_as_root: bool,
    /// PATH used to find runner programs (None: the process's own).
    pub path_env: Option<std::ffi::OsString>,
    /// Where the agents' transcript stores live (the front end reads the environment).
    pub locator: weft_agents::transcript::Locator,
    /// Set by the front end when the user interrupts (Ctrl-C): the run stops as if
    /// `weft stop` had been asked, killing every running attempt's process group.
    pub interrupt: Option<Interrupt>,
    /// Where a busy store's live notice goes ([`RunProgress::StoreBusy`]); none: not shown
    /// (the notice after the write still is).
    pub live_notice: Option<LiveNotice>,
}

/// How task runners' permission requests are decided.
#[derive(Debug, Clone)]
pub struct Approvals {
    /// The `approvals` setting.
    pub mode: weft_core::approval::Mode,
    /// Scopes allowed in every mode.
    pub pre_approved: Vec<weft_core::approval::Scope>,
}

/// What a failure does to the rest of the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Failures {
    /// Start nothing new after a failure.
    pub halt: bool,
    /// Put failed, blocked and cancelled tasks back in line before running.
    pub retry: bool,
}

pub use weft_core::interrupt::Interrupt;

/// Whether `interrupt` was raised.
pub fn interrupted(interrupt: Option<&Interrupt>) -> bool {
    Interrupt::raised(interrupt)
}

/// What the engine reports while it runs. Front ends render these; nothing else prints.
///
/// There is one event contract: whatever happens in a run is stored as a typed
/// [`weft_core::Event`] and reported as [`RunProgress::Stored`], read back from the store
/// in sequence order (so with its `seq` and time, and with the plan's events other
/// processes stored meanwhile, such as an edit from another terminal). `weft run` renders
/// these for people and prints them as JSON lines with `--json`; `weft events`, the API
/// server and the TUI replay the same objects. The other variants are what is *not* an
/// event: progress too frequent and too short-lived to store (an attempt's output is
/// stored in its log, not in the event log), and a notice the store could not take.
#[derive(Debug, Clone, PartialEq)]
pub enum RunProgress {
    /// An event stored for the plan, exactly as the store replays it.
    Stored(weft_core::Event),
    /// The last thing a running task did (a line of output, a tool call), bounded to 200
    /// characters; not stored (the output itself is in the attempt's log).
    Activity { task: String, text: String },
    /// A running task has been silent this long; not stored (it changes every second).
    Idle { task: String, silent_secs: u64 },
    /// Nothing happened for one poll interval (lets a live display refresh its clocks).
    Tick,
    /// A notice the store could not record (it stayed busy while the run was being
    /// interrupted), shown all the same.
    Unstored { text: String },
    /// A write of the run is waiting for a store another process holds (after a few
    /// seconds, then at most every 10 s while it waits); not stored, since the store is
    /// what is busy. It reaches the front end through [`Supervision::live_notice`], from
    /// inside the waiting write.
    StoreBusy {
        /// Who holds the lock, when `/proc/locks` says: its pid and its command line
        /// (bounded, secrets masked).
        holder: Option<(u32, Option<String>)>,
        waited_secs: u64,
        /// How long the write waits in all before the run fails.
        patience_secs: u64,
    },
}

/// Where the engine reports what it must say while it cannot return to its loop (a
/// write waiting for a busy store): set by the front end, called on the waiting thread.
#[derive(Clone)]
pub struct LiveNotice(pub std::sync::Arc<dyn Fn(&RunProgress) + Send + Sync>);

impl std::fmt::Debug for LiveNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveNotice")
    }
}

/// Fixed values of the engine that no setting changes. The defaults of user settings
/// (`parallel`, `task_timeout`, `idle_after`, `marker_grace`, ...) live in one place, the
/// bin's settings table, which resolves every one before an `EngineConfig` is built.
pub mod defaults {
    use std::time::Duration;

    pub const KILL_GRACE: Duration = Duration::from_secs(3);
    pub const LOG_CAP_BYTES: u64 = 64 * 1024 * 1024;
    pub const TAIL_BYTES: usize = 64 * 1024;
    pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
    pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);
}

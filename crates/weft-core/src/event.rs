//! The event contract: what every weft surface streams and replays.
//!
//! Every state change weft stores is one [`Event`]: an envelope (schema version, the
//! store's sequence number, the time, and the plan, run, task and attempt it is about)
//! around one typed [`EventKind`] with structured fields (a landing's merge sha, a
//! verdict with its checks, tokens and cost, each field an edit changed with its new
//! value). The store appends one per transaction; `weft run --json` prints exactly these,
//! one JSON object per line; the API server and the TUI will stream the same objects.
//!
//! # Wire format
//!
//! ```json
//! {"version":1,"seq":42,"at":1767225600000,"plan":"…","run":"a1b2c3d4","task":"limiter",
//!  "attempt":"…","event":{"kind":"task_started","order":1,"title":"…","runner":"codex","number":1}}
//! ```
//!
//! - `version` is [`EVENT_SCHEMA_VERSION`] of the weft that wrote the event. Within one
//!   version fields are only ever added, never renamed or retyped; a change that breaks a
//!   reader bumps the version.
//! - `seq` is strictly increasing within a workspace (gaps are allowed); a reader resumes
//!   after the last `seq` it saw. `at` is milliseconds since the Unix epoch.
//! - `plan`, `run`, `task` and `attempt` are present (non-null) exactly when the event is
//!   about one; `task` is the task's stable id, not its order number.
//! - `event.kind` names the variant; the other fields of `event` are that variant's.
//! - [`EventKind::Unrecognized`] is what a reader makes of a stored row it cannot read as
//!   this version's event (a row written by an earlier weft, or by a newer one): the
//!   original kind and payload, untouched. Replaying never fails on an old row.
//!
//! `schemas/events.schema.json` is the JSON Schema of one line ([`Event::json_schema`],
//! printed by `weft events schema`).
//!
//! # Secrets
//!
//! Events are stored and shown, so no secret may reach one: [`Event::masked`] replaces
//! every known secret value in every text field by `****`. The store masks every event it
//! appends with the secrets it was given.
//!
//! Pure: nothing here reads a clock or does I/O; the store stamps `seq` and `at`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{
    AttemptStatus, Denial, Landing, PlanStatus, RunStatus, TaskKind, TaskStatus, Timestamp, Verdict,
};

/// The version of the event shape this weft writes (see the module docs).
pub const EVENT_SCHEMA_VERSION: u32 = 1;

/// One stored, streamed event: the envelope and what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "weft event")]
pub struct Event {
    /// The event schema version of the weft that wrote it (see `EVENT_SCHEMA_VERSION`).
    pub version: u32,
    /// Position in the workspace's event log (0 until the store appends it).
    pub seq: i64,
    /// When it was stored: milliseconds since the Unix epoch.
    pub at: Timestamp,
    /// The plan it is about (full id).
    pub plan: Option<String>,
    /// The run it happened in (short run id).
    pub run: Option<String>,
    /// The task it is about (the task's id).
    pub task: Option<String>,
    /// The attempt it is about (full attempt id).
    pub attempt: Option<String>,
    /// What happened.
    pub event: EventKind,
}

impl Event {
    /// An event not yet stored: no ids, `seq` and `at` 0 (the store stamps them).
    pub fn new(event: EventKind) -> Event {
        Event {
            version: EVENT_SCHEMA_VERSION,
            seq: 0,
            at: 0,
            plan: None,
            run: None,
            task: None,
            attempt: None,
            event,
        }
    }

    pub fn plan(mut self, id: impl Into<String>) -> Event {
        self.plan = Some(id.into());
        self
    }

    pub fn run(mut self, id: impl Into<String>) -> Event {
        self.run = Some(id.into());
        self
    }

    pub fn task(mut self, id: impl Into<String>) -> Event {
        self.task = Some(id.into());
        self
    }

    pub fn attempt(mut self, id: impl Into<String>) -> Event {
        self.attempt = Some(id.into());
        self
    }

    /// The `kind` tag of its [`EventKind`] (`task_started`, …), as stored in the log's
    /// `kind` column; an unrecognized row keeps the kind it was stored with.
    pub fn kind_name(&self) -> String {
        self.event.name()
    }

    /// The event with every secret value in every text field replaced by `****`.
    pub fn masked(self, secrets: &[String]) -> Event {
        if secrets.is_empty() {
            return self;
        }
        let Ok(mut value) = serde_json::to_value(&self) else {
            return self;
        };
        mask_strings(&mut value, secrets);
        serde_json::from_value(value).unwrap_or(self)
    }

    /// Read a stored row: its `kind` column and its `payload` text. A row this version
    /// cannot read (written by an earlier or a later weft, or damaged) becomes
    /// [`EventKind::Unrecognized`] with what is known of its envelope; this never fails.
    pub fn from_stored(
        seq: i64,
        plan: Option<String>,
        kind: &str,
        payload: &str,
        at: Timestamp,
    ) -> Event {
        let typed = serde_json::from_str::<Event>(payload)
            .ok()
            .filter(|e| e.version <= EVENT_SCHEMA_VERSION && e.event.name() == kind);
        match typed {
            Some(event) => Event {
                seq,
                at,
                plan,
                ..event
            },
            None => {
                let payload = serde_json::from_str(payload)
                    .unwrap_or_else(|_| serde_json::Value::String(payload.to_owned()));
                let text = |key: &str| payload.get(key).and_then(|v| v.as_str()).map(str::to_owned);
                Event {
                    version: payload
                        .get("version")
                        .and_then(serde_json::Value::as_u64)
                        .and_then(|v| u32::try_from(v).ok())
                        .unwrap_or(0),
                    seq,
                    at,
                    plan,
                    run: text("run"),
                    task: text("task"),
                    attempt: text("attempt"),
                    event: EventKind::Unrecognized {
                        original_kind: kind.to_owned(),
                        payload,
                    },
                }
            }
        }
    }

    /// The text stored in the log's `payload` column (the whole event as JSON).
    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).expect("an event always serializes")
    }

    /// The JSON Schema of one event (what `weft events schema` prints).
    pub fn json_schema() -> String {
        let schema = schemars::schema_for!(Event);
        let mut text =
            serde_json::to_string_pretty(&schema).expect("a JSON Schema always serializes");
        text.push('\n');
        text
    }
}

fn mask_strings(value: &mut serde_json::Value, secrets: &[String]) {
    match value {
        serde_json::Value::String(text) if secrets.iter().any(|s| text.contains(s.as_str())) => {
            *text = crate::secrets::mask(text, secrets);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| mask_strings(v, secrets)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| mask_strings(v, secrets)),
        _ => {}
    }
}

/// Tokens and cost an attempt (or a run) reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// How a run's tasks stood when its engine let go of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunTotals {
    pub completed: usize,
    pub skipped: usize,
    /// Failed, cancelled or conflicted.
    pub failed: usize,
    pub blocked: usize,
    /// Everything else: pending, held, waiting for a person, interrupted.
    pub waiting: usize,
    /// Summed over the run's attempts.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// The agent's own transcript of an attempt, as the engine found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TranscriptFound {
    /// The file (or database) it came from.
    pub path: String,
    /// No marker match: the newest candidate, which never counts as evidence.
    pub weak: bool,
    pub marker_found: bool,
    /// How it was chosen, one step per entry.
    pub how: Vec<String>,
}

/// One task field an edit set, with its new value (`null`: cleared). Durations are text
/// (`"30m"`), as the workflow file writes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "field", content = "value", rename_all = "snake_case")]
pub enum FieldChange {
    Title(String),
    Description(Option<String>),
    Prompt(String),
    Runner(Option<String>),
    Model(Option<String>),
    Effort(Option<String>),
    Mode(Option<String>),
    Kind(TaskKind),
    Command(Option<String>),
    Steps(Vec<String>),
    Checks(Vec<String>),
    Timeout(Option<String>),
    IdleTimeout(Option<String>),
    BudgetUsd(Option<f64>),
    BudgetTokens(Option<u64>),
}

// A budget is never NaN (every entry point checks it finite), so equality is total.
impl Eq for FieldChange {}

impl FieldChange {
    /// The field's name as `weft task edit` spells it.
    pub fn field(&self) -> &'static str {
        match self {
            FieldChange::Title(_) => "title",
            FieldChange::Description(_) => "description",
            FieldChange::Prompt(_) => "prompt",
            FieldChange::Runner(_) => "runner",
            FieldChange::Model(_) => "model",
            FieldChange::Effort(_) => "effort",
            FieldChange::Mode(_) => "mode",
            FieldChange::Kind(_) => "kind",
            FieldChange::Command(_) => "command",
            FieldChange::Steps(_) => "steps",
            FieldChange::Checks(_) => "checks",
            FieldChange::Timeout(_) => "timeout",
            FieldChange::IdleTimeout(_) => "idle_timeout",
            FieldChange::BudgetUsd(_) => "budget_usd",
            FieldChange::BudgetTokens(_) => "budget_tokens",
        }
    }
}

/// One edit of a batch (a planner's revision): the task and what the edit did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskEdit {
    pub task: String,
    /// `task_added`, `task_edited`, `task_removed`, … with their fields.
    pub edit: EventKind,
}

/// A request for the engine that runs a plan, left by any process (`weft stop`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum ControlRequest {
    /// Stop the run: every running attempt is killed and marked interrupted.
    Stop,
    /// Cancel the task's running attempt.
    Cancel { task: String },
    /// Start the task now, ignoring its dependencies, hold and the slot cap.
    ForceStart { task: String },
    /// Give the conflicted task one repair attempt.
    Repair { task: String },
    /// A stored request this weft does not know (written by a newer one): ignored.
    Unrecognized {
        original_kind: String,
        task: Option<String>,
    },
}

impl ControlRequest {
    /// The stored `kind` column.
    pub fn kind(&self) -> &str {
        match self {
            ControlRequest::Stop => "stop",
            ControlRequest::Cancel { .. } => "cancel",
            ControlRequest::ForceStart { .. } => "force_start",
            ControlRequest::Repair { .. } => "repair",
            ControlRequest::Unrecognized { original_kind, .. } => original_kind,
        }
    }

    /// The task it names, if any.
    pub fn task(&self) -> Option<&str> {
        match self {
            ControlRequest::Stop => None,
            ControlRequest::Cancel { task }
            | ControlRequest::ForceStart { task }
            | ControlRequest::Repair { task } => Some(task),
            ControlRequest::Unrecognized { task, .. } => task.as_deref(),
        }
    }

    /// Read a stored row (`kind`, `task_id`); a kind this weft does not know, or a task
    /// request without its task, is [`ControlRequest::Unrecognized`].
    pub fn from_stored(kind: &str, task: Option<String>) -> ControlRequest {
        match (kind, task) {
            ("stop", None) => ControlRequest::Stop,
            ("cancel", Some(task)) => ControlRequest::Cancel { task },
            ("force_start", Some(task)) => ControlRequest::ForceStart { task },
            ("repair", Some(task)) => ControlRequest::Repair { task },
            (kind, task) => ControlRequest::Unrecognized {
                original_kind: kind.to_owned(),
                task,
            },
        }
    }
}

/// What happened. The envelope (`Event`) names the plan, run, task and attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    // Plans.
    /// A plan was stored and made current.
    PlanCreated {
        goal: String,
        tasks: usize,
        /// Where it came from: a file path, `demo`, `planner`, …
        source: String,
    },
    /// A planner's draft became a plan.
    PlanPlanned {
        tasks: usize,
    },
    /// A planner's edits were applied, each as the event a hand edit would have stored.
    PlanRevised {
        edits: Vec<TaskEdit>,
    },
    PlanStatusChanged {
        status: PlanStatus,
    },
    /// The plan became the workspace's current plan.
    CurrentPlanSet,
    PlanDeleted,

    // Edits (the envelope's `task` is the task).
    TaskAdded {
        order: u32,
        title: String,
    },
    /// `detached`: the tasks that depended on it and no longer do.
    TaskRemoved {
        detached: Vec<String>,
    },
    TaskMoved {
        from: u32,
        to: u32,
    },
    DependenciesSet {
        dependencies: Vec<String>,
    },
    /// Each field the edit set, with its new value (secrets masked).
    TaskEdited {
        changes: Vec<FieldChange>,
    },
    TaskHeld,
    TaskReleased,

    // Runs (the envelope's `run` is the run).
    RunStarted {
        pid: u32,
    },
    /// An engine took over an open run (after a stop or a crash).
    RunContinued {
        pid: u32,
        previous_pid: Option<u32>,
    },
    /// An isolated run's base commit and integration branch.
    RunIsolated {
        base: String,
        integration_branch: String,
    },
    /// `halt_on_failure`: the failure of task `by` starts nothing new.
    RunHalted {
        by: String,
    },
    /// The engine let go of the run; `totals` when an engine ended it (not a handoff).
    RunEnded {
        status: RunStatus,
        totals: Option<RunTotals>,
    },
    HandoffMerged,
    /// `kept`: the ref that keeps the discarded tip.
    HandoffDiscarded {
        kept: String,
    },
    /// Something the user should know that is not about one task.
    Notice {
        text: String,
    },
    /// The plan's spend reached its budget (`budget_usd` / `budget_tokens`): no new task
    /// starts, running ones finish. `limit` names the setting and its value; stored once
    /// per transition (a raised budget and a later reach store another).
    BudgetReached {
        limit: String,
        /// The plan's spend, summed over every attempt and retry (`$0.52, 12000 tokens`).
        spent: String,
        cost_usd: Option<f64>,
        tokens: u64,
    },
    /// The `notify` command (or `notify-send`) failed to tell a person of the event
    /// `about` (its `seq`): how it ended and the end of what it wrote to stderr. Stored
    /// once per command per run (the envelope's `run`): its later failures are not.
    NotifyFailed {
        /// The command line (or `notify-send`), secrets masked.
        command: String,
        /// The `seq` of the event it was run for.
        about: i64,
        /// How it ended: `exited with status 3`, `killed by signal 9`, `timed out after
        /// 5 s`, `could not start: …`.
        failure: String,
        exit_code: Option<i32>,
        timed_out: bool,
        /// The last bytes of its stderr (bounded, lossy UTF-8, secrets masked).
        stderr: String,
    },

    // Attempts (the envelope's `task` and `attempt`).
    AttemptStarted {
        number: u32,
        runner: String,
        pid: Option<u32>,
        /// Ignored entries linked into its worktree.
        links: Vec<String>,
    },
    /// A running attempt's spend so far, estimated live from its stream (throttled: at
    /// most one per attempt every 5 s, the first 5 s after it started, and only when it
    /// changed; `attempt_finished` carries the final figures). `cost_usd` is
    /// `None` while a model's price is unknown (`unpriced` names it); tokens always count.
    SpendUpdated {
        input_tokens: u64,
        output_tokens: u64,
        cost_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unpriced: Option<String>,
        /// The CLI's own final total replaced the estimate.
        reported: bool,
    },
    /// It has been silent (no output) past the `idle_after` setting: stored once per
    /// silence, with the attempt's idle-since (cleared, without an event, when it talks
    /// again or ends), so `weft status` in any process shows `idle for 12m`. Nothing is
    /// stopped: that is `idle_timeout`'s.
    AttemptIdle {
        silent_secs: u64,
    },
    /// It could not even start; `reason` says why.
    AttemptFailedToStart {
        reason: String,
    },
    /// Left running by an engine that is gone; marked interrupted.
    AttemptInterrupted {
        killed_leftover: bool,
    },
    /// A passed isolated attempt's work is being landed (journaled first).
    LandingStarted {
        branch: String,
    },
    /// A journaled landing was finished (after a restart).
    LandingFinished {
        landing: Landing,
        after_restart: bool,
    },
    AttemptFinished {
        status: AttemptStatus,
        exit_code: Option<i32>,
        signal: Option<i32>,
        /// Pass or fail with every check consulted.
        verdict: Verdict,
        usage: Usage,
        /// Tool calls the agent was refused.
        denials: Vec<Denial>,
        /// How its work landed (isolated runs); a merge sha when it did.
        landing: Option<Landing>,
        transcript: Option<TranscriptFound>,
        duration_ms: u64,
    },

    // Tasks (the envelope's `task`).
    TaskStarted {
        order: u32,
        title: String,
        runner: String,
        number: u32,
    },
    /// The task settled after an attempt: completed, failed, cancelled, conflicted or
    /// interrupted, with the verdict's reason.
    TaskFinished {
        order: u32,
        title: String,
        status: TaskStatus,
        reason: String,
        after_restart: bool,
    },
    /// Interrupted (and, when asked, failed) tasks put back in line before a run.
    TasksRequeued {
        tasks: Vec<String>,
    },
    /// Pending descendants of the failed task `by`, stored as blocked.
    TasksBlocked {
        by: String,
        tasks: Vec<String>,
    },
    /// Blocked tasks with no failure upstream any more, pending again.
    TasksReleased {
        by: String,
        tasks: Vec<String>,
    },
    /// A manual task is ready for a person.
    WaitingForPerson {
        order: u32,
        title: String,
    },

    // Recovery moves (the envelope's `task`; `was`: its status before).
    TaskRetried {
        was: TaskStatus,
    },
    TaskRearmed {
        was: TaskStatus,
        changes: Vec<FieldChange>,
    },
    TaskMarkedComplete {
        was: TaskStatus,
    },
    TaskMarkedNotDone {
        was: TaskStatus,
    },
    TaskSkipped {
        was: TaskStatus,
    },
    /// Cancelled while waiting; `blocked`: its dependents, now blocked.
    TaskCancelled {
        blocked: Vec<String>,
    },
    TaskRepairRequested {
        branch: String,
    },
    ManualStepsTicked {
        /// 0-based step indexes ticked by this request.
        steps: Vec<usize>,
        completed: bool,
    },
    /// A control request was queued for the plan's engine.
    ControlRequested {
        request: ControlRequest,
        request_seq: i64,
    },
    /// The plan's engine took the request.
    ControlHandled {
        request: ControlRequest,
        request_seq: i64,
    },

    // Verification of the integration tip (the envelope's `run`; issue 15).
    /// The run's `verify` commands started on an integration tip. `purpose`: `landed`
    /// (after landings), `repeat` (the same tip once more after a failure), `bisect` (an
    /// earlier tip, to find the culprit), `alone` (a culprit's landing alone on the last
    /// green tip), `by_hand` (`weft verify`).
    VerificationStarted {
        tip: String,
        commands: Vec<String>,
        purpose: String,
    },
    /// Every `verify` command passed on `tip`.
    VerificationPassed {
        tip: String,
        purpose: String,
        duration_ms: u64,
    },
    /// A `verify` command failed on `tip` (exit code, `None` when it timed out or could
    /// not start), with its output's tail.
    VerificationFailed {
        tip: String,
        purpose: String,
        command: String,
        exit_code: Option<i32>,
        output_tail: String,
        duration_ms: u64,
    },
    /// Two verifications of one tip disagreed: nothing is blamed, the tip counts as green.
    VerificationFlaky {
        tip: String,
        command: String,
    },
    /// One step of the search for the landing that broke verification: tip `tip` (after
    /// landing `landing` of `of` since the last green tip, of task `task`) passed or not.
    BisectStep {
        tip: String,
        landing: usize,
        of: usize,
        task: Option<String>,
        passed: bool,
        /// Verifications the search has spent so far (at most ⌈log2 of⌉).
        runs: u32,
    },
    /// A landing broke verification: it was taken out of the integration branch (rebuilt
    /// from the tip before it, the later landings re-applied) and its task failed. The
    /// envelope's `task` is the culprit.
    TaskQuarantined {
        order: u32,
        title: String,
        /// The first tip that failed verification (the one after its landing).
        broke: String,
        /// The integration tip after the rebuild.
        rebuilt: String,
        command: String,
        output_tail: String,
        /// `Some(true)`: its landing alone on the last green tip passes, so it fails only
        /// in combination with the landings before it; `Some(false)`: it fails alone.
        only_in_combination: Option<bool>,
        /// Verifications the search spent.
        bisect_runs: u32,
        /// Tasks run again because their attempt started from a tip holding it.
        requeued: Vec<String>,
        /// Tasks whose landings no longer applied without it (now conflicted).
        conflicted: Vec<String>,
    },

    // The planner.
    /// Entries were added to the planner's research log (`weft plan log`).
    PlannerLogged {
        entries: usize,
        last_seq: Option<i64>,
    },
    ApprovalAsked {
        ask: i64,
        scope: String,
        subject: String,
    },
    ApprovalAnswered {
        ask: i64,
        allowed: bool,
        scope: Option<String>,
    },
    ApprovalSettled {
        ask: i64,
        decision: String,
    },

    /// A stored row this weft cannot read as an event of its version (see the module
    /// docs): its original kind and payload, untouched.
    Unrecognized {
        original_kind: String,
        payload: serde_json::Value,
    },
}

impl EventKind {
    /// The `kind` tag (`task_started`, …); an unrecognized row's original kind.
    pub fn name(&self) -> String {
        if let EventKind::Unrecognized { original_kind, .. } = self {
            return original_kind.clone();
        }
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map
                .get("kind")
                .and_then(|k| k.as_str())
                .unwrap_or_default()
                .to_owned(),
            _ => String::new(),
        }
    }
}

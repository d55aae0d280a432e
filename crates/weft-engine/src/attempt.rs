//! One attempt: launch planning, then the threads that wait for it, judge it and run its
//! checks.
//!
//! Threads: each started attempt has one, `weft-wait-*`: it forwards the attempt's live
//! events to the loop until the process ended (for a Codex attempt it also tails the
//! rollout file for its spend, bounded as `weft_agents::transcript::codex_tail` says),
//! then waits, finds its transcript, asks core's one gate for the verdict, runs the checks
//! that gate says are due, and sends the result. The events come first, so the loop sees
//! an attempt's every event before its end. Bounds: the channel carries what the supervisor emits (bounded lines, idle
//! notices); checks run one at a time with the task's timeout and a 4 MiB log each.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, SystemTime};

use weft_agents::manifest::{LaunchSpec, LaunchVars, Manifest};
use weft_agents::supervise::{Canceller, Outcome, SuperviseOptions, SupervisorEvent};
use weft_agents::transcript::{Found, Locator, Query, Store, find as find_transcript};
use weft_agents::{AgentEvent, StreamKind};
use weft_core::marker::Marker;
use weft_core::prompt::{compose, compose_repair};
use weft_core::verdict::{CheckRun, Evidence, Judgement, judge};
use weft_core::{Plan, Task, TaskKind, Verdict};

use crate::engine::now;
use crate::error::EngineError;
use crate::executor::Executor;
use crate::{EngineConfig, defaults};

/// Messages from attempt threads to the engine loop.
#[derive(Debug)]
pub(crate) enum Msg {
    Supervisor {
        attempt: String,
        event: SupervisorEvent,
    },
    Finished {
        attempt: String,
        result: Box<AttemptResult>,
    },
    /// A verification step's commands ended on their worker thread (`engine::verify`);
    /// `stopped`: the run's stop cut them short, so they say nothing about the tip.
    Verified { runs: Vec<CheckRun>, stopped: bool },
}

#[derive(Debug)]
pub(crate) struct AttemptResult {
    pub outcome: Outcome,
    /// Decided by core's one gate, with the task's checks when the agent passed.
    pub verdict: Verdict,
    /// The agent's own transcript of the attempt, when its runner names a store.
    pub transcript: Option<Found>,
}

/// Where to look for an attempt's transcript once it has ended.
#[derive(Debug, Clone)]
pub(crate) struct TranscriptPlan {
    pub store: Store,
    pub locator: Locator,
    pub cwd: PathBuf,
    pub started_at: SystemTime,
    pub marker: Option<String>,
    /// The session id weft chose (Claude Code); others announce theirs in the stream.
    pub session_id: Option<String>,
    pub answer_chars: usize,
}

impl TranscriptPlan {
    pub fn find(&self, announced: Option<&str>) -> Option<Found> {
        let session = self.session_id.as_deref().or(announced);
        find_transcript(
            self.store,
            &self.locator,
            &Query {
                cwd: &self.cwd,
                started_at: self.started_at,
                marker: self.marker.as_deref(),
                session_id: session,
                answer_chars: self.answer_chars,
            },
        )
    }
}

/// Everything decided before an attempt starts.
#[derive(Debug)]
pub struct LaunchPlan {
    pub runner: String,
    pub spec: LaunchSpec,
    pub marker: Option<Marker>,
    pub prompt: String,
}

/// The runner a task uses, by kind: ops tasks run their command through `exec`.
pub fn runner_name(config: &EngineConfig, plan: &Plan, index: usize) -> String {
    let task = &plan.tasks[index];
    match task.kind {
        TaskKind::Ops | TaskKind::Manual => "exec".into(),
        TaskKind::Ai => task
            .effective_runner(plan.runner.as_deref())
            .unwrap_or(&config.supervision.default_runner)
            .to_owned(),
    }
}

pub fn manifest_for<'a>(
    config: &'a EngineConfig,
    plan: &Plan,
    index: usize,
) -> Result<&'a Manifest, EngineError> {
    let name = runner_name(config, plan, index);
    let task = &plan.tasks[index];
    config
        .supervision
        .registry
        .get(&name)
        .map(|loaded| &loaded.manifest)
        .ok_or_else(|| EngineError::UnknownRunner {
            order: task.order,
            task: task.id.clone(),
            runner: name,
            known: config
                .supervision
                .registry
                .names()
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Compose the prompt and the launch of one attempt of task `index`.
/// The ids and places one attempt is launched with.
#[derive(Debug, Clone, Copy)]
pub struct LaunchIds<'a> {
    pub marker_id: &'a str,
    pub session_id: &'a str,
    pub attempt_id: &'a str,
    /// Where a prompt file is written for runners that take one.
    pub prompt_dir: &'a Path,
    /// Where the runner runs.
    pub cwd: &'a Path,
    /// For a repair attempt: what the agent must resolve, placed before the marker
    /// paragraph.
    pub repair_note: Option<&'a str>,
}

pub fn plan_launch(
    config: &EngineConfig,
    plan: &Plan,
    index: usize,
    ids: LaunchIds<'_>,
) -> Result<LaunchPlan, EngineError> {
    let LaunchIds {
        marker_id,
        session_id,
        attempt_id,
        prompt_dir,
        cwd,
        repair_note,
    } = ids;
    let task = &plan.tasks[index];
    let manifest = manifest_for(config, plan, index)?;
    let runner = runner_name(config, plan, index);
    let is_agent = task.kind == TaskKind::Ai && manifest.marker();
    let marker = if is_agent {
        Marker::from_id(marker_id)
    } else {
        None
    };
    let prompt = match task.kind {
        TaskKind::Ops | TaskKind::Manual => task.command.clone().unwrap_or_default(),
        // A runner that is not an agent (exec) runs the task's own text, not a briefing.
        TaskKind::Ai if !manifest.marker() => task.prompt.clone(),
        TaskKind::Ai => match (repair_note, marker.as_ref()) {
            (Some(note), Some(marker)) => compose_repair(plan, index, marker, note),
            _ => compose(plan, index, marker.as_ref(), false),
        },
    };
    let vars = LaunchVars {
        prompt: prompt.clone(),
        prompt_file: Some(prompt_dir.join(format!("{attempt_id}.md"))),
        model: task.model.clone(),
        effort: task.effort.clone(),
        mode: task.mode.clone(),
        cwd: cwd.to_owned(),
        session_id: session_id.to_owned(),
        running_as_root: config.supervision.running_as_root,
        // The engine always has a channel: `weft approvals` from any terminal.
        relay: true,
        // A run that must confine but cannot is refused before any launch.
        confined: crate::contain::confined(config).unwrap_or(false),
    };
    let spec = manifest.launch(&vars).map_err(|e| EngineError::Launch {
        order: task.order,
        task: task.id.clone(),
        detail: e.to_string(),
    })?;
    Ok(LaunchPlan {
        runner,
        spec,
        marker,
        prompt,
    })
}

pub(crate) fn supervise_options(
    config: &EngineConfig,
    log_path: PathBuf,
    marker: Option<&Marker>,
) -> SuperviseOptions {
    SuperviseOptions {
        timeout: config.limits.task_timeout,
        idle_after: config.limits.idle_after,
        idle_timeout: config.limits.idle_timeout,
        watch_dir: None,
        kill_grace: config.limits.kill_grace,
        marker_grace: config.limits.marker_grace,
        log_path,
        log_cap_bytes: config.limits.log_cap_bytes,
        tail_bytes: defaults::TAIL_BYTES,
        marker_token: marker.map(Marker::token),
        secrets: config.supervision.secrets.clone(),
        relay: None,
        contain: None,
    }
}

/// An attempt's time limits: the task's own `timeout`/`idle_timeout` over the settings,
/// each with whose it is (named in the verdict of an attempt it stopped).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimeLimits {
    pub timeout: Duration,
    pub timeout_whose: String,
    /// Zero: off.
    pub idle_timeout: Duration,
    pub idle_whose: String,
}

/// The task's time limits. A task's `idle_timeout` must be longer than the `idle_after`
/// setting, as the setting must (zero, off, is always fine): one that is not is refused
/// here, before anything is prepared, and the attempt fails to start with the reason (a
/// silent clamp would stop agents sooner or later than the task says).
pub(crate) fn time_limits(limits: &crate::Limits, task: &Task) -> Result<TimeLimits, String> {
    let text = weft_core::limits::format_duration;
    let (timeout, timeout_whose) = match task.limits.timeout {
        Some(t) => (t, format!("the task's timeout = {}", text(t))),
        None => (
            limits.task_timeout,
            format!("the task_timeout setting = {}", text(limits.task_timeout)),
        ),
    };
    let (idle_timeout, idle_whose) = match task.limits.idle_timeout {
        Some(t) => {
            if !t.is_zero() && !limits.idle_after.is_zero() && t <= limits.idle_after {
                return Err(format!(
                    "task #{} {:?}: its idle_timeout ({}) must be longer than the idle_after setting ({}); raise it, set it to \"0\" to turn it off for this task, or clear it (`weft task edit {} --idle-timeout \"\"`)",
                    task.order,
                    task.id,
                    text(t),
                    text(limits.idle_after),
                    task.order
                ));
            }
            (t, format!("the task's idle_timeout = {}", text(t)))
        }
        None => (
            limits.idle_timeout,
            format!("the idle_timeout setting = {}", text(limits.idle_timeout)),
        ),
    };
    Ok(TimeLimits {
        timeout,
        timeout_whose,
        idle_timeout,
        idle_whose,
    })
}

/// A started attempt: its process ids and how to cancel it.
pub(crate) struct Started {
    pub pid: u32,
    pub process_group: i32,
    pub started_at: SystemTime,
    pub canceller: Canceller,
}

/// What is judged after the agent: its evidence, then per-task checks in the task's folder.
pub(crate) struct CheckPlan {
    pub commands: Vec<String>,
    pub cwd: PathBuf,
    pub log_dir: PathBuf,
    pub attempt_id: String,
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub secrets: Vec<String>,
    pub receives_marker: bool,
    /// The checks' containment (their folder writable, nothing of the agent's).
    pub contain: Option<weft_agents::contain::Containment>,
    /// The attempt's git variables (its private object folder), for its checks too.
    pub git_env: Vec<(String, String)>,
    pub transcript: Option<TranscriptPlan>,
    /// Whose time limits stopped it, if one did (`None`: unnamed).
    pub limits: Option<TimeLimits>,
}

/// Start the attempt's process, then hand waiting, judging and checks to its own thread.
pub(crate) fn start(
    executor: &Arc<dyn Executor>,
    attempt_id: &str,
    spec: &LaunchSpec,
    options: SuperviseOptions,
    checks: CheckPlan,
    to_engine: Sender<Msg>,
    first_start: Option<Arc<crate::first_start::Gate>>,
) -> Result<Started, String> {
    let (events_tx, events_rx) = mpsc::channel::<SupervisorEvent>();
    let execution = executor.start(spec, options, events_tx)?;
    // An OpenCode first start lets the next one go at its first output or its end.
    let released_at_exit = first_start.clone();
    let started = Started {
        pid: execution.pid(),
        process_group: execution.process_group(),
        started_at: execution.started_at(),
        canceller: execution.canceller(),
    };
    let id = attempt_id.to_owned();
    // A Codex attempt's spend is live from its rollout file (see `forward_events`).
    let rollout = checks
        .transcript
        .as_ref()
        .filter(|t| t.store == Store::Codex)
        .map(|t| t.locator.clone());
    let executor = Arc::clone(executor);
    // One thread does both, in order: its events, then its end. The events stop when the
    // supervisor's monitor ends (it holds the only sender), which is when the process
    // ended, so every event reaches the engine before the end does. (A thread each cost
    // a thread start, about 50 µs of CPU, per attempt.)
    std::thread::Builder::new()
        .name(format!("weft-wait-{id}"))
        .spawn(move || {
            forward_events(&events_rx, &to_engine, &id, first_start, rollout);
            // Events that come after the engine went away are not queued.
            drop(events_rx);
            let outcome = execution.wait();
            if let Some(gate) = released_at_exit {
                gate.release();
            }
            let result = judge_ended(executor.as_ref(), outcome, &checks);
            let _ = to_engine.send(Msg::Finished {
                attempt: id,
                result: Box::new(result),
            });
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    Ok(started)
}

/// How often the attempt thread reads a Codex attempt's rollout file for its spend.
const ROLLOUT_POLL: Duration = Duration::from_secs(1);

/// Polls after the process ended, to read what its rollout got last (a Codex killed
/// before `turn.completed` leaves its spend only there); each reads at most
/// [`codex_tail::READ_MAX`](weft_agents::transcript::codex_tail::READ_MAX).
const ROLLOUT_LAST_POLLS: usize = 8;

/// The attempt thread's first part: the supervisor's events to the loop, in order, until
/// the process ended. With `rollout` (a Codex attempt's locator), once the stream
/// announced its thread id, that thread's rollout file is tailed about every [`ROLLOUT_POLL`] and its
/// `token_count` totals are sent as the attempt's own `Spend` events (the stream has none
/// before `turn.completed`); the file is only this thread's (see
/// `weft_agents::transcript::codex_tail`).
fn forward_events(
    events: &mpsc::Receiver<SupervisorEvent>,
    to_engine: &Sender<Msg>,
    attempt: &str,
    first_start: Option<Arc<crate::first_start::Gate>>,
    rollout: Option<Locator>,
) {
    use weft_agents::transcript::codex_tail::RolloutTail;
    let send = |event: SupervisorEvent| {
        to_engine
            .send(Msg::Supervisor {
                attempt: attempt.to_owned(),
                event,
            })
            .is_ok()
    };
    let send_all = |tail: &mut RolloutTail| {
        let spent = tail.poll();
        let more = !spent.is_empty();
        let sent = spent
            .into_iter()
            .all(|event| send(SupervisorEvent::Agent(event)));
        sent && more
    };
    let mut tail: Option<RolloutTail> = None;
    let mut polled = std::time::Instant::now();
    loop {
        let wait = if tail.is_some() {
            ROLLOUT_POLL.saturating_sub(polled.elapsed())
        } else {
            Duration::from_secs(3600)
        };
        match events.recv_timeout(wait) {
            Ok(event) => {
                if let Some(gate) = &first_start
                    && matches!(
                        event,
                        SupervisorEvent::Line { .. } | SupervisorEvent::Agent(_)
                    )
                {
                    gate.release();
                }
                if let (Some(locator), None, SupervisorEvent::Agent(AgentEvent::Session { id })) =
                    (&rollout, &tail, &event)
                {
                    tail = RolloutTail::new(locator, id);
                    polled = std::time::Instant::now();
                }
                if !send(event) {
                    return;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if let Some(tail) = &mut tail
            && polled.elapsed() >= ROLLOUT_POLL
        {
            polled = std::time::Instant::now();
            send_all(tail);
        }
    }
    if let Some(tail) = &mut tail {
        for _ in 0..ROLLOUT_LAST_POLLS {
            if !send_all(tail) {
                break;
            }
        }
    }
}

/// The evidence of an ended attempt: its outcome and, when one was found and is not a
/// weak match, its transcript.
fn evidence(outcome: &Outcome, transcript: Option<&Found>, plan: &CheckPlan) -> Evidence {
    let strong = transcript.filter(|t| !t.weak);
    Evidence {
        receives_marker: plan.receives_marker,
        marker_seen: outcome.marker.map(str::to_owned).or_else(|| {
            strong
                .filter(|t| t.marker_found)
                .map(|_| "transcript".to_owned())
        }),
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        timed_out: outcome.timed_out,
        idle_timed_out: outcome.idle_timed_out,
        timeout_limit: plan.limits.as_ref().map(|l| l.timeout_whose.clone()),
        idle_limit: plan.limits.as_ref().map(|l| l.idle_whose.clone()),
        cancelled: outcome.cancelled,
        killed_after_marker: outcome.killed_after_marker,
        stream_error: outcome.stream_error.clone(),
        spawn_error: None,
        due_checks: plan.commands.clone(),
    }
}

/// Judge an ended attempt: core's one gate decides whether its agent passed, and a pass
/// owes the task's checks, which run here, in the attempt's folder, before the verdict.
fn judge_ended(executor: &dyn Executor, outcome: Outcome, plan: &CheckPlan) -> AttemptResult {
    let transcript = plan
        .transcript
        .as_ref()
        .and_then(|t| t.find(outcome.session_id.as_deref()));
    let evidence = evidence(&outcome, transcript.as_ref(), plan);
    let verdict = match judge(&evidence, now()) {
        Judgement::Settled(verdict) => verdict,
        Judgement::ChecksDue(due) => {
            let runs = run_checks(executor, plan, due.commands());
            due.finish(&runs, now())
        }
    };
    AttemptResult {
        outcome,
        verdict,
        transcript,
    }
}

/// Run each check with `sh -c`, in order, stopping at the first that fails.
pub(crate) fn run_checks(
    executor: &dyn Executor,
    plan: &CheckPlan,
    commands: &[String],
) -> Vec<CheckRun> {
    run_checks_watched(executor, plan, commands, &|_| true)
}

/// Like [`run_checks`], handing each check's canceller to `on_start` as the check starts,
/// so another thread can stop it; `on_start` answering false (a stop came first) cancels
/// that check at once, and as a failed check it ends the run of checks.
pub(crate) fn run_checks_watched(
    executor: &dyn Executor,
    plan: &CheckPlan,
    commands: &[String],
    on_start: &dyn Fn(&Canceller) -> bool,
) -> Vec<CheckRun> {
    let mut runs = Vec::new();
    for (index, command) in commands.iter().enumerate() {
        let run = run_check(executor, plan, index, command, on_start);
        let failed = run.exit_code != Some(0);
        runs.push(run);
        if failed {
            break;
        }
    }
    runs
}

fn run_check(
    executor: &dyn Executor,
    plan: &CheckPlan,
    index: usize,
    command: &str,
    on_start: &dyn Fn(&Canceller) -> bool,
) -> CheckRun {
    let spec = LaunchSpec {
        program: "sh".into(),
        args: vec!["-c".into(), command.to_owned()],
        env: plan.git_env.clone(),
        stdin: None,
        prompt_file: None,
        cwd: plan.cwd.clone(),
        needs_tty: false,
        stream: StreamKind::Plain,
        receives_marker: false,
        relay: None,
    };
    let options = SuperviseOptions {
        timeout: plan.timeout,
        idle_after: plan.timeout,
        idle_timeout: Duration::ZERO,
        watch_dir: None,
        kill_grace: plan.kill_grace,
        marker_grace: plan.kill_grace,
        log_path: plan
            .log_dir
            .join(format!("{}.check-{}.log", plan.attempt_id, index + 1)),
        log_cap_bytes: 4 * 1024 * 1024,
        tail_bytes: 4 * 1024,
        marker_token: None,
        secrets: plan.secrets.clone(),
        relay: None,
        contain: plan.contain.clone(),
    };
    // Nobody watches a check's live events: drop the receiver so they are not queued for
    // the length of the check (the monitor ignores a closed channel).
    let (tx, rx) = mpsc::channel();
    drop(rx);
    let started = std::time::Instant::now();
    match executor.start(&spec, options, tx) {
        Ok(check) => {
            let canceller = check.canceller();
            if !on_start(&canceller) {
                canceller.cancel();
            }
            let outcome = check.wait();
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let mut tail = outcome.tail;
            if outcome.timed_out {
                tail.push_str("\n[weft: check timed out]");
            }
            CheckRun {
                command: command.to_owned(),
                exit_code: if outcome.timed_out {
                    None
                } else {
                    outcome.exit_code
                },
                output_tail: tail,
                duration_ms: Some(duration_ms),
            }
        }
        Err(e) => CheckRun {
            command: command.to_owned(),
            exit_code: None,
            output_tail: e,
            duration_ms: None,
        },
    }
}

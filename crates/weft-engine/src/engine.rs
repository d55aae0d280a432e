//! The run loop.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use fs_err as fs;
use serde_json::json;
use weft_agents::AgentEvent;
use weft_agents::preflight;
use weft_agents::supervise::{
    Canceller, OutputStream, SupervisorEvent, kill_group, process_alive, process_start_ticks,
};
use weft_core::prompt::{TAIL_CHARS, tail_chars};
use weft_core::schedule::{next_to_start, stopped_by_failure, waiting_for_person};
use weft_core::verdict::{Evidence, decide};
use weft_core::{
    Attempt, AttemptStatus, Denial, OutputSummary, Plan, PlanStatus, RunStatus, TaskKind,
    TaskStatus, Timestamp, VerdictOutcome,
};
use weft_store::{OpenOptions, Store, TaskUpdate};

use crate::attempt::{
    self, CheckPlan, LaunchIds, Msg, TranscriptPlan, plan_launch, runner_name, supervise_options,
};
use crate::control::release_blocked;
use crate::error::EngineError;
use crate::isolation::{Cut, Isolation};
use crate::{EngineConfig, EngineEvent};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    pub run_id: String,
    pub status: RunStatus,
    /// Every task completed or was skipped.
    pub all_done: bool,
}

pub(crate) fn now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
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

/// A running attempt as the loop tracks it.
struct Live {
    attempt: Attempt,
    order: u32,
    title: String,
    receives_marker: bool,
    canceller: Canceller,
    started: Instant,
    /// Set when the user cancelled it (vs. stop, which interrupts).
    cancelled_by_user: bool,
    denials: Vec<Denial>,
    agent_session: Option<String>,
    /// The last of what the assistant wrote (structured streams), for dependents.
    assistant_tail: String,
    /// Its worktree and branch (isolated AI attempts).
    cut: Option<Cut>,
    /// For a repair attempt: the files that held conflict markers.
    repair_files: Option<Vec<String>>,
    task: weft_core::Task,
}

/// How much assistant text an attempt keeps for the tasks after it.
const ASSISTANT_TAIL_BYTES: usize = 8 * 1024;

fn push_bounded(tail: &mut String, text: &str, max: usize) {
    tail.push_str(text);
    tail.push('\n');
    if tail.len() > max {
        let mut cut = tail.len() - max;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail.drain(..cut);
    }
}

/// Execute the plan until nothing more can start: every task done, or the rest blocked,
/// failed, held, waiting for a person, or stopped.
pub fn run(
    config: &EngineConfig,
    on_event: &mut dyn FnMut(EngineEvent),
) -> Result<RunSummary, EngineError> {
    let options = OpenOptions {
        busy_timeout: config.busy_timeout,
    };
    let mut store = Store::open_or_create(&config.state_dir, options)?;
    let plan_id = config.plan_id.clone();
    let plan = store.plan(&plan_id)?;
    if plan.status == PlanStatus::Draft {
        return Err(EngineError::Draft {
            plan: plan.short_id().to_owned(),
        });
    }
    preflight_runners(config, &plan)?;

    let pid = std::process::id();
    let ticks = process_start_ticks(pid).unwrap_or(0);
    let claimed = store.claim_run(
        &plan_id,
        &random_hex16()[..8],
        (pid, ticks),
        &same_process_alive,
        now(),
    )?;
    let run_id = claimed.run.id.clone();
    let log_dir = config.state_dir.join("logs").join(&run_id);
    let prompt_dir = config.state_dir.join("prompts").join(&run_id);
    for dir in [&log_dir, &prompt_dir] {
        fs::create_dir_all(dir).map_err(|source| EngineError::Io {
            path: dir.display().to_string(),
            source,
        })?;
    }

    let mut stashes = Vec::new();
    let isolation = if config.isolated {
        let prepared = Isolation::prepare(
            &config.workspace,
            &config.state_dir,
            &config.repos,
            &run_id,
            claimed.run.integration_branch.as_deref(),
            config.stash,
        )?;
        for (_, stash) in &prepared.stashes {
            on_event(EngineEvent::Notice {
                text: format!(
                    "stashed your uncommitted changes as {}; they come back when the run ends",
                    stash.short()
                ),
            });
        }
        stashes = prepared.stashes;
        let isolation = prepared.isolation;
        if let Some(base) = prepared.base {
            store.set_run_refs(
                &run_id,
                &plan_id,
                &base,
                &isolation.integration_branch,
                now(),
            )?;
        }
        Some(isolation)
    } else {
        None
    };
    store.set_plan_status(&plan_id, PlanStatus::Running, now())?;
    reconcile(&mut store, config, &plan_id, &run_id, on_event)?;
    if let Some(iso) = &isolation {
        finish_landings(
            &mut store,
            iso,
            &plan_id,
            &run_id,
            config.keep_worktrees,
            on_event,
        )?;
    }
    prepare_tasks(&mut store, config, &plan_id)?;
    let plan = store.plan(&plan_id)?;
    on_event(EngineEvent::RunStarted {
        run: run_id.clone(),
        plan: plan_id.clone(),
        continued: claimed.continued,
        tasks: plan.tasks.len(),
        parallel: config.parallel,
    });

    let (tx, rx) = mpsc::channel::<Msg>();
    let approvals = crate::approvals::RunnerApprovals::new(
        config.approval_mode,
        config.pre_approved.clone(),
        &config.state_dir,
        config.busy_timeout,
        &plan_id,
    );
    let mut live: BTreeMap<String, Live> = BTreeMap::new();
    let mut halted = false;
    let mut stopping = false;
    let mut forced: Vec<String> = Vec::new();
    // Conflicted tasks opted into one repair attempt: task id -> the branch to merge in.
    let mut repairs: BTreeMap<String, String> = BTreeMap::new();
    let mut announced_waiting: BTreeSet<String> = BTreeSet::new();

    // Scheduling work (store reads, control requests) happens when something could have
    // changed: a task finished, a poll interval passed, or at the start. Output lines and
    // other progress only update the display.
    let mut reschedule = true;
    loop {
        if !stopping && crate::interrupted(config.interrupt.as_ref()) {
            stopping = true;
            on_event(EngineEvent::Notice {
                text:
                    "interrupted: stopping the running tasks (press Ctrl-C again to quit at once)"
                        .into(),
            });
            for running in live.values() {
                running.canceller.cancel();
            }
            reschedule = true;
        }
        if reschedule {
            for request in store.take_controls(&plan_id, now())? {
                on_event(EngineEvent::ControlHandled {
                    request: request.kind.clone(),
                    task: request.task_id.clone(),
                });
                match request.kind.as_str() {
                    "stop" => {
                        stopping = true;
                        for running in live.values() {
                            running.canceller.cancel();
                        }
                    }
                    "cancel" => {
                        if let Some(task) = &request.task_id
                            && let Some(running) =
                                live.values_mut().find(|l| &l.attempt.task_id == task)
                        {
                            running.cancelled_by_user = true;
                            running.canceller.cancel();
                        }
                    }
                    "force_start" => {
                        if let Some(task) = request.task_id {
                            forced.push(task);
                        }
                    }
                    "repair" => {
                        if let Some(task) = request.task_id {
                            let branch = store
                                .attempts_of_task(&plan_id, &task)?
                                .into_iter()
                                .rev()
                                .find_map(|a| a.branch);
                            if let Some(branch) = branch {
                                repairs.insert(task, branch);
                            }
                        }
                    }
                    _ => {}
                }
            }

            let plan = store.plan(&plan_id)?;
            let mut starts: Vec<usize> = Vec::new();
            if !stopping {
                for task_id in forced.drain(..) {
                    if let Some(index) = plan.tasks.iter().position(|t| t.id == task_id)
                        && !matches!(
                            plan.tasks[index].status,
                            TaskStatus::InProgress | TaskStatus::Completed
                        )
                        && !live.values().any(|l| l.attempt.task_id == task_id)
                    {
                        starts.push(index);
                    }
                }
                let running = live.len() + starts.len();
                for index in next_to_start(&plan, running, config.parallel, halted, &|t| {
                    t.status == TaskStatus::Completed
                }) {
                    if !starts.contains(&index) {
                        starts.push(index);
                    }
                }
                if isolation.is_some() {
                    // Ops tasks share the run's one integration checkout (moved to the
                    // tip for each): one at a time, the others wait their turn.
                    let is_ops = |id: &str| plan.task(id).is_some_and(|t| t.kind == TaskKind::Ops);
                    let mut ops_busy = live.values().any(|l| is_ops(&l.attempt.task_id));
                    starts.retain(|&i| {
                        if plan.tasks[i].kind != TaskKind::Ops {
                            return true;
                        }
                        !std::mem::replace(&mut ops_busy, true)
                    });
                }
            }
            for index in starts {
                let task = &plan.tasks[index];
                match launch(
                    config,
                    &mut store,
                    &plan,
                    index,
                    &run_id,
                    &log_dir,
                    &prompt_dir,
                    &tx,
                    isolation.as_ref(),
                    &mut repairs,
                    &approvals,
                ) {
                    Ok(started) => {
                        on_event(EngineEvent::TaskStarted {
                            order: task.order,
                            task: task.id.clone(),
                            title: task.title.clone(),
                            runner: started.attempt.runner.clone(),
                            attempt: started.attempt.id.clone(),
                            number: started.attempt.number,
                            pid: started.attempt.pid,
                        });
                        live.insert(started.attempt.id.clone(), started);
                    }
                    Err(failure) => {
                        // The attempt could not even start: a failed attempt with the reason.
                        let failed =
                            fail_unstarted(&mut store, &plan, index, &run_id, &failure, config)?;
                        on_event(EngineEvent::TaskFinished {
                            order: task.order,
                            task: task.id.clone(),
                            title: task.title.clone(),
                            passed: false,
                            status: TaskStatus::Failed.to_string(),
                            reason: failure.clone(),
                            duration_ms: 0,
                            cost_usd: None,
                            denials: 0,
                        });
                        after_failure(
                            &mut store,
                            config,
                            &plan_id,
                            &failed,
                            &mut halted,
                            on_event,
                        )?;
                    }
                }
            }

            if live.is_empty() {
                let plan = store.plan(&plan_id)?;
                for index in waiting_for_person(&plan, &|t| t.status == TaskStatus::Completed) {
                    let task = &plan.tasks[index];
                    if announced_waiting.insert(task.id.clone()) {
                        on_event(EngineEvent::WaitingForPerson {
                            order: task.order,
                            task: task.id.clone(),
                            title: task.title.clone(),
                        });
                    }
                }
                if stopping
                    || next_to_start(&plan, 0, config.parallel, halted, &|t| {
                        t.status == TaskStatus::Completed
                    })
                    .is_empty()
                        && forced.is_empty()
                {
                    break;
                }
                continue;
            }
        }

        reschedule = false;
        let mut messages = Vec::new();
        match rx.recv_timeout(config.poll_interval) {
            Ok(message) => messages.push(message),
            Err(RecvTimeoutError::Timeout) => {
                reschedule = true;
                on_event(EngineEvent::Tick);
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
        // Whatever else arrived too, so output never queues up behind the poll.
        messages.extend(rx.try_iter());
        // Landing is one task at a time, lowest plan order first among those waiting.
        let order_of = |message: &Msg| match message {
            Msg::Finished { attempt, .. } => live.get(attempt).map_or(u32::MAX, |l| l.order),
            Msg::Supervisor { .. } => 0,
        };
        messages.sort_by_key(|m| (matches!(m, Msg::Finished { .. }), order_of(m)));
        for message in messages {
            if let Msg::Finished { attempt, .. } = &message {
                // Its open permission questions are nobody's any more.
                approvals.attempt_ended(attempt);
            }
            reschedule |= handle(
                message,
                &mut live,
                &mut store,
                config,
                &plan_id,
                &mut halted,
                stopping,
                isolation.as_ref(),
                on_event,
            )?;
        }
    }

    if let Some(iso) = &isolation {
        for text in iso.restore_stashes(&stashes) {
            on_event(EngineEvent::Notice { text });
        }
    }
    finish(&mut store, &plan_id, &run_id, stopping, on_event)
}

/// Refuse to start when a task that still has to run names a runner that is unknown or
/// unavailable.
fn preflight_runners(config: &EngineConfig, plan: &Plan) -> Result<(), EngineError> {
    let mut checked: HashMap<String, preflight::Availability> = HashMap::new();
    for (index, task) in plan.tasks.iter().enumerate() {
        if matches!(task.status, TaskStatus::Completed | TaskStatus::Skipped)
            || task.kind == TaskKind::Manual
        {
            continue;
        }
        let manifest = attempt::manifest_for(config, plan, index)?;
        let name = runner_name(config, plan, index);
        let availability = checked.entry(name.clone()).or_insert_with(|| {
            preflight::check(
                manifest,
                config.path_env.as_deref(),
                config.preflight_timeout,
            )
        });
        if !availability.available {
            return Err(EngineError::RunnerUnavailable {
                order: task.order,
                task: task.id.clone(),
                runner: name,
                reason: availability
                    .reason
                    .clone()
                    .unwrap_or_else(|| "the preflight failed".into()),
            });
        }
    }
    Ok(())
}

/// Attempts recorded as running whose engine is gone: kill their leftovers and mark them
/// interrupted.
fn reconcile(
    store: &mut Store,
    config: &EngineConfig,
    plan_id: &str,
    run_id: &str,
    on_event: &mut dyn FnMut(EngineEvent),
) -> Result<(), EngineError> {
    for mut attempt in store.running_attempts()? {
        if attempt.plan_id != plan_id {
            continue;
        }
        let mut killed = false;
        if let (Some(pid), Some(group)) = (attempt.pid, attempt.process_group)
            && same_process_alive(pid, attempt.process_start_ticks)
        {
            killed = kill_group(group, config.kill_grace);
        }
        attempt.status = AttemptStatus::Interrupted;
        attempt.ended_at = Some(now());
        store.save_attempt(
            &attempt,
            Some((
                "attempt_interrupted",
                json!({ "attempt": attempt.id, "task": attempt.task_id, "run": run_id, "killed_leftover": killed }),
            )),
            now(),
        )?;
        on_event(EngineEvent::Reconciled {
            task: attempt.task_id.clone(),
            attempt: attempt.id.clone(),
            killed_leftover: killed,
        });
    }
    Ok(())
}

/// Passed attempts whose landing was journaled but never recorded (weft died in
/// between): land them now. Landing is idempotent: work already merged is recognised.
fn finish_landings(
    store: &mut Store,
    iso: &Isolation,
    plan_id: &str,
    run_id: &str,
    keep_worktrees: bool,
    on_event: &mut dyn FnMut(EngineEvent),
) -> Result<(), EngineError> {
    let plan = store.plan(plan_id)?;
    for attempt in store.attempts_of_plan(plan_id)? {
        let (Some(branch), Some(cut_from)) = (&attempt.branch, &attempt.cut_from) else {
            continue;
        };
        if attempt.run_id != run_id
            || attempt.status != AttemptStatus::Passed
            || attempt.landing.is_some()
        {
            continue;
        }
        let Some(task) = plan.task(&attempt.task_id) else {
            continue;
        };
        let folder: std::path::PathBuf =
            attempt.worktree.clone().map(Into::into).unwrap_or_default();
        let Some(cut) = iso.recorded_cut(&folder, branch, cut_from) else {
            continue;
        };
        let landing = iso
            .land(&cut, task)
            .unwrap_or_else(|e| weft_core::Landing::Conflicted {
                files: Vec::new(),
                detail: format!("landing failed: {e}"),
            });
        let landed = landing.is_landed();
        if landed && !keep_worktrees {
            iso.drop_worktree(&cut);
        }
        let status = if landed {
            TaskStatus::Completed
        } else {
            TaskStatus::Conflicted
        };
        store.save_attempt(
            &Attempt {
                landing: Some(landing),
                ..attempt.clone()
            },
            Some((
                "landing_finished",
                json!({ "attempt": attempt.id, "task": task.id, "after_restart": true }),
            )),
            now(),
        )?;
        store.update_task(
            plan_id,
            &task.id,
            &TaskUpdate {
                status: Some(status),
                verdict: Some(attempt.verdict.clone()),
                ..TaskUpdate::default()
            },
            if landed {
                "task_completed"
            } else {
                "task_failed"
            },
            json!({ "task": task.id, "status": status.as_str(), "after_restart": true }),
            now(),
        )?;
        on_event(EngineEvent::TaskFinished {
            order: task.order,
            task: task.id.clone(),
            title: task.title.clone(),
            passed: landed,
            status: status.to_string(),
            reason: "its landing was finished after a restart".into(),
            duration_ms: 0,
            cost_usd: attempt.cost_usd,
            denials: attempt.denials.len(),
        });
    }
    Ok(())
}

/// Before running: interrupted or stale in-progress tasks go back in line; with
/// `retry_failed`, failed and cancelled ones too; descendants of failures are blocked.
fn prepare_tasks(
    store: &mut Store,
    config: &EngineConfig,
    plan_id: &str,
) -> Result<(), EngineError> {
    let plan = store.plan(plan_id)?;
    let mut requeue: Vec<String> = Vec::new();
    for task in &plan.tasks {
        let again = match task.status {
            TaskStatus::InProgress | TaskStatus::Interrupted => true,
            TaskStatus::Failed | TaskStatus::Cancelled => config.retry_failed,
            _ => false,
        };
        if again {
            requeue.push(task.id.clone());
        }
    }
    if !requeue.is_empty() {
        let pending = TaskUpdate {
            status: Some(TaskStatus::Pending),
            ..TaskUpdate::default()
        };
        let updates: Vec<(&str, &TaskUpdate)> =
            requeue.iter().map(|id| (id.as_str(), &pending)).collect();
        store.update_tasks(
            plan_id,
            &updates,
            "tasks_requeued",
            json!({ "tasks": requeue }),
            now(),
        )?;
        for id in &requeue {
            release_blocked(store, plan_id, id)?;
        }
    }
    // Two guards: descendants of anything failed are stored as blocked as well as refused.
    let plan = store.plan(plan_id)?;
    for task in &plan.tasks {
        if matches!(
            task.status,
            TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Conflicted
        ) {
            block_descendants(store, &plan, &task.id)?;
        }
    }
    Ok(())
}

/// Store the pending descendants of `failed` as blocked; returns their ids.
fn block_descendants(
    store: &mut Store,
    plan: &Plan,
    failed: &str,
) -> Result<Vec<String>, EngineError> {
    let blocked: Vec<String> = stopped_by_failure(plan, failed)
        .into_iter()
        .map(|i| &plan.tasks[i])
        .filter(|t| {
            matches!(
                t.status,
                TaskStatus::Pending | TaskStatus::Approved | TaskStatus::Interrupted
            )
        })
        .map(|t| t.id.clone())
        .collect();
    if blocked.is_empty() {
        return Ok(blocked);
    }
    let update = TaskUpdate {
        status: Some(TaskStatus::Blocked),
        ..TaskUpdate::default()
    };
    let updates: Vec<(&str, &TaskUpdate)> =
        blocked.iter().map(|id| (id.as_str(), &update)).collect();
    store.update_tasks(
        &plan.id,
        &updates,
        "tasks_blocked",
        json!({ "by": failed, "tasks": blocked }),
        now(),
    )?;
    Ok(blocked)
}

#[allow(clippy::too_many_arguments)]
fn launch(
    config: &EngineConfig,
    store: &mut Store,
    plan: &Plan,
    index: usize,
    run_id: &str,
    log_dir: &std::path::Path,
    prompt_dir: &std::path::Path,
    tx: &mpsc::Sender<Msg>,
    isolation: Option<&Isolation>,
    repairs: &mut BTreeMap<String, String>,
    approvals: &std::sync::Arc<crate::approvals::RunnerApprovals>,
) -> Result<Live, String> {
    let task = &plan.tasks[index];
    let attempt_id = uuid::Uuid::new_v4().simple().to_string();
    let session_id = uuid::Uuid::new_v4().hyphenated().to_string();
    let number = store
        .attempts_of_task(&plan.id, &task.id)
        .map_err(|e| e.to_string())?
        .iter()
        .filter(|a| a.run_id == run_id)
        .count() as u32
        + 1;
    // Isolated runs: an AI task works in its own worktree; ops tasks in the integration
    // checkout, so they exercise exactly the work that landed.
    let mut repair_files = None;
    let mut repair_note = None;
    let (cwd, cut) = match isolation {
        Some(iso) if task.kind == TaskKind::Ai => {
            let cut = iso
                .cut(task, number, &config.runnable)
                .map_err(|e| e.to_string())?;
            if let Some(branch) = repairs.remove(&task.id) {
                let files = iso
                    .merge_for_repair(&cut, &branch)
                    .map_err(|e| e.to_string())?;
                repair_note = Some(format!(
                    "## Repair\n\nThis is a repair attempt. Your earlier work on this task (branch {branch}) could not land: it conflicts with work that landed meanwhile. It has been merged into this folder; resolve the conflicts in {} so that both sides' intent survives, and remove every conflict marker (`<<<<<<<`, `=======`, `>>>>>>>`). The merge is in progress: just edit the files; weft commits them.",
                    if files.is_empty() {
                        "the merged files".to_owned()
                    } else {
                        files.join(", ")
                    }
                ));
                repair_files = Some(files);
            }
            (cut.path.clone(), Some(cut))
        }
        Some(iso) => (iso.integration_checkout().map_err(|e| e.to_string())?, None),
        None => (config.workspace.clone(), None),
    };
    let launch = plan_launch(
        config,
        plan,
        index,
        LaunchIds {
            marker_id: &random_hex16(),
            session_id: &session_id,
            attempt_id: &attempt_id,
            prompt_dir,
            cwd: &cwd,
            repair_note: repair_note.as_deref(),
        },
    )
    .map_err(|e| e.to_string())?;
    let log_path = log_dir.join(format!("{attempt_id}.log"));
    let receives_marker = launch.marker.is_some();
    let transcript_store = attempt::manifest_for(config, plan, index)
        .ok()
        .and_then(|m| m.transcript());
    let mut record = Attempt {
        id: attempt_id.clone(),
        run_id: run_id.to_owned(),
        plan_id: plan.id.clone(),
        task_id: task.id.clone(),
        number,
        runner: launch.runner.clone(),
        status: AttemptStatus::Running,
        cwd: cwd.display().to_string(),
        worktree: cut.as_ref().map(|c| c.path.display().to_string()),
        branch: cut.as_ref().map(|c| c.branch.clone()),
        marker: launch.marker.as_ref().map(|m| m.token()),
        session_id: Some(session_id.clone()),
        agent_session_id: None,
        pid: None,
        process_group: None,
        process_start_ticks: None,
        exit_code: None,
        signal: None,
        started_at: now(),
        ended_at: None,
        verdict: None,
        log_path: Some(log_path.display().to_string()),
        input_tokens: None,
        output_tokens: None,
        cost_usd: None,
        denials: Vec::new(),
        final_text: None,
        cut_from: match (isolation, &cut) {
            (Some(iso), Some(c)) => Some(iso.encode_cut_from(c)),
            _ => None,
        },
        landing: None,
    };
    let checks = CheckPlan {
        commands: if task.kind == TaskKind::Ai || task.kind == TaskKind::Ops {
            task.checks.clone()
        } else {
            Vec::new()
        },
        cwd: cwd.clone(),
        log_dir: log_dir.to_owned(),
        attempt_id: attempt_id.clone(),
        timeout: config.task_timeout,
        kill_grace: config.kill_grace,
        secrets: config.secrets.clone(),
        receives_marker,
        transcript: match (receives_marker, transcript_store) {
            (true, Some(store)) => Some(TranscriptPlan {
                store,
                locator: config.locator.clone(),
                cwd: cwd.clone(),
                // A little slack: file times and our clock need not agree to the millisecond.
                started_at: SystemTime::now() - std::time::Duration::from_secs(2),
                marker: launch.marker.as_ref().map(|m| m.token()),
                session_id: (store == weft_agents::transcript::Store::ClaudeCode)
                    .then(|| session_id.clone()),
                answer_chars: config.answer_chars,
            }),
            _ => None,
        },
    };
    let record_links: Vec<String> = cut.as_ref().map(Cut::links).unwrap_or_default();
    let mut options = supervise_options(config, log_path, launch.marker.as_ref());
    if launch.spec.relay.is_some() {
        options.relay = Some(approvals.relay(
            &attempt_id,
            &format!("task #{} {}", task.order, task.id),
            &cwd,
        ));
    }
    let started = attempt::start(&attempt_id, &launch.spec, options, checks, tx.clone())?;
    record.pid = Some(started.pid);
    record.process_group = Some(started.process_group);
    record.process_start_ticks = process_start_ticks(started.pid);
    record.started_at = to_millis(started.started_at);
    let status_update = TaskUpdate {
        status: Some(TaskStatus::InProgress),
        ..TaskUpdate::default()
    };
    let stored = store
        .save_attempt(
            &record,
            Some((
                "attempt_started",
                json!({
                    "attempt": attempt_id, "task": task.id, "number": number, "runner": launch.runner,
                    "pid": started.pid,
                    "links": record_links,
                }),
            )),
            now(),
        )
        .and_then(|()| {
            store.update_task(
                &plan.id,
                &task.id,
                &status_update,
                "task_started",
                json!({ "task": task.id, "attempt": attempt_id }),
                now(),
            )
        });
    if let Err(e) = stored {
        started.canceller.cancel();
        return Err(e.to_string());
    }
    Ok(Live {
        attempt: record,
        order: task.order,
        title: task.title.clone(),
        receives_marker,
        canceller: started.canceller,
        started: Instant::now(),
        cancelled_by_user: false,
        denials: Vec::new(),
        agent_session: None,
        assistant_tail: String::new(),
        cut,
        task: task.clone(),
        repair_files,
    })
}

/// Record a task whose attempt could not start as failed, with the reason as its verdict.
fn fail_unstarted(
    store: &mut Store,
    plan: &Plan,
    index: usize,
    run_id: &str,
    reason: &str,
    config: &EngineConfig,
) -> Result<String, EngineError> {
    let task = &plan.tasks[index];
    let evidence = Evidence {
        receives_marker: false,
        marker_seen: None,
        exit_code: None,
        signal: None,
        timed_out: false,
        cancelled: false,
        killed_after_marker: false,
        stream_error: None,
        spawn_error: Some(reason.to_owned()),
        checks: Vec::new(),
    };
    let verdict = decide(&evidence, now());
    let attempt = Attempt {
        id: uuid::Uuid::new_v4().simple().to_string(),
        run_id: run_id.to_owned(),
        plan_id: plan.id.clone(),
        task_id: task.id.clone(),
        number: 0,
        runner: runner_name(config, plan, index),
        status: AttemptStatus::Failed,
        cwd: config.workspace.display().to_string(),
        worktree: None,
        branch: None,
        marker: None,
        session_id: None,
        agent_session_id: None,
        pid: None,
        process_group: None,
        process_start_ticks: None,
        exit_code: None,
        signal: None,
        started_at: now(),
        ended_at: Some(now()),
        verdict: Some(verdict.clone()),
        log_path: None,
        input_tokens: None,
        output_tokens: None,
        cost_usd: None,
        denials: Vec::new(),
        final_text: None,
        cut_from: None,
        landing: None,
    };
    let number = store.attempts_of_task(&plan.id, &task.id)?.len() as u32 + 1;
    store.save_attempt(
        &Attempt { number, ..attempt },
        Some((
            "attempt_failed_to_start",
            json!({ "task": task.id, "reason": reason }),
        )),
        now(),
    )?;
    store.update_task(
        &plan.id,
        &task.id,
        &TaskUpdate {
            status: Some(TaskStatus::Failed),
            verdict: Some(Some(verdict.clone())),
            output: Some(Some(OutputSummary {
                review_reason: verdict.reason.clone(),
                log_tail: String::new(),
                captured_at: now(),
            })),
            hold: None,
        },
        "task_failed",
        json!({ "task": task.id, "reason": verdict.reason }),
        now(),
    )?;
    Ok(task.id.clone())
}

fn after_failure(
    store: &mut Store,
    config: &EngineConfig,
    plan_id: &str,
    failed: &str,
    halted: &mut bool,
    on_event: &mut dyn FnMut(EngineEvent),
) -> Result<(), EngineError> {
    let plan = store.plan(plan_id)?;
    let blocked = block_descendants(store, &plan, failed)?;
    if !blocked.is_empty() {
        on_event(EngineEvent::TasksBlocked {
            by: failed.to_owned(),
            tasks: blocked,
        });
    }
    if config.halt_on_failure && !*halted {
        *halted = true;
        on_event(EngineEvent::Halted {
            by: failed.to_owned(),
        });
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn handle(
    message: Msg,
    live: &mut BTreeMap<String, Live>,
    store: &mut Store,
    config: &EngineConfig,
    plan_id: &str,
    halted: &mut bool,
    stopping: bool,
    isolation: Option<&Isolation>,
    on_event: &mut dyn FnMut(EngineEvent),
) -> Result<bool, EngineError> {
    match message {
        Msg::Supervisor { attempt, event } => {
            let Some(running) = live.get_mut(&attempt) else {
                return Ok(false);
            };
            let task = running.attempt.task_id.clone();
            match event {
                SupervisorEvent::Line { stream, text } => {
                    if !running.receives_marker
                        || stream == OutputStream::Stderr
                        || running.attempt.runner == "exec"
                    {
                        on_event(EngineEvent::TaskActivity {
                            task,
                            text: tail_chars(&text, 200),
                        });
                    }
                }
                SupervisorEvent::Agent(agent) => match agent {
                    AgentEvent::Session { id } => running.agent_session = Some(id),
                    AgentEvent::AssistantText { text, .. } => {
                        push_bounded(&mut running.assistant_tail, &text, ASSISTANT_TAIL_BYTES);
                        on_event(EngineEvent::TaskActivity {
                            task,
                            text: tail_chars(text.lines().last().unwrap_or(""), 200),
                        });
                    }
                    AgentEvent::ToolUse {
                        name,
                        summary,
                        subagent: false,
                        ..
                    } => on_event(EngineEvent::TaskActivity {
                        task,
                        // Shown as before the planner's longer summaries: cut at 200.
                        text: tail_chars(
                            &format!(
                                "{name}: {}",
                                weft_agents::stream::one_line(
                                    &summary,
                                    weft_agents::stream::SUMMARY_MAX
                                )
                            ),
                            200,
                        ),
                    }),
                    AgentEvent::PermissionDenied { tool, detail, .. }
                        if running.denials.len() < 100 =>
                    {
                        running.denials.push(Denial { tool, detail });
                    }
                    _ => {}
                },
                SupervisorEvent::Idle { silent_for } => on_event(EngineEvent::TaskIdle {
                    task,
                    silent_secs: silent_for.as_secs(),
                }),
                SupervisorEvent::Started { .. } | SupervisorEvent::MarkerSeen { .. } => {}
            }
        }
        Msg::Finished { attempt, result } => {
            let Some(running) = live.remove(&attempt) else {
                return Ok(false);
            };
            finish_attempt(
                running, *result, store, config, plan_id, halted, stopping, isolation, on_event,
            )?;
            return Ok(true);
        }
    }
    Ok(false)
}

#[allow(clippy::too_many_arguments)]
fn finish_attempt(
    running: Live,
    result: attempt::AttemptResult,
    store: &mut Store,
    config: &EngineConfig,
    plan_id: &str,
    halted: &mut bool,
    stopping: bool,
    isolation: Option<&Isolation>,
    on_event: &mut dyn FnMut(EngineEvent),
) -> Result<(), EngineError> {
    let outcome = result.outcome;
    let transcript = result.transcript;
    let strong_transcript = transcript.as_ref().filter(|t| !t.weak);
    let transcript_answer = strong_transcript.and_then(|t| t.final_answer.clone());
    let evidence = Evidence {
        receives_marker: running.receives_marker,
        marker_seen: outcome.marker.map(str::to_owned).or_else(|| {
            strong_transcript
                .filter(|t| t.marker_found)
                .map(|_| "transcript".to_owned())
        }),
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        timed_out: outcome.timed_out,
        cancelled: outcome.cancelled,
        killed_after_marker: outcome.killed_after_marker,
        stream_error: outcome.stream_error.clone(),
        spawn_error: None,
        checks: result.checks,
    };
    let mut verdict = decide(&evidence, now());
    let mut passed = verdict.outcome == VerdictOutcome::Pass;
    // Isolated work lands on the integration branch before it counts as met.
    let mut landing = None;
    let mut conflicted = false;
    if passed && let (Some(iso), Some(cut)) = (isolation, &running.cut) {
        // Journal first: a passed attempt with no landing recorded is finished (landed) at
        // the next start if weft dies before it can write the outcome below.
        store.save_attempt(
            &Attempt {
                status: AttemptStatus::Passed,
                ended_at: Some(now()),
                verdict: Some(verdict.clone()),
                ..running.attempt.clone()
            },
            Some((
                "landing_started",
                json!({ "attempt": running.attempt.id, "task": running.attempt.task_id, "branch": cut.branch }),
            )),
            now(),
        )?;
        // A repair lands only when no conflict marker is left in the files it had to resolve.
        let markers_left = match &running.repair_files {
            Some(files) => iso
                .markers_left(cut, files)
                .unwrap_or_else(|_| files.clone()),
            None => Vec::new(),
        };
        let landed = if markers_left.is_empty() {
            iso.land(cut, &running.task)
                .unwrap_or_else(|e| weft_core::Landing::Conflicted {
                    files: Vec::new(),
                    detail: format!("landing failed: {e}"),
                })
        } else {
            weft_core::Landing::Conflicted {
                detail: format!("conflict markers are still in {}", markers_left.join(", ")),
                files: markers_left,
            }
        };
        match &landed {
            weft_core::Landing::Landed { merge } => {
                verdict
                    .reason
                    .push_str(&format!(" Landed as {}.", &merge[..merge.len().min(12)]));
                if !config.keep_worktrees {
                    iso.drop_worktree(cut);
                }
            }
            weft_core::Landing::NoChanges => {
                verdict
                    .reason
                    .push_str(" It changed nothing, so nothing was landed.");
                if !config.keep_worktrees {
                    iso.drop_worktree(cut);
                }
            }
            weft_core::Landing::Conflicted { files, detail } => {
                conflicted = true;
                passed = false;
                verdict.reason = if files.is_empty() || detail.starts_with("conflict markers") {
                    format!("Conflicted: {detail}")
                } else {
                    format!(
                        "Conflicted: landing it conflicts with the integration branch in {}; its branch {} and worktree are kept",
                        files.join(", "),
                        cut.branch
                    )
                };
            }
        }
        landing = Some(landed);
    }
    // A stop interrupts (retryable on the next run); a user's cancel cancels.
    let interrupted = outcome.cancelled && !running.cancelled_by_user && stopping;
    let (attempt_status, task_status) = if conflicted {
        (AttemptStatus::Passed, TaskStatus::Conflicted)
    } else if passed {
        (AttemptStatus::Passed, TaskStatus::Completed)
    } else if interrupted {
        (AttemptStatus::Interrupted, TaskStatus::Interrupted)
    } else if outcome.cancelled {
        (AttemptStatus::Cancelled, TaskStatus::Cancelled)
    } else {
        (AttemptStatus::Failed, TaskStatus::Failed)
    };
    let mut denials = running.denials;
    for (tool, detail) in &outcome.permission_denials {
        if denials.len() < 100
            && !denials
                .iter()
                .any(|d| &d.tool == tool && &d.detail == detail)
        {
            denials.push(Denial {
                tool: tool.clone(),
                detail: detail.clone(),
            });
        }
    }
    let attempt = Attempt {
        status: attempt_status,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        ended_at: Some(now()),
        verdict: Some(verdict.clone()),
        input_tokens: outcome.input_tokens,
        output_tokens: outcome.output_tokens,
        cost_usd: outcome.cost_usd,
        denials: denials.clone(),
        final_text: outcome.final_text.clone().or(transcript_answer.clone()),
        agent_session_id: outcome.session_id.clone().or(running.agent_session),
        landing,
        ..running.attempt
    };
    store.save_attempt(
        &attempt,
        Some((
            "attempt_finished",
            json!({
                "attempt": attempt.id, "task": attempt.task_id, "status": attempt_status.as_str(),
                "reason": verdict.reason,
                "transcript": transcript.as_ref().map(|t| json!({
                    "path": t.path, "weak": t.weak, "marker_found": t.marker_found, "how": t.how,
                })),
            }),
        )),
        now(),
    )?;
    // What dependents are handed: what the assistant wrote last (structured streams), else
    // its final answer, else its raw output.
    let carried = transcript_answer
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .or(Some(running.assistant_tail.as_str()).filter(|t| !t.trim().is_empty()))
        .or(outcome
            .final_text
            .as_deref()
            .filter(|t| !t.trim().is_empty()))
        .unwrap_or(&outcome.tail);
    store.update_task(
        plan_id,
        &attempt.task_id,
        &TaskUpdate {
            status: Some(task_status),
            verdict: Some(Some(verdict.clone())),
            output: Some(Some(OutputSummary {
                review_reason: verdict.reason.clone(),
                log_tail: tail_chars(carried, TAIL_CHARS * 4),
                captured_at: now(),
            })),
            hold: None,
        },
        if passed { "task_completed" } else { "task_failed" },
        json!({ "task": attempt.task_id, "status": task_status.as_str(), "reason": verdict.reason }),
        now(),
    )?;
    on_event(EngineEvent::TaskFinished {
        order: running.order,
        task: attempt.task_id.clone(),
        title: running.title,
        passed,
        status: task_status.to_string(),
        reason: verdict.reason.clone(),
        duration_ms: running.started.elapsed().as_millis() as u64,
        cost_usd: attempt.cost_usd,
        denials: denials.len(),
    });
    if matches!(
        task_status,
        TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Conflicted
    ) {
        after_failure(store, config, plan_id, &attempt.task_id, halted, on_event)?;
    } else if passed {
        // A forced start can complete a task below a failure; what it shields runs again.
        release_blocked(store, plan_id, &attempt.task_id)?;
    }
    Ok(())
}

fn finish(
    store: &mut Store,
    plan_id: &str,
    run_id: &str,
    stopped: bool,
    on_event: &mut dyn FnMut(EngineEvent),
) -> Result<RunSummary, EngineError> {
    let plan = store.plan(plan_id)?;
    let count = |wanted: &[TaskStatus]| {
        plan.tasks
            .iter()
            .filter(|t| wanted.contains(&t.status))
            .count()
    };
    let completed = count(&[TaskStatus::Completed]);
    let skipped = count(&[TaskStatus::Skipped]);
    let failed = count(&[
        TaskStatus::Failed,
        TaskStatus::Cancelled,
        TaskStatus::Conflicted,
    ]);
    let blocked = count(&[TaskStatus::Blocked]);
    let all_done = completed + skipped == plan.tasks.len();
    let status = if all_done {
        RunStatus::Completed
    } else if stopped {
        RunStatus::Stopped
    } else {
        RunStatus::Failed
    };
    let attempts = store.attempts_of_plan(plan_id)?;
    let (input_tokens, output_tokens, cost_usd) = attempts
        .iter()
        .filter(|a| a.run_id == run_id)
        .fold((0u64, 0u64, 0f64), |(i, o, c), a| {
            (
                i + a.input_tokens.unwrap_or(0),
                o + a.output_tokens.unwrap_or(0),
                c + a.cost_usd.unwrap_or(0.0),
            )
        });
    store.release_run(run_id, plan_id, status, now())?;
    let plan_status = match status {
        RunStatus::Completed => PlanStatus::Completed,
        RunStatus::Stopped => PlanStatus::Approved,
        _ => PlanStatus::Failed,
    };
    store.set_plan_status(plan_id, plan_status, now())?;
    on_event(EngineEvent::RunEnded {
        run: run_id.to_owned(),
        status: status.as_str().to_owned(),
        completed,
        skipped,
        failed,
        blocked,
        waiting: plan.tasks.len() - completed - skipped - failed - blocked,
        input_tokens,
        output_tokens,
        cost_usd,
    });
    Ok(RunSummary {
        run_id: run_id.to_owned(),
        status,
        all_done,
    })
}

//! Recovery moves and control requests, from any terminal, whether or not a run is active.
//!
//! State changes go straight to the store (a running engine sees the plan's revision move
//! and reads the plan again); what only the engine can do (kill a running attempt, stop,
//! start out of turn) is left as a control request it picks up.

use weft_core::edit::{Edit, TaskChanges, apply};
use weft_core::event::{ControlRequest, Event, EventKind};
use weft_core::schedule::{descendants, stopped_by_failure};
use weft_core::verdict::marked_complete;
use weft_core::{Plan, TaskStatus, resolve_task_ref};
use weft_store::{Store, StoreError, TaskUpdate};

use crate::engine::{now, same_process_alive};
use crate::error::EngineError;

pub mod revert;

/// What a control command did, one line per fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlReport {
    pub lines: Vec<String>,
}

/// A task a command names in what it reports or asks: its order, id and status before.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskRef {
    pub order: u32,
    pub id: String,
    pub was: TaskStatus,
}

/// How many tasks a line names before it counts the rest.
pub const TASKS_SHOWN: usize = 20;

/// `#1 "a", #2 "b" and 3 more`: at most [`TASKS_SHOWN`] tasks, the rest counted.
pub fn list_tasks(tasks: &[TaskRef]) -> String {
    let mut text = tasks
        .iter()
        .take(TASKS_SHOWN)
        .map(|t| format!("#{} {:?}", t.order, t.id))
        .collect::<Vec<_>>()
        .join(", ");
    if tasks.len() > TASKS_SHOWN {
        text.push_str(&format!(" and {} more", tasks.len() - TASKS_SHOWN));
    }
    text
}

fn failed_like(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Conflicted
    )
}

/// Whether any task upstream of `index` (transitively) failed.
fn has_failed_ancestor(plan: &Plan, index: usize) -> bool {
    let mut stack: Vec<&str> = plan.tasks[index]
        .dependencies
        .iter()
        .map(String::as_str)
        .collect();
    let mut seen = std::collections::HashSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if let Some(task) = plan.task(id) {
            if failed_like(task.status) {
                return true;
            }
            // A done dependency shields what lies above it (as readiness does).
            if !matches!(task.status, TaskStatus::Completed | TaskStatus::Skipped) {
                stack.extend(task.dependencies.iter().map(String::as_str));
            }
        }
    }
    false
}

/// The blocked descendants of `task_id` with no failed ancestor left.
pub(crate) fn releasable(plan: &Plan, task_id: &str) -> Vec<String> {
    descendants(plan, task_id)
        .into_iter()
        .filter(|&i| plan.tasks[i].status == TaskStatus::Blocked && !has_failed_ancestor(plan, i))
        .map(|i| plan.tasks[i].id.clone())
        .collect()
}

/// Blocked descendants of `task_id` with no failed ancestor left go back to pending.
pub fn release_blocked(
    store: &mut Store,
    plan_id: &str,
    task_id: &str,
) -> Result<Vec<String>, EngineError> {
    let plan = store.plan(plan_id)?;
    let released = releasable(&plan, task_id);
    let event = EventKind::TasksReleased {
        by: task_id.to_owned(),
        tasks: released.clone(),
    };
    store.set_statuses(
        plan_id,
        &released,
        TaskStatus::Pending,
        Event::new(event),
        now(),
    )?;
    Ok(released)
}

/// Whether an engine is executing the plan right now.
pub fn engine_running(store: &Store, plan_id: &str) -> Result<Option<u32>, EngineError> {
    Ok(store.open_run(plan_id)?.and_then(|run| {
        let pid = run.engine_pid?;
        (run.status == weft_core::RunStatus::Running
            && same_process_alive(pid, run.engine_start_ticks))
        .then_some(pid)
    }))
}

struct Target {
    order: u32,
    id: String,
    status: TaskStatus,
}

fn target(store: &Store, plan_id: &str, reference: &str) -> Result<(Plan, Target), EngineError> {
    let plan = store.plan(plan_id)?;
    let index = resolve_task_ref(&plan.tasks, reference)?;
    let task = &plan.tasks[index];
    let target = Target {
        order: task.order,
        id: task.id.clone(),
        status: task.status,
    };
    Ok((plan, target))
}

impl Target {
    fn wrong_status(&self, why: &'static str) -> EngineError {
        EngineError::WrongStatus {
            order: self.order,
            task: self.id.clone(),
            status: self.status,
            why,
        }
    }
}

fn not_running(target: &Target) -> Result<(), EngineError> {
    if target.status == TaskStatus::InProgress {
        return Err(EngineError::TaskRunning {
            order: target.order,
            task: target.id.clone(),
        });
    }
    Ok(())
}

/// Store `update` for the target (one event, naming what it was), release the blocked
/// tasks that no longer have a failure upstream, and report both.
fn settle(
    store: &mut Store,
    plan_id: &str,
    target: &Target,
    update: &TaskUpdate,
    event: fn(TaskStatus) -> EventKind,
    mut lines: Vec<String>,
) -> Result<ControlReport, EngineError> {
    let event = Event::new(event(target.status));
    store.update_task(plan_id, &target.id, update, event, now())?;
    let released = release_blocked(store, plan_id, &target.id)?;
    lines.extend(released_line(&released));
    Ok(ControlReport { lines })
}

fn released_line(released: &[String]) -> Option<String> {
    (!released.is_empty()).then(|| format!("released blocked tasks: {}", released.join(", ")))
}

/// Put a finished task back in line: verdict cleared, blocked descendants released.
pub fn retry(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
) -> Result<ControlReport, EngineError> {
    let (_, target) = target(store, plan_id, reference)?;
    not_running(&target)?;
    if matches!(
        target.status,
        TaskStatus::Pending | TaskStatus::Approved | TaskStatus::Blocked
    ) {
        return Err(target.wrong_status("only a task that ran or was skipped can be retried"));
    }
    let mut lines = vec![format!(
        "task #{} {:?} will run again (was {})",
        target.order, target.id, target.status
    )];
    lines.extend(drop_kept_worktrees(store, plan_id, &target.id)?);
    settle(
        store,
        plan_id,
        &target,
        &TaskUpdate {
            status: Some(TaskStatus::Pending),
            verdict: Some(None),
            output: Some(None),
            hold: None,
        },
        |was| EventKind::TaskRetried { was },
        lines,
    )
}

/// Remove the worktrees earlier attempts of a task left for inspection: a retry starts
/// from a fresh one cut from the integration tip. Their branches stay until handoff.
fn drop_kept_worktrees(
    store: &Store,
    plan_id: &str,
    task_id: &str,
) -> Result<Vec<String>, EngineError> {
    let mut lines = Vec::new();
    for attempt in store.attempts_of_task(plan_id, task_id)? {
        let Some(path) = attempt.worktree else {
            continue;
        };
        let path = std::path::PathBuf::from(path);
        if !path.exists() {
            continue;
        }
        let removed = weft_git::Git::new()
            .open(&path)
            .and_then(|repo| repo.remove_worktree(&path, true));
        match removed {
            Ok(()) => lines.push(format!("removed its kept worktree {}", path.display())),
            Err(e) => lines.push(format!(
                "could not remove its worktree {}: {e}",
                path.display()
            )),
        }
    }
    Ok(lines)
}

/// Opt into one repair attempt of a conflicted task: a fresh worktree from the current
/// integration tip with the task's branch merged in (conflict markers present), and a
/// prompt that says what to resolve. It lands only without conflict markers left.
pub fn repair(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
) -> Result<ControlReport, EngineError> {
    let (_, target) = target(store, plan_id, reference)?;
    if target.status != TaskStatus::Conflicted {
        return Err(target.wrong_status("only a conflicted task can be repaired"));
    }
    let branch = store
        .attempts_of_task(plan_id, &target.id)?
        .into_iter()
        .rev()
        .find_map(|a| a.branch)
        .ok_or_else(|| target.wrong_status("it has no branch to repair"))?;
    let request = ControlRequest::Repair {
        task: target.id.clone(),
    };
    store.push_control(plan_id, &request, now())?;
    store.update_task(
        plan_id,
        &target.id,
        &TaskUpdate {
            status: Some(TaskStatus::Pending),
            ..TaskUpdate::default()
        },
        Event::new(EventKind::TaskRepairRequested {
            branch: branch.clone(),
        }),
        now(),
    )?;
    let released = release_blocked(store, plan_id, &target.id)?;
    let mut lines = vec![format!(
        "task #{} {:?} gets one repair attempt: its branch {branch} merged onto the current tip, conflicts to resolve",
        target.order, target.id
    )];
    if engine_running(store, plan_id)?.is_none() {
        lines.push("it starts when `weft run --isolated` next runs".into());
    }
    lines.extend(released_line(&released));
    Ok(ControlReport { lines })
}

/// Edit a task's fields and retry it, in one step.
pub fn rearm(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
    changes: &TaskChanges,
    known_runner: &dyn Fn(&str) -> bool,
) -> Result<ControlReport, EngineError> {
    let (_, target) = target(store, plan_id, reference)?;
    not_running(&target)?;
    let task_id = target.id.clone();
    let (_, report) = store.update_plan(plan_id, now(), |plan| {
        // Unlock the task for the edit: a re-armed task starts over.
        // By id: another terminal may have reordered the plan since `target` was read.
        let mut unlocked = plan.clone();
        let task = task_by_id(&mut unlocked, plan_id, &task_id)?;
        task.status = TaskStatus::Pending;
        task.verdict = None;
        task.output = None;
        let (next, report) = if changes.is_empty() {
            (unlocked, None)
        } else {
            let (next, report) = apply(
                &unlocked,
                &Edit::Update {
                    task: task_id.clone(),
                    changes: changes.clone(),
                },
                known_runner,
            )?;
            (next, Some(report))
        };
        let changes = match report.as_ref().map(|r| &r.event) {
            Some(EventKind::TaskEdited { changes }) => changes.clone(),
            _ => Vec::new(),
        };
        let rearmed = EventKind::TaskRearmed {
            was: target.status,
            changes,
        };
        Ok((next, Event::new(rearmed).task(&task_id), report))
    })?;
    let released = release_blocked(store, plan_id, &target.id)?;
    let mut lines = Vec::new();
    if let Some(report) = report {
        lines.extend(report.lines);
    }
    lines.push(format!(
        "task #{} {:?} will run again (was {})",
        target.order, target.id, target.status
    ));
    lines.extend(released_line(&released));
    Ok(ControlReport { lines })
}

/// Mark a task done by hand: a pass whose only check says no verification ran.
pub fn complete(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
) -> Result<ControlReport, EngineError> {
    let (_, target) = target(store, plan_id, reference)?;
    not_running(&target)?;
    if target.status == TaskStatus::Completed {
        return Err(target.wrong_status("it is already complete"));
    }
    let verdict = marked_complete(now());
    let update = TaskUpdate {
        status: Some(TaskStatus::Completed),
        verdict: Some(Some(verdict.clone())),
        output: Some(Some(weft_core::OutputSummary {
            review_reason: verdict.reason,
            log_tail: String::new(),
            captured_at: now(),
        })),
        hold: None,
    };
    let line = format!(
        "task #{} {:?} marked complete (no verification ran)",
        target.order, target.id
    );
    settle(
        store,
        plan_id,
        &target,
        &update,
        |was| EventKind::TaskMarkedComplete { was },
        vec![line],
    )
}

/// Take back a completion: the task is pending again.
pub fn uncomplete(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
) -> Result<ControlReport, EngineError> {
    let (_, target) = target(store, plan_id, reference)?;
    if target.status != TaskStatus::Completed && target.status != TaskStatus::Skipped {
        return Err(target.wrong_status("only a completed or skipped task can be taken back"));
    }
    // Its work on the integration branch would stay under a rerun that redoes it.
    if let Some(run) = store.open_run(plan_id)?
        && !revert::landings_of(store, plan_id, &run.id, &target.id)?.is_empty()
    {
        return Err(EngineError::Refused {
            detail: format!(
                "task #{} {:?} has landed its work on {}; taken back as it is, it would run again on top of its own work",
                target.order,
                target.id,
                run.integration_branch
                    .as_deref()
                    .unwrap_or("the integration branch")
            ),
            hint: format!(
                "`weft uncomplete {} --revert` rebuilds the integration branch without its landing and puts it and its dependents back to pending",
                target.order
            ),
        });
    }
    store.update_task(
        plan_id,
        &target.id,
        &TaskUpdate {
            status: Some(TaskStatus::Pending),
            verdict: Some(None),
            output: Some(None),
            hold: None,
        },
        Event::new(EventKind::TaskMarkedNotDone { was: target.status }),
        now(),
    )?;
    Ok(ControlReport {
        lines: vec![format!(
            "task #{} {:?} is not done: pending again",
            target.order, target.id
        )],
    })
}

/// Skip a task: it counts as met for its dependents.
pub fn skip(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
) -> Result<ControlReport, EngineError> {
    let (_, target) = target(store, plan_id, reference)?;
    not_running(&target)?;
    if matches!(target.status, TaskStatus::Completed | TaskStatus::Skipped) {
        return Err(target.wrong_status("it is already done"));
    }
    let update = TaskUpdate {
        status: Some(TaskStatus::Skipped),
        ..TaskUpdate::default()
    };
    let line = format!("task #{} {:?} skipped", target.order, target.id);
    let skipped = |was| EventKind::TaskSkipped { was };
    settle(store, plan_id, &target, &update, skipped, vec![line])
}

/// Cancel a task: a running one is killed by its engine; a waiting one is cancelled now.
pub fn cancel(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
) -> Result<ControlReport, EngineError> {
    let (plan, target) = target(store, plan_id, reference)?;
    if matches!(
        target.status,
        TaskStatus::Completed | TaskStatus::Skipped | TaskStatus::Cancelled
    ) {
        return Err(target.wrong_status("only a waiting or running task can be cancelled"));
    }
    if target.status == TaskStatus::InProgress
        && let Some(pid) = engine_running(store, plan_id)?
    {
        let request = ControlRequest::Cancel {
            task: target.id.clone(),
        };
        store.push_control(plan_id, &request, now())?;
        return Ok(ControlReport {
            lines: vec![format!(
                "asked the engine (pid {pid}) to cancel task #{} {:?}",
                target.order, target.id
            )],
        });
    }
    // No engine runs it: the processes a dead engine left for this task end here.
    let ended = end_orphans(
        store,
        plan_id,
        Some(&target.id),
        weft_core::AttemptStatus::Cancelled,
    )?;
    let blocked: Vec<String> = stopped_by_failure(&plan, &target.id)
        .into_iter()
        .filter(|&i| {
            matches!(
                plan.tasks[i].status,
                TaskStatus::Pending | TaskStatus::Approved
            )
        })
        .map(|i| plan.tasks[i].id.clone())
        .collect();
    let cancelled = TaskUpdate {
        status: Some(TaskStatus::Cancelled),
        ..TaskUpdate::default()
    };
    let block = TaskUpdate {
        status: Some(TaskStatus::Blocked),
        ..TaskUpdate::default()
    };
    let mut updates: Vec<(&str, &TaskUpdate)> = vec![(target.id.as_str(), &cancelled)];
    updates.extend(blocked.iter().map(|id| (id.as_str(), &block)));
    let event = EventKind::TaskCancelled {
        blocked: blocked.clone(),
    };
    store.update_tasks(plan_id, &updates, Event::new(event).task(&target.id), now())?;
    let mut lines = vec![format!("task #{} {:?} cancelled", target.order, target.id)];
    if ended > 0 {
        lines.push(format!(
            "ended the agent process a dead engine left running ({ended})"
        ));
    }
    if !blocked.is_empty() {
        lines.push(format!("blocked its dependents: {}", blocked.join(", ")));
    }
    Ok(ControlReport { lines })
}

/// Start a task now, ignoring readiness (its dependencies, hold, the slot cap).
pub fn force_start(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
) -> Result<ControlReport, EngineError> {
    let (_, target) = target(store, plan_id, reference)?;
    not_running(&target)?;
    if target.status == TaskStatus::Completed {
        return Err(target.wrong_status("retry it first to run it again"));
    }
    let request = ControlRequest::ForceStart {
        task: target.id.clone(),
    };
    store.push_control(plan_id, &request, now())?;
    let line = match engine_running(store, plan_id)? {
        Some(pid) => format!(
            "asked the engine (pid {pid}) to start task #{} {:?} now",
            target.order, target.id
        ),
        None => format!(
            "task #{} {:?} starts first thing when `weft run` next runs",
            target.order, target.id
        ),
    };
    Ok(ControlReport { lines: vec![line] })
}

/// Stop the active run: running attempts are killed and marked interrupted.
pub fn stop(store: &mut Store, plan_id: &str) -> Result<ControlReport, EngineError> {
    let Some(pid) = engine_running(store, plan_id)? else {
        // Its engine is gone: end what it left running, if anything.
        let ended = end_orphans(store, plan_id, None, weft_core::AttemptStatus::Interrupted)?;
        if ended == 0 {
            return Err(EngineError::NoActiveRun);
        }
        return Ok(ControlReport {
            lines: vec![format!(
                "no engine is running; ended {ended} agent process(es) a dead engine left running (`weft run` continues their tasks)"
            )],
        });
    };
    store.push_control(plan_id, &ControlRequest::Stop, now())?;
    Ok(ControlReport {
        lines: vec![format!(
            "asked the engine (pid {pid}) to stop; running tasks will be interrupted"
        )],
    })
}

/// How long an orphaned agent gets between SIGTERM and SIGKILL.
const ORPHAN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Attempts recorded running when no engine runs the plan (`task`: only that task's): kill
/// the process group of each one still alive (the recorded pid and start ticks tell it is
/// the same process) and record the attempt ended as `status`. Returns how many processes
/// were ended. Only for a plan no engine runs: a live engine owns its attempts.
fn end_orphans(
    store: &mut Store,
    plan_id: &str,
    task: Option<&str>,
    status: weft_core::AttemptStatus,
) -> Result<usize, EngineError> {
    let mut ended = 0;
    for mut attempt in store.running_attempts()? {
        if attempt.plan_id != plan_id || task.is_some_and(|t| t != attempt.task_id) {
            continue;
        }
        let killed = if let (Some(pid), Some(group)) = (attempt.pid, attempt.process_group)
            && same_process_alive(pid, attempt.process_start_ticks)
        {
            weft_agents::supervise::kill_group(group, ORPHAN_GRACE)
        } else {
            false
        };
        ended += usize::from(killed);
        attempt.status = status;
        attempt.ended_at = Some(now());
        store.save_attempt(
            &attempt,
            EventKind::AttemptInterrupted {
                killed_leftover: killed,
            },
            now(),
        )?;
    }
    Ok(ended)
}

/// A manual task's checklist, and where to do it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManualView {
    pub order: u32,
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    /// Each step and whether it is ticked.
    pub steps: Vec<(String, bool)>,
    /// The run's integration checkout (isolated runs): the work the steps are about.
    pub checkout: Option<std::path::PathBuf>,
    /// Why it cannot be ticked off yet, if it cannot.
    pub waiting_on: Option<String>,
}

fn manual_target(
    store: &Store,
    plan_id: &str,
    reference: &str,
) -> Result<(Plan, usize), EngineError> {
    let plan = store.plan(plan_id)?;
    let index = resolve_task_ref(&plan.tasks, reference)?;
    if plan.tasks[index].kind != weft_core::TaskKind::Manual {
        let task = &plan.tasks[index];
        return Err(EngineError::WrongStatus {
            order: task.order,
            task: task.id.clone(),
            status: task.status,
            why: "only a manual task has steps to tick",
        });
    }
    Ok((plan, index))
}

/// What blocks ticking: anything but "a person is needed" (dependencies not landed, hold).
fn manual_blocker(plan: &Plan, index: usize) -> Option<String> {
    match weft_core::schedule::readiness(plan, index, &|t| t.status == TaskStatus::Completed) {
        Err(weft_core::schedule::Blocker::NeedsPerson) | Ok(()) => None,
        Err(weft_core::schedule::Blocker::NotWaiting(TaskStatus::Completed)) => None,
        Err(blocker) => Some(blocker.to_string()),
    }
}

/// `weft manual N`: the checklist, with the integration checkout moved to the current tip.
pub fn manual_view(
    store: &Store,
    plan_id: &str,
    reference: &str,
    workspace: &std::path::Path,
    state_dir: &std::path::Path,
    repos: &[String],
) -> Result<ManualView, EngineError> {
    let (plan, index) = manual_target(store, plan_id, reference)?;
    let task = &plan.tasks[index];
    let checkout = match store.open_run(plan_id)? {
        Some(run) if run.integration_branch.is_some() => Some(
            crate::isolation::Isolation::existing(workspace, state_dir, repos, &run.id)?
                .integration_checkout()?,
        ),
        _ => None,
    };
    Ok(ManualView {
        order: task.order,
        id: task.id.clone(),
        title: task.title.clone(),
        status: task.status,
        steps: task
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), task.steps_done.contains(&i)))
            .collect(),
        checkout,
        waiting_on: manual_blocker(&plan, index),
    })
}

/// `weft manual N --done [STEP]`: tick one step (1-based) or all; the task completes when
/// every step is ticked.
pub fn manual_tick(
    store: &mut Store,
    plan_id: &str,
    reference: &str,
    step: Option<usize>,
) -> Result<ControlReport, EngineError> {
    let (plan, index) = manual_target(store, plan_id, reference)?;
    let task = plan.tasks[index].clone();
    if task.status == TaskStatus::Completed {
        return Err(EngineError::WrongStatus {
            order: task.order,
            task: task.id,
            status: task.status,
            why: "it is already complete",
        });
    }
    if let Some(blocker) = manual_blocker(&plan, index) {
        return Err(EngineError::Refused {
            detail: format!(
                "task #{} {:?} cannot be ticked off yet: {blocker}",
                task.order, task.id
            ),
            hint: "its dependencies must complete (and land) first".into(),
        });
    }
    let count = task.steps.len().max(1);
    let ticked: Vec<usize> = match step {
        Some(n) if (1..=count).contains(&n) => vec![n - 1],
        Some(n) => {
            return Err(EngineError::WrongStatus {
                order: task.order,
                task: task.id,
                status: task.status,
                why: if n == 0 {
                    "steps are numbered from 1"
                } else {
                    "it has no step with that number"
                },
            });
        }
        None => (0..count).collect(),
    };
    let task_id = task.id.clone();
    let (next, done) = store.update_plan(plan_id, now(), |plan| {
        let mut next = plan.clone();
        let t = task_by_id(&mut next, plan_id, &task_id)?;
        for i in &ticked {
            if !t.steps_done.contains(i) {
                t.steps_done.push(*i);
            }
        }
        t.steps_done.sort_unstable();
        let done = t.steps_done.len() >= count;
        if done {
            t.status = TaskStatus::Completed;
            let mut verdict = marked_complete(now());
            verdict.reason = format!("Passed: a person ticked off all {count} step(s).");
            t.verdict = Some(verdict);
        }
        let event = EventKind::ManualStepsTicked {
            steps: ticked.clone(),
            completed: done,
        };
        Ok((next, Event::new(event).task(&task_id), done))
    })?;
    let t = next.task(&task_id).ok_or_else(|| StoreError::UnknownTask {
        plan: plan_id.to_owned(),
        task: task_id.clone(),
    })?;
    let mut lines = vec![format!(
        "task #{} {:?}: {} of {count} step(s) ticked",
        t.order,
        t.id,
        t.steps_done.len().min(count)
    )];
    if done {
        lines.push("all steps are ticked: the task is complete".into());
        lines.extend(released_line(&release_blocked(store, plan_id, &t.id)?));
    }
    Ok(ControlReport { lines })
}

/// The task with `id` in a plan read under the write lock (positions may have moved).
fn task_by_id<'p>(
    plan: &'p mut Plan,
    plan_id: &str,
    id: &str,
) -> Result<&'p mut weft_core::Task, StoreError> {
    plan.tasks
        .iter_mut()
        .find(|t| t.id == id)
        .ok_or_else(|| StoreError::UnknownTask {
            plan: plan_id.to_owned(),
            task: id.to_owned(),
        })
}

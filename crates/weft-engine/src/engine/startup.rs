//! What a run does once, before its first pass: refuse unavailable runners, prepare
//! isolation, reconcile a dead engine's attempts, finish its journaled landings and put
//! tasks back in line.

use std::collections::HashMap;

use weft_agents::preflight;
use weft_agents::supervise::kill_group;
use weft_core::event::{Event, EventKind};
use weft_core::{AttemptStatus, Plan, TaskKind, TaskStatus};
use weft_git::Oid;
use weft_store::Store;

use super::landing::{Then, Waiting};
use super::runloop::RunLoop;
use super::{now, same_process_alive};
use crate::EngineConfig;
use crate::attempt::{self, runner_name};
use crate::error::EngineError;
use crate::failpoint;
use crate::isolation::Isolation;

/// Refuse to start when a task that still has to run names a runner that is unknown or
/// unavailable.
pub(super) fn preflight_runners(config: &EngineConfig, plan: &Plan) -> Result<(), EngineError> {
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
                config.supervision.path_env.as_deref(),
                config.limits.preflight_timeout,
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

/// A run that started isolated continues isolated or not at all: never in the user's
/// checkout (a shared continuation once ran an isolated run there because git was missing
/// from PATH and the workspace looked like no repository).
pub(super) fn refuse_degraded(config: &EngineConfig, store: &Store) -> Result<(), EngineError> {
    if config.isolation.enabled {
        return Ok(());
    }
    match store.open_run(&config.plan_id)? {
        Some(run) if run.integration_branch.is_some() => Err(EngineError::Refused {
            detail: format!(
                "run {} started isolated (on {}); it continues isolated or not at all, never in your checkout",
                run.id,
                run.integration_branch.as_deref().unwrap_or_default()
            ),
            hint: "run `weft run` where git works (it continues isolated), or end the run first with `weft handoff merge` or `weft handoff discard`".into(),
        }),
        _ => Ok(()),
    }
}

/// Stashes of uncommitted changes to give back when the run ends: (slot, stash commit).
pub(super) type Stashes = Vec<(usize, Oid)>;

/// The git side of an isolated run (None in shared mode), and the stashes to give back.
///
/// Crash safety: the base and the integration branch are recorded before the branch is
/// cut, so a restart finds either no branch (and cuts it at the recorded base) or the
/// branch at it; never a branch the store does not know (which wedged every later run).
pub(super) fn isolate(
    config: &EngineConfig,
    store: &mut Store,
    run: &weft_core::Run,
) -> Result<(Option<Isolation>, Stashes), EngineError> {
    if !config.isolation.enabled {
        return Ok((None, Vec::new()));
    }
    let recorded = run.integration_branch.as_ref().and(run.base_ref.as_deref());
    let prepared = Isolation::prepare(
        &config.workspace,
        &config.state_dir,
        &config.isolation.repos,
        &run.id,
        recorded,
        config.isolation.stash,
    )?;
    for (_, stash) in &prepared.stashes {
        let text = format!(
            "stashed your uncommitted changes as {}; they come back when the run ends",
            stash.short()
        );
        let notice = Event::new(EventKind::Notice { text }).run(run.id.clone());
        store.record_event(Some(&config.plan_id), notice, now())?;
    }
    let isolation = prepared.isolation;
    if prepared.new {
        store.set_run_refs(
            &run.id,
            &config.plan_id,
            &prepared.base,
            &isolation.integration_branch,
            now(),
        )?;
        failpoint::hit("run_refs_recorded");
    }
    isolation.cut_integration(&prepared.base)?;
    failpoint::hit("integration_branch_cut");
    Ok((Some(isolation), prepared.stashes))
}

impl RunLoop<'_> {
    /// Attempts recorded as running whose engine is gone: kill their leftovers and mark
    /// them interrupted.
    pub(super) fn reconcile(&mut self) -> Result<(), EngineError> {
        for mut attempt in self.store.running_attempts()? {
            if attempt.plan_id != self.config.plan_id {
                continue;
            }
            let mut killed = false;
            if let (Some(pid), Some(group)) = (attempt.pid, attempt.process_group)
                && same_process_alive(pid, attempt.process_start_ticks)
            {
                killed = kill_group(group, self.config.limits.kill_grace);
            }
            attempt.status = AttemptStatus::Interrupted;
            attempt.ended_at = Some(now());
            self.store.save_attempt(
                &attempt,
                EventKind::AttemptInterrupted {
                    killed_leftover: killed,
                },
                now(),
            )?;
        }
        self.reclaim_interrupted()
    }

    /// Interrupted attempts' cuts (a dead engine's, or a stopped run's) go unless they hold
    /// work that did not land; those are kept, and `weft status` lists them. The tasks
    /// start afresh either way. Bounds: one `git status` per interrupted cut still on disk.
    fn reclaim_interrupted(&mut self) -> Result<(), EngineError> {
        let Some(iso) = self.isolation.clone() else {
            return Ok(());
        };
        for attempt in self.store.attempts_of_plan(&self.config.plan_id)? {
            let (Some(folder), Some(branch), Some(cut_from)) =
                (&attempt.worktree, &attempt.branch, &attempt.cut_from)
            else {
                continue;
            };
            if attempt.status != AttemptStatus::Interrupted {
                continue;
            }
            let folder = std::path::Path::new(folder);
            let branch_left = iso
                .slots
                .iter()
                .any(|s| s.repo.branch_exists(branch).unwrap_or(false));
            if !folder.exists() && !branch_left {
                continue;
            }
            if let Some(cut) = iso.recorded_cut(folder, branch, cut_from) {
                iso.reclaim_interrupted(&cut);
            }
        }
        Ok(())
    }

    /// Passed attempts whose landing was journaled but never recorded (weft died in
    /// between) go through the landing queue now. Landing is idempotent: work already
    /// merged is recognised.
    pub(super) fn recover_landings(&mut self) -> Result<(), EngineError> {
        let Some(iso) = self.isolation.clone() else {
            return Ok(());
        };
        for attempt in self.store.attempts_of_plan(&self.config.plan_id)? {
            let (Some(branch), Some(cut_from)) = (&attempt.branch, &attempt.cut_from) else {
                continue;
            };
            if attempt.run_id != self.run_id
                || attempt.status != AttemptStatus::Passed
                || attempt.landing.is_some()
            {
                continue;
            }
            let Some(task) = self.view.task(&attempt.task_id).cloned() else {
                continue;
            };
            let folder: std::path::PathBuf =
                attempt.worktree.clone().map(Into::into).unwrap_or_default();
            let Some(cut) = iso.recorded_cut(&folder, branch, cut_from) else {
                continue;
            };
            self.landings.push(Waiting {
                task,
                cut,
                repair_files: None,
                then: Then::Recovered(Box::new(attempt)),
            });
        }
        self.land_waiting()?;
        self.repair_evidence(&iso)
    }

    /// Landings recorded before a crash whose note was not written get it now
    /// (`evidence::repair`); a failure is a notice, the next start tries again.
    fn repair_evidence(&mut self, iso: &Isolation) -> Result<(), EngineError> {
        let base = self.store.run(&self.run_id)?.and_then(|r| r.base_ref);
        let repaired = crate::evidence::repair(iso, &self.store, self.view.plan(), base.as_deref());
        if let Err(e) = repaired {
            let text =
                format!("the evidence notes of this run's landings could not be checked: {e}");
            let event = Event::new(EventKind::Notice { text }).run(&self.run_id);
            self.store
                .record_event(Some(&self.config.plan_id), event, now())?;
        }
        Ok(())
    }

    /// Before running: interrupted or stale in-progress tasks go back in line; with
    /// `retry_failed`, failed and cancelled ones too; descendants of failures are blocked.
    pub(super) fn prepare_tasks(&mut self) -> Result<(), EngineError> {
        let requeue: Vec<String> = self
            .view
            .plan()
            .tasks
            .iter()
            .filter(|task| match task.status {
                TaskStatus::InProgress | TaskStatus::Interrupted => true,
                TaskStatus::Failed | TaskStatus::Cancelled => self.config.failures.retry,
                _ => false,
            })
            .map(|task| task.id.clone())
            .collect();
        if !requeue.is_empty() {
            let requeued = EventKind::TasksRequeued {
                tasks: requeue.clone(),
            };
            self.view.set_statuses(
                &mut self.store,
                &requeue,
                TaskStatus::Pending,
                Event::new(requeued),
            )?;
            for id in &requeue {
                self.view.release_blocked(&mut self.store, id)?;
            }
        }
        // Two guards: descendants of anything failed are stored as blocked as well as
        // refused.
        let failed: Vec<String> = self
            .view
            .plan()
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.status,
                    TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Conflicted
                )
            })
            .map(|t| t.id.clone())
            .collect();
        for id in failed {
            self.view.block_descendants(&mut self.store, &id)?;
        }
        Ok(())
    }
}

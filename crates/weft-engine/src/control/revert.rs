//! `weft uncomplete N --revert`: take a landed task's work back out of the run's
//! integration branch, and with it the work of its dependents that landed after it.
//!
//! The integration tip is rebuilt without those landings ([`weft_git::Repo::rebuild_without`]:
//! the other landings re-applied with merge-tree onto the tip before the first one taken
//! out, then a compare-and-swap of the ref; no revert commits, no checkout touched), in
//! every repository of the run (all or nothing), and then the tasks are put back to
//! pending in one store write.
//!
//! Crash safety: the refs move first, the store after. Killed between the two, the tasks
//! still read completed; running the command again finds their landings gone from the
//! branch ([`weft_git::Rebuild::NotOnBranch`], taken as done) and puts them back to
//! pending.

use weft_core::event::{Event, EventKind};
use weft_core::schedule::descendants;
use weft_core::{Landing, TaskStatus, resolve_task_ref};
use weft_git::{Oid, Rebuild};
use weft_store::{Store, TaskUpdate};

use super::{ControlReport, TaskRef, list_tasks};
use crate::engine::now;
use crate::error::EngineError;
use crate::isolation::{Isolation, decode, git_error};

/// A revert worked out and not yet done: what the confirmation lists.
#[derive(Debug)]
pub struct Revert {
    /// The task taken back.
    pub task: TaskRef,
    /// Its dependents whose work goes too (completed in this run), in plan order.
    pub dependents: Vec<TaskRef>,
    pub integration_branch: String,
    run_id: String,
    isolation: Isolation,
    /// Per repository (slot order): the landing commits to take out.
    drops: Vec<Vec<Oid>>,
}

fn refuse(detail: impl Into<String>, hint: impl Into<String>) -> EngineError {
    EngineError::Refused {
        detail: detail.into(),
        hint: hint.into(),
    }
}

/// The open run's landed attempts of `task_id`: each one's recorded landing.
pub(crate) fn landings_of(
    store: &Store,
    plan_id: &str,
    run_id: &str,
    task_id: &str,
) -> Result<Vec<String>, EngineError> {
    Ok(store
        .attempts_of_task(plan_id, task_id)?
        .into_iter()
        .filter(|a| a.run_id == run_id)
        .filter_map(|a| match a.landing {
            Some(Landing::Landed { merge }) => Some(merge),
            _ => None,
        })
        .collect())
}

/// Work out the revert of task `reference`: refused unless it is completed and its work
/// landed in the plan's open isolated run, while no engine runs and no handoff merge is
/// journaled.
pub fn plan_revert(
    store: &Store,
    plan_id: &str,
    reference: &str,
    workspace: &std::path::Path,
    state_dir: &std::path::Path,
    repos: &[String],
) -> Result<Revert, EngineError> {
    crate::handoff::journal::refuse_if_pending(state_dir, "rebuild the integration branch")?;
    if let Some(pid) = super::engine_running(store, plan_id)? {
        return Err(refuse(
            format!(
                "a run of this plan is active (engine pid {pid}); its landings would race the rebuild"
            ),
            "wait for it to end, or `weft stop` it first",
        ));
    }
    let plan = store.plan(plan_id)?;
    let index = resolve_task_ref(&plan.tasks, reference)?;
    let task = &plan.tasks[index];
    let run = store.open_run(plan_id)?;
    let landed = match &run {
        Some(run) => landings_of(store, plan_id, &run.id, &task.id)?,
        None => Vec::new(),
    };
    let (Some(run), false, TaskStatus::Completed) = (&run, landed.is_empty(), task.status) else {
        return Err(refuse(
            format!(
                "task #{} {:?} has no landed work on an open run's integration branch to take out",
                task.order, task.id
            ),
            format!(
                "`weft uncomplete {}` without --revert takes back its completion",
                task.order
            ),
        ));
    };
    let isolation = Isolation::existing(workspace, state_dir, repos, &run.id)?;
    let mut taken = vec![(index, landed)];
    let mut dependents = Vec::new();
    for below in descendants(&plan, &task.id) {
        let dependent = &plan.tasks[below];
        if dependent.status != TaskStatus::Completed {
            continue;
        }
        let landed = landings_of(store, plan_id, &run.id, &dependent.id)?;
        let ran_here = !landed.is_empty()
            || store
                .attempts_of_task(plan_id, &dependent.id)?
                .iter()
                .any(|a| a.run_id == run.id);
        if ran_here {
            dependents.push(TaskRef {
                order: dependent.order,
                id: dependent.id.clone(),
                was: dependent.status,
            });
            taken.push((below, landed));
        }
    }
    let mut drops = vec![Vec::new(); isolation.slots.len()];
    for (at, landings) in &taken {
        let order = plan.tasks[*at].order;
        let subject = format!("weft: land task {order}: ");
        for landing in landings {
            let Some(oids) = decode(&isolation.slots, landing) else {
                continue;
            };
            for (slot_index, oid) in oids.into_iter().enumerate() {
                // In a group, a repository the task did not change records the tip it
                // found; only its own landing commits are taken out.
                let repo = &isolation.slots[slot_index].repo;
                let own = repo
                    .subject(&oid)
                    .map(|s| s.starts_with(&subject))
                    .unwrap_or(false);
                if own && !drops[slot_index].contains(&oid) {
                    drops[slot_index].push(oid);
                }
            }
        }
    }
    Ok(Revert {
        task: TaskRef {
            order: task.order,
            id: task.id.clone(),
            was: task.status,
        },
        dependents,
        integration_branch: isolation.integration_branch.clone(),
        run_id: run.id.clone(),
        isolation,
        drops,
    })
}

impl Revert {
    /// Every task going back to pending: the task, then its dependents.
    pub fn tasks(&self) -> Vec<TaskRef> {
        let mut all = vec![self.task.clone()];
        all.extend(self.dependents.iter().cloned());
        all
    }

    /// Rebuild every repository's integration tip without the landings (all or nothing),
    /// then put the tasks back to pending.
    pub fn apply(self, store: &mut Store, plan_id: &str) -> Result<ControlReport, EngineError> {
        let reference = self.isolation.integration_ref();
        // Only weft moves the integration ref: foreign commits on it refuse the rebuild
        // (the guard names them and says how to restore the recorded tip).
        (self.isolation.check_integration())
            .map_err(|f| f.into_error("rebuilding the integration branch"))?;
        let mut moved: Vec<(usize, Oid, Oid)> = Vec::new();
        let mut recreated: Vec<(usize, Vec<(Oid, Oid)>)> = Vec::new();
        let mut reapplied = 0;
        for (slot_index, drops) in self.drops.iter().enumerate() {
            if drops.is_empty() {
                continue;
            }
            let slot = &self.isolation.slots[slot_index];
            let outcome = slot.repo.rebuild_without(&reference, drops);
            let failure = match outcome {
                Ok(Rebuild::Rebuilt {
                    old_tip,
                    new_tip,
                    reapplied: again,
                    ..
                }) => {
                    reapplied += again.len();
                    moved.push((slot_index, old_tip, new_tip));
                    recreated.push((slot_index, again));
                    None
                }
                // Already taken out (a rerun after a crash): nothing to move here.
                Ok(Rebuild::NotOnBranch { .. }) => None,
                Ok(Rebuild::NoLongerApplies { subject, files, .. }) => Some(refuse(
                    format!(
                        "{}without the work of {}, the landing {subject:?} no longer applies: it conflicts in {}; nothing was changed",
                        if slot.name.is_empty() {
                            String::new()
                        } else {
                            format!("{}: ", slot.name)
                        },
                        list_tasks(&self.tasks()),
                        weft_git::list_paths(&files)
                    ),
                    "take that task out too (`weft uncomplete N --revert` on it first), or discard the run with `weft handoff discard`",
                )),
                Err(error) => Some(git_error(error)),
            };
            if let Some(failure) = failure {
                for (slot_index, old_tip, new_tip) in moved.iter().rev() {
                    let _ = self.isolation.slots[*slot_index].repo.update_ref_cas(
                        &reference,
                        old_tip,
                        Some(new_tip),
                    );
                }
                return Err(failure);
            }
        }
        // The rebuilt tips are weft's own: record them, so the integration guard does not
        // take them for foreign commits. (Killed between the two moves, the next guard
        // check refuses and names the rebuilt tip; its restore command, or rerunning this
        // command after restoring, recovers.)
        let record = self.isolation.record_ref();
        for (slot_index, old_tip, new_tip) in &moved {
            self.isolation.slots[*slot_index]
                .repo
                .update_ref_cas(&record, new_tip, Some(old_tip))
                .map_err(git_error)?;
        }
        // The re-applied landings are new commits: their evidence notes come along (a
        // crash before this is repaired by the next `weft run`, `evidence::repair`).
        let mut uncarried = None;
        for (slot_index, pairs) in &recreated {
            let repo = &self.isolation.slots[*slot_index].repo;
            if let Err(e) = crate::evidence::carry(repo, pairs) {
                uncarried = Some(e);
            }
        }
        let tasks = self.tasks();
        let update = TaskUpdate {
            status: Some(TaskStatus::Pending),
            verdict: Some(None),
            output: Some(None),
            hold: None,
        };
        let updates: Vec<(&str, &TaskUpdate)> =
            tasks.iter().map(|t| (t.id.as_str(), &update)).collect();
        let event = Event::new(EventKind::TaskMarkedNotDone {
            was: TaskStatus::Completed,
        })
        .run(&self.run_id)
        .task(&self.task.id);
        store.update_tasks(plan_id, &updates, event, now())?;
        let mut lines = vec![format!(
            "rebuilt {} without the landing of {} ({reapplied} other landing(s) re-applied; no checkout touched)",
            self.integration_branch,
            list_tasks(&tasks)
        )];
        lines.push(format!("pending again: {}", list_tasks(&tasks)));
        if let Some(e) = uncarried {
            lines.push(format!(
                "the evidence notes of the re-applied landings could not all be carried: {e}; the next `weft run` writes them"
            ));
        }
        Ok(ControlReport { lines })
    }
}

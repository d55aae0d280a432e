//! The run loop's view of its plan: a copy kept current from the loop's own writes and
//! from the store, so that scheduling after each finished task costs what changed, not
//! the plan.
//!
//! Every task change the loop makes goes through [`PlanView`]: the store write (one
//! transaction with its event), then the same change here. Every write moves the plan's
//! stored revision by one, and the view counts its own, so one cheap read of the revision
//! ([`PlanView::refresh`]) says whether another process changed the plan too (a task
//! edited, added, retried, completed by hand); only then is the plan read again, whole.
//! The revision is read before the tasks, so a change that lands between the two reads
//! is seen by the next refresh: nothing is missed, at worst something is read twice.
//!
//! Threads: owned by the loop's thread. Bounds: one copy of the plan, one index and one
//! [`Frontier`] (a few words per task and dependency).

use std::collections::{HashMap, HashSet};

use weft_core::event::{Event, EventKind};
use weft_core::schedule::{Frontier, stopped_by_failure};
use weft_core::{Plan, PlanStatus, Task, TaskStatus};
use weft_store::{Store, TaskUpdate};

use super::now;
use crate::control::releasable;
use crate::error::EngineError;

/// A completed task counts as met: isolated tasks are completed only once landed; with
/// `verify_gate`, only once a green tip holds its landing too (`held`: the tasks whose
/// landing no green tip holds yet).
fn met(task: &Task, held: &HashSet<String>) -> bool {
    task.status == TaskStatus::Completed && !held.contains(&task.id)
}

pub(crate) struct PlanView {
    plan: Plan,
    index_of: HashMap<String, usize>,
    frontier: Frontier,
    /// The stored revision this view matches.
    revision: u64,
    /// How many tasks are blocked (a pass can release them only then).
    blocked: usize,
    /// `verify_gate`: landed tasks no green tip holds yet (not met for their dependents).
    held: HashSet<String>,
    gated: bool,
}

impl PlanView {
    pub fn load(store: &Store, plan_id: &str) -> Result<PlanView, EngineError> {
        let revision = store.plan_revision(plan_id)?;
        let plan = store.plan(plan_id)?;
        let index_of = plan
            .tasks
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        let held = HashSet::new();
        let frontier = Frontier::new(&plan, &|t| met(t, &held));
        let blocked = plan
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Blocked)
            .count();
        Ok(PlanView {
            plan,
            index_of,
            frontier,
            revision,
            blocked,
            held,
            gated: false,
        })
    }

    /// `verify_gate`: `held` (landed, no green tip holds them) are not met until
    /// [`PlanView::verified_all`]; with `gated`, every task landed from now on is held too.
    pub fn hold_for_verification(&mut self, held: HashSet<String>, gated: bool) {
        self.gated = gated;
        self.held = held;
        let held = &self.held;
        self.frontier = Frontier::new(&self.plan, &|t| met(t, held));
    }

    /// With the gate: the task just landed is not met until a green tip holds it (call
    /// before storing it completed).
    pub fn hold(&mut self, id: &str) {
        if self.gated {
            self.held.insert(id.to_owned());
        }
    }

    /// A verification passed on the tip that holds every landing so far: each held task
    /// is met now.
    pub fn verified_all(&mut self) {
        let held = std::mem::take(&mut self.held);
        for id in held {
            if let Some(index) = self.index(&id) {
                let empty = &self.held;
                self.frontier.update(&self.plan, index, &|t| met(t, empty));
            }
        }
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn index(&self, id: &str) -> Option<usize> {
        self.index_of.get(id).copied()
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.index(id).map(|i| &self.plan.tasks[i])
    }

    /// Catch up with changes other processes made: the plan is read again only when its
    /// revision moved past the loop's own writes.
    pub fn refresh(&mut self, store: &Store) -> Result<(), EngineError> {
        if store.plan_revision(&self.plan.id)? != self.revision {
            let (held, gated) = (std::mem::take(&mut self.held), self.gated);
            *self = PlanView::load(store, &self.plan.id)?;
            self.hold_for_verification(held, gated);
        }
        Ok(())
    }

    /// Store task changes with one event, and apply them here.
    pub fn update_tasks(
        &mut self,
        store: &mut Store,
        updates: &[(&str, &TaskUpdate)],
        event: Event,
    ) -> Result<(), EngineError> {
        store.update_tasks(&self.plan.id, updates, event, now())?;
        self.revision += 1;
        for (id, update) in updates {
            self.apply(id, update);
        }
        Ok(())
    }

    /// Give every task in `ids` the status `status` with one event ([`Store::set_statuses`]),
    /// and apply it here.
    pub fn set_statuses(
        &mut self,
        store: &mut Store,
        ids: &[String],
        status: TaskStatus,
        event: Event,
    ) -> Result<(), EngineError> {
        if ids.is_empty() {
            return Ok(());
        }
        store.set_statuses(&self.plan.id, ids, status, event, now())?;
        self.revision += 1;
        let update = TaskUpdate::status(status);
        for id in ids {
            self.apply(id, &update);
        }
        Ok(())
    }

    pub fn update_task(
        &mut self,
        store: &mut Store,
        id: &str,
        update: &TaskUpdate,
        event: Event,
    ) -> Result<(), EngineError> {
        let event = match event.task {
            Some(_) => event,
            None => event.task(id),
        };
        self.update_tasks(store, &[(id, update)], event)
    }

    /// Store an attempt row with its event and its task's `update` with `event`, in one
    /// transaction ([`Store::save_attempt_and_task`]), and apply the update here.
    pub fn save_attempt_and_task(
        &mut self,
        store: &mut Store,
        attempt: &weft_core::Attempt,
        attempt_event: EventKind,
        update: &TaskUpdate,
        event: Event,
    ) -> Result<(), EngineError> {
        store.save_attempt_and_task(attempt, attempt_event, update, event, now())?;
        self.revision += 1;
        self.apply(&attempt.task_id, update);
        Ok(())
    }

    /// Store the plan's overall status.
    pub fn set_status(&mut self, store: &mut Store, status: PlanStatus) -> Result<(), EngineError> {
        store.set_plan_status(&self.plan.id, status, now())?;
        self.revision += 1;
        self.plan.status = status;
        Ok(())
    }

    fn apply(&mut self, id: &str, update: &TaskUpdate) {
        let Some(index) = self.index(id) else {
            return;
        };
        let task = &mut self.plan.tasks[index];
        let was_blocked = task.status == TaskStatus::Blocked;
        if let Some(status) = update.status {
            task.status = status;
        }
        if let Some(verdict) = &update.verdict {
            task.verdict = verdict.clone();
        }
        if let Some(output) = &update.output {
            task.output = output.clone();
        }
        if let Some(hold) = update.hold {
            task.hold = hold;
        }
        let is_blocked = task.status == TaskStatus::Blocked;
        self.blocked = self.blocked + usize::from(is_blocked) - usize::from(was_blocked);
        let held = &self.held;
        self.frontier.update(&self.plan, index, &|t| met(t, held));
    }

    /// Tasks to start now, in plan order (see `weft_core::schedule::next_to_start`).
    pub fn next_to_start(&self, running: usize, cap: usize, halted: bool) -> Vec<usize> {
        self.frontier.next_to_start(running, cap, halted)
    }

    /// Manual tasks waiting for a person, in plan order.
    pub fn waiting_for_person(&self) -> Vec<usize> {
        self.frontier.waiting_for_person()
    }

    /// Store the pending descendants of `failed` as blocked; returns their ids.
    pub fn block_descendants(
        &mut self,
        store: &mut Store,
        failed: &str,
    ) -> Result<Vec<String>, EngineError> {
        let blocked: Vec<String> = stopped_by_failure(&self.plan, failed)
            .into_iter()
            .map(|i| &self.plan.tasks[i])
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
        let event = EventKind::TasksBlocked {
            by: failed.to_owned(),
            tasks: blocked.clone(),
        };
        self.set_statuses(store, &blocked, TaskStatus::Blocked, Event::new(event))?;
        Ok(blocked)
    }

    /// Blocked descendants of `task_id` with no failed ancestor left go back to pending
    /// (as `control::release_blocked`, on this view).
    pub fn release_blocked(&mut self, store: &mut Store, task_id: &str) -> Result<(), EngineError> {
        if self.blocked == 0 {
            return Ok(());
        }
        let released = releasable(&self.plan, task_id);
        if released.is_empty() {
            return Ok(());
        }
        let event = EventKind::TasksReleased {
            by: task_id.to_owned(),
            tasks: released.clone(),
        };
        self.set_statuses(store, &released, TaskStatus::Pending, Event::new(event))
    }

    /// How many tasks have each status in `wanted`.
    pub fn count(&self, wanted: &[TaskStatus]) -> usize {
        self.plan
            .tasks
            .iter()
            .filter(|t| wanted.contains(&t.status))
            .count()
    }
}

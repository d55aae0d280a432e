//! [`RunLoop`]: one run of one plan, from its claim to its end.
//!
//! A pass of the loop, whenever something could have changed (a task ended, a poll
//! interval passed, or at the start): take the control requests, catch the plan view up
//! with other processes, start what is ready up to the slot cap. Between passes it waits
//! for messages from the attempts' threads: progress updates only the display; ends are
//! judged already (in the attempt's thread, by core's one gate) and are recorded in plan
//! order, a passing isolated attempt through the [`LandingQueue`], which is drained
//! after each batch of messages unless a verification of the tip is in progress (its
//! steps' ends arrive on the same channel; see `verify`).
//!
//! See the parent module for the threads, bounds and crash safety of a run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};

use weft_agents::supervise::process_start_ticks;
use weft_core::event::{ControlRequest, Event, EventKind, RunTotals};
use weft_core::{PlanStatus, RunStatus, TaskKind, TaskStatus};
use weft_store::{OpenOptions, Store};

use super::landing::LandingQueue;
use super::live::Live;
use super::view::PlanView;
use super::{RunSummary, now, random_hex16, same_process_alive, startup};
use crate::approvals::RunnerApprovals;
use crate::attempt::Msg;
use crate::error::EngineError;
use crate::executor::{Executor, LocalExecutor};
use crate::isolation::Isolation;
use crate::{EngineConfig, RunProgress};

/// Events read from the store per query when reporting them.
const PUBLISH_PAGE: u32 = 500;

/// How long the engine's writes keep retrying a store another process holds busy.
const BUSY_RETRY: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Everything one run holds while it executes.
pub(crate) struct RunLoop<'a> {
    pub(super) config: &'a EngineConfig,
    pub(super) on_progress: &'a mut dyn FnMut(RunProgress),
    /// The last event sequence number reported through `on_progress`.
    published: i64,
    pub(super) store: Store,
    pub(super) run_id: String,
    pub(super) log_dir: PathBuf,
    pub(super) prompt_dir: PathBuf,
    /// The git side of an isolated run (landing is central: only the loop lands).
    pub(super) isolation: Option<Arc<Isolation>>,
    stashes: startup::Stashes,
    /// Where attempts run.
    pub(super) executor: Arc<dyn Executor>,
    pub(super) approvals: Arc<RunnerApprovals>,
    pub(super) view: PlanView,
    /// Running attempts, by attempt id.
    pub(super) live: BTreeMap<String, Live>,
    pub(super) landings: LandingQueue,
    pub(super) tx: Sender<Msg>,
    rx: Receiver<Msg>,
    /// A failure stopped new starts (`halt_on_failure`).
    pub(super) halted: bool,
    /// `weft stop` or an interrupt: nothing new starts; running attempts are cancelled.
    pub(super) stopping: bool,
    /// Tasks asked to start out of turn.
    forced: Vec<String>,
    /// Conflicted tasks opted into one repair attempt: task id -> the branch to merge in.
    pub(super) repairs: BTreeMap<String, String>,
    announced_waiting: BTreeSet<String>,
    /// What the plan's ended attempts spent (every run, retries included).
    pub(super) spent_before: weft_core::spend::Spend,
    /// The plan's budget: its own (from its workflow file) when it has one, else the
    /// settings'.
    pub(super) plan_budget: weft_core::spend::Budget,
    /// The plan's budget was reached and `budget_reached` stored, in this run.
    pub(super) budget_announced: bool,
    /// The run's verification of its integration tip (`verify`).
    pub(super) verify: super::verify::VerifyState,
}

impl<'a> RunLoop<'a> {
    /// Claim the plan's run and make it ready to loop: isolation prepared, leftovers of a
    /// dead engine reconciled and their landings finished, tasks put back in line.
    pub fn start(
        config: &'a EngineConfig,
        on_progress: &'a mut dyn FnMut(RunProgress),
    ) -> Result<RunLoop<'a>, EngineError> {
        let options = OpenOptions {
            busy_timeout: config.limits.busy_timeout,
        };
        let mut store = Store::open_or_create(&config.state_dir, options)?;
        store.set_secrets(config.supervision.secrets.clone());
        // Another command holding the store's lock never ends a run or loses a result.
        store.retry_busy_writes(BUSY_RETRY);
        if let Some(notice) = config.supervision.live_notice.clone() {
            store.on_busy_wait(Box::new(move |wait| {
                (notice.0)(&RunProgress::StoreBusy {
                    holder: wait.holder.as_ref().map(|h| (h.pid, h.command.clone())),
                    waited_secs: wait.waited.as_secs(),
                    patience_secs: wait.patience.as_secs(),
                });
            }));
        }
        let plan = store.plan(&config.plan_id)?;
        if plan.status == PlanStatus::Draft {
            return Err(EngineError::Draft {
                plan: plan.short_id().to_owned(),
            });
        }
        startup::preflight_runners(config, &plan)?;
        crate::contain::confined(config)?;
        drop(plan);
        startup::refuse_degraded(config, &store)?;
        crate::handoff::journal::refuse_if_pending(&config.state_dir, "start a run")?;
        // What the run stores from here on is reported, from its claim to its end.
        let mut published = store.last_event_seq()?;
        let pid = std::process::id();
        let ticks = process_start_ticks(pid).unwrap_or(0);
        let claimed = store.claim_run(
            &config.plan_id,
            &random_hex16()[..8],
            (pid, ticks),
            &same_process_alive,
            now(),
        )?;
        let run_id = claimed.run.id.clone();
        let log_dir = config.state_dir.join("logs").join(&run_id);
        let prompt_dir = config.state_dir.join("prompts").join(&run_id);
        for dir in [&log_dir, &prompt_dir] {
            // 0700: what agents print may hold secrets no mask recognised.
            weft_agents::contain::private::create_dir_all(dir).map_err(|error| {
                EngineError::Io {
                    path: dir.display().to_string(),
                    error,
                }
            })?;
        }
        let (isolation, stashes) = match startup::isolate(config, &mut store, &claimed.run) {
            Ok(prepared) => prepared,
            Err(error) => {
                // What was stored before the failure (the claim) is still reported.
                let _ = publish(&store, &config.plan_id, &mut published, on_progress);
                return Err(error);
            }
        };
        let isolation = isolation.map(Arc::new);
        let executor: Arc<dyn Executor> = Arc::new(LocalExecutor {
            workspace: config.workspace.clone(),
            runnable: config.isolation.runnable.clone(),
            setup: crate::contain::SetupContainment::of(config),
            isolation: isolation.clone(),
        });
        let view = PlanView::load(&store, &config.plan_id)?;
        let approvals = RunnerApprovals::new(
            config.approvals.mode,
            config.approvals.pre_approved.clone(),
            &config.state_dir,
            config.limits.busy_timeout,
            &config.plan_id,
        );
        let (tx, rx) = mpsc::channel::<Msg>();
        let mut run = RunLoop {
            config,
            on_progress,
            published,
            store,
            run_id,
            log_dir,
            prompt_dir,
            isolation,
            stashes,
            executor,
            approvals,
            view,
            live: BTreeMap::new(),
            landings: LandingQueue::default(),
            tx,
            rx,
            halted: false,
            stopping: false,
            forced: Vec::new(),
            repairs: BTreeMap::new(),
            announced_waiting: BTreeSet::new(),
            spent_before: weft_core::spend::Spend::default(),
            plan_budget: config.spending.plan,
            budget_announced: false,
            verify: super::verify::VerifyState::default(),
        };
        let held = run.load_verification()?;
        run.view.hold_for_verification(held, run.verify.gated);
        run.resume()?;
        run.spent_before = super::live::stored_spend(&run.store.attempts_of_plan(&config.plan_id)?);
        let own = run.store.plan_budget(&config.plan_id)?;
        if own.is_set() {
            run.plan_budget = own;
        }
        Ok(run)
    }

    /// What a run does before its first pass: the plan is running, a dead engine's
    /// attempts are reconciled and its journaled landings finished, tasks go back in line.
    fn resume(&mut self) -> Result<(), EngineError> {
        self.view.set_status(&mut self.store, PlanStatus::Running)?;
        self.reconcile()?;
        self.announce_verification()?;
        self.resume_verification()?;
        self.recover_landings()?;
        self.prepare_tasks()?;
        self.publish()
    }

    /// Live progress that is not an event.
    pub(super) fn show(&mut self, progress: RunProgress) {
        (self.on_progress)(progress);
    }

    /// Report every event stored for the plan since the last report, in order: the
    /// run's own and any other process's. Bounds: one indexed query per
    /// [`PUBLISH_PAGE`] events; called once per loop pass that could have changed
    /// something, not per output line.
    pub(super) fn publish(&mut self) -> Result<(), EngineError> {
        publish(
            &self.store,
            &self.config.plan_id,
            &mut self.published,
            self.on_progress,
        )
    }

    pub(super) fn plan_id(&self) -> &str {
        &self.config.plan_id
    }

    /// Loop until nothing more can start, then end the run. Whatever the run stored is
    /// reported, also when it fails.
    pub fn run(mut self) -> Result<RunSummary, EngineError> {
        let result = self.run_loop().and_then(|()| {
            let refused = self.landings.refused.take();
            let summary = self.end()?;
            match refused {
                Some(foreign) => Err(foreign.into_error("landing on the integration branch")),
                None => Ok(summary),
            }
        });
        if result.is_err() {
            let _ = self.publish();
        }
        result
    }

    fn run_loop(&mut self) -> Result<(), EngineError> {
        // Scheduling work (store reads, control requests) happens when something could
        // have changed: a task finished, a poll interval passed, or at the start. Output
        // lines and other progress only update the display.
        let mut reschedule = true;
        loop {
            self.notice_busy()?;
            reschedule |= self.notice_interrupt();
            if reschedule {
                self.take_controls()?;
                self.view.refresh(&self.store)?;
                self.start_ready()?;
                self.publish()?;
                // A verification in progress is waited for like a running attempt.
                if self.live.is_empty() && !self.verifying() {
                    // Before the run can end, the last landings are verified (which may
                    // release dependents the gate held); its end is received below.
                    if !self.verify_if_due(true)? {
                        if self.nothing_left()? {
                            break;
                        }
                        continue;
                    }
                }
            }
            match self.receive()? {
                Some(again) => reschedule = again,
                None => break,
            }
        }
        Ok(())
    }

    /// Say so when writes had to wait for a store another process held busy.
    fn notice_busy(&mut self) -> Result<(), EngineError> {
        let waits = self.store.take_busy_waits();
        if let Some(longest) = waits.iter().max() {
            let text = format!(
                "the store was busy: {} write(s) waited up to {:.1} s for another weft process to release it (the engine retries for up to {} minutes)",
                waits.len(),
                longest.as_secs_f64(),
                BUSY_RETRY.as_secs() / 60
            );
            self.notice(text)?;
        }
        Ok(())
    }

    /// A raised interrupt (Ctrl-C) stops the run like `weft stop`; true when it was news.
    fn notice_interrupt(&mut self) -> bool {
        if self.stopping || !crate::interrupted(self.config.supervision.interrupt.as_ref()) {
            return false;
        }
        // Stopping must not wait on the store: a notice it could not record is still shown.
        let _ = self.notice(
            "interrupted: stopping the running tasks (press Ctrl-C again to quit at once)".into(),
        );
        self.stop();
        true
    }

    /// Tell the user something that is not about one task: stored, then reported (one
    /// the store cannot take is shown all the same).
    fn notice(&mut self, text: String) -> Result<(), EngineError> {
        let event = Event::new(EventKind::Notice { text: text.clone() }).run(&self.run_id);
        let stored = self
            .store
            .record_event(Some(&self.config.plan_id), event, now());
        match stored {
            Ok(_) => self.publish(),
            Err(error) => {
                self.show(RunProgress::Unstored { text });
                Err(error.into())
            }
        }
    }

    pub(super) fn stop(&mut self) {
        self.stopping = true;
        for running in self.live.values() {
            running.canceller.cancel();
        }
        self.stop_verification();
    }

    /// Act on the control requests other processes left for this plan.
    fn take_controls(&mut self) -> Result<(), EngineError> {
        for queued in self.store.take_controls(&self.config.plan_id, now())? {
            match queued.request {
                ControlRequest::Stop => self.stop(),
                ControlRequest::Cancel { task } => {
                    if let Some(running) =
                        self.live.values_mut().find(|l| l.attempt.task_id == task)
                    {
                        running.cancelled_by_user = true;
                        running.canceller.cancel();
                    }
                }
                ControlRequest::ForceStart { task } => self.forced.push(task),
                ControlRequest::Repair { task } => {
                    let branch = self
                        .store
                        .attempts_of_task(&self.config.plan_id, &task)?
                        .into_iter()
                        .rev()
                        .find_map(|a| a.branch);
                    if let Some(branch) = branch {
                        self.repairs.insert(task, branch);
                    }
                }
                // Written by a newer weft; its `control_handled` event records that it was
                // taken (and left alone).
                ControlRequest::Unrecognized { .. } => {}
            }
        }
        Ok(())
    }

    /// Whether a task has a live attempt.
    fn is_live(&self, task_id: &str) -> bool {
        self.live.values().any(|l| l.attempt.task_id == task_id)
    }

    /// What starts in this pass: forced tasks first, then ready ones in plan order, up to
    /// the free slots; in an isolated run at most one ops task at a time.
    fn choose_starts(&mut self, budget_reached: bool) -> Vec<usize> {
        let mut starts: Vec<usize> = Vec::new();
        for task_id in std::mem::take(&mut self.forced) {
            if let Some(index) = self.view.index(&task_id)
                && !matches!(
                    self.view.plan().tasks[index].status,
                    TaskStatus::InProgress | TaskStatus::Completed
                )
                && !self.is_live(&task_id)
            {
                starts.push(index);
            }
        }
        let running = self.live.len() + starts.len();
        let halted = self.halted || budget_reached;
        for index in self
            .view
            .next_to_start(running, self.config.limits.parallel, halted)
        {
            if !starts.contains(&index) {
                starts.push(index);
            }
        }
        if self.isolation.is_some() {
            // Ops tasks share the run's one integration checkout (moved to the tip for
            // each): one at a time, the others wait their turn.
            let view = &self.view;
            let is_ops = |id: &str| view.task(id).is_some_and(|t| t.kind == TaskKind::Ops);
            // A verification has the checkout moved to the tip it verifies.
            let mut ops_busy =
                self.verifying() || self.live.values().any(|l| is_ops(&l.attempt.task_id));
            starts.retain(|&i| {
                if view.plan().tasks[i].kind != TaskKind::Ops {
                    return true;
                }
                !std::mem::replace(&mut ops_busy, true)
            });
        }
        starts
    }

    fn start_ready(&mut self) -> Result<(), EngineError> {
        if self.stopping {
            return Ok(());
        }
        // Like `halt_on_failure`: a reached plan budget starts nothing new (a forced
        // start still starts), running attempts finish.
        let budget_reached = self.plan_budget_reached()?;
        for index in self.choose_starts(budget_reached) {
            self.start_task(index)?;
        }
        Ok(())
    }

    /// With nothing running: announce the manual tasks waiting for a person, and say
    /// whether the run is over.
    fn nothing_left(&mut self) -> Result<bool, EngineError> {
        for index in self.view.waiting_for_person() {
            let task = &self.view.plan().tasks[index];
            if self.announced_waiting.insert(task.id.clone()) {
                let waiting = EventKind::WaitingForPerson {
                    order: task.order,
                    title: task.title.clone(),
                };
                let waiting = Event::new(waiting).run(&self.run_id).task(&task.id);
                self.store
                    .record_event(Some(&self.config.plan_id), waiting, now())?;
            }
        }
        self.publish()?;
        let halted = self.halted || self.plan_budget_reached()?;
        Ok(self.stopping
            || self
                .view
                .next_to_start(0, self.config.limits.parallel, halted)
                .is_empty()
                && self.forced.is_empty())
    }

    /// Wait for the attempts' messages (at most one poll interval), handle every one that
    /// arrived, then land what is waiting. `Some(true)`: something may have changed.
    fn receive(&mut self) -> Result<Option<bool>, EngineError> {
        let mut reschedule = false;
        let mut messages = Vec::new();
        match self.rx.recv_timeout(self.config.limits.poll_interval) {
            Ok(message) => messages.push(message),
            Err(RecvTimeoutError::Timeout) => {
                reschedule = true;
                self.show(RunProgress::Tick);
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        }
        // Whatever else arrived too, so output never queues up behind the poll.
        messages.extend(self.rx.try_iter());
        // Progress first; then the ends, lowest plan order first.
        let order_of = |message: &Msg| match message {
            Msg::Finished { attempt, .. } => self.live.get(attempt).map_or(u32::MAX, |l| l.order),
            Msg::Supervisor { .. } => 0,
            Msg::Verified { .. } => u32::MAX,
        };
        messages.sort_by_key(|m| (!matches!(m, Msg::Supervisor { .. }), order_of(m)));
        for message in messages {
            match message {
                Msg::Supervisor { attempt, event } => self.progress(&attempt, event)?,
                Msg::Finished { attempt, result } => {
                    // Its open permission questions are nobody's any more.
                    self.approvals.attempt_ended(&attempt);
                    reschedule |= self.attempt_ended(&attempt, *result)?;
                }
                Msg::Verified { runs, stopped } => {
                    reschedule |= self.verify_step_ended(runs, stopped)?;
                }
            }
        }
        // The integration tip holds still while a verification runs: what passed waits
        // in the queue (journaled) and lands once it has ended.
        if !self.verifying() {
            self.land_waiting()?;
        }
        reschedule |= self.verify_if_due(false)?;
        Ok(Some(reschedule))
    }

    /// Give back stashed changes, record how the run ended and release it.
    fn end(&mut self) -> Result<RunSummary, EngineError> {
        let restored = match &self.isolation {
            Some(iso) => {
                let restored = iso.restore_stashes(&self.stashes);
                iso.run_auto_maintenance();
                restored
            }
            None => Vec::new(),
        };
        for text in restored {
            self.notice(text)?;
        }
        self.view.refresh(&self.store)?;
        let total = self.view.plan().tasks.len();
        let completed = self.view.count(&[TaskStatus::Completed]);
        let skipped = self.view.count(&[TaskStatus::Skipped]);
        let failed = self.view.count(&[
            TaskStatus::Failed,
            TaskStatus::Cancelled,
            TaskStatus::Conflicted,
        ]);
        let blocked = self.view.count(&[TaskStatus::Blocked]);
        let all_done = completed + skipped == total;
        let status = if all_done {
            RunStatus::Completed
        } else if self.stopping {
            RunStatus::Stopped
        } else {
            RunStatus::Failed
        };
        let (input_tokens, output_tokens, cost_usd) = self.usage()?;
        let totals = RunTotals {
            completed,
            skipped,
            failed,
            blocked,
            waiting: total - completed - skipped - failed - blocked,
            input_tokens,
            output_tokens,
            cost_usd,
        };
        self.store.release_run(
            &self.run_id,
            &self.config.plan_id,
            status,
            Some(totals),
            now(),
        )?;
        let plan_status = match status {
            RunStatus::Completed => PlanStatus::Completed,
            RunStatus::Stopped => PlanStatus::Approved,
            _ => PlanStatus::Failed,
        };
        self.view.set_status(&mut self.store, plan_status)?;
        self.publish()?;
        Ok(RunSummary {
            run_id: self.run_id.clone(),
            status,
            all_done,
        })
    }

    /// Tokens and cost of this run's attempts.
    fn usage(&self) -> Result<(u64, u64, f64), EngineError> {
        let attempts = self.store.attempts_of_plan(&self.config.plan_id)?;
        Ok(attempts.iter().filter(|a| a.run_id == self.run_id).fold(
            (0u64, 0u64, 0f64),
            |(i, o, c), a| {
                (
                    i + a.input_tokens.unwrap_or(0),
                    o + a.output_tokens.unwrap_or(0),
                    c + a.cost_usd.unwrap_or(0.0),
                )
            },
        ))
    }
}

/// Report the plan's events after `*after`, oldest first, moving `*after` past them.
fn publish(
    store: &Store,
    plan_id: &str,
    after: &mut i64,
    on_progress: &mut dyn FnMut(RunProgress),
) -> Result<(), EngineError> {
    loop {
        let page = store.events(Some(plan_id), *after, PUBLISH_PAGE)?;
        let full = page.len() == PUBLISH_PAGE as usize;
        for event in page {
            *after = event.seq;
            on_progress(RunProgress::Stored(event));
        }
        if !full {
            return Ok(());
        }
    }
}

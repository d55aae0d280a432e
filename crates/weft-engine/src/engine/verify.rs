//! Verifying the integration tip (issue 15 §1): the run's `verify` commands on the tip
//! after landings; on a failure, the same tip once more, then a bisect among the
//! landings since the last green tip, then the culprit quarantined.
//!
//! Contract:
//!
//! - **When**: with `verify` set in an isolated single-repository run, whenever the
//!   landing queue has emptied (`verify_batch` unset) or once `verify_batch` landings
//!   are past the last green tip, and always before the run ends (when nothing is
//!   running). Never while an ops task uses the integration checkout, never while the
//!   run is stopping, one verification at a time.
//! - **Where**: the run's integration checkout, detached at the tip being verified (an
//!   existing commit: every landing is a merge commit on the integration branch, so the
//!   tip after landing `k` is that commit; the "alone" tip is built as objects by
//!   merge-tree). Each command runs with `sh -c` under the same supervisor, containment
//!   and bounds as a task's checks; its output goes to the run's log folder
//!   (`verify-<id>.check-<n>.log`), its tail into the events.
//! - **Green**: a tip whose every command passed, or whose two runs disagreed (flaky:
//!   reported, nobody blamed). It is stored per run (`Store::update_verify`); with
//!   `verify_gate`, a landed task counts as met for its dependents only from then on.
//! - **Red twice**: [`weft_core::bisect::next_step`] names the tips to verify among the
//!   landings since the last green tip (the run's base before the first green one), at
//!   most ⌈log2 N⌉ runs; the culprit's landing is then verified alone on the tip before
//!   it ("fails only in combination" when that passes: the later landing is taken out).
//! - **Quarantine**: the integration branch is rebuilt without the culprit's landing and
//!   without each later landing whose attempt was cut from a tip holding it
//!   ([`weft_git::Repo::rebuild_without_recorded`]: merge-tree, no checkout, one atomic
//!   compare-and-swap of the integration ref and weft's record of it); a landing that no
//!   longer applies is taken out too and its task becomes `conflicted`. The culprit is
//!   `failed` with a verdict that quotes the failing command and its output tail and
//!   names the tip it broke; its dependents are blocked; the tasks whose attempts started
//!   from a tip holding it go back to pending with a verdict saying why, and so does a
//!   passed attempt cut from such a tip that had not landed yet (see `landing::land`).
//!   The rebuilt tip is then verified like any other.
//!
//! Threads: the loop decides and records; the commands run off its thread. Each step
//! (the first run on a tip, the repeat, a bisect step, the culprit alone) moves the
//! integration checkout to its tip on the loop's thread, then runs its commands on a
//! `weft-verify-<id>` worker thread, which sends [`Msg::Verified`] over the attempts'
//! channel when they end; the loop records the outcome and starts the next step (or
//! quarantines, on its own thread: git plumbing and store writes, no commands). While
//! a verification is in progress the loop goes on as usual — attempts start (ops tasks
//! excepted: the checkout is in use), their progress and ends are handled, control
//! requests are taken — but nothing lands: passed attempts wait journaled in the
//! [`LandingQueue`](super::landing::LandingQueue) and land once the verification has
//! ended (the tip must hold still for a bisect and a quarantine to mean anything), and a
//! later verification covers them. `weft stop` (or an interrupt) cancels the running
//! command through the supervisor (its process group, like an attempt's); the stopped
//! step is reported by a notice, its tip stays unverified and the next run verifies it.
//! A loop that fails with a step running stops and joins it ([`Running`]'s drop).
//! Bounds: one verification step at a time, each command bounded like a check (timeout,
//! log cap, tail); at most ⌈log2 N⌉ + 3 steps per red tip; a quarantine takes out at
//! most 4 × [`MAX_ROUNDS`] landings.
//!
//! Crash safety: the integration ref only moves in the rebuild, together with
//! `refs/weft/<run>/tip`. A quarantine is journaled in the store before the ref moves and
//! the journal is cleared only after the tasks' new statuses are stored; a later engine
//! finishes a journaled quarantine ([`RunLoop::resume_verification`]: a rebuild already
//! done is recognised), and verifies the tip again, so a run killed during a bisect or a
//! rebuild finishes the verification the next time it runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use weft_core::bisect::{Step, next_step};
use weft_core::event::{Event, EventKind};
use weft_core::{CheckRun, Landing, TaskKind};
use weft_git::{Oid, Rebuild, Repo};
use weft_store::VerifyUpdate;

mod commands;
mod quarantine;

pub use commands::{ByHand, by_hand};
use commands::{Running, Stopper, check_plan, effective_commands, spawn_worker};

use super::now;
use super::runloop::RunLoop;
use crate::attempt::Msg;
use crate::error::EngineError;
use crate::isolation::git_error;

/// A quarantine that keeps finding landings that no longer apply gives up after taking
/// out 4 × this many.
const MAX_ROUNDS: usize = 16;

/// Characters of a failing command's output a quarantine verdict quotes.
const VERDICT_TAIL: usize = 2000;

/// What the loop keeps of its run's verification.
#[derive(Debug, Default)]
pub(crate) struct VerifyState {
    /// The step in progress (its commands run on a worker thread).
    pub running: Option<Running>,
    /// The last green tip (`None`: none yet; the run's base is then the starting point).
    pub green: Option<Oid>,
    /// The run's base commit.
    pub base: Option<Oid>,
    /// Said once: why this run does not verify although `verify` is set.
    pub not_here: Option<String>,
    /// A red tip nothing could be quarantined for: not verified again in this run.
    pub stuck: Option<Oid>,
    /// Something landed since the last look.
    pub landed: bool,
    /// The commands: the plan's own (its workflow file's `verify`), else the setting's.
    pub commands: Vec<String>,
    /// `verify_gate`, with commands to verify.
    pub gated: bool,
}

/// A quarantine in progress, as journaled in the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    culprit: String,
    /// Landing commits to take out: the culprit's, and those cut from a tip holding it.
    drop: Vec<String>,
    /// The tip before the culprit's landing (it passed).
    green: String,
    broke: String,
    command: String,
    output_tail: String,
    only_in_combination: Option<bool>,
    bisect_runs: u32,
    landings: usize,
    requeued: Vec<String>,
    conflicted: Vec<(String, Vec<String>)>,
}

/// How one verification went.
struct Verified {
    passed: bool,
    failed: Option<CheckRun>,
}

impl RunLoop<'_> {
    /// The repository of a run that verifies (isolated, one repository, `verify` set).
    fn verify_repo(&self) -> Option<Repo> {
        if self.verify.commands.is_empty() || self.verify.not_here.is_some() {
            return None;
        }
        let iso = self.isolation.as_deref()?;
        Some(iso.slots[0].repo.clone())
    }

    /// At the start of a run: read the green tip, say why this run cannot verify, and
    /// the tasks the gate holds back (landed in this run, not under a green tip).
    pub(super) fn load_verification(&mut self) -> Result<HashSet<String>, EngineError> {
        self.verify.commands = effective_commands(
            &self.store,
            &self.config.plan_id,
            &self.config.verify.commands,
        )?;
        self.verify.gated = self.config.verify.gate && !self.verify.commands.is_empty();
        if self.verify.commands.is_empty() {
            return Ok(HashSet::new());
        }
        let Some(iso) = self.isolation.as_deref() else {
            self.verify.not_here = Some(
                "`verify` is set but this run is not isolated: there is no integration tip to verify, so it does not run".into(),
            );
            self.verify.gated = false;
            return Ok(HashSet::new());
        };
        if iso.is_group() {
            self.verify.not_here = Some(
                "`verify` is set but this is a multi-repo run: verifying, bisecting and quarantining need one repository, so it does not run".into(),
            );
            self.verify.gated = false;
            return Ok(HashSet::new());
        }
        let repo = iso.slots[0].repo.clone();
        let state = self.store.verify_state(&self.run_id)?;
        self.verify.green = state.green.as_deref().and_then(Oid::parse);
        let run = self.store.run(&self.run_id)?;
        self.verify.base = run
            .and_then(|r| r.base_ref)
            .and_then(|b| repo.rev_parse(&b).ok().flatten());
        let tip = iso.recorded_tips()?.remove(0);
        if !self.verify.gated || self.verify.green.as_ref() == Some(&tip) {
            return Ok(HashSet::new());
        }
        // Landed in this run and not under the green tip: held until a green tip holds it.
        let mut held = HashSet::new();
        for attempt in self.store.attempts_of_plan(self.plan_id())? {
            let Some(Landing::Landed { merge }) = &attempt.landing else {
                continue;
            };
            if attempt.run_id != self.run_id {
                continue;
            }
            let covered = match &self.verify.green {
                Some(green) => repo.is_ancestor(merge, green.as_str()).unwrap_or(false),
                None => false,
            };
            if !covered {
                held.insert(attempt.task_id.clone());
            }
        }
        Ok(held)
    }

    /// Say once why `verify` does not run here.
    pub(super) fn announce_verification(&mut self) -> Result<(), EngineError> {
        if let Some(text) = self.verify.not_here.clone() {
            let event = Event::new(EventKind::Notice { text }).run(&self.run_id);
            self.store
                .record_event(Some(&self.config.plan_id), event, now())?;
        }
        Ok(())
    }

    /// Finish a quarantine a dead engine journaled.
    pub(super) fn resume_verification(&mut self) -> Result<(), EngineError> {
        if self.verify_repo().is_none() {
            return Ok(());
        }
        let state = self.store.verify_state(&self.run_id)?;
        if let Some(text) = state.quarantine
            && let Ok(journal) = serde_json::from_str::<Journal>(&text)
        {
            self.finish_quarantine(journal)?;
        }
        Ok(())
    }

    /// Start verifying the integration tip if it is due (see the module's contract);
    /// `idle`: nothing is running, so the run would otherwise end. True when a
    /// verification started (its commands run on a worker thread; its end arrives as
    /// [`Msg::Verified`]).
    pub(super) fn verify_if_due(&mut self, idle: bool) -> Result<bool, EngineError> {
        let Some(repo) = self.verify_repo() else {
            return Ok(false);
        };
        if self.verify.running.is_some() || self.stopping || self.landings.refused.is_some() {
            return Ok(false);
        }
        if !idle && !self.verify.landed {
            return Ok(false);
        }
        // The integration checkout is the ops tasks' too.
        let ops_live = self.live.values().any(|l| l.task.kind == TaskKind::Ops);
        if ops_live {
            return Ok(false);
        }
        self.verify.landed = false;
        let tip = self.recorded_tip()?;
        if [&self.verify.green, &self.verify.base, &self.verify.stuck]
            .iter()
            .any(|known| known.as_ref() == Some(&tip))
        {
            return Ok(false);
        }
        let due = idle
            || match self.config.verify.batch {
                None => true,
                Some(n) => {
                    let from = self.last_green().unwrap_or_else(|| tip.clone());
                    let since = repo.first_parents_between(&from, &tip).map_err(git_error)?;
                    since.len() >= n
                }
            };
        if !due {
            return Ok(false);
        }
        self.begin_step(tip.clone(), tip, "landed", Phase::Landed)?;
        Ok(true)
    }

    /// Whether a verification is in progress (a step's commands run): nothing lands and
    /// no ops task starts until it ends.
    pub(super) fn verifying(&self) -> bool {
        self.verify.running.is_some()
    }

    /// The run is stopping: the running verification step's commands are cancelled
    /// (their process group, like an attempt's); its end arrives stopped.
    pub(super) fn stop_verification(&mut self) {
        if let Some(running) = &self.verify.running {
            running.stopper.stop();
        }
    }

    /// The last green tip, else the run's base.
    fn last_green(&self) -> Option<Oid> {
        self.verify
            .green
            .clone()
            .or_else(|| self.verify.base.clone())
    }

    fn recorded_tip(&self) -> Result<Oid, EngineError> {
        let iso = self.isolation.as_deref().ok_or_else(|| EngineError::Io {
            path: self.config.workspace.display().to_string(),
            error: std::io::Error::other("not isolated"),
        })?;
        Ok(iso.recorded_tips()?.remove(0))
    }

    /// Start one step of the verification of `tip`: the commands on `at` (the tip itself,
    /// a bisect's earlier tip, or a landing alone), with its `verification_started`
    /// event; the commands run on a worker thread.
    fn begin_step(
        &mut self,
        tip: Oid,
        at: Oid,
        purpose: &'static str,
        phase: Phase,
    ) -> Result<(), EngineError> {
        let Some(iso) = self.isolation.clone() else {
            return Ok(());
        };
        let commands = self.verify.commands.clone();
        let started = EventKind::VerificationStarted {
            tip: at.as_str().to_owned(),
            commands: commands.clone(),
            purpose: purpose.to_owned(),
        };
        let update = VerifyUpdate {
            verifying: Some(Some(at.as_str().to_owned())),
            ..VerifyUpdate::default()
        };
        self.store.update_verify(
            &self.run_id,
            &self.config.plan_id,
            &update,
            Some(Event::new(started).run(&self.run_id)),
            now(),
        )?;
        self.publish()?;
        let stopper = Arc::new(Stopper::default());
        let worker = match check_plan(self.config, &commands, &iso, &self.log_dir, &at)? {
            Ok(plan) => Some(spawn_worker(
                Arc::clone(&self.executor),
                plan,
                Arc::clone(&stopper),
                self.tx.clone(),
            )?),
            Err(runs) => {
                // Nothing to run: the step ends at once, through the same path.
                let _ = self.tx.send(Msg::Verified {
                    runs,
                    stopped: false,
                });
                None
            }
        };
        self.verify.running = Some(Running {
            tip,
            at,
            purpose,
            phase,
            clock: Instant::now(),
            stopper,
            worker,
        });
        Ok(())
    }

    /// A verification step's commands ended: record how, then take the next step (the
    /// repeat, a bisect step, the culprit alone, the quarantine) or turn the tip green.
    /// A stopped step is recorded as such and the tip stays unverified (the next run
    /// verifies it again). True: something may have changed.
    pub(super) fn verify_step_ended(
        &mut self,
        runs: Vec<CheckRun>,
        stopped: bool,
    ) -> Result<bool, EngineError> {
        let Some(mut running) = self.verify.running.take() else {
            return Ok(false);
        };
        let phase = std::mem::replace(&mut running.phase, Phase::Landed);
        let (tip, at, purpose) = (running.tip.clone(), running.at.clone(), running.purpose);
        let duration_ms = running.clock.elapsed().as_millis() as u64;
        // The worker sent its last message: joined at once.
        drop(running);
        let clear = VerifyUpdate {
            verifying: Some(None),
            ..VerifyUpdate::default()
        };
        if stopped {
            let text = format!(
                "the verification of the integration tip {} was stopped with the run; the next `weft run` verifies it again",
                at.short()
            );
            let event = Event::new(EventKind::Notice { text }).run(&self.run_id);
            self.store.update_verify(
                &self.run_id,
                &self.config.plan_id,
                &clear,
                Some(event),
                now(),
            )?;
            self.publish()?;
            return Ok(true);
        }
        let failed = runs.into_iter().find(|r| r.exit_code != Some(0));
        let kind = match &failed {
            None => EventKind::VerificationPassed {
                tip: at.as_str().to_owned(),
                purpose: purpose.to_owned(),
                duration_ms,
            },
            Some(run) => EventKind::VerificationFailed {
                tip: at.as_str().to_owned(),
                purpose: purpose.to_owned(),
                command: run.command.clone(),
                exit_code: run.exit_code,
                output_tail: weft_core::tail_chars(&run.output_tail, VERDICT_TAIL),
                duration_ms,
            },
        };
        let event = Event::new(kind).run(&self.run_id);
        self.store.update_verify(
            &self.run_id,
            &self.config.plan_id,
            &clear,
            Some(event),
            now(),
        )?;
        self.publish()?;
        let outcome = Verified {
            passed: failed.is_none(),
            failed,
        };
        self.advance(tip, phase, outcome)?;
        Ok(true)
    }

    /// What follows a step's outcome.
    fn advance(&mut self, tip: Oid, phase: Phase, outcome: Verified) -> Result<(), EngineError> {
        match phase {
            Phase::Landed if outcome.passed => self.turn_green(&tip),
            Phase::Landed => {
                let first = outcome.failed;
                self.begin_step(tip.clone(), tip, "repeat", Phase::Repeat { first })
            }
            Phase::Repeat { first } if outcome.passed => {
                let command = first.map(|f| f.command).unwrap_or_default();
                let flaky = EventKind::VerificationFlaky {
                    tip: tip.as_str().to_owned(),
                    command,
                };
                self.record_run_event(flaky)?;
                self.turn_green(&tip)
            }
            Phase::Repeat { first } => self.start_bisect(tip, outcome.failed.or(first)),
            Phase::Bisect(mut bisect) => {
                let i = bisect.step;
                let at = bisect.landings[i - 1].clone();
                bisect.results.push((i, outcome.passed));
                if let Some(failed) = outcome.failed {
                    bisect.failures.push((i, failed));
                }
                let step = EventKind::BisectStep {
                    tip: at.as_str().to_owned(),
                    landing: i,
                    of: bisect.landings.len(),
                    task: self.task_of_landing(&at)?.map(|(task, _)| task),
                    passed: outcome.passed,
                    runs: bisect.results.len() as u32,
                };
                self.record_run_event(step)?;
                self.bisect_next(bisect)
            }
            Phase::Alone(mut journal) => {
                journal.only_in_combination = Some(outcome.passed);
                self.quarantine(*journal)
            }
        }
    }

    /// `tip` failed twice: bisect among the landings since the last green tip.
    fn start_bisect(&mut self, tip: Oid, red: Option<CheckRun>) -> Result<(), EngineError> {
        let Some(repo) = self.verify_repo() else {
            return Ok(());
        };
        let red = red.unwrap_or_else(no_run);
        let Some(from) = self.last_green() else {
            self.verify.stuck = Some(tip);
            return Ok(());
        };
        let landings = repo.first_parents_between(&from, &tip).map_err(git_error)?;
        if landings.is_empty() {
            self.verify.stuck = Some(tip);
            return Ok(());
        }
        let failures = vec![(landings.len(), red)];
        self.bisect_next(Bisect {
            tip,
            from,
            landings,
            results: Vec::new(),
            failures,
            step: 0,
        })
    }

    /// The bisect's next step ([`next_step`]), or its culprit once found.
    fn bisect_next(&mut self, mut bisect: Bisect) -> Result<(), EngineError> {
        match next_step(bisect.landings.len(), &bisect.results) {
            Step::Culprit(k) => self.culprit_found(bisect, k),
            Step::Verify(i) => {
                crate::failpoint::hit("bisect_step");
                bisect.step = i;
                let at = bisect.landings[i - 1].clone();
                self.begin_step(bisect.tip.clone(), at, "bisect", Phase::Bisect(bisect))
            }
        }
    }

    /// The bisect named landing `culprit` (1-based): journal its quarantine, after
    /// verifying it alone on the tip before the landings it came after (when there are
    /// some and its landing composes without them).
    fn culprit_found(&mut self, bisect: Bisect, culprit: usize) -> Result<(), EngineError> {
        let Some(repo) = self.verify_repo() else {
            return Ok(());
        };
        let Bisect {
            tip,
            from,
            landings,
            results,
            failures,
            ..
        } = bisect;
        let n = landings.len();
        let bisect_runs = results.len() as u32;
        let broke = landings[culprit - 1].clone();
        let failure = failures
            .into_iter()
            .find(|(i, _)| *i == culprit)
            .map(|(_, f)| f)
            .unwrap_or_else(no_run);
        let before = if culprit == 1 {
            from.clone()
        } else {
            landings[culprit - 2].clone()
        };
        let Some((task_id, _)) = self.task_of_landing(&broke)? else {
            let text = format!(
                "verification fails from {} on, which is no task's landing: nothing is quarantined, and nothing new starts",
                broke.short()
            );
            self.record_run_event(EventKind::Notice { text })?;
            self.halted = true;
            self.verify.stuck = Some(tip);
            return Ok(());
        };
        // Later landings whose attempts were cut from a tip holding the culprit go too.
        let mut drop = vec![broke.as_str().to_owned()];
        let mut requeued = Vec::new();
        for later in &landings[culprit..] {
            if let Some((task, cut_from)) = self.task_of_landing(later)?
                && let Some(cut_from) = cut_from
                && repo.is_ancestor(broke.as_str(), &cut_from).unwrap_or(false)
            {
                drop.push(later.as_str().to_owned());
                requeued.push(task);
            }
        }
        let journal = Journal {
            culprit: task_id,
            drop,
            green: before.as_str().to_owned(),
            broke: broke.as_str().to_owned(),
            command: failure.command,
            output_tail: failure.output_tail,
            only_in_combination: (culprit == 1).then_some(false),
            bisect_runs,
            landings: n,
            requeued,
            conflicted: Vec::new(),
        };
        if culprit == 1 {
            return self.quarantine(journal);
        }
        // Does the culprit's landing fail alone, on the tip before the landings it came
        // after? One verification of a tip built as objects.
        let others: Vec<Oid> = landings[..culprit - 1].to_vec();
        match repo.compose_without(&broke, &others).map_err(git_error)? {
            Rebuild::Rebuilt { new_tip, .. } => {
                self.begin_step(tip, new_tip, "alone", Phase::Alone(Box::new(journal)))
            }
            _ => self.quarantine(journal),
        }
    }

    /// Journal the quarantine, then carry it out; the rebuilt tip is verified next.
    fn quarantine(&mut self, journal: Journal) -> Result<(), EngineError> {
        self.journal(Some(&journal))?;
        crate::failpoint::hit("quarantine_journaled");
        self.finish_quarantine(journal)?;
        self.verify.landed = true;
        Ok(())
    }

    /// The task whose landing is `commit` in this run, and the tip its attempt was cut
    /// from. A landing a rebuild re-created is a new commit its attempt does not name: it
    /// is known by its subject (`weft: land task N: …`) and the task's last landing.
    fn task_of_landing(
        &self,
        commit: &Oid,
    ) -> Result<Option<(String, Option<String>)>, EngineError> {
        let attempts: Vec<weft_core::Attempt> = self
            .store
            .attempts_of_plan(self.plan_id())?
            .into_iter()
            .filter(|a| a.run_id == self.run_id)
            .collect();
        for attempt in &attempts {
            if let Some(Landing::Landed { merge }) = &attempt.landing
                && merge == commit.as_str()
            {
                return Ok(Some((attempt.task_id.clone(), attempt.cut_from.clone())));
            }
        }
        let Some(repo) = self.verify_repo() else {
            return Ok(None);
        };
        let subject = repo.subject(commit).map_err(git_error)?;
        let order = subject
            .strip_prefix("weft: land task ")
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.trim().parse::<u32>().ok());
        let Some(task) = order.and_then(|o| self.view.plan().tasks.iter().find(|t| t.order == o))
        else {
            return Ok(None);
        };
        let cut_from = attempts
            .iter()
            .rev()
            .filter(|a| a.task_id == task.id)
            .find(|a| matches!(a.landing, Some(Landing::Landed { .. })))
            .and_then(|a| a.cut_from.clone());
        Ok(Some((task.id.clone(), cut_from)))
    }

    /// `tip` passed: it is the green tip, and every landing it holds is met.
    fn turn_green(&mut self, tip: &Oid) -> Result<(), EngineError> {
        self.record_evidence(tip);
        let update = VerifyUpdate {
            green: Some(Some(tip.as_str().to_owned())),
            ..VerifyUpdate::default()
        };
        self.store
            .update_verify(&self.run_id, &self.config.plan_id, &update, None, now())?;
        self.verify.green = Some(tip.clone());
        self.view.verified_all();
        Ok(())
    }

    /// The evidence notes of the landings `tip` holds beyond the last green tip name the
    /// verification that covered them. Best effort: a note left without it says `null`,
    /// which is true (weft cannot show that this verification covered it), and the
    /// verification itself is recorded in the store either way.
    fn record_evidence(&self, tip: &Oid) {
        let (Some(repo), Some(from)) = (self.verify_repo(), self.last_green()) else {
            return;
        };
        let Ok(landings) = repo.first_parents_between(&from, tip) else {
            return;
        };
        let record = crate::evidence::VerificationRecord {
            commands: self.verify.commands.clone(),
            tip: tip.as_str().to_owned(),
            result: crate::evidence::VerificationResult::Passed,
            at: now(),
        };
        let _ = crate::evidence::record_verification(&repo, &landings, &record);
    }

    fn record_run_event(&mut self, kind: EventKind) -> Result<(), EngineError> {
        let event = Event::new(kind).run(&self.run_id);
        self.store
            .record_event(Some(&self.config.plan_id), event, now())?;
        Ok(())
    }
}

/// Which step of a verification runs.
#[derive(Debug)]
enum Phase {
    /// The first run on the tip.
    Landed,
    /// The same tip again, after it failed (`first`: how).
    Repeat { first: Option<CheckRun> },
    /// A bisect step: an earlier tip.
    Bisect(Bisect),
    /// The culprit's landing alone on the tip before the landings it came after; the
    /// quarantine is journaled once it is known whether it fails alone.
    Alone(Box<Journal>),
}

/// A bisect among the landings between the last green tip and a red one.
#[derive(Debug)]
struct Bisect {
    /// The red tip.
    tip: Oid,
    /// The last green tip (or the run's base).
    from: Oid,
    landings: Vec<Oid>,
    /// `(k, passed)`: the tip after landing `k` (1-based), verified.
    results: Vec<(usize, bool)>,
    failures: Vec<(usize, CheckRun)>,
    /// The landing whose tip the running step verifies.
    step: usize,
}

/// A failure with nothing to quote.
fn no_run() -> CheckRun {
    CheckRun {
        command: String::new(),
        exit_code: None,
        output_tail: String::new(),
        duration_ms: None,
    }
}

//! Recording how attempts ended: the verdict (decided by core's one gate in the attempt's
//! thread), the landing when there is one, the statuses core's `settle` gives them, and
//! what a failure or a pass changes downstream.

use weft_core::event::{Event, EventKind, TranscriptFound, Usage};
use weft_core::note::TranscriptSeen;
use weft_core::prompt::{TAIL_CHARS, tail_chars};
use weft_core::verdict::{Cancelled, Evidence, decide, settle, with_landing};
use weft_core::{
    Attempt, AttemptStatus, Check, Denial, Landing, OutputSummary, Task, TaskStatus, Verdict,
    VerdictOutcome,
};
use weft_store::TaskUpdate;

use super::landing::{self, Outcome, Then, Waiting};
use super::live::{Live, MAX_DENIALS};
use super::now;
use super::runloop::RunLoop;
use crate::attempt::{AttemptResult, runner_name};
use crate::error::EngineError;

/// An attempt that ended, judged, not yet recorded.
pub(crate) struct Ended {
    pub live: Live,
    pub result: AttemptResult,
}

impl Ended {
    /// How it came to be cancelled, if it was: a stop interrupts (retryable on the next
    /// run); a user's cancel cancels.
    fn cancelled(&self, stopping: bool) -> Option<Cancelled> {
        // Stopped over its budget: a failure, not a cancel.
        if !self.result.outcome.cancelled || self.live.over_budget.is_some() {
            None
        } else if stopping && !self.live.cancelled_by_user {
            Some(Cancelled::ByStop)
        } else {
            Some(Cancelled::ByUser)
        }
    }

    /// What dependents are handed: what the assistant wrote last (structured streams),
    /// else its final answer, else its raw output. A transcript's answer comes first.
    fn carried(&self) -> String {
        let outcome = &self.result.outcome;
        let answer = self.transcript_answer();
        let text = answer
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .or(Some(self.live.assistant_tail.as_str()).filter(|t| !t.trim().is_empty()))
            .or(outcome
                .final_text
                .as_deref()
                .filter(|t| !t.trim().is_empty()))
            .unwrap_or(&outcome.tail);
        tail_chars(text, TAIL_CHARS * 4)
    }

    /// The final answer of the agent's transcript, unless that was a weak match.
    fn transcript_answer(&self) -> Option<String> {
        self.result
            .transcript
            .as_ref()
            .filter(|t| !t.weak)
            .and_then(|t| t.final_answer.clone())
    }

    /// Refused tool calls seen live and those the outcome reports, each once, bounded.
    fn denials(&self) -> Vec<Denial> {
        let mut denials = self.live.denials.clone();
        for (tool, detail) in &self.result.outcome.permission_denials {
            if denials.len() < MAX_DENIALS
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
        denials
    }
}

impl RunLoop<'_> {
    /// An attempt's end arrived. A passing isolated attempt is journaled and queued to
    /// land; every other is recorded now. True when it was one of this run's.
    pub(super) fn attempt_ended(
        &mut self,
        attempt: &str,
        result: AttemptResult,
    ) -> Result<bool, EngineError> {
        let Some(live) = self.live.remove(attempt) else {
            return Ok(false);
        };
        let mut ended = Ended { live, result };
        if let Some(why) = &ended.live.over_budget {
            ended.result.verdict = super::live::over_budget(ended.result.verdict.clone(), why);
        }
        let passed = ended.result.verdict.outcome == VerdictOutcome::Pass;
        if !passed && let Some(cut) = &ended.live.cut {
            // Its work is kept for inspection: its own commits are brought into the
            // repository, stray ones kept under a weft ref; tampering is named.
            let problems = self
                .executor
                .secure(cut)
                .unwrap_or_else(|e| vec![format!("its worktree could not be inspected: {e}")]);
            if !problems.is_empty() {
                let verdict = &mut ended.result.verdict;
                *verdict = refused(verdict.clone(), &problems.join("; "));
            }
        }
        match ended.live.cut.clone() {
            Some(cut) if passed && self.isolation.is_some() => {
                // The setup's files are never committed, even when the agent changed one.
                let group = self.isolation.as_ref().is_some_and(|iso| iso.is_group());
                if let Some(text) = crate::links::setup_files_changed(&cut, group) {
                    let text = format!("task {}: {text}", ended.live.task.order);
                    let event = Event::new(EventKind::Notice { text }).run(&self.run_id);
                    self.store
                        .record_event(Some(&self.config.plan_id), event, now())?;
                }
                // Journal first: a passed attempt with no landing recorded is landed at the
                // next start if weft dies before the landing is recorded.
                self.store.save_attempt(
                    &Attempt {
                        status: AttemptStatus::Passed,
                        ended_at: Some(now()),
                        verdict: Some(ended.result.verdict.clone()),
                        ..ended.live.attempt.clone()
                    },
                    EventKind::LandingStarted {
                        branch: cut.branch.clone(),
                    },
                    now(),
                )?;
                crate::failpoint::hit("landing_journaled");
                self.landings.push(Waiting {
                    task: ended.live.task.clone(),
                    repair_files: ended.live.repair_files.clone(),
                    cut,
                    then: Then::Finish(Box::new(ended)),
                });
            }
            _ => self.record_end(ended, None)?,
        }
        Ok(true)
    }

    /// Land everything waiting in the queue, lowest plan order first, one at a time.
    pub(super) fn land_waiting(&mut self) -> Result<(), EngineError> {
        while let Some(waiting) = self.landings.pop() {
            let Some(iso) = self.isolation.as_deref() else {
                break;
            };
            if self.landings.refused.is_some() {
                // Journaled: the next run lands it once the integration ref is put back.
                continue;
            }
            let keep = self.config.isolation.keep_worktrees;
            let allow_links = self.config.isolation.allow_outside_symlinks;
            let stale_check = !self.verify.commands.is_empty();
            let outcome = landing::land(
                iso,
                self.executor.as_ref(),
                &waiting,
                keep,
                allow_links,
                stale_check,
            );
            crate::failpoint::hit("landing_ref_moved");
            let landed = match outcome {
                Outcome::Landing(landed) => landed,
                Outcome::Foreign(foreign) => {
                    let text = format!(
                        "landing is refused: {}; nothing more lands in this run",
                        foreign.detail
                    );
                    self.landings.refused = Some(foreign);
                    self.refuse_landings(text)?;
                    continue;
                }
                Outcome::Stale(why) => {
                    let attempt = match waiting.then {
                        Then::Finish(ended) => Attempt {
                            verdict: Some(ended.result.verdict.clone()),
                            ..ended.live.attempt.clone()
                        },
                        Then::Recovered(attempt) => *attempt,
                    };
                    self.record_discarded(&waiting.task.id, attempt, &why)?;
                    continue;
                }
                Outcome::Failed(reason) => {
                    match waiting.then {
                        Then::Finish(mut ended) => {
                            ended.result.verdict = refused(ended.result.verdict.clone(), &reason);
                            self.record_end(*ended, None)?;
                        }
                        Then::Recovered(attempt) => {
                            self.record_recovered_refused(&waiting.task, *attempt, &reason)?;
                        }
                    }
                    continue;
                }
            };
            let attempt_id = waiting.then.attempt().id.clone();
            let seen = match &waiting.then {
                Then::Finish(ended) => transcript_seen(&ended.result),
                Then::Recovered(_) => TranscriptSeen::default(),
            };
            let merged = matches!(landed, Landing::Landed { .. });
            match waiting.then {
                Then::Finish(ended) => self.record_end(*ended, Some(landed))?,
                Then::Recovered(attempt) => {
                    self.record_recovered(&waiting.task, *attempt, landed)?;
                }
            }
            crate::failpoint::hit("landing_recorded");
            if merged {
                self.attach_evidence(&attempt_id, &seen)?;
            }
        }
        Ok(())
    }

    /// Attach a recorded landing's evidence to its merge commit (`evidence::attach`). A
    /// note that cannot be written is a notice: the work landed, and the next start
    /// writes the note (`evidence::repair`).
    fn attach_evidence(
        &mut self,
        attempt_id: &str,
        seen: &TranscriptSeen,
    ) -> Result<(), EngineError> {
        let (Some(iso), Some(attempt)) =
            (self.isolation.as_deref(), self.store.attempt(attempt_id)?)
        else {
            return Ok(());
        };
        let plan = self.view.plan();
        let Some(task) = plan.task(&attempt.task_id) else {
            return Ok(());
        };
        let failed = crate::evidence::attach(iso, plan, task, &attempt, seen)
            .err()
            .map(|e| {
                format!(
                    "the evidence note of task {}'s landing could not be written: {e}; the next `weft run` writes it",
                    task.order
                )
            });
        crate::failpoint::hit("evidence_attached");
        if let Some(text) = failed {
            let event = Event::new(EventKind::Notice { text }).run(&self.run_id);
            self.store
                .record_event(Some(&self.config.plan_id), event, now())?;
        }
        Ok(())
    }

    /// Store an ended attempt and its task's new status, and tell the front end.
    fn record_end(&mut self, ended: Ended, landing: Option<Landing>) -> Result<(), EngineError> {
        let cancelled = ended.cancelled(self.stopping);
        let verdict = match (&landing, &ended.live.cut) {
            (Some(landing), Some(cut)) => {
                with_landing(ended.result.verdict.clone(), landing, &cut.branch)
            }
            _ => ended.result.verdict.clone(),
        };
        let (attempt_status, task_status) = settle(verdict.outcome, landing.as_ref(), cancelled);
        let outcome = &ended.result.outcome;
        let denials = ended.denials();
        // The meter's figures when the stream reported any (input counts the cache), else
        // what the outcome says.
        let spend = ended.live.meter.spend();
        let (input_tokens, output_tokens, cost_usd) =
            if spend.tokens.total() > 0 || spend.usd > 0.0 || ended.live.meter.is_final() {
                (
                    Some(spend.tokens.all_input()),
                    Some(spend.tokens.output),
                    spend.cost_usd(),
                )
            } else {
                (
                    outcome.input_tokens,
                    outcome.output_tokens,
                    outcome.cost_usd,
                )
            };
        self.spent_before.add(&weft_core::spend::Spend::stored(
            input_tokens,
            output_tokens,
            cost_usd,
        ));
        let attempt = Attempt {
            status: attempt_status,
            exit_code: outcome.exit_code,
            signal: outcome.signal,
            ended_at: Some(now()),
            verdict: Some(verdict.clone()),
            input_tokens,
            output_tokens,
            cost_usd,
            denials: denials.clone(),
            final_text: outcome.final_text.clone().or(ended.transcript_answer()),
            agent_session_id: outcome
                .session_id
                .clone()
                .or(ended.live.agent_session.clone()),
            landing,
            ..ended.live.attempt.clone()
        };
        let transcript = ended.result.transcript.as_ref().map(|t| TranscriptFound {
            path: t.path.display().to_string(),
            weak: t.weak,
            marker_found: t.marker_found,
            how: t.how.clone(),
        });
        let duration_ms = ended.live.started.elapsed().as_millis() as u64;
        let finished = EventKind::AttemptFinished {
            status: attempt_status,
            exit_code: attempt.exit_code,
            signal: attempt.signal,
            verdict: verdict.clone(),
            usage: Usage {
                input_tokens: attempt.input_tokens,
                output_tokens: attempt.output_tokens,
                cost_usd: attempt.cost_usd,
            },
            denials: denials.clone(),
            landing: attempt.landing.clone(),
            transcript,
            duration_ms,
        };
        if task_status == TaskStatus::Completed
            && matches!(attempt.landing, Some(Landing::Landed { .. }))
        {
            self.view.hold(&attempt.task_id);
            self.verify.landed = true;
        }
        let update = TaskUpdate {
            status: Some(task_status),
            verdict: Some(Some(verdict.clone())),
            output: Some(Some(OutputSummary {
                review_reason: verdict.reason.clone(),
                log_tail: ended.carried(),
                captured_at: now(),
            })),
            hold: None,
        };
        let event = Event::new(EventKind::TaskFinished {
            order: ended.live.order,
            title: ended.live.title.clone(),
            status: task_status,
            reason: verdict.reason.clone(),
            after_restart: false,
        })
        .run(&attempt.run_id)
        .attempt(&attempt.id);
        self.view
            .save_attempt_and_task(&mut self.store, &attempt, finished, &update, event)?;
        self.after_end(&attempt.task_id, task_status)
    }

    /// A failure blocks what it stops (and may halt the run); a pass can release what a
    /// forced start shielded.
    fn after_end(&mut self, task_id: &str, status: TaskStatus) -> Result<(), EngineError> {
        match status {
            TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Conflicted => {
                self.after_failure(task_id)
            }
            // A forced start can complete a task below a failure; what it shields runs
            // again.
            TaskStatus::Completed => self.view.release_blocked(&mut self.store, task_id),
            _ => Ok(()),
        }
    }

    /// A dead engine's journaled attempt whose work a guard refused: it fails.
    fn record_recovered_refused(
        &mut self,
        task: &Task,
        attempt: Attempt,
        reason: &str,
    ) -> Result<(), EngineError> {
        let verdict = attempt.verdict.clone().map(|v| refused(v, reason));
        let landing = Landing::Conflicted {
            files: Vec::new(),
            detail: reason.to_owned(),
        };
        self.store.save_attempt(
            &Attempt {
                status: AttemptStatus::Failed,
                verdict: verdict.clone(),
                ..attempt.clone()
            },
            EventKind::LandingFinished {
                landing,
                after_restart: true,
            },
            now(),
        )?;
        let update = TaskUpdate {
            status: Some(TaskStatus::Failed),
            verdict: Some(verdict),
            ..TaskUpdate::default()
        };
        let event = Event::new(EventKind::TaskFinished {
            order: task.order,
            title: task.title.clone(),
            status: TaskStatus::Failed,
            reason: reason.to_owned(),
            after_restart: true,
        })
        .run(&attempt.run_id)
        .attempt(&attempt.id);
        self.view
            .update_task(&mut self.store, &task.id, &update, event)?;
        self.after_failure(&task.id)
    }

    /// The integration ref moved under the run: say so, start nothing new.
    fn refuse_landings(&mut self, text: String) -> Result<(), EngineError> {
        let event = Event::new(EventKind::Notice { text }).run(&self.run_id);
        self.store
            .record_event(Some(&self.config.plan_id), event, now())?;
        self.stop();
        Ok(())
    }

    /// Record the landing of an attempt a dead engine journaled.
    fn record_recovered(
        &mut self,
        task: &Task,
        attempt: Attempt,
        landing: Landing,
    ) -> Result<(), EngineError> {
        let (_, status) = settle(VerdictOutcome::Pass, Some(&landing), None);
        if matches!(landing, Landing::Landed { .. }) {
            self.view.hold(&task.id);
            self.verify.landed = true;
        }
        self.store.save_attempt(
            &Attempt {
                landing: Some(landing.clone()),
                ..attempt.clone()
            },
            EventKind::LandingFinished {
                landing,
                after_restart: true,
            },
            now(),
        )?;
        let update = TaskUpdate {
            status: Some(status),
            verdict: Some(attempt.verdict.clone()),
            ..TaskUpdate::default()
        };
        let event = Event::new(EventKind::TaskFinished {
            order: task.order,
            title: task.title.clone(),
            status,
            reason: "its landing was finished after a restart".into(),
            after_restart: true,
        })
        .run(&attempt.run_id)
        .attempt(&attempt.id);
        self.view
            .update_task(&mut self.store, &task.id, &update, event)?;
        Ok(())
    }

    /// Block what a failure stops and halt the run if it should.
    pub(super) fn after_failure(&mut self, failed: &str) -> Result<(), EngineError> {
        // Stored as `tasks_blocked` (when there were any).
        self.view.block_descendants(&mut self.store, failed)?;
        if self.config.failures.halt && !self.halted {
            self.halted = true;
            let halt = Event::new(EventKind::RunHalted {
                by: failed.to_owned(),
            })
            .run(&self.run_id);
            self.store
                .record_event(Some(&self.config.plan_id), halt, now())?;
        }
        Ok(())
    }

    /// Record a task whose attempt could not start as failed, with the reason as its
    /// verdict.
    pub(super) fn fail_unstarted(&mut self, index: usize, reason: &str) -> Result<(), EngineError> {
        let plan = self.view.plan();
        let task = plan.tasks[index].clone();
        let evidence = Evidence {
            spawn_error: Some(reason.to_owned()),
            ..Evidence::default()
        };
        let verdict = decide(&evidence, &[], now());
        let number = self.store.attempts_of_task(&plan.id, &task.id)?.len() as u32 + 1;
        let started = now();
        let attempt = Attempt {
            status: AttemptStatus::Failed,
            cwd: self.config.workspace.display().to_string(),
            ended_at: Some(started),
            verdict: Some(verdict.clone()),
            ..Attempt::new(
                uuid::Uuid::new_v4().simple().to_string(),
                self.run_id.clone(),
                plan.id.clone(),
                task.id.clone(),
                number,
                runner_name(self.config, plan, index),
                started,
            )
        };
        let failed = EventKind::AttemptFailedToStart {
            reason: reason.to_owned(),
        };
        self.store.save_attempt(&attempt, failed, now())?;
        let update = TaskUpdate {
            status: Some(TaskStatus::Failed),
            verdict: Some(Some(verdict.clone())),
            output: Some(Some(OutputSummary {
                review_reason: verdict.reason.clone(),
                log_tail: String::new(),
                captured_at: now(),
            })),
            hold: None,
        };
        let event = Event::new(EventKind::TaskFinished {
            order: task.order,
            title: task.title.clone(),
            status: TaskStatus::Failed,
            reason: verdict.reason.clone(),
            after_restart: false,
        })
        .run(&self.run_id)
        .attempt(&attempt.id);
        self.view
            .update_task(&mut self.store, &task.id, &update, event)
    }
}

/// What the attempt's end knew of its transcript, for its evidence note.
fn transcript_seen(result: &AttemptResult) -> TranscriptSeen {
    result
        .transcript
        .as_ref()
        .filter(|t| !t.weak)
        .map(|t| TranscriptSeen {
            path: Some(t.path.display().to_string()),
            marker_found: t.marker_found,
        })
        .unwrap_or_default()
}

/// The name of the check a guard's refusal adds to a verdict.
pub(crate) const CHECK_GIT_GUARD: &str = "git_guard";

/// `verdict` failed by a guard: the outcome is a failure whose reason names `why`.
fn refused(mut verdict: Verdict, why: &str) -> Verdict {
    verdict.reason = match verdict.outcome {
        VerdictOutcome::Pass => {
            let rest = verdict
                .reason
                .strip_prefix("Passed: ")
                .unwrap_or(&verdict.reason);
            format!("Failed: {why}. (Its evidence otherwise passed: {rest})")
        }
        _ => format!("{} Also: {why}.", verdict.reason),
    };
    verdict.outcome = VerdictOutcome::Fail;
    verdict.checks.push(Check {
        name: CHECK_GIT_GUARD.to_owned(),
        passed: false,
        skipped: false,
        detail: why.to_owned(),
        exit_code: None,
        duration_ms: None,
    });
    verdict
}

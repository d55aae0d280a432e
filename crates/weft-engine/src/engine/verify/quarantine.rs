//! The quarantine of a verification's culprit (see the parent module's contract): the
//! journal, the rebuild of the integration branch without the culprit's landing, and the
//! tasks' new statuses. Runs on the loop's thread (git plumbing and store writes, no
//! commands); idempotent, so a later engine finishes a journaled one.

use weft_core::event::{Event, EventKind};
use weft_core::{Check, Landing, TaskStatus, Verdict, VerdictOutcome};
use weft_git::{Oid, Rebuild, Repo};
use weft_store::{TaskUpdate, VerifyUpdate};

use super::{Journal, MAX_ROUNDS, VERDICT_TAIL};
use crate::engine::now;
use crate::engine::runloop::RunLoop;
use crate::error::EngineError;
use crate::isolation::git_error;

impl RunLoop<'_> {
    /// Store (or clear) the quarantine journal.
    pub(super) fn journal(&mut self, journal: Option<&Journal>) -> Result<(), EngineError> {
        let text = journal.map(|j| serde_json::to_string(j).unwrap_or_default());
        let update = VerifyUpdate {
            quarantine: Some(text),
            ..VerifyUpdate::default()
        };
        self.store
            .update_verify(&self.run_id, &self.config.plan_id, &update, None, now())?;
        Ok(())
    }

    /// Rebuild the integration branch without the journal's landings, then store what
    /// that means for the tasks; idempotent (a rebuild already done is recognised).
    pub(super) fn finish_quarantine(&mut self, mut journal: Journal) -> Result<(), EngineError> {
        let Some(iso) = self.isolation.clone() else {
            return Ok(());
        };
        let repo = iso.slots[0].repo.clone();
        let reference = iso.integration_ref();
        let record = iso.record_ref();
        let rebuilt = loop {
            let drop: Vec<Oid> = journal.drop.iter().filter_map(|d| Oid::parse(d)).collect();
            match repo
                .rebuild_without_recorded(&reference, &record, &drop)
                .map_err(git_error)?
            {
                Rebuild::Rebuilt {
                    new_tip, reapplied, ..
                } => {
                    carry_evidence(&repo, &reapplied);
                    break new_tip;
                }
                // Done before a crash: the tip is the rebuilt one.
                Rebuild::NotOnBranch { .. } => break iso.recorded_tips()?.remove(0),
                Rebuild::NoLongerApplies { commit, files, .. } => {
                    let task = self.task_of_landing(&commit)?.map(|(t, _)| t);
                    journal.drop.push(commit.as_str().to_owned());
                    if let Some(task) = task {
                        journal.conflicted.push((task, files));
                    }
                    if journal.drop.len() > 4 * MAX_ROUNDS {
                        break iso.recorded_tips()?.remove(0);
                    }
                    self.journal(Some(&journal))?;
                }
            }
        };
        crate::failpoint::hit("quarantine_rebuilt");
        self.settle_quarantine(&journal, &rebuilt)?;
        let update = VerifyUpdate {
            green: Some(Some(journal.green.clone())),
            quarantine: Some(None),
            ..VerifyUpdate::default()
        };
        self.store
            .update_verify(&self.run_id, &self.config.plan_id, &update, None, now())?;
        self.verify.green = Oid::parse(&journal.green);
        // Taken out last, the tip is the green one again: what it holds is met.
        if self.verify.green.as_ref() == Some(&rebuilt) {
            self.view.verified_all();
        }
        Ok(())
    }

    /// The culprit failed (its dependents blocked), the tainted tasks pending again, the
    /// landings that no longer apply conflicted.
    fn settle_quarantine(&mut self, journal: &Journal, rebuilt: &Oid) -> Result<(), EngineError> {
        let Some(task) = self.view.task(&journal.culprit).cloned() else {
            return Ok(());
        };
        let short = |t: &str| t.get(..12).unwrap_or(t).to_owned();
        let tail = weft_core::tail_chars(&journal.output_tail, VERDICT_TAIL);
        let combination = match journal.only_in_combination {
            Some(true) => {
                " It fails only in combination: its landing alone on the tip before the other landings passes, so the later of the two (this one) was taken out."
            }
            Some(false) => " Its landing fails verification on its own.",
            None => "",
        };
        let reason = format!(
            "Failed: quarantined: its landing broke verification. `{}` failed on the integration tip {} (the first tip that fails; found among {} landing(s) in {} bisect verification(s)).{combination} The integration branch was rebuilt without it at {}. Output tail:\n{tail}",
            journal.command,
            short(&journal.broke),
            journal.landings,
            journal.bisect_runs,
            short(rebuilt.as_str()),
        );
        let mut verdict = task.verdict.clone().unwrap_or(Verdict {
            outcome: VerdictOutcome::Fail,
            reason: String::new(),
            checks: Vec::new(),
            decided_at: now(),
        });
        verdict.outcome = VerdictOutcome::Fail;
        verdict.reason = reason.clone();
        verdict.decided_at = now();
        verdict.checks.push(Check {
            name: format!("verify:{}", journal.command),
            passed: false,
            skipped: false,
            detail: tail.clone(),
            exit_code: None,
            duration_ms: None,
        });
        let requeued_names: Vec<String> = journal.requeued.clone();
        let conflicted_names: Vec<String> =
            journal.conflicted.iter().map(|(t, _)| t.clone()).collect();
        if task.status != TaskStatus::Failed {
            let update = TaskUpdate {
                status: Some(TaskStatus::Failed),
                verdict: Some(Some(verdict)),
                ..TaskUpdate::default()
            };
            let event = Event::new(EventKind::TaskQuarantined {
                order: task.order,
                title: task.title.clone(),
                broke: journal.broke.clone(),
                rebuilt: rebuilt.as_str().to_owned(),
                command: journal.command.clone(),
                output_tail: tail,
                only_in_combination: journal.only_in_combination,
                bisect_runs: journal.bisect_runs,
                requeued: requeued_names,
                conflicted: conflicted_names,
            })
            .run(&self.run_id);
            self.view
                .update_task(&mut self.store, &task.id, &update, event)?;
        }
        crate::failpoint::hit("quarantine_failed");
        let requeue: Vec<(String, TaskUpdate)> = journal
            .requeued
            .iter()
            .filter(|id| self.view.task(id).is_some_and(|t| t.status == TaskStatus::Completed))
            .map(|id| {
                let why = format!(
                    "Discarded: its attempt started from a tip that held quarantined task #{} {:?}; it runs again from the rebuilt tip {}.",
                    task.order,
                    task.id,
                    short(rebuilt.as_str())
                );
                (id.clone(), pending_with(&why))
            })
            .collect();
        if !requeue.is_empty() {
            let updates: Vec<(&str, &TaskUpdate)> =
                requeue.iter().map(|(id, u)| (id.as_str(), u)).collect();
            let event = Event::new(EventKind::TasksRequeued {
                tasks: requeue.iter().map(|(id, _)| id.clone()).collect(),
            })
            .run(&self.run_id);
            self.view.update_tasks(&mut self.store, &updates, event)?;
        }
        for (id, files) in &journal.conflicted {
            let Some(other) = self.view.task(id).cloned() else {
                continue;
            };
            if other.status != TaskStatus::Completed {
                continue;
            }
            let why = format!(
                "Conflicted: its landing no longer applies without quarantined task #{} {:?}: it conflicts in {}; it was taken out of the integration branch too.",
                task.order,
                task.id,
                weft_git::list_paths(files)
            );
            let update = TaskUpdate {
                status: Some(TaskStatus::Conflicted),
                verdict: Some(Some(Verdict {
                    outcome: VerdictOutcome::Fail,
                    reason: why.clone(),
                    checks: Vec::new(),
                    decided_at: now(),
                })),
                ..TaskUpdate::default()
            };
            let event = Event::new(EventKind::TaskFinished {
                order: other.order,
                title: other.title.clone(),
                status: TaskStatus::Conflicted,
                reason: why,
                after_restart: false,
            })
            .run(&self.run_id);
            self.view.update_task(&mut self.store, id, &update, event)?;
            self.after_failure(id)?;
        }
        self.after_failure(&task.id)
    }

    /// A passed attempt cut from a tip the integration branch no longer holds (a
    /// quarantine took it out): not landed as is; its task runs again.
    pub(in crate::engine) fn record_discarded(
        &mut self,
        task_id: &str,
        attempt: weft_core::Attempt,
        why: &str,
    ) -> Result<(), EngineError> {
        let verdict = Verdict {
            outcome: VerdictOutcome::Fail,
            reason: why.to_owned(),
            checks: Vec::new(),
            decided_at: now(),
        };
        let landing = Landing::Conflicted {
            files: Vec::new(),
            detail: why.to_owned(),
        };
        self.store.save_attempt(
            &weft_core::Attempt {
                status: weft_core::AttemptStatus::Failed,
                verdict: Some(verdict),
                landing: Some(landing.clone()),
                ended_at: Some(now()),
                ..attempt
            },
            EventKind::LandingFinished {
                landing,
                after_restart: false,
            },
            now(),
        )?;
        let update = pending_with(why);
        let event = Event::new(EventKind::TasksRequeued {
            tasks: vec![task_id.to_owned()],
        })
        .run(&self.run_id);
        self.view
            .update_task(&mut self.store, task_id, &update, event)
    }
}

/// Issue 15 §2's call site: the evidence notes of the landings a rebuild re-created
/// (`weft_engine::evidence::carry`) are carried over here. Best effort: a note a crash or
/// an error left behind names the old tree, and the next start's `evidence::repair`
/// re-creates it.
fn carry_evidence(repo: &Repo, reapplied: &[(Oid, Oid)]) {
    let _ = crate::evidence::carry(repo, reapplied);
}

/// Back to pending, with a verdict that says why.
fn pending_with(why: &str) -> TaskUpdate {
    TaskUpdate {
        status: Some(TaskStatus::Pending),
        verdict: Some(Some(Verdict {
            outcome: VerdictOutcome::Fail,
            reason: why.to_owned(),
            checks: Vec::new(),
            decided_at: now(),
        })),
        ..TaskUpdate::default()
    }
}

//! A running attempt as the loop tracks it, and what its progress messages do.
//!
//! Spend: every attempt has a [`Meter`] fed from its stream's `Spend` events (per message,
//! then the CLI's own total; a Codex attempt's live ones come from its rollout file, read by
//! its events thread). When its spend goes over the task's budget the attempt is
//! stopped through its supervisor, as a timeout stops it, and its verdict names the budget
//! and the spend ([`over_budget`]). While it runs, its spend so far is written to its
//! attempt row with a `spend_updated` event at most once per [`SPEND_EVENT_EVERY`] (the
//! first one that long after it started), and only when it changed, so a chatty stream
//! costs no store write per message and a short attempt none at all (its
//! `attempt_finished` carries the figures). The plan's budget is checked where the
//! loop decides what starts ([`RunLoop::plan_budget_reached`]): reached, nothing new
//! starts, running attempts finish, and one `budget_reached` event says why. The plan's
//! budget is its workflow file's own when it has one, else the settings'. An attempt
//! silent past `idle_after` is stored as idle once per silence ([`RunLoop::idleness`]).

use std::time::{Duration, Instant};

use weft_agents::AgentEvent;
use weft_agents::supervise::{Canceller, OutputStream, SupervisorEvent};
use weft_core::event::{Event, EventKind};
use weft_core::prompt::tail_chars;
use weft_core::spend::{Budget, Meter, Spend};
use weft_core::{Attempt, Check, Denial, Task, Verdict, VerdictOutcome};

use super::now;
use super::runloop::RunLoop;
use crate::RunProgress;
use crate::error::EngineError;
use crate::isolation::Cut;

/// Most one `spend_updated` event per attempt this often.
pub(super) const SPEND_EVENT_EVERY: Duration = Duration::from_secs(5);

/// The name of the check a budget stop adds to a verdict.
pub(crate) const CHECK_BUDGET: &str = "budget";

/// How much assistant text an attempt keeps for the tasks after it.
const ASSISTANT_TAIL_BYTES: usize = 8 * 1024;

/// At most this many refused tool calls are kept per attempt.
pub(super) const MAX_DENIALS: usize = 100;

/// A running attempt.
pub(crate) struct Live {
    pub attempt: Attempt,
    pub order: u32,
    pub title: String,
    pub receives_marker: bool,
    pub canceller: Canceller,
    pub started: Instant,
    /// Set when the user cancelled it (vs. stop, which interrupts).
    pub cancelled_by_user: bool,
    pub denials: Vec<Denial>,
    pub agent_session: Option<String>,
    /// The last of what the assistant wrote (structured streams), for dependents.
    pub assistant_tail: String,
    /// Its worktree and branch (isolated AI attempts).
    pub cut: Option<Cut>,
    /// For a repair attempt: the files that held conflict markers.
    pub repair_files: Option<Vec<String>>,
    pub task: Task,
    /// Its live spend.
    pub meter: Meter,
    /// When the last `spend_updated` was stored (at first: when the attempt started), and
    /// what it said.
    pub spend_stored: (Instant, Spend),
    /// Set when its spend went over the task's budget and it was stopped: why.
    pub over_budget: Option<String>,
    /// What the task's earlier attempts spent: the task's budget covers every attempt.
    pub task_spent_before: Spend,
    /// Since when it has been silent past `idle_after` (stored with an `attempt_idle`
    /// event), until it talks again.
    pub idle_since: Option<weft_core::Timestamp>,
}

/// The task's own budget (`budget_usd`, `budget_tokens`).
pub(crate) fn task_budget(task: &Task) -> Budget {
    task.limits.budget()
}

/// `verdict` failed because the attempt was stopped over its budget.
pub(super) fn over_budget(mut verdict: Verdict, why: &str) -> Verdict {
    verdict.outcome = VerdictOutcome::Fail;
    verdict.reason = format!("Failed: stopped over its budget: {why}.");
    verdict.checks.push(Check {
        name: CHECK_BUDGET.to_owned(),
        passed: false,
        skipped: false,
        detail: why.to_owned(),
        exit_code: None,
        duration_ms: None,
    });
    verdict
}

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

impl RunLoop<'_> {
    /// A live attempt's progress: kept (session, assistant text, refusals, spend) and shown
    /// (not stored: the output is in the attempt's log; spend is stored throttled).
    pub(super) fn progress(
        &mut self,
        attempt: &str,
        event: SupervisorEvent,
    ) -> Result<(), EngineError> {
        if let SupervisorEvent::Agent(AgentEvent::Spend {
            total,
            message,
            model,
            tokens,
            cost_usd,
        }) = &event
        {
            return self.spent(
                attempt,
                *total,
                message.as_deref(),
                model.as_deref(),
                *tokens,
                *cost_usd,
            );
        }
        self.idleness(attempt, &event)?;
        let Some(running) = self.live.get_mut(attempt) else {
            return Ok(());
        };
        let task = running.attempt.task_id.clone();
        let activity = |text: &str| RunProgress::Activity {
            task: task.clone(),
            text: tail_chars(text, 200),
        };
        let shown = match event {
            SupervisorEvent::Line { stream, text } => (!running.receives_marker
                || stream == OutputStream::Stderr
                || running.attempt.runner == "exec")
                .then(|| activity(&text)),
            SupervisorEvent::Agent(agent) => match agent {
                AgentEvent::Session { id } => {
                    running.agent_session = Some(id);
                    None
                }
                AgentEvent::AssistantText { text, .. } => {
                    push_bounded(&mut running.assistant_tail, &text, ASSISTANT_TAIL_BYTES);
                    Some(activity(text.lines().last().unwrap_or("")))
                }
                // A sub-agent's tool calls are not the task's own activity.
                AgentEvent::ToolUse {
                    name,
                    summary,
                    subagent: false,
                    ..
                } => {
                    // One line, as before the planner's longer summaries; cut at 200.
                    let summary =
                        weft_agents::stream::one_line(&summary, weft_agents::stream::SUMMARY_MAX);
                    Some(activity(&format!("{name}: {summary}")))
                }
                AgentEvent::PermissionDenied { tool, detail, .. }
                    if running.denials.len() < MAX_DENIALS =>
                {
                    running.denials.push(Denial { tool, detail });
                    None
                }
                _ => None,
            },
            SupervisorEvent::Idle { silent_for } => Some(RunProgress::Idle {
                task: task.clone(),
                silent_secs: silent_for.as_secs(),
            }),
            SupervisorEvent::Started { .. } | SupervisorEvent::MarkerSeen { .. } => None,
        };
        if let Some(progress) = shown {
            self.show(progress);
        }
        Ok(())
    }

    /// Store an attempt's idleness once per transition: its first `Idle` report marks it
    /// idle since its last output (with an `attempt_idle` event); its next output clears
    /// the mark (no event). Its end clears it with its row (see weft-store).
    fn idleness(&mut self, attempt: &str, event: &SupervisorEvent) -> Result<(), EngineError> {
        let Some(running) = self.live.get_mut(attempt) else {
            return Ok(());
        };
        let (since, event) = match event {
            SupervisorEvent::Idle { silent_for } if running.idle_since.is_none() => {
                let silent_ms = i64::try_from(silent_for.as_millis()).unwrap_or(i64::MAX);
                let since = now().saturating_sub(silent_ms);
                let event = EventKind::AttemptIdle {
                    silent_secs: silent_for.as_secs(),
                };
                (Some(since), Some(event))
            }
            SupervisorEvent::Line { .. } | SupervisorEvent::Agent(_)
                if running.idle_since.is_some() =>
            {
                (None, None)
            }
            _ => return Ok(()),
        };
        running.idle_since = since;
        self.store
            .set_attempt_idle(&running.attempt, since, event, now())?;
        Ok(())
    }

    /// A `Spend` event of a live attempt: counted, checked against the task's budget (over
    /// it, the attempt is stopped), and stored as `spend_updated` at most every
    /// [`SPEND_EVENT_EVERY`].
    fn spent(
        &mut self,
        attempt: &str,
        total: bool,
        message: Option<&str>,
        model: Option<&str>,
        tokens: weft_core::spend::Tokens,
        cost_usd: Option<f64>,
    ) -> Result<(), EngineError> {
        let Some(running) = self.live.get_mut(attempt) else {
            return Ok(());
        };
        if total {
            running.meter.final_total(tokens, cost_usd);
        } else {
            running.meter.message(message, model, tokens, cost_usd);
        }
        let spend = running.meter.spend();
        let budget = task_budget(&running.task);
        let mut task_spend = running.task_spent_before.clone();
        task_spend.add(&spend);
        if running.over_budget.is_none()
            && let Some(limit) = budget.exceeded(&task_spend)
        {
            running.over_budget = Some(format!(
                "the task's {limit} was exceeded: it spent {}",
                budget.against(&task_spend)
            ));
            running.canceller.cancel();
        }
        let (at, stored) = &running.spend_stored;
        if *stored == spend || at.elapsed() < SPEND_EVENT_EVERY {
            return Ok(());
        }
        running.spend_stored = (Instant::now(), spend.clone());
        // The attempt's row carries its spend so far, so every surface that sums attempts
        // (`weft status`, the dashboard, the TUI) shows it live, and an engine that dies
        // leaves its last figures behind.
        running.attempt.input_tokens = Some(spend.tokens.all_input());
        running.attempt.output_tokens = Some(spend.tokens.output);
        running.attempt.cost_usd = spend.cost_usd();
        let event = EventKind::SpendUpdated {
            input_tokens: spend.tokens.all_input(),
            output_tokens: spend.tokens.output,
            cost_usd: spend.cost_usd(),
            unpriced: spend.unpriced.clone(),
            reported: running.meter.is_final(),
        };
        self.store.save_attempt(&running.attempt, event, now())?;
        Ok(())
    }

    /// Whether the plan's spend (its stored attempts, every run and retry, and the live
    /// ones) has reached the plan's budget. The first time it has in this run, a
    /// `budget_reached` event says so; nothing new starts from then on.
    pub(super) fn plan_budget_reached(&mut self) -> Result<bool, EngineError> {
        let budget = self.plan_budget;
        if !budget.is_set() {
            return Ok(false);
        }
        let mut spend = self.spent_before.clone();
        for running in self.live.values() {
            spend.add(&running.meter.spend());
        }
        let Some(limit) = budget.reached(&spend) else {
            self.budget_announced = false;
            return Ok(false);
        };
        if !std::mem::replace(&mut self.budget_announced, true) {
            let event = Event::new(EventKind::BudgetReached {
                limit: limit.to_string(),
                spent: budget.against(&spend),
                cost_usd: spend.cost_usd(),
                tokens: spend.tokens.total(),
            })
            .run(&self.run_id);
            self.store
                .record_event(Some(&self.config.plan_id), event, now())?;
        }
        Ok(true)
    }
}

/// The spend of the plan's stored attempts that have ended (every run, retries included).
pub(super) fn stored_spend(attempts: &[Attempt]) -> Spend {
    let mut spend = Spend::default();
    for attempt in attempts.iter().filter(|a| a.ended_at.is_some()) {
        spend.add(&Spend::stored(
            attempt.input_tokens,
            attempt.output_tokens,
            attempt.cost_usd,
        ));
    }
    spend
}

//! Events and notes as text: `weft events`, the run's progress lines, warnings.

use std::io::Write;

use weft_core::Warning;

use super::*;

/// `warning:` lines on stderr.
pub fn warnings(warnings: &[Warning]) {
    let mut err = anstream::stderr().lock();
    let yellow = anstyle::AnsiColor::Yellow.on_default().bold();
    for warning in warnings {
        let _ = writeln!(err, "{yellow}warning:{yellow:#} {warning}");
    }
}

/// A note for the person (stderr), never data.
pub fn note(text: &str) {
    let _ = writeln!(anstream::stderr().lock(), "{text}");
}

/// One line of `weft events`: sequence number, time (UTC), what it is about, what happened.
pub fn event_line(event: &weft_core::Event) -> String {
    let about = match (&event.task, &event.run, &event.plan) {
        (Some(task), _, _) => format!("task {task:?}"),
        (None, Some(run), _) => format!("run {run}"),
        (None, None, Some(plan)) => format!("plan {}", weft_core::model::short_id(plan)),
        (None, None, None) => "workspace".to_owned(),
    };
    let line = format!(
        "{:>6}  {}  {about}: {}",
        event.seq,
        minute(event.at),
        describe_event(&event.event)
    );
    safe(&line).into_owned()
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn shown(value: &Option<String>) -> String {
    value
        .as_deref()
        .map_or_else(|| "(cleared)".into(), |v| cut(v, 60))
}

fn describe_change(change: &weft_core::FieldChange) -> String {
    use weft_core::FieldChange as F;
    let value = match change {
        F::Title(text) | F::Prompt(text) => cut(text, 60),
        F::Description(v)
        | F::Runner(v)
        | F::Model(v)
        | F::Effort(v)
        | F::Mode(v)
        | F::Command(v) => shown(v),
        F::Kind(kind) => kind.to_string(),
        F::Steps(items) | F::Checks(items) => list(items),
        F::Timeout(v) | F::IdleTimeout(v) => shown(v),
        F::BudgetUsd(v) => v.map_or_else(|| "(cleared)".into(), weft_core::spend::usd),
        F::BudgetTokens(v) => v.map_or_else(|| "(cleared)".into(), |t| t.to_string()),
    };
    format!("{} = {value}", change.field())
}

fn describe_changes(changes: &[weft_core::FieldChange]) -> String {
    changes
        .iter()
        .map(describe_change)
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe_control(request: &weft_core::ControlRequest) -> String {
    use weft_core::ControlRequest as C;
    match request {
        C::Stop => "stop".into(),
        C::Cancel { task } => format!("cancel {task:?}"),
        C::ForceStart { task } => format!("force-start {task:?}"),
        C::Repair { task } => format!("repair {task:?}"),
        C::Unrecognized { original_kind, .. } => format!("{original_kind} (not known here)"),
    }
}

fn describe_landing(landing: &weft_core::Landing) -> String {
    match landing {
        weft_core::Landing::Landed { merge } => format!("landed as {}", cut(merge, 12)),
        weft_core::Landing::NoChanges => "nothing to land (no changes)".into(),
        weft_core::Landing::Conflicted { files, detail } => {
            format!("conflicted in {}: {}", list(files), cut(detail, 80))
        }
    }
}

/// Why a verification ran, in words.
fn verify_purpose(purpose: &str) -> &str {
    match purpose {
        "landed" => "after landings",
        "repeat" => "once more, after a failure",
        "bisect" => "bisecting",
        "alone" => "the culprit alone on the last green tip",
        "by_hand" => "weft verify",
        other => other,
    }
}

/// What happened, in a few words. Exhaustive: a new kind must say how it reads.
pub fn describe_event(kind: &weft_core::EventKind) -> String {
    use weft_core::EventKind as E;
    match kind {
        E::PlanCreated {
            goal,
            tasks,
            source,
        } => format!(
            "plan created from {source} with {tasks} task(s): {}",
            cut(goal, 60)
        ),
        E::PlanPlanned { tasks } => format!("the planner committed a plan of {tasks} task(s)"),
        E::PlanRevised { edits } => {
            let edits: Vec<String> = edits
                .iter()
                .map(|e| format!("{:?} {}", e.task, describe_event(&e.edit)))
                .collect();
            format!("the planner revised the plan: {}", edits.join("; "))
        }
        E::PlanStatusChanged { status } => format!("plan is {status}"),
        E::CurrentPlanSet => "made the current plan".into(),
        E::PlanDeleted => "plan deleted".into(),
        E::TaskAdded { order, title } => format!("added as #{order}: {}", cut(title, 60)),
        E::TaskRemoved { detached } => format!("removed; detached from {}", list(detached)),
        E::TaskMoved { from, to } => format!("moved from #{from} to #{to}"),
        E::DependenciesSet { dependencies } => format!("now depends on {}", list(dependencies)),
        E::TaskEdited { changes } => format!("edited: {}", describe_changes(changes)),
        E::TaskHeld => "held".into(),
        E::TaskReleased => "released".into(),
        E::RunStarted { pid } => format!("run started (engine pid {pid})"),
        E::RunContinued { pid, previous_pid } => match previous_pid {
            Some(previous) => format!("run continued by engine pid {pid} (was {previous})"),
            None => format!("run continued by engine pid {pid}"),
        },
        E::RunIsolated {
            base,
            integration_branch,
        } => format!("isolated: {integration_branch} cut from {}", cut(base, 12)),
        E::RunHalted { by } => format!("halting: {by:?} failed and halt_on_failure is set"),
        E::RunEnded { status, totals } => match totals {
            Some(t) => format!(
                "run ended {}: {} completed, {} skipped, {} failed, {} blocked, {} waiting; tokens {} in / {} out, ${:.4}",
                status.as_str(),
                t.completed,
                t.skipped,
                t.failed,
                t.blocked,
                t.waiting,
                t.input_tokens,
                t.output_tokens,
                t.cost_usd
            ),
            None => format!("run ended {}", status.as_str()),
        },
        E::HandoffMerged => "handed off: merged".into(),
        E::HandoffDiscarded { kept } => format!("handed off: discarded (tip kept as {kept})"),
        E::Notice { text } => format!("note: {text}"),
        E::AttemptIdle { silent_secs } => format!(
            "idle: no output for {}",
            humantime::format_duration(Duration::from_secs(*silent_secs))
        ),
        E::BudgetReached { limit, spent, .. } => {
            format!("budget reached: spent {spent} ({limit}); no new task starts")
        }
        E::SpendUpdated {
            input_tokens,
            output_tokens,
            cost_usd,
            unpriced,
            reported,
        } => {
            let cost = match (cost_usd, unpriced) {
                (Some(usd), _) => weft_core::spend::usd(*usd),
                (None, Some(model)) => format!("cost unknown (no price for {})", cut(model, 40)),
                (None, None) => "cost unknown".into(),
            };
            format!(
                "{} so far: {cost}, tokens {input_tokens} in / {output_tokens} out",
                if *reported {
                    "spent (as the agent reported)"
                } else {
                    "spent"
                }
            )
        }
        E::VerificationStarted { tip, purpose, .. } => {
            format!("verifying {} ({})", cut(tip, 12), verify_purpose(purpose))
        }
        E::VerificationPassed {
            tip, duration_ms, ..
        } => format!(
            "verification passed on {} in {:.1} s: a green tip",
            cut(tip, 12),
            *duration_ms as f64 / 1000.0
        ),
        E::VerificationFailed {
            tip,
            purpose,
            command,
            exit_code,
            ..
        } => format!(
            "verification failed on {} ({}): `{}` {}",
            cut(tip, 12),
            verify_purpose(purpose),
            cut(command, 60),
            match exit_code {
                Some(code) => format!("exited {code}"),
                None => "did not finish".into(),
            }
        ),
        E::VerificationFlaky { tip, command } => format!(
            "verification is flaky on {}: `{}` passed once and failed once; nobody is blamed",
            cut(tip, 12),
            cut(command, 60)
        ),
        E::BisectStep {
            tip,
            landing,
            of,
            task,
            passed,
            runs,
        } => format!(
            "bisect step {runs}: the tip after landing {landing} of {of}{} ({}) {}",
            task.as_deref()
                .map(|t| format!(" ({t:?})"))
                .unwrap_or_default(),
            cut(tip, 12),
            if *passed { "passes" } else { "fails" }
        ),
        E::TaskQuarantined {
            order,
            title,
            broke,
            rebuilt,
            only_in_combination,
            bisect_runs,
            requeued,
            conflicted,
            ..
        } => {
            let mut line = format!(
                "quarantined #{order} {}: its landing broke verification at {}{} (found in {bisect_runs} bisect run(s)); the integration branch was rebuilt without it at {}",
                cut(title, 60),
                cut(broke, 12),
                match only_in_combination {
                    Some(true) => ", only in combination with the landings before it",
                    _ => "",
                },
                cut(rebuilt, 12)
            );
            if !requeued.is_empty() {
                line.push_str(&format!("; runs again: {}", list(requeued)));
            }
            if !conflicted.is_empty() {
                line.push_str(&format!("; conflicted without it: {}", list(conflicted)));
            }
            line
        }
        E::NotifyFailed {
            command,
            failure,
            stderr,
            ..
        } => weft_engine::notify::failure_line(command, failure, stderr),
        E::AttemptStarted {
            number,
            runner,
            pid,
            ..
        } => match pid {
            Some(pid) => format!("attempt {number} started [{runner}] (pid {pid})"),
            None => format!("attempt {number} started [{runner}]"),
        },
        E::AttemptFailedToStart { reason } => {
            format!("attempt could not start: {}", cut(reason, 100))
        }
        E::AttemptInterrupted { killed_leftover } => format!(
            "attempt left by an engine that is gone: interrupted{}",
            if *killed_leftover {
                " (leftover processes killed)"
            } else {
                ""
            }
        ),
        E::LandingStarted { branch } => format!("landing {branch}"),
        E::LandingFinished {
            landing,
            after_restart,
        } => format!(
            "{}{}",
            describe_landing(landing),
            if *after_restart {
                " (after a restart)"
            } else {
                ""
            }
        ),
        E::AttemptFinished {
            status,
            verdict,
            usage,
            landing,
            duration_ms,
            ..
        } => {
            let mut line = format!(
                "attempt {} in {} ms: {}",
                status.as_str(),
                duration_ms,
                cut(&verdict.reason, 100)
            );
            if let (Some(input), Some(output)) = (usage.input_tokens, usage.output_tokens) {
                line.push_str(&format!("; tokens {input} in / {output} out"));
            }
            if let Some(cost) = usage.cost_usd {
                line.push_str(&format!(", ${cost:.4}"));
            }
            if let Some(landing) = landing {
                line.push_str(&format!("; {}", describe_landing(landing)));
            }
            line
        }
        E::TaskStarted {
            order,
            title,
            runner,
            number,
        } => format!(
            "#{order} {} started [{runner}] (attempt {number})",
            cut(title, 60)
        ),
        E::TaskFinished {
            order,
            status,
            reason,
            ..
        } => format!("#{order} {status}: {}", cut(reason, 100)),
        E::TasksRequeued { tasks } => format!("back in line: {}", list(tasks)),
        E::TasksBlocked { by, tasks } => format!("blocked by {by:?}: {}", list(tasks)),
        E::TasksReleased { by, tasks } => format!("released by {by:?}: {}", list(tasks)),
        E::WaitingForPerson { order, .. } => {
            format!("#{order} waits for a person (`weft manual {order}`)")
        }
        E::TaskRetried { was } => format!("retried (was {was})"),
        E::TaskRearmed { was, changes } if changes.is_empty() => format!("re-armed (was {was})"),
        E::TaskRearmed { was, changes } => {
            format!("re-armed (was {was}): {}", describe_changes(changes))
        }
        E::TaskMarkedComplete { was } => format!("marked complete by hand (was {was})"),
        E::TaskMarkedNotDone { was } => format!("marked not done (was {was})"),
        E::TaskSkipped { was } => format!("skipped (was {was})"),
        E::TaskCancelled { blocked } => format!("cancelled; blocked {}", list(blocked)),
        E::TaskRepairRequested { branch } => format!("one repair attempt of {branch} requested"),
        E::ManualStepsTicked { steps, completed } => {
            let steps: Vec<String> = steps.iter().map(|s| (s + 1).to_string()).collect();
            format!(
                "ticked step(s) {}{}",
                steps.join(", "),
                if *completed { "; complete" } else { "" }
            )
        }
        E::ControlRequested {
            request,
            request_seq,
        } => format!("requested {} (#{request_seq})", describe_control(request)),
        E::ControlHandled {
            request,
            request_seq,
        } => format!(
            "the engine took {} (#{request_seq})",
            describe_control(request)
        ),
        E::PlannerLogged { entries, .. } => format!("planner logged {entries} entr(ies)"),
        E::ApprovalAsked { ask, subject, .. } => {
            format!("approval #{ask} asked: {}", cut(subject, 80))
        }
        E::ApprovalAnswered { ask, allowed, .. } => format!(
            "approval #{ask} answered: {}",
            if *allowed { "allow" } else { "deny" }
        ),
        E::ApprovalSettled { ask, decision } => format!("approval #{ask} settled: {decision}"),
        E::Unrecognized { original_kind, .. } => {
            format!("{original_kind} (written by another weft version)")
        }
    }
}

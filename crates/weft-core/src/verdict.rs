//! The verdict rules (DESIGN §6): evidence in, pass or fail out, with every check that was
//! consulted. The model is never asked.
//!
//! Precedence, first match wins:
//! 1. cancelled: fail, reason `cancelled`;
//! 2. the runner could not be started: fail;
//! 3. a marker-receiving agent whose marker was seen: the agent passed (the exit code is
//!    recorded as a skipped check, with the reason), even if it later hit its time limit;
//! 4. timed out: fail, reason `timed out`;
//! 5. a marker-receiving agent without its marker: fail, whatever the exit code;
//! 6. no marker given (the `exec` runner, ops tasks): exit code 0 passes, anything else fails,
//!    and the reason says the exit code decided.
//!
//! Per-task checks run only after a passing agent; any that did not exit 0 fails the verdict
//! and the reason names it. An error reported by the agent's structured stream is stored as
//! a diagnostic check beside the marker and never decides.
//!
//! **One gate.** [`judge`] is the only place that says whether an attempt's agent passed,
//! and a passing agent comes back as [`ChecksDue`]: the one way from there to a verdict is
//! [`ChecksDue::finish`] with the runs of the task's checks. A check the evidence names in
//! [`Evidence::due_checks`] that did not run (and was not cut short by an earlier failing
//! check) fails the verdict, so no way an attempt can end with its marker seen (cleanly,
//! killed after the marker, or at its time limit) passes without its checks.
//!
//! [`settle`] turns a verdict (and a landing, for isolated work) into the stored status of
//! the attempt and of its task; [`with_landing`] words the landing into the reason.
//!
//! Every verdict obeys: the outcome is pass exactly when every check that is not skipped
//! passed, and a skipped check's `passed` says whether what it saw looked clean.

use crate::model::{
    AttemptStatus, Check, Landing, OutputSummary, TaskStatus, Timestamp, Verdict, VerdictOutcome,
};
use crate::prompt::{TAIL_CHARS, tail_chars};

/// Stored check names.
pub const CHECK_MARKER: &str = "completion_marker";
pub const CHECK_EXIT_CODE: &str = "exit_code";
pub const CHECK_STREAM: &str = "stream";
pub const CHECK_MANUAL: &str = "manual";
pub const CHECK_TIMEOUT: &str = "timeout";
/// Per-task checks are stored as `check:<command>`.
pub const CHECK_COMMAND_PREFIX: &str = "check:";

/// Reason of a timed-out attempt.
pub const REASON_TIMED_OUT: &str = "timed out";
/// Reason of an attempt ended by `idle_timeout`.
pub const REASON_IDLE: &str = "idle: no output, stream event or file change for its idle_timeout";
/// Reason of a cancelled attempt.
pub const REASON_CANCELLED: &str = "cancelled";

/// One per-task check that ran after the agent (e.g. `cargo test`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckRun {
    pub command: String,
    /// `None` when it did not finish (killed, timed out, could not start).
    pub exit_code: Option<i32>,
    /// The end of its output, kept in the check's detail when it fails.
    pub output_tail: String,
    /// How long it ran, in milliseconds (`None` when it could not start).
    pub duration_ms: Option<u64>,
}

/// Everything observed about one attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// False for the exec runner and for ops tasks: the exit code decides.
    pub receives_marker: bool,
    /// The view the marker was seen in: `raw`, `flattened`, `rendered`, `final_result` or
    /// `transcript`.
    pub marker_seen: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The time limit that ended it was `idle_timeout`: no output, stream event or file
    /// change for that long (`timed_out` is set too).
    pub idle_timed_out: bool,
    /// Whose time limit applied and its value (`the task's timeout (2s)`, `the
    /// task_timeout setting (1h)`), named in the verdict of an attempt it stopped.
    pub timeout_limit: Option<String>,
    /// Likewise for `idle_timeout`.
    pub idle_limit: Option<String>,
    pub cancelled: bool,
    /// weft killed the agent after the marker's grace period: not a failure.
    pub killed_after_marker: bool,
    /// `is_error`, `turn.failed` or an error event from the structured stream: diagnostic.
    pub stream_error: Option<String>,
    pub spawn_error: Option<String>,
    /// The task's check commands, in order: each must run and exit 0 before a passing
    /// agent's attempt passes.
    pub due_checks: Vec<String>,
}

/// The stored name of a per-task check.
pub fn check_name(command: &str) -> String {
    format!("{CHECK_COMMAND_PREFIX}{command}")
}

/// The agent's part of a verdict: settled, or passed with the task's checks still due.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Judgement {
    /// The attempt failed (or was cancelled) on its own evidence; no check runs.
    Settled(Verdict),
    /// The agent (or command) passed. Run [`ChecksDue::commands`] (in order, stopping at
    /// the first that fails), then [`ChecksDue::finish`]: there is no other way to a
    /// passing verdict.
    ChecksDue(ChecksDue),
}

/// A passing agent whose task's checks have not run yet. Only [`judge`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct ChecksDue {
    reason: String,
    checks: Vec<Check>,
    commands: Vec<String>,
}

impl ChecksDue {
    /// The check commands to run, in order.
    pub fn commands(&self) -> &[String] {
        &self.commands
    }

    /// The verdict once the checks ran: `runs` are their results in order (a failing run
    /// may end the list early). A due check that neither ran nor was cut short by an
    /// earlier failure fails the verdict.
    pub fn finish(self, runs: &[CheckRun], now: Timestamp) -> Verdict {
        let ChecksDue {
            reason,
            mut checks,
            commands,
        } = self;
        let (mut outcome, mut reason) = with_task_checks(reason, runs, &mut checks);
        let cut_short = runs.iter().any(|r| r.exit_code != Some(0));
        let missing: Vec<&String> = if cut_short {
            Vec::new()
        } else {
            commands.iter().skip(runs.len()).collect()
        };
        if let Some(first) = missing.first() {
            for command in &missing {
                checks.push(check(
                    &check_name(command),
                    false,
                    false,
                    "did not run: a check must run and exit 0 before the attempt passes",
                ));
            }
            outcome = VerdictOutcome::Fail;
            reason = format!("Failed: the check `{first}` did not run.");
        }
        Verdict {
            outcome,
            reason,
            checks,
            decided_at: now,
        }
    }
}

/// Judge the agent (or command) of an attempt from its evidence (see the module
/// documentation for the rules).
pub fn judge(evidence: &Evidence, now: Timestamp) -> Judgement {
    let (outcome, reason, checks) = agent_verdict(evidence);
    match outcome {
        VerdictOutcome::Pass => Judgement::ChecksDue(ChecksDue {
            reason,
            checks,
            commands: evidence.due_checks.clone(),
        }),
        VerdictOutcome::Fail => Judgement::Settled(Verdict {
            outcome,
            reason,
            checks,
            decided_at: now,
        }),
    }
}

/// Decide an attempt from its evidence and the runs of its checks in one step: [`judge`],
/// then [`ChecksDue::finish`] with `runs` when the agent passed.
pub fn decide(evidence: &Evidence, runs: &[CheckRun], now: Timestamp) -> Verdict {
    match judge(evidence, now) {
        Judgement::Settled(mut verdict) => {
            // Not expected (checks run only after a pass), but evidence is never dropped.
            verdict.checks.extend(runs.iter().map(task_check));
            verdict
        }
        Judgement::ChecksDue(due) => due.finish(runs, now),
    }
}

/// How an attempt came to be cancelled, when it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    /// A person cancelled this task (`weft cancel`).
    ByUser,
    /// The run was stopped (`weft stop`, Ctrl-C): the task is interrupted, retried on the
    /// next run.
    ByStop,
}

/// The stored status of an ended attempt and of its task.
///
/// A passing verdict completes the task unless its landing conflicted (then the attempt
/// stays passed and the task is conflicted); a failing one is interrupted when the run was
/// stopped under it, cancelled when a person cancelled it, else failed.
pub fn settle(
    outcome: VerdictOutcome,
    landing: Option<&Landing>,
    cancelled: Option<Cancelled>,
) -> (AttemptStatus, TaskStatus) {
    match (outcome, landing, cancelled) {
        (VerdictOutcome::Pass, Some(landing), _) if !landing.is_landed() => {
            (AttemptStatus::Passed, TaskStatus::Conflicted)
        }
        (VerdictOutcome::Pass, _, _) => (AttemptStatus::Passed, TaskStatus::Completed),
        (VerdictOutcome::Fail, _, Some(Cancelled::ByStop)) => {
            (AttemptStatus::Interrupted, TaskStatus::Interrupted)
        }
        (VerdictOutcome::Fail, _, Some(Cancelled::ByUser)) => {
            (AttemptStatus::Cancelled, TaskStatus::Cancelled)
        }
        (VerdictOutcome::Fail, _, None) => (AttemptStatus::Failed, TaskStatus::Failed),
    }
}

/// A passing verdict's reason once its work was landed: where it landed, that it changed
/// nothing, or (the task is then conflicted) why it could not land. `branch` is the
/// attempt's branch, kept on a conflict.
pub fn with_landing(mut verdict: Verdict, landing: &Landing, branch: &str) -> Verdict {
    match landing {
        Landing::Landed { merge } => {
            verdict
                .reason
                .push_str(&format!(" Landed as {}.", &merge[..merge.len().min(12)]));
        }
        Landing::NoChanges => verdict
            .reason
            .push_str(" It changed nothing, so nothing was landed."),
        Landing::Conflicted { files, detail } => {
            verdict.reason = if files.is_empty() || detail.starts_with("conflict markers") {
                format!("Conflicted: {detail}")
            } else {
                format!(
                    "Conflicted: landing it conflicts with the integration branch in {}; its \
                     branch {branch} and worktree are kept",
                    files.join(", ")
                )
            };
        }
    }
    verdict
}

/// `weft complete N`: a pass whose only check says no verification ran.
pub fn marked_complete(now: Timestamp) -> Verdict {
    Verdict {
        outcome: VerdictOutcome::Pass,
        reason: "Marked complete by a person; no verification ran.".to_owned(),
        checks: vec![check(
            CHECK_MANUAL,
            true,
            false,
            "marked complete with `weft complete`; no automatic verification was performed",
        )],
        decided_at: now,
    }
}

/// What a finished attempt leaves for its dependents: the verdict's reason and the last
/// [`TAIL_CHARS`] characters of its output (stored as written; defused when carried).
pub fn summarize(verdict: &Verdict, output: &str, now: Timestamp) -> OutputSummary {
    OutputSummary {
        review_reason: verdict.reason.clone(),
        log_tail: tail_chars(output, TAIL_CHARS),
        captured_at: now,
    }
}

fn check(name: &str, passed: bool, skipped: bool, detail: impl Into<String>) -> Check {
    Check {
        name: name.to_owned(),
        passed,
        skipped,
        detail: detail.into(),
        exit_code: None,
        duration_ms: None,
    }
}

/// The views a marker can be seen in (see [`Evidence::marker_seen`]).
const MARKER_VIEWS: [&str; 5] = ["raw", "flattened", "rendered", "final_result", "transcript"];

/// The view a passing `completion_marker` check's `detail` names (the inverse of how
/// [`judge`] words it), or `None` when it names none of the known views.
pub fn marker_view(detail: &str) -> Option<&'static str> {
    MARKER_VIEWS
        .into_iter()
        .find(|view| detail == format!("the completion marker was seen {}", seen_where(view)))
}

/// Where the marker was seen, as a phrase: "in the agent's output".
fn seen_where(view: &str) -> String {
    match view {
        "raw" => "in the agent's output".to_owned(),
        "flattened" => "in the agent's output once ANSI sequences, box drawing and whitespace \
                        were removed"
            .to_owned(),
        "rendered" => "on the agent's rendered screen".to_owned(),
        "final_result" => "in the agent's final result".to_owned(),
        "transcript" => "in the agent's own transcript".to_owned(),
        other => format!("in the {other} view of the agent's output"),
    }
}

/// How the process ended, as a phrase, and whether that looked clean.
fn ending(evidence: &Evidence) -> (String, bool) {
    match (evidence.exit_code, evidence.signal) {
        (Some(0), _) => ("exited cleanly (code 0)".to_owned(), true),
        (Some(code), _) => (format!("exited with code {code}"), false),
        (None, Some(signal)) => (format!("was killed by signal {signal}"), false),
        (None, None) => ("left no exit code".to_owned(), false),
    }
}

fn stream_diagnostic(evidence: &Evidence, checks: &mut Vec<Check>) {
    if let Some(error) = &evidence.stream_error {
        checks.push(check(
            CHECK_STREAM,
            false,
            true,
            format!(
                "diagnostic only, it did not decide: the agent's stream reported an error: {error}"
            ),
        ));
    }
}

/// The verdict on the agent (or command) alone, before per-task checks.
fn agent_verdict(e: &Evidence) -> (VerdictOutcome, String, Vec<Check>) {
    use VerdictOutcome::{Fail, Pass};
    let mut checks = Vec::new();
    let (how, clean) = ending(e);

    if e.cancelled {
        if e.receives_marker {
            checks.push(check(
                CHECK_MARKER,
                e.marker_seen.is_some(),
                true,
                "not consulted: the attempt was cancelled",
            ));
        }
        stream_diagnostic(e, &mut checks);
        checks.push(check(
            CHECK_EXIT_CODE,
            clean,
            true,
            "not consulted: the attempt was cancelled",
        ));
        checks.push(check(
            CHECK_MANUAL,
            false,
            false,
            "a person cancelled the attempt before a verdict; nothing was verified",
        ));
        return (Fail, REASON_CANCELLED.to_owned(), checks);
    }

    if let Some(error) = &e.spawn_error {
        let what = if e.receives_marker {
            "agent"
        } else {
            "command"
        };
        if e.receives_marker {
            checks.push(check(
                CHECK_MARKER,
                false,
                false,
                "not seen: the agent never started",
            ));
        }
        checks.push(check(
            CHECK_EXIT_CODE,
            false,
            false,
            format!("the {what} could not be started: {error}"),
        ));
        return (
            Fail,
            format!("Failed: the {what} could not be started: {error}"),
            checks,
        );
    }

    if e.receives_marker
        && let Some(view) = &e.marker_seen
    {
        let seen = seen_where(view);
        checks.push(check(
            CHECK_MARKER,
            true,
            false,
            format!("the completion marker was seen {seen}"),
        ));
        stream_diagnostic(e, &mut checks);
        let (detail, looked_clean) = if e.killed_after_marker {
            (
                "not consulted: the completion marker decided; weft stopped the agent after \
                 the marker's grace period, which is not a failure"
                    .to_owned(),
                true,
            )
        } else if e.exit_code.is_none() && e.signal.is_none() {
            (
                "not consulted: the completion marker decided before the process exited".to_owned(),
                true,
            )
        } else {
            (
                format!("not consulted: the completion marker decided; the agent {how}"),
                clean,
            )
        };
        checks.push(check(CHECK_EXIT_CODE, looked_clean, true, detail));
        if e.timed_out {
            checks.push(check(
                CHECK_TIMEOUT,
                false,
                true,
                "not consulted: the attempt reached its time limit after the completion marker \
                 was seen",
            ));
        }
        return (
            Pass,
            format!("Passed: the completion marker was seen {seen}."),
            checks,
        );
    }

    if e.timed_out {
        if e.receives_marker {
            checks.push(check(
                CHECK_MARKER,
                false,
                false,
                "not seen before the time limit",
            ));
        }
        stream_diagnostic(e, &mut checks);
        checks.push(check(
            CHECK_EXIT_CODE,
            false,
            true,
            "not consulted: weft stopped the process at the time limit",
        ));
        if e.idle_timed_out {
            let whose = e
                .idle_limit
                .as_deref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default();
            checks.push(check(
                CHECK_TIMEOUT,
                false,
                false,
                format!(
                    "the attempt produced no output, stream event or file change for its idle_timeout{whose} and weft stopped it"
                ),
            ));
            return (Fail, format!("{REASON_IDLE}{whose}"), checks);
        }
        let (whose, reason) = match e.timeout_limit.as_deref() {
            Some(limit) => (
                format!(" ({limit})"),
                format!("{REASON_TIMED_OUT}: {limit}"),
            ),
            None => (String::new(), REASON_TIMED_OUT.to_owned()),
        };
        checks.push(check(
            CHECK_TIMEOUT,
            false,
            false,
            format!("the attempt ran past its time limit{whose} and weft stopped it"),
        ));
        return (Fail, reason, checks);
    }

    if e.receives_marker {
        checks.push(check(
            CHECK_MARKER,
            false,
            false,
            "the completion marker was not seen in the agent's output or transcript",
        ));
        stream_diagnostic(e, &mut checks);
        checks.push(check(
            CHECK_EXIT_CODE,
            clean,
            false,
            format!("the agent {how}"),
        ));
        let mut reason = if clean {
            "Failed: the agent exited cleanly (code 0) but did not print its completion marker."
                .to_owned()
        } else {
            format!("Failed: the completion marker is missing; the agent {how}.")
        };
        // The agent's own words usually say why (a lapsed login, a bad model).
        if let Some(error) = &e.stream_error {
            reason.push_str(&format!(" Its stream reported: {error}"));
        }
        return (Fail, reason, checks);
    }

    // No marker for this task: the exit code decides.
    stream_diagnostic(e, &mut checks);
    checks.push(check(
        CHECK_EXIT_CODE,
        clean,
        false,
        format!("the command {how}; the exit code decides for this task"),
    ));
    if clean {
        (
            Pass,
            "Passed: the command exited with code 0; the exit code decided, as this task gets \
             no completion marker."
                .to_owned(),
            checks,
        )
    } else {
        (
            Fail,
            format!(
                "Failed: the command {how}; the exit code decided, as this task gets no completion marker."
            ),
            checks,
        )
    }
}

fn task_check(run: &CheckRun) -> Check {
    let passed = run.exit_code == Some(0);
    let mut detail = match run.exit_code {
        Some(code) => format!("exited with code {code}"),
        None => "did not finish".to_owned(),
    };
    let tail = run.output_tail.trim();
    if !passed && !tail.is_empty() {
        detail.push_str("; its output ends with:\n");
        detail.push_str(tail);
    }
    Check {
        exit_code: run.exit_code,
        duration_ms: run.duration_ms,
        ..check(&check_name(&run.command), passed, false, detail)
    }
}

/// Fold the per-task checks into a passing agent verdict.
fn with_task_checks(
    agent_reason: String,
    runs: &[CheckRun],
    checks: &mut Vec<Check>,
) -> (VerdictOutcome, String) {
    checks.extend(runs.iter().map(task_check));
    let failed: Vec<&CheckRun> = runs.iter().filter(|r| r.exit_code != Some(0)).collect();
    match failed.as_slice() {
        [] if runs.is_empty() => (VerdictOutcome::Pass, agent_reason),
        [] => {
            let base = agent_reason.trim_end_matches('.');
            let reason = if runs.len() == 1 {
                format!("{base}; its check passed.")
            } else {
                format!("{base}; all {} checks passed.", runs.len())
            };
            (VerdictOutcome::Pass, reason)
        }
        [first, rest @ ..] => {
            let what = match first.exit_code {
                Some(code) => format!("exited with code {code}"),
                None => "did not finish".to_owned(),
            };
            let more = match rest.len() {
                0 => String::new(),
                1 => " (and 1 more check failed)".to_owned(),
                n => format!(" (and {n} more checks failed)"),
            };
            (
                VerdictOutcome::Fail,
                format!("Failed: the check `{}` {what}{more}.", first.command),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = 1_700_000_000_000;

    fn agent() -> Evidence {
        Evidence {
            receives_marker: true,
            ..Evidence::default()
        }
    }

    fn exec() -> Evidence {
        Evidence::default()
    }

    fn shape(v: &Verdict) -> Vec<(String, bool, bool, String)> {
        v.checks
            .iter()
            .map(|c| (c.name.clone(), c.passed, c.skipped, c.detail.clone()))
            .collect()
    }

    fn row(name: &str, passed: bool, skipped: bool, detail: &str) -> (String, bool, bool, String) {
        (name.to_owned(), passed, skipped, detail.to_owned())
    }

    /// The invariant every verdict keeps.
    fn consistent(v: &Verdict) {
        let decisive_pass = v.checks.iter().filter(|c| !c.skipped).all(|c| c.passed);
        assert!(v.checks.iter().any(|c| !c.skipped), "{v:?}");
        assert_eq!(v.outcome == VerdictOutcome::Pass, decisive_pass, "{v:?}");
        assert_eq!(v.decided_at, NOW);
    }

    #[test]
    fn marker_seen_passes_and_skips_the_exit_code() {
        let v = decide(
            &Evidence {
                marker_seen: Some("raw".into()),
                exit_code: Some(0),
                ..agent()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Pass);
        assert_eq!(
            v.reason,
            "Passed: the completion marker was seen in the agent's output."
        );
        assert_eq!(
            shape(&v),
            [
                row(
                    "completion_marker",
                    true,
                    false,
                    "the completion marker was seen in the agent's output"
                ),
                row(
                    "exit_code",
                    true,
                    true,
                    "not consulted: the completion marker decided; the agent exited cleanly (code 0)"
                ),
            ]
        );
    }

    #[test]
    fn marker_decides_whatever_the_exit_code() {
        for (exit_code, signal, clean, detail) in [
            (
                Some(3),
                None,
                false,
                "not consulted: the completion marker decided; the agent exited with code 3",
            ),
            (
                None,
                Some(9),
                false,
                "not consulted: the completion marker decided; the agent was killed by signal 9",
            ),
            (
                None,
                None,
                true,
                "not consulted: the completion marker decided before the process exited",
            ),
        ] {
            let v = decide(
                &Evidence {
                    marker_seen: Some("transcript".into()),
                    exit_code,
                    signal,
                    ..agent()
                },
                &[],
                NOW,
            );
            consistent(&v);
            assert_eq!(v.outcome, VerdictOutcome::Pass);
            assert_eq!(v.checks[1], check("exit_code", clean, true, detail));
        }
    }

    #[test]
    fn killed_after_the_marker_is_not_a_failure() {
        let v = decide(
            &Evidence {
                marker_seen: Some("rendered".into()),
                signal: Some(15),
                killed_after_marker: true,
                ..agent()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Pass);
        assert_eq!(
            v.reason,
            "Passed: the completion marker was seen on the agent's rendered screen."
        );
        assert_eq!(
            v.checks[1].detail,
            "not consulted: the completion marker decided; weft stopped the agent after the \
             marker's grace period, which is not a failure"
        );
        assert!(v.checks[1].passed && v.checks[1].skipped);
    }

    #[test]
    fn every_view_is_described() {
        for (view, phrase) in [
            ("raw", "in the agent's output"),
            (
                "flattened",
                "in the agent's output once ANSI sequences, box drawing and whitespace were removed",
            ),
            ("rendered", "on the agent's rendered screen"),
            ("final_result", "in the agent's final result"),
            ("transcript", "in the agent's own transcript"),
            ("pty", "in the pty view of the agent's output"),
        ] {
            let v = decide(
                &Evidence {
                    marker_seen: Some(view.into()),
                    ..agent()
                },
                &[],
                NOW,
            );
            assert_eq!(
                v.reason,
                format!("Passed: the completion marker was seen {phrase}.")
            );
        }
    }

    #[test]
    fn no_marker_fails_whatever_the_exit_code() {
        let v = decide(
            &Evidence {
                exit_code: Some(0),
                ..agent()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Fail);
        assert_eq!(
            v.reason,
            "Failed: the agent exited cleanly (code 0) but did not print its completion marker."
        );
        assert_eq!(
            shape(&v),
            [
                row(
                    "completion_marker",
                    false,
                    false,
                    "the completion marker was not seen in the agent's output or transcript"
                ),
                row(
                    "exit_code",
                    true,
                    false,
                    "the agent exited cleanly (code 0)"
                ),
            ]
        );
        for (exit_code, signal, reason) in [
            (
                Some(2),
                None,
                "Failed: the completion marker is missing; the agent exited with code 2.",
            ),
            (
                None,
                Some(9),
                "Failed: the completion marker is missing; the agent was killed by signal 9.",
            ),
            (
                None,
                None,
                "Failed: the completion marker is missing; the agent left no exit code.",
            ),
        ] {
            let v = decide(
                &Evidence {
                    exit_code,
                    signal,
                    ..agent()
                },
                &[],
                NOW,
            );
            consistent(&v);
            assert_eq!(v.reason, reason);
            assert!(!v.checks[1].passed && !v.checks[1].skipped);
        }
    }

    #[test]
    fn stream_errors_are_a_diagnostic_beside_the_marker() {
        for marker_seen in [Some("raw".to_owned()), None] {
            let v = decide(
                &Evidence {
                    marker_seen: marker_seen.clone(),
                    exit_code: Some(1),
                    stream_error: Some("is_error: rate limited".into()),
                    ..agent()
                },
                &[],
                NOW,
            );
            consistent(&v);
            assert_eq!(v.checks[0].name, "completion_marker");
            assert_eq!(
                v.checks[1],
                check(
                    "stream",
                    false,
                    true,
                    "diagnostic only, it did not decide: the agent's stream reported an error: \
                     is_error: rate limited"
                )
            );
            let expected = if marker_seen.is_some() {
                VerdictOutcome::Pass
            } else {
                VerdictOutcome::Fail
            };
            assert_eq!(v.outcome, expected);
            // A failure quotes the agent's own error; a pass does not mention it.
            assert_eq!(
                v.reason
                    .contains("Its stream reported: is_error: rate limited"),
                marker_seen.is_none(),
                "{}",
                v.reason
            );
        }
    }

    #[test]
    fn an_idle_end_fails_and_says_it_was_idle() {
        let v = decide(
            &Evidence {
                timed_out: true,
                idle_timed_out: true,
                signal: Some(9),
                ..agent()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Fail);
        assert_eq!(v.reason, REASON_IDLE);
        let named = decide(
            &Evidence {
                timed_out: true,
                idle_timed_out: true,
                signal: Some(9),
                idle_limit: Some("the task's idle_timeout = 5m".into()),
                ..agent()
            },
            &[],
            NOW,
        );
        assert_eq!(
            named.reason,
            format!("{REASON_IDLE} (the task's idle_timeout = 5m)")
        );
        assert!(
            v.checks
                .iter()
                .any(|c| c.name == "timeout" && c.detail.contains("idle_timeout")),
            "{:?}",
            v.checks
        );
    }

    #[test]
    fn timed_out_fails() {
        let v = decide(
            &Evidence {
                timed_out: true,
                signal: Some(9),
                ..agent()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Fail);
        assert_eq!(v.reason, "timed out");
        assert_eq!(
            shape(&v),
            [
                row(
                    "completion_marker",
                    false,
                    false,
                    "not seen before the time limit"
                ),
                row(
                    "exit_code",
                    false,
                    true,
                    "not consulted: weft stopped the process at the time limit"
                ),
                row(
                    "timeout",
                    false,
                    false,
                    "the attempt ran past its time limit and weft stopped it"
                ),
            ]
        );
        let v = decide(
            &Evidence {
                timed_out: true,
                ..exec()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.reason, "timed out");
        assert_eq!(v.checks.len(), 2, "no marker check for exec");
    }

    #[test]
    fn a_marker_seen_before_the_time_limit_still_passes() {
        let v = decide(
            &Evidence {
                marker_seen: Some("raw".into()),
                timed_out: true,
                ..agent()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Pass);
        assert_eq!(v.checks.last().unwrap().name, "timeout");
        assert!(v.checks.last().unwrap().skipped);
    }

    #[test]
    fn cancelled_fails_even_with_a_marker() {
        for evidence in [
            Evidence {
                cancelled: true,
                marker_seen: Some("raw".into()),
                ..agent()
            },
            Evidence {
                cancelled: true,
                exit_code: Some(0),
                ..exec()
            },
        ] {
            let v = decide(&evidence, &[], NOW);
            consistent(&v);
            assert_eq!(v.outcome, VerdictOutcome::Fail);
            assert_eq!(v.reason, "cancelled");
            assert_eq!(
                v.checks.last().unwrap(),
                &check(
                    "manual",
                    false,
                    false,
                    "a person cancelled the attempt before a verdict; nothing was verified"
                )
            );
        }
    }

    #[test]
    fn a_runner_that_cannot_start_fails() {
        let v = decide(
            &Evidence {
                spawn_error: Some("claude: not found".into()),
                ..agent()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(
            v.reason,
            "Failed: the agent could not be started: claude: not found"
        );
        assert_eq!(
            shape(&v),
            [
                row(
                    "completion_marker",
                    false,
                    false,
                    "not seen: the agent never started"
                ),
                row(
                    "exit_code",
                    false,
                    false,
                    "the agent could not be started: claude: not found"
                ),
            ]
        );
        let v = decide(
            &Evidence {
                spawn_error: Some("sh: not found".into()),
                ..exec()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(
            v.reason,
            "Failed: the command could not be started: sh: not found"
        );
    }

    #[test]
    fn exec_and_ops_are_decided_by_the_exit_code() {
        let v = decide(
            &Evidence {
                exit_code: Some(0),
                ..exec()
            },
            &[],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Pass);
        assert_eq!(
            v.reason,
            "Passed: the command exited with code 0; the exit code decided, as this task gets no \
             completion marker."
        );
        assert_eq!(
            shape(&v),
            [row(
                "exit_code",
                true,
                false,
                "the command exited cleanly (code 0); the exit code decides for this task"
            )]
        );
        for (exit_code, signal, reason) in [
            (
                Some(101),
                None,
                "Failed: the command exited with code 101; the exit code decided, as this task \
                 gets no completion marker.",
            ),
            (
                None,
                Some(9),
                "Failed: the command was killed by signal 9; the exit code decided, as this task \
                 gets no completion marker.",
            ),
            (
                None,
                None,
                "Failed: the command left no exit code; the exit code decided, as this task gets \
                 no completion marker.",
            ),
        ] {
            let v = decide(
                &Evidence {
                    exit_code,
                    signal,
                    ..exec()
                },
                &[],
                NOW,
            );
            consistent(&v);
            assert_eq!(v.outcome, VerdictOutcome::Fail);
            assert_eq!(v.reason, reason);
        }
        // A marker reported for a task that gets none does not decide.
        let v = decide(
            &Evidence {
                marker_seen: Some("raw".into()),
                exit_code: Some(1),
                ..exec()
            },
            &[],
            NOW,
        );
        assert_eq!(v.outcome, VerdictOutcome::Fail);
    }

    fn run(command: &str, exit_code: Option<i32>, tail: &str) -> CheckRun {
        CheckRun {
            command: command.into(),
            exit_code,
            output_tail: tail.into(),
            duration_ms: Some(5),
        }
    }

    #[test]
    fn passing_checks_are_recorded_and_named_in_the_reason() {
        let v = decide(
            &Evidence {
                marker_seen: Some("raw".into()),
                exit_code: Some(0),
                ..agent()
            },
            &[run("cargo test", Some(0), "ok")],
            NOW,
        );
        consistent(&v);
        assert_eq!(
            v.reason,
            "Passed: the completion marker was seen in the agent's output; its check passed."
        );
        assert_eq!(
            v.checks[2],
            Check {
                exit_code: Some(0),
                duration_ms: Some(5),
                ..check("check:cargo test", true, false, "exited with code 0")
            }
        );
        let v = decide(
            &Evidence {
                exit_code: Some(0),
                ..exec()
            },
            &[run("a", Some(0), ""), run("b", Some(0), "")],
            NOW,
        );
        assert!(
            v.reason
                .ends_with("completion marker; all 2 checks passed.")
        );
    }

    #[test]
    fn a_failing_check_fails_the_verdict_and_is_named() {
        let v = decide(
            &Evidence {
                marker_seen: Some("raw".into()),
                exit_code: Some(0),
                ..agent()
            },
            &[
                run("cargo fmt --check", Some(0), ""),
                run("cargo test", Some(101), "test result: FAILED. 1 failed\n"),
                run("cargo clippy", None, ""),
            ],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Fail);
        assert_eq!(
            v.reason,
            "Failed: the check `cargo test` exited with code 101 (and 1 more check failed)."
        );
        assert_eq!(
            v.checks[3],
            Check {
                exit_code: Some(101),
                duration_ms: Some(5),
                ..check(
                    "check:cargo test",
                    false,
                    false,
                    "exited with code 101; its output ends with:\ntest result: FAILED. 1 failed"
                )
            }
        );
        assert_eq!(
            v.checks[4],
            Check {
                duration_ms: Some(5),
                ..check("check:cargo clippy", false, false, "did not finish")
            }
        );
        let v = decide(
            &Evidence {
                marker_seen: Some("raw".into()),
                ..agent()
            },
            &[run("make lint", None, "")],
            NOW,
        );
        assert_eq!(v.reason, "Failed: the check `make lint` did not finish.");
    }

    #[test]
    fn checks_given_to_a_failed_agent_are_kept() {
        let v = decide(
            &Evidence {
                exit_code: Some(1),
                ..agent()
            },
            &[run("cargo test", Some(0), "")],
            NOW,
        );
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Fail);
        assert_eq!(v.checks.last().unwrap().name, "check:cargo test");
    }

    #[test]
    fn the_marker_view_is_read_back_from_every_passing_verdict() {
        for view in MARKER_VIEWS {
            let v = decide(
                &Evidence {
                    receives_marker: true,
                    marker_seen: Some(view.into()),
                    exit_code: Some(0),
                    ..Evidence::default()
                },
                &[],
                NOW,
            );
            let marker = v.checks.iter().find(|c| c.name == CHECK_MARKER).unwrap();
            assert_eq!(marker_view(&marker.detail), Some(view));
        }
        assert_eq!(marker_view("seen somewhere"), None);
    }

    #[test]
    fn marked_complete_says_nothing_was_verified() {
        let v = marked_complete(NOW);
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Pass);
        assert_eq!(
            v.reason,
            "Marked complete by a person; no verification ran."
        );
        assert_eq!(
            shape(&v),
            [row(
                "manual",
                true,
                false,
                "marked complete with `weft complete`; no automatic verification was performed"
            )]
        );
    }

    #[test]
    fn summarize_keeps_the_reason_and_the_tail() {
        let v = marked_complete(NOW);
        let output = format!("{}\nend of run\n\n", "x".repeat(1000));
        let summary = summarize(&v, &output, NOW + 1);
        assert_eq!(summary.review_reason, v.reason);
        assert_eq!(summary.log_tail.chars().count(), TAIL_CHARS);
        assert!(summary.log_tail.ends_with("x\nend of run"));
        assert_eq!(summary.captured_at, NOW + 1);
    }

    fn due(evidence: &Evidence) -> ChecksDue {
        match judge(evidence, NOW) {
            Judgement::ChecksDue(due) => due,
            Judgement::Settled(v) => panic!("expected the checks to be due: {v:?}"),
        }
    }

    /// Every way an attempt can end with its marker seen owes its task's checks.
    #[test]
    fn every_ending_with_the_marker_seen_owes_the_checks() {
        let seen = Evidence {
            marker_seen: Some("raw".into()),
            due_checks: vec!["cargo test".into()],
            ..agent()
        };
        for evidence in [
            Evidence {
                exit_code: Some(0),
                ..seen.clone()
            },
            Evidence {
                exit_code: Some(1),
                ..seen.clone()
            },
            Evidence {
                signal: Some(15),
                killed_after_marker: true,
                ..seen.clone()
            },
            Evidence {
                timed_out: true,
                signal: Some(9),
                ..seen.clone()
            },
            seen.clone(),
        ] {
            let due = due(&evidence);
            assert_eq!(due.commands(), ["cargo test".to_owned()]);
            let v = due.finish(&[run("cargo test", Some(1), "boom")], NOW);
            consistent(&v);
            assert_eq!(v.outcome, VerdictOutcome::Fail, "{evidence:?}");
            assert_eq!(
                v.reason,
                "Failed: the check `cargo test` exited with code 1."
            );
        }
    }

    #[test]
    fn a_marker_then_a_timeout_passes_only_through_its_checks() {
        let evidence = Evidence {
            marker_seen: Some("raw".into()),
            timed_out: true,
            due_checks: vec!["make test".into()],
            ..agent()
        };
        let v = due(&evidence).finish(&[run("make test", Some(0), "")], NOW);
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Pass);
        assert!(
            v.checks
                .iter()
                .any(|c| c.name == "check:make test" && c.passed)
        );
        assert!(v.checks.iter().any(|c| c.name == "timeout" && c.skipped));
    }

    #[test]
    fn a_due_check_that_did_not_run_fails_the_verdict() {
        let evidence = Evidence {
            exit_code: Some(0),
            due_checks: vec!["a".into(), "b".into(), "c".into()],
            ..exec()
        };
        let v = due(&evidence).finish(&[], NOW);
        consistent(&v);
        assert_eq!(v.outcome, VerdictOutcome::Fail);
        assert_eq!(v.reason, "Failed: the check `a` did not run.");
        assert_eq!(v.checks.len(), 4);
        let v = due(&evidence).finish(&[run("a", Some(0), "")], NOW);
        consistent(&v);
        assert_eq!(v.reason, "Failed: the check `b` did not run.");
        // A failing check ends the list: the ones after it are not owed.
        let v = due(&evidence).finish(&[run("a", Some(2), "")], NOW);
        consistent(&v);
        assert_eq!(v.reason, "Failed: the check `a` exited with code 2.");
        assert_eq!(v.checks.len(), 2);
    }

    #[test]
    fn a_failing_agent_is_settled_without_checks() {
        for evidence in [
            Evidence {
                timed_out: true,
                ..agent()
            },
            Evidence {
                exit_code: Some(0),
                ..agent()
            },
            Evidence {
                cancelled: true,
                marker_seen: Some("raw".into()),
                ..agent()
            },
            Evidence {
                exit_code: Some(3),
                ..exec()
            },
        ] {
            let evidence = Evidence {
                due_checks: vec!["cargo test".into()],
                ..evidence
            };
            let Judgement::Settled(v) = judge(&evidence, NOW) else {
                panic!("a failing agent owes no checks: {evidence:?}");
            };
            consistent(&v);
            assert_eq!(v.outcome, VerdictOutcome::Fail);
        }
    }

    #[test]
    fn settle_maps_verdict_landing_and_cancellation_to_statuses() {
        use {AttemptStatus as A, TaskStatus as T};
        let landed = Landing::Landed {
            merge: "abc".into(),
        };
        let conflicted = Landing::Conflicted {
            files: vec!["a".into()],
            detail: "x".into(),
        };
        let pass = VerdictOutcome::Pass;
        let fail = VerdictOutcome::Fail;
        for (outcome, landing, cancelled, expected) in [
            (pass, None, None, (A::Passed, T::Completed)),
            (pass, Some(&landed), None, (A::Passed, T::Completed)),
            (
                pass,
                Some(&Landing::NoChanges),
                None,
                (A::Passed, T::Completed),
            ),
            (pass, Some(&conflicted), None, (A::Passed, T::Conflicted)),
            (fail, None, None, (A::Failed, T::Failed)),
            (
                fail,
                None,
                Some(Cancelled::ByStop),
                (A::Interrupted, T::Interrupted),
            ),
            (
                fail,
                None,
                Some(Cancelled::ByUser),
                (A::Cancelled, T::Cancelled),
            ),
        ] {
            assert_eq!(settle(outcome, landing, cancelled), expected);
        }
    }

    #[test]
    fn the_landing_is_worded_into_the_reason() {
        let pass = || Verdict {
            outcome: VerdictOutcome::Pass,
            reason: "Passed: ok.".into(),
            checks: Vec::new(),
            decided_at: NOW,
        };
        let landed = Landing::Landed {
            merge: "0123456789abcdef".into(),
        };
        assert_eq!(
            with_landing(pass(), &landed, "b").reason,
            "Passed: ok. Landed as 0123456789ab."
        );
        assert_eq!(
            with_landing(pass(), &Landing::NoChanges, "b").reason,
            "Passed: ok. It changed nothing, so nothing was landed."
        );
        let conflict = Landing::Conflicted {
            files: vec!["src/a.rs".into()],
            detail: "merge conflict".into(),
        };
        assert_eq!(
            with_landing(pass(), &conflict, "weft/r/1-a").reason,
            "Conflicted: landing it conflicts with the integration branch in src/a.rs; its \
             branch weft/r/1-a and worktree are kept"
        );
        let markers = Landing::Conflicted {
            files: vec!["src/a.rs".into()],
            detail: "conflict markers are still in src/a.rs".into(),
        };
        assert_eq!(
            with_landing(pass(), &markers, "b").reason,
            "Conflicted: conflict markers are still in src/a.rs"
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn evidence() -> impl Strategy<Value = Evidence> {
            (
                any::<bool>(),
                proptest::option::of(prop_oneof![Just("raw"), Just("transcript")]),
                proptest::option::of(-1i32..3),
                proptest::option::of(1i32..16),
                any::<[bool; 4]>(),
                proptest::option::of(Just("broken")),
                proptest::collection::vec("[a-c]", 0..3),
            )
                .prop_map(|(marker, seen, exit_code, signal, flags, spawn, checks)| {
                    Evidence {
                        receives_marker: marker,
                        marker_seen: seen.map(str::to_owned),
                        exit_code,
                        signal,
                        timed_out: flags[0],
                        // An idle end is a timeout.
                        idle_timed_out: flags[0] && flags[1] && flags[2],
                        timeout_limit: None,
                        idle_limit: None,
                        cancelled: flags[1],
                        killed_after_marker: flags[2],
                        stream_error: flags[3].then(|| "oops".to_owned()),
                        spawn_error: spawn.map(str::to_owned),
                        due_checks: checks,
                    }
                })
        }

        proptest! {
            /// A pass needs every due check to have run and exited 0; any failing or
            /// missing check fails it; and a cancelled or timed-out attempt without its
            /// marker never passes.
            #[test]
            fn no_pass_without_every_due_check(
                e in evidence(),
                fail_at in proptest::option::of(0usize..3),
                ran in 0usize..4,
            ) {
                let runs: Vec<CheckRun> = e
                    .due_checks
                    .iter()
                    .take(ran)
                    .enumerate()
                    .map(|(i, c)| run(c, Some(if Some(i) == fail_at { 1 } else { 0 }), ""))
                    .collect();
                let complete = runs.len() == e.due_checks.len()
                    && runs.iter().all(|r| r.exit_code == Some(0));
                let v = decide(&e, &runs, NOW);
                consistent(&v);
                if v.outcome == VerdictOutcome::Pass {
                    prop_assert!(complete, "{:?} {:?}", e, runs);
                    prop_assert!(!e.cancelled && e.spawn_error.is_none());
                    prop_assert!(!e.timed_out || (e.receives_marker && e.marker_seen.is_some()));
                }
                let agent_passed = matches!(judge(&e, NOW), Judgement::ChecksDue(_));
                prop_assert_eq!(v.outcome == VerdictOutcome::Pass, agent_passed && complete);
            }
        }
    }
}

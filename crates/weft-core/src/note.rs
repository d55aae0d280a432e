//! The evidence of a landing, as it travels with the commits: the JSON note weft attaches
//! to every landing merge commit (under `refs/notes/weft`), and the trailers of the merge
//! commit's message.
//!
//! Contract:
//!
//! - A note is one [`EvidenceNote`], serialized as one line of JSON
//!   ([`EvidenceNote::to_json`]); its JSON Schema is [`EvidenceNote::json_schema`],
//!   committed as `schemas/evidence.schema.json`. `version` is [`NOTE_VERSION`]; a reader
//!   refuses a newer one rather than guessing.
//! - `tree` is the tree id of the commit the note is attached to: a note whose `tree` is not
//!   its commit's tree was copied or forged (`weft evidence --check` names it). A rebuild
//!   that re-creates a landing copies its note with the new tree and nothing else changed
//!   ([`EvidenceNote::carried`]).
//! - Everything else is what weft's store recorded about the attempt that landed: nothing
//!   here is taken from the agent's word. Strings that came from an agent or a planner (the
//!   task title, check names, the verdict's reason) are stored as they are; whoever prints
//!   them to a terminal escapes them (`weft_core::terminal`).
//! - A landing's merge commit message is [`landing_message`]: the subject weft has always
//!   used (`weft: land task <order>: <title>`), then the trailers `Weft-Plan`, `Weft-Task`,
//!   `Weft-Attempt` and `Weft-Verdict`. [`Trailers::parse`] reads them back, so a commit
//!   names the attempt its evidence comes from even when its note is missing.
//!
//! Pure: the caller passes the time and every fact in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Attempt, Check, Plan, Task, Timestamp, Verdict, VerdictOutcome};
use crate::verdict::{CHECK_COMMAND_PREFIX, CHECK_EXIT_CODE, CHECK_MARKER, marker_view};

/// The version of [`EvidenceNote`] this weft writes.
pub const NOTE_VERSION: u32 = 1;

/// The trailer keys of a landing's merge commit message.
pub const TRAILER_PLAN: &str = "Weft-Plan";
pub const TRAILER_TASK: &str = "Weft-Task";
pub const TRAILER_ATTEMPT: &str = "Weft-Attempt";
pub const TRAILER_VERDICT: &str = "Weft-Verdict";

/// A landing's evidence, as its git note holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "weft landing evidence")]
pub struct EvidenceNote {
    /// The format's version: 1 (`NOTE_VERSION`) today.
    pub version: u32,
    /// The tree id of the commit this note is attached to.
    pub tree: String,
    /// The plan's id.
    pub plan: String,
    /// The run's id.
    pub run: String,
    pub task: NoteTask,
    pub attempt: NoteAttempt,
    /// The runner that ran the attempt (`claude-code`, `codex`, `exec`, ...).
    pub runner: String,
    /// The task's model, effort and mode; `null`: the runner's default.
    pub model: Option<String>,
    pub effort: Option<String>,
    pub mode: Option<String>,
    /// Where the completion marker was found; `null` for tasks that receive none (the
    /// `exec` runner and ops tasks, which pass on their exit code).
    pub marker: Option<MarkerFound>,
    /// The verdict's outcome (always `pass` for a landing) and reason.
    pub verdict: NoteVerdict,
    /// Every check the verdict consulted.
    pub checks: Vec<NoteCheck>,
    /// The latest verification of an integration tip that contained this landing;
    /// `null` until one ran.
    pub verification: Option<VerificationRecord>,
    pub usage: NoteUsage,
    /// When the attempt started and ended (milliseconds since the Unix epoch).
    pub started_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    /// The agent's own session transcript of the attempt, when one was found.
    pub transcript: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoteTask {
    pub id: String,
    pub order: u32,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoteAttempt {
    pub id: String,
    /// 1 for the first try of the task in its run, then 2, 3, ...
    pub number: u32,
}

/// Where a completion marker was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MarkerFound {
    /// `stream` (what the agent printed), `transcript` (its own session transcript) or
    /// `both`.
    pub found_in: MarkerSource,
    /// The view of the stream it was seen in (`raw`, `flattened`, `rendered`,
    /// `final_result`), when it was seen there.
    pub view: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MarkerSource {
    Stream,
    Transcript,
    Both,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoteVerdict {
    pub outcome: VerdictOutcome,
    pub reason: String,
    pub decided_at: Timestamp,
}

/// One check of the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoteCheck {
    /// `completion_marker`, `exit_code`, `check:<command>`, ...
    pub name: String,
    pub passed: bool,
    /// A skipped check did not decide the outcome.
    pub skipped: bool,
    /// A check command's exit code, or the agent's for `exit_code`; `null` when it did not
    /// finish or the check is no process.
    pub exit_code: Option<i32>,
    /// How long a check command ran, in milliseconds; `null` when not measured.
    pub duration_ms: Option<u64>,
    pub detail: String,
}

/// One run of the `verify` commands on an integration tip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerificationRecord {
    pub commands: Vec<String>,
    /// The integration tip verified.
    pub tip: String,
    pub result: VerificationResult,
    /// When it ended.
    pub at: Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerificationResult {
    Passed,
    Failed,
    /// Two runs on the same tip gave different results.
    Flaky,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NoteUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// What the engine knows about the transcript of the attempt (from its end, or from the
/// stored `attempt_finished` event).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TranscriptSeen {
    pub path: Option<String>,
    /// The transcript held the marker.
    pub marker_found: bool,
}

/// Why a note could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("the note is not weft's evidence: {0}")]
    Invalid(String),
    #[error(
        "the note was written by a newer weft (evidence version {0}, this weft reads {NOTE_VERSION})"
    )]
    Newer(u32),
}

impl EvidenceNote {
    /// The evidence of `attempt` of `task` (in `plan`, run `run`) landed as a commit whose
    /// tree is `tree`.
    pub fn of_landing(
        tree: &str,
        plan: &Plan,
        task: &Task,
        attempt: &Attempt,
        transcript: &TranscriptSeen,
    ) -> EvidenceNote {
        let verdict = attempt.verdict.as_ref();
        EvidenceNote {
            version: NOTE_VERSION,
            tree: tree.to_owned(),
            plan: plan.id.clone(),
            run: attempt.run_id.clone(),
            task: NoteTask {
                id: task.id.clone(),
                order: task.order,
                title: task.title.clone(),
            },
            attempt: NoteAttempt {
                id: attempt.id.clone(),
                number: attempt.number,
            },
            runner: attempt.runner.clone(),
            model: task.model.clone(),
            effort: task.effort.clone(),
            mode: task.mode.clone(),
            marker: verdict.and_then(|v| marker_found(v, transcript.marker_found)),
            verdict: match verdict {
                Some(v) => NoteVerdict {
                    outcome: v.outcome,
                    reason: v.reason.clone(),
                    decided_at: v.decided_at,
                },
                None => NoteVerdict {
                    outcome: VerdictOutcome::Pass,
                    reason: String::new(),
                    decided_at: attempt.ended_at.unwrap_or(attempt.started_at),
                },
            },
            checks: verdict
                .map(|v| v.checks.iter().map(|c| note_check(c, attempt)).collect())
                .unwrap_or_default(),
            verification: None,
            usage: NoteUsage {
                input_tokens: attempt.input_tokens,
                output_tokens: attempt.output_tokens,
                cost_usd: attempt.cost_usd,
            },
            started_at: attempt.started_at,
            ended_at: attempt.ended_at,
            transcript: transcript.path.clone(),
        }
    }

    /// The same evidence for a commit a rebuild re-created with tree `tree`.
    pub fn carried(&self, tree: &str) -> EvidenceNote {
        EvidenceNote {
            tree: tree.to_owned(),
            ..self.clone()
        }
    }

    /// One line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("evidence always serializes")
    }

    /// Read a note's text.
    pub fn parse(text: &str) -> Result<EvidenceNote, NoteError> {
        let value: serde_json::Value =
            serde_json::from_str(text.trim()).map_err(|e| NoteError::Invalid(e.to_string()))?;
        if let Some(version) = value.get("version").and_then(serde_json::Value::as_u64)
            && version > u64::from(NOTE_VERSION)
        {
            return Err(NoteError::Newer(u32::try_from(version).unwrap_or(u32::MAX)));
        }
        serde_json::from_value(value).map_err(|e| NoteError::Invalid(e.to_string()))
    }

    /// The JSON Schema of a note (committed as `schemas/evidence.schema.json`).
    pub fn json_schema() -> String {
        let schema = schemars::schema_for!(EvidenceNote);
        let mut text =
            serde_json::to_string_pretty(&schema).expect("a JSON Schema always serializes");
        text.push('\n');
        text
    }
}

/// Where the verdict says the marker was seen, joined with what the transcript held.
fn marker_found(verdict: &Verdict, transcript_had_it: bool) -> Option<MarkerFound> {
    let marker = verdict
        .checks
        .iter()
        .find(|c| c.name == CHECK_MARKER && c.passed)?;
    let view = marker_view(&marker.detail);
    let (found_in, view) = match view {
        Some("transcript") => (MarkerSource::Transcript, None),
        Some(view) if transcript_had_it => (MarkerSource::Both, Some(view.to_owned())),
        Some(view) => (MarkerSource::Stream, Some(view.to_owned())),
        None if transcript_had_it => (MarkerSource::Transcript, None),
        None => (MarkerSource::Stream, None),
    };
    Some(MarkerFound { found_in, view })
}

fn note_check(check: &Check, attempt: &Attempt) -> NoteCheck {
    let exit_code = if check.name == CHECK_EXIT_CODE {
        attempt.exit_code
    } else if check.name.starts_with(CHECK_COMMAND_PREFIX) {
        check.exit_code
    } else {
        None
    };
    NoteCheck {
        name: check.name.clone(),
        passed: check.passed,
        skipped: check.skipped,
        exit_code,
        duration_ms: check.duration_ms,
        detail: check.detail.clone(),
    }
}

/// The message of a landing's merge commit: weft's subject, then its trailers.
pub fn landing_message(plan_id: &str, task: &Task, attempt_id: &str) -> String {
    // A title is one line; a subject must be too, or the trailers would move.
    let title: String = task
        .title
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!(
        "weft: land task {}: {title}\n\n{TRAILER_PLAN}: {plan_id}\n{TRAILER_TASK}: {}\n{TRAILER_ATTEMPT}: {attempt_id}\n{TRAILER_VERDICT}: pass\n",
        task.order,
        one_line(&task.id),
    )
}

fn one_line(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// The weft trailers of a commit message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trailers {
    pub plan: Option<String>,
    pub task: Option<String>,
    pub attempt: Option<String>,
    pub verdict: Option<String>,
}

impl Trailers {
    /// The trailers in the last paragraph of `message` (`Key: value` lines).
    pub fn parse(message: &str) -> Trailers {
        let mut trailers = Trailers::default();
        let last = message.trim_end().rsplit("\n\n").next().unwrap_or_default();
        for line in last.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = Some(value.trim().to_owned());
            match key.trim() {
                TRAILER_PLAN => trailers.plan = value,
                TRAILER_TASK => trailers.task = value,
                TRAILER_ATTEMPT => trailers.attempt = value,
                TRAILER_VERDICT => trailers.verdict = value,
                _ => {}
            }
        }
        trailers
    }

    /// Whether this names a landing: weft wrote all of plan, task and attempt.
    pub fn is_landing(&self) -> bool {
        self.plan.is_some() && self.task.is_some() && self.attempt.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AttemptStatus, PlanStatus};

    fn plan_and_task() -> (Plan, Task) {
        let mut task = Task::new("t-1", "Add \x1b[2Jthe\nparser");
        task.order = 3;
        task.model = Some("opus".into());
        let plan = Plan {
            id: "p".repeat(32),
            goal: "g".into(),
            status: PlanStatus::Approved,
            created_at: 1,
            updated_at: 1,
            runner: None,
            revision: 1,
            tasks: vec![task.clone()],
        };
        (plan, task)
    }

    fn attempt(checks: Vec<Check>) -> Attempt {
        Attempt {
            status: AttemptStatus::Passed,
            exit_code: Some(0),
            ended_at: Some(20),
            input_tokens: Some(10),
            cost_usd: Some(0.5),
            verdict: Some(Verdict {
                outcome: VerdictOutcome::Pass,
                reason: "Passed".into(),
                checks,
                decided_at: 19,
            }),
            ..Attempt::new(
                "a".repeat(32),
                "r".into(),
                "p".into(),
                "t-1".into(),
                2,
                "claude-code".into(),
                10,
            )
        }
    }

    fn check(name: &str, detail: &str) -> Check {
        Check {
            name: name.into(),
            passed: true,
            skipped: false,
            detail: detail.into(),
            exit_code: None,
            duration_ms: None,
        }
    }

    #[test]
    fn a_note_holds_the_attempts_checks_with_exit_codes_and_durations() {
        let (plan, task) = plan_and_task();
        let command = Check {
            exit_code: Some(0),
            duration_ms: Some(42),
            ..check("check:cargo test", "exited with code 0")
        };
        let attempt = attempt(vec![
            check(
                CHECK_MARKER,
                "the completion marker was seen in the agent's output",
            ),
            check(CHECK_EXIT_CODE, "not consulted"),
            command,
        ]);
        let note =
            EvidenceNote::of_landing("abc", &plan, &task, &attempt, &TranscriptSeen::default());
        assert_eq!(note.tree, "abc");
        assert_eq!(note.task.order, 3);
        assert_eq!(note.attempt.number, 2);
        assert_eq!(note.model.as_deref(), Some("opus"));
        assert_eq!(note.checks[1].exit_code, Some(0));
        assert_eq!(note.checks[2].exit_code, Some(0));
        assert_eq!(note.checks[2].duration_ms, Some(42));
        assert_eq!(
            note.marker,
            Some(MarkerFound {
                found_in: MarkerSource::Stream,
                view: Some("raw".into())
            })
        );
        assert_eq!(EvidenceNote::parse(&note.to_json()), Ok(note.clone()));
        let carried = note.carried("def");
        assert_eq!(carried.tree, "def");
        assert_eq!(
            EvidenceNote {
                tree: "abc".into(),
                ..carried
            },
            note
        );
    }

    #[test]
    fn the_marker_is_found_in_the_stream_the_transcript_or_both() {
        let (plan, task) = plan_and_task();
        let seen = |detail: &str, in_transcript: bool| {
            let attempt = attempt(vec![check(CHECK_MARKER, detail)]);
            let transcript = TranscriptSeen {
                path: Some("/t.jsonl".into()),
                marker_found: in_transcript,
            };
            EvidenceNote::of_landing("t", &plan, &task, &attempt, &transcript)
                .marker
                .map(|m| m.found_in)
        };
        let stream = "the completion marker was seen on the agent's rendered screen";
        let transcript = "the completion marker was seen in the agent's own transcript";
        assert_eq!(seen(stream, false), Some(MarkerSource::Stream));
        assert_eq!(seen(stream, true), Some(MarkerSource::Both));
        assert_eq!(seen(transcript, true), Some(MarkerSource::Transcript));
        let exec = attempt(vec![check(CHECK_EXIT_CODE, "exited 0")]);
        let note = EvidenceNote::of_landing("t", &plan, &task, &exec, &TranscriptSeen::default());
        assert_eq!(note.marker, None);
    }

    #[test]
    fn a_newer_or_foreign_note_is_refused() {
        assert_eq!(
            EvidenceNote::parse(r#"{"version": 9}"#),
            Err(NoteError::Newer(9))
        );
        assert!(matches!(
            EvidenceNote::parse("a note a person wrote"),
            Err(NoteError::Invalid(_))
        ));
    }

    #[test]
    fn the_landing_message_keeps_weft_subject_and_its_trailers_read_back() {
        let (_, task) = plan_and_task();
        let message = landing_message("plan1", &task, "att1");
        let subject = message.lines().next().unwrap();
        assert_eq!(subject, "weft: land task 3: Add  [2Jthe parser");
        let trailers = Trailers::parse(&message);
        assert_eq!(
            trailers,
            Trailers {
                plan: Some("plan1".into()),
                task: Some("t-1".into()),
                attempt: Some("att1".into()),
                verdict: Some("pass".into()),
            }
        );
        assert!(trailers.is_landing());
        assert!(!Trailers::parse("weft: land task 1: x").is_landing());
    }

    #[test]
    fn the_committed_schema_is_the_notes_schema() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../schemas/evidence.schema.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == EvidenceNote::json_schema(),
            "schemas/evidence.schema.json is out of date; regenerate it with\n  cargo run -q -- evidence --schema > schemas/evidence.schema.json"
        );
    }
}

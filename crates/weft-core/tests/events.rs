//! The event contract: every kind survives a round trip through its JSON, the tag names
//! are the ones stored, and masking reaches every text field.

use proptest::prelude::*;
use serde_json::json;
use weft_core::event::{
    ControlRequest, EVENT_SCHEMA_VERSION, Event, EventKind, FieldChange, RunTotals, TaskEdit,
    TranscriptFound, Usage,
};
use weft_core::{
    AttemptStatus, Check, Denial, Landing, PlanStatus, RunStatus, TaskKind, TaskStatus, Verdict,
    VerdictOutcome,
};

/// The number of [`EventKind`] variants; [`index`] must give each its own number below it.
const KINDS: usize = 58;

/// An exhaustive match (no wildcard): a new variant does not compile until it is numbered
/// here, and then [`every_kind_round_trips`] fails until [`one_of_each`] has an example.
fn index(kind: &EventKind) -> usize {
    match kind {
        EventKind::PlanCreated { .. } => 0,
        EventKind::PlanPlanned { .. } => 1,
        EventKind::PlanRevised { .. } => 2,
        EventKind::PlanStatusChanged { .. } => 3,
        EventKind::CurrentPlanSet => 4,
        EventKind::PlanDeleted => 5,
        EventKind::TaskAdded { .. } => 6,
        EventKind::TaskRemoved { .. } => 7,
        EventKind::TaskMoved { .. } => 8,
        EventKind::DependenciesSet { .. } => 9,
        EventKind::TaskEdited { .. } => 10,
        EventKind::TaskHeld => 11,
        EventKind::TaskReleased => 12,
        EventKind::RunStarted { .. } => 13,
        EventKind::RunContinued { .. } => 14,
        EventKind::RunIsolated { .. } => 15,
        EventKind::RunHalted { .. } => 16,
        EventKind::RunEnded { .. } => 17,
        EventKind::HandoffMerged => 18,
        EventKind::HandoffDiscarded { .. } => 19,
        EventKind::Notice { .. } => 20,
        EventKind::AttemptStarted { .. } => 21,
        EventKind::AttemptFailedToStart { .. } => 22,
        EventKind::AttemptInterrupted { .. } => 23,
        EventKind::LandingStarted { .. } => 24,
        EventKind::LandingFinished { .. } => 25,
        EventKind::AttemptFinished { .. } => 26,
        EventKind::TaskStarted { .. } => 27,
        EventKind::TaskFinished { .. } => 28,
        EventKind::TasksRequeued { .. } => 29,
        EventKind::TasksBlocked { .. } => 30,
        EventKind::TasksReleased { .. } => 31,
        EventKind::WaitingForPerson { .. } => 32,
        EventKind::TaskRetried { .. } => 33,
        EventKind::TaskRearmed { .. } => 34,
        EventKind::TaskMarkedComplete { .. } => 35,
        EventKind::TaskMarkedNotDone { .. } => 36,
        EventKind::TaskSkipped { .. } => 37,
        EventKind::TaskCancelled { .. } => 38,
        EventKind::TaskRepairRequested { .. } => 39,
        EventKind::ManualStepsTicked { .. } => 40,
        EventKind::ControlRequested { .. } => 41,
        EventKind::ControlHandled { .. } => 42,
        EventKind::PlannerLogged { .. } => 43,
        EventKind::ApprovalAsked { .. } => 44,
        EventKind::ApprovalAnswered { .. } => 45,
        EventKind::ApprovalSettled { .. } => 46,
        EventKind::VerificationStarted { .. } => 47,
        EventKind::VerificationPassed { .. } => 48,
        EventKind::VerificationFailed { .. } => 49,
        EventKind::VerificationFlaky { .. } => 50,
        EventKind::BisectStep { .. } => 51,
        EventKind::TaskQuarantined { .. } => 52,
        EventKind::BudgetReached { .. } => 53,
        EventKind::SpendUpdated { .. } => 54,
        EventKind::NotifyFailed { .. } => 55,
        EventKind::AttemptIdle { .. } => 56,
        EventKind::Unrecognized { .. } => 57,
    }
}

fn verdict() -> Verdict {
    Verdict {
        outcome: VerdictOutcome::Fail,
        reason: "Failed: `cargo test` exited 101.".into(),
        checks: vec![
            Check {
                name: "completion_marker".into(),
                passed: true,
                skipped: false,
                detail: "found in stdout".into(),
                exit_code: None,
                duration_ms: None,
            },
            Check {
                name: "check:cargo test".into(),
                passed: false,
                skipped: false,
                detail: "exit 101".into(),
                exit_code: None,
                duration_ms: None,
            },
        ],
        decided_at: 1_767_225_600_123,
    }
}

fn one_of_each() -> Vec<EventKind> {
    let changes = vec![
        FieldChange::Title("New title".into()),
        FieldChange::Description(None),
        FieldChange::Prompt("Do it".into()),
        FieldChange::Runner(Some("codex".into())),
        FieldChange::Model(Some("opus".into())),
        FieldChange::Effort(None),
        FieldChange::Mode(Some("ask".into())),
        FieldChange::Kind(TaskKind::Ops),
        FieldChange::Command(Some("make".into())),
        FieldChange::Steps(vec!["look".into()]),
        FieldChange::Checks(vec!["cargo test".into()]),
        FieldChange::Timeout(Some("30m".into())),
        FieldChange::IdleTimeout(None),
        FieldChange::BudgetUsd(Some(0.5)),
        FieldChange::BudgetTokens(Some(200_000)),
    ];
    vec![
        EventKind::PlanCreated {
            goal: "Add a limiter".into(),
            tasks: 3,
            source: "plan.toml".into(),
        },
        EventKind::PlanPlanned { tasks: 4 },
        EventKind::PlanRevised {
            edits: vec![
                TaskEdit {
                    task: "d".into(),
                    edit: EventKind::TaskAdded {
                        order: 4,
                        title: "Fourth".into(),
                    },
                },
                TaskEdit {
                    task: "a".into(),
                    edit: EventKind::TaskEdited {
                        changes: vec![FieldChange::Prompt("Do it better".into())],
                    },
                },
            ],
        },
        EventKind::PlanStatusChanged {
            status: PlanStatus::Running,
        },
        EventKind::CurrentPlanSet,
        EventKind::PlanDeleted,
        EventKind::TaskAdded {
            order: 2,
            title: "Second".into(),
        },
        EventKind::TaskRemoved {
            detached: vec!["c".into()],
        },
        EventKind::TaskMoved { from: 3, to: 1 },
        EventKind::DependenciesSet {
            dependencies: vec!["a".into(), "b".into()],
        },
        EventKind::TaskEdited {
            changes: changes.clone(),
        },
        EventKind::TaskHeld,
        EventKind::TaskReleased,
        EventKind::RunStarted { pid: 4242 },
        EventKind::RunContinued {
            pid: 4243,
            previous_pid: Some(4242),
        },
        EventKind::RunIsolated {
            base: "0123456789abcdef0123456789abcdef01234567".into(),
            integration_branch: "weft/r1/integration".into(),
        },
        EventKind::RunHalted { by: "a".into() },
        EventKind::RunEnded {
            status: RunStatus::Completed,
            totals: Some(RunTotals {
                completed: 2,
                skipped: 1,
                failed: 0,
                blocked: 0,
                waiting: 0,
                input_tokens: 1000,
                output_tokens: 200,
                cost_usd: 0.25,
            }),
        },
        EventKind::HandoffMerged,
        EventKind::HandoffDiscarded {
            kept: "refs/weft/discarded/r1".into(),
        },
        EventKind::Notice {
            text: "stashed your changes".into(),
        },
        EventKind::BudgetReached {
            limit: "budget_usd = $1.00".into(),
            spent: "$1.02, 40000 tokens".into(),
            cost_usd: Some(1.02),
            tokens: 40_000,
        },
        EventKind::AttemptIdle { silent_secs: 720 },
        EventKind::SpendUpdated {
            input_tokens: 1200,
            output_tokens: 40,
            cost_usd: None,
            unpriced: Some("mystery-9".into()),
            reported: false,
        },
        EventKind::NotifyFailed {
            command: "notify-me --token ****".into(),
            about: 41,
            failure: "exited with status 3".into(),
            exit_code: Some(3),
            timed_out: false,
            stderr: "no route to host\n".into(),
        },
        EventKind::AttemptStarted {
            number: 1,
            runner: "claude-code".into(),
            pid: Some(99),
            links: vec!["node_modules".into()],
        },
        EventKind::AttemptFailedToStart {
            reason: "runner not found".into(),
        },
        EventKind::AttemptInterrupted {
            killed_leftover: true,
        },
        EventKind::LandingStarted {
            branch: "weft/r1/1-a".into(),
        },
        EventKind::LandingFinished {
            landing: Landing::Conflicted {
                files: vec!["src/lib.rs".into()],
                detail: "both changed it".into(),
            },
            after_restart: true,
        },
        EventKind::AttemptFinished {
            status: AttemptStatus::Passed,
            exit_code: Some(0),
            signal: None,
            verdict: verdict(),
            usage: Usage {
                input_tokens: Some(1000),
                output_tokens: Some(200),
                cost_usd: Some(0.25),
            },
            denials: vec![Denial {
                tool: "Bash".into(),
                detail: "rm -rf".into(),
            }],
            landing: Some(Landing::Landed {
                merge: "89abcdef0123456789abcdef0123456789abcdef".into(),
            }),
            transcript: Some(TranscriptFound {
                path: "/home/u/.claude/projects/x.jsonl".into(),
                weak: false,
                marker_found: true,
                how: vec!["expected file for session id X".into()],
            }),
            duration_ms: 12_345,
        },
        EventKind::TaskStarted {
            order: 1,
            title: "First".into(),
            runner: "codex".into(),
            number: 2,
        },
        EventKind::TaskFinished {
            order: 1,
            title: "First".into(),
            status: TaskStatus::Conflicted,
            reason: "Conflicted: …".into(),
            after_restart: false,
        },
        EventKind::TasksRequeued {
            tasks: vec!["a".into()],
        },
        EventKind::TasksBlocked {
            by: "a".into(),
            tasks: vec!["b".into(), "c".into()],
        },
        EventKind::TasksReleased {
            by: "a".into(),
            tasks: vec!["b".into()],
        },
        EventKind::WaitingForPerson {
            order: 3,
            title: "Check the deploy".into(),
        },
        EventKind::TaskRetried {
            was: TaskStatus::Failed,
        },
        EventKind::TaskRearmed {
            was: TaskStatus::Failed,
            changes,
        },
        EventKind::TaskMarkedComplete {
            was: TaskStatus::Blocked,
        },
        EventKind::TaskMarkedNotDone {
            was: TaskStatus::Skipped,
        },
        EventKind::TaskSkipped {
            was: TaskStatus::Pending,
        },
        EventKind::TaskCancelled {
            blocked: vec!["b".into()],
        },
        EventKind::TaskRepairRequested {
            branch: "weft/r1/1-a".into(),
        },
        EventKind::ManualStepsTicked {
            steps: vec![0, 2],
            completed: false,
        },
        EventKind::ControlRequested {
            request: ControlRequest::Cancel { task: "a".into() },
            request_seq: 7,
        },
        EventKind::ControlHandled {
            request: ControlRequest::Unrecognized {
                original_kind: "pause".into(),
                task: None,
            },
            request_seq: 8,
        },
        EventKind::PlannerLogged {
            entries: 3,
            last_seq: Some(12),
        },
        EventKind::ApprovalAsked {
            ask: 5,
            scope: "path:/etc/*".into(),
            subject: "read /etc/hosts".into(),
        },
        EventKind::ApprovalAnswered {
            ask: 5,
            allowed: true,
            scope: None,
        },
        EventKind::ApprovalSettled {
            ask: 5,
            decision: "allowed (asked)".into(),
        },
        EventKind::VerificationStarted {
            tip: "3f2a9c1d".into(),
            commands: vec!["cargo test".into()],
            purpose: "landed".into(),
        },
        EventKind::VerificationPassed {
            tip: "3f2a9c1d".into(),
            purpose: "landed".into(),
            duration_ms: 1200,
        },
        EventKind::VerificationFailed {
            tip: "3f2a9c1d".into(),
            purpose: "repeat".into(),
            command: "cargo test".into(),
            exit_code: Some(101),
            output_tail: "error[E0425]: cannot find function `old`".into(),
            duration_ms: 900,
        },
        EventKind::VerificationFlaky {
            tip: "3f2a9c1d".into(),
            command: "cargo test".into(),
        },
        EventKind::BisectStep {
            tip: "1a2b3c4d".into(),
            landing: 4,
            of: 8,
            task: Some("caller".into()),
            passed: true,
            runs: 1,
        },
        EventKind::TaskQuarantined {
            order: 2,
            title: "Call old".into(),
            broke: "3f2a9c1d".into(),
            rebuilt: "5e6f7a8b".into(),
            command: "cargo test".into(),
            output_tail: "error".into(),
            only_in_combination: Some(true),
            bisect_runs: 1,
            requeued: vec!["later".into()],
            conflicted: Vec::new(),
        },
        EventKind::Unrecognized {
            original_kind: "task_started".into(),
            payload: json!({ "task": "a", "attempt": "0f" }),
        },
    ]
}

fn envelope(kind: EventKind) -> Event {
    let mut event = Event::new(kind)
        .plan("0123456789abcdef0123456789abcdef")
        .run("a1b2c3d4")
        .task("a")
        .attempt("fedcba9876543210fedcba9876543210");
    event.seq = 42;
    event.at = 1_767_225_600_000;
    event
}

#[test]
fn every_kind_round_trips_through_its_json_and_its_stored_row() {
    let examples = one_of_each();
    let mut covered = [false; KINDS];
    for kind in examples {
        let slot = index(&kind);
        assert!(!covered[slot], "two examples of {kind:?}");
        covered[slot] = true;
        let event = envelope(kind);
        let line = serde_json::to_string(&event).unwrap();
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, event, "{line}");
        // The stored row: the kind column and the payload text.
        let stored = Event::from_stored(
            event.seq,
            event.plan.clone(),
            &event.kind_name(),
            &event.to_stored(),
            event.at,
        );
        assert_eq!(stored, event, "{line}");
    }
    let missing: Vec<usize> = (0..KINDS).filter(|&i| !covered[i]).collect();
    assert!(
        missing.is_empty(),
        "event kinds {missing:?} (see `index`) have no round-trip example in `one_of_each`"
    );
}

#[test]
fn the_kind_tag_is_the_snake_case_variant_name() {
    let kinds: Vec<String> = one_of_each().iter().map(EventKind::name).collect();
    assert!(kinds.contains(&"task_edited".to_owned()));
    assert!(kinds.contains(&"attempt_finished".to_owned()));
    let line = serde_json::to_value(envelope(EventKind::TaskHeld)).unwrap();
    assert_eq!(line["event"], json!({ "kind": "task_held" }));
    assert_eq!(line["version"], json!(EVENT_SCHEMA_VERSION));
    let edited = serde_json::to_value(EventKind::TaskEdited {
        changes: vec![FieldChange::Model(None), FieldChange::Title("T".into())],
    })
    .unwrap();
    assert_eq!(
        edited,
        json!({ "kind": "task_edited", "changes": [
            { "field": "model", "value": null },
            { "field": "title", "value": "T" },
        ] })
    );
    // An unrecognized row keeps the kind it was stored with.
    let old = EventKind::Unrecognized {
        original_kind: "plan_status".into(),
        payload: json!({}),
    };
    assert_eq!(old.name(), "plan_status");
}

#[test]
fn a_row_of_another_kind_than_its_payload_is_not_trusted() {
    let event = envelope(EventKind::TaskHeld);
    let read = Event::from_stored(1, None, "task_released", &event.to_stored(), 5);
    assert!(
        matches!(&read.event, EventKind::Unrecognized { original_kind, .. } if original_kind == "task_released"),
        "{read:?}"
    );
    assert_eq!(read.task.as_deref(), Some("a"));
}

#[test]
fn control_requests_round_trip_through_their_stored_columns() {
    for request in [
        ControlRequest::Stop,
        ControlRequest::Cancel { task: "a".into() },
        ControlRequest::ForceStart { task: "b".into() },
        ControlRequest::Repair { task: "c".into() },
        ControlRequest::Unrecognized {
            original_kind: "pause".into(),
            task: Some("d".into()),
        },
    ] {
        let back = ControlRequest::from_stored(request.kind(), request.task().map(str::to_owned));
        assert_eq!(back, request);
        let json = serde_json::to_string(&request).unwrap();
        assert_eq!(
            serde_json::from_str::<ControlRequest>(&json).unwrap(),
            request
        );
    }
    // A task request without its task is not guessed at.
    assert_eq!(
        ControlRequest::from_stored("cancel", None),
        ControlRequest::Unrecognized {
            original_kind: "cancel".into(),
            task: None
        }
    );
}

fn text() -> impl Strategy<Value = String> {
    "[ -~]{0,40}"
}

proptest! {
    /// Masking reaches every text field of every kind, and leaves everything else alone.
    #[test]
    fn masking_leaves_no_secret_in_any_event(
        secret in "[A-Za-z0-9]{6,20}",
        before in text(),
        after in text(),
        pick in 0usize..KINDS,
    ) {
        let planted = format!("{before}{secret}{after}");
        let secrets = vec![secret.clone()];
        let kinds = one_of_each();
        let kind = kinds.into_iter().find(|k| index(k) == pick).unwrap();
        // Plant the secret in every string of the event (and in its envelope).
        let mut value = serde_json::to_value(envelope(kind)).unwrap();
        fn plant(value: &mut serde_json::Value, text: &str) {
            match value {
                serde_json::Value::String(s) => *s = text.to_owned(),
                serde_json::Value::Array(items) => items.iter_mut().for_each(|v| plant(v, text)),
                serde_json::Value::Object(map) => {
                    // A task kind is an enum, not text.
                    let typed_value = map.get("field") == Some(&json!("kind"));
                    for (key, v) in map.iter_mut() {
                        if typed_value && key == "value" {
                            continue;
                        }
                        // Tags name the shape; they are not data.
                        if !["kind", "field", "request", "status", "outcome", "was"]
                            .contains(&key.as_str())
                        {
                            plant(v, text);
                        }
                    }
                }
                _ => {}
            }
        }
        plant(&mut value, &planted);
        let event = serde_json::from_value::<Event>(value);
        prop_assert!(event.is_ok(), "kind {} refused planted text: {:?}", pick, event);
        let event = event.unwrap();
        let masked = event.clone().masked(&secrets);
        let line = serde_json::to_string(&masked).unwrap();
        prop_assert!(!line.contains(&secret), "{}", line);
        prop_assert_eq!(masked.seq, event.seq);
        if !matches!(event.event, EventKind::Unrecognized { .. }) {
            prop_assert_eq!(masked.event.name(), event.event.name());
        }
    }
}

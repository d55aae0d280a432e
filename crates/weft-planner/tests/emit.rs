//! Plan emission end to end on strings: what a model writes, what weft extracts, which
//! problems it reports and how the corrective turns quote them.

use proptest::prelude::*;
use serde_json::{Value, json};
use weft_core::model::{Plan, PlanStatus, Task, TaskKind, TaskStatus};
use weft_core::workflow::{DependencyRef, TaskSpec};
use weft_planner::emit::{
    Extraction, MAX_REPAIRS, PRD_END, PRD_START, PlanProblems, ReplyKind, TaskOp, TaskRef,
    apply_task_ops, classify_reply, corrective_for_broken, corrective_for_ops,
    corrective_for_problems, extract, extract_prd, parse_task_ops, plan_from_value, prd_unclosed,
    strip_prd, terse_reemit,
};

const RUNNERS: [&str; 2] = ["claude-code", "codex"];

fn known(runner: &str) -> bool {
    RUNNERS.contains(&runner)
}

fn found(text: &str, key: &str) -> Value {
    match extract(text, key) {
        Extraction::Found(value) => value,
        other => panic!("expected Found in {text:?}, got {other:?}"),
    }
}

fn problems(value: Value) -> Vec<String> {
    plan_from_value(&value, "Add rate limiting", None, &known)
        .unwrap_err()
        .problems
}

// ---------------------------------------------------------------- extraction

#[test]
fn fenced_json_with_trailing_commas() {
    let text = "Here is the plan:\n```json\n{\n  \"tasks\": [\n    {\"title\": \"A\", \"prompt\": \"do a\",},\n  ],\n}\n```\nLet me know.";
    assert_eq!(
        found(text, "tasks"),
        json!({"tasks": [{"title": "A", "prompt": "do a"}]})
    );
}

#[test]
fn bare_json_after_prose() {
    let text = "I looked at the repository. It's small, so \"one\" task: {\"tasks\": [{\"title\": \"A\", \"prompt\": \"p\"}]}";
    assert_eq!(
        found(text, "tasks"),
        json!({"tasks": [{"title": "A", "prompt": "p"}]})
    );
}

#[test]
fn the_last_emission_wins_over_a_schema_echo() {
    let text = r#"The format is {"tasks": [{"id": "string", "title": "string"}]}.

```json
{"tasks": [{"id": "real", "title": "Real", "prompt": "p"}]}
```"#;
    assert_eq!(
        found(text, "tasks"),
        json!({"tasks": [{"id": "real", "title": "Real", "prompt": "p"}]})
    );
}

#[test]
fn a_later_mention_that_does_not_parse_does_not_hide_the_plan() {
    let text = r#"{"tasks": [{"title": "A", "prompt": "p"}]}
In that object, {"tasks": holds the list} as usual."#;
    assert_eq!(
        found(text, "tasks"),
        json!({"tasks": [{"title": "A", "prompt": "p"}]})
    );
}

#[test]
fn braces_and_quotes_inside_strings() {
    let text =
        r#"Plan: {"tasks": [{"title": "Handle \"}\" and {", "prompt": "match { with } \\"}]} done"#;
    assert_eq!(
        found(text, "tasks"),
        json!({"tasks": [{"title": "Handle \"}\" and {", "prompt": "match { with } \\"}]})
    );
}

#[test]
fn think_blocks_are_ignored() {
    let text = "<think>Draft: {\"tasks\": [{\"title\": \"draft\"}]} hmm, \"better\" idea</think>\n{\"tasks\": [{\"title\": \"final\", \"prompt\": \"p\"}]}";
    assert_eq!(
        found(text, "tasks"),
        json!({"tasks": [{"title": "final", "prompt": "p"}]})
    );
    // A draft inside an unfinished think block is not a plan.
    assert_eq!(
        extract("<think>{\"tasks\": []} and then", "tasks"),
        Extraction::Absent
    );
}

#[test]
fn broken_json_reports_serde_line_and_column() {
    let object = "{\n  \"tasks\": [\n    {\"title\": 'single quotes'}\n  ]\n}";
    let text = format!("Here:\n```json\n{object}\n```");
    match extract(&text, "tasks") {
        Extraction::Broken { candidate, error } => {
            assert_eq!(candidate, object);
            assert_eq!(error, "expected value at line 3 column 15");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        classify_reply(&text),
        ReplyKind::Broken {
            key: "tasks",
            error: "expected value at line 3 column 15".into()
        }
    );
}

#[test]
fn unbalanced_json_is_truncated() {
    let text = "```json\n{\"tasks\": [{\"title\": \"A\", \"prompt\": \"p\"}, {\"title\": \"B\", \"prompt\": \"write the";
    assert_eq!(extract(text, "tasks"), Extraction::Truncated);
    assert_eq!(classify_reply(text), ReplyKind::Truncated { key: "tasks" });
    // An earlier complete echo does not stand in for the cut-off plan after it.
    let echoed = format!("Format: {{\"tasks\": [{{\"title\": \"t\"}}]}}\n{text}");
    assert_eq!(extract(&echoed, "tasks"), Extraction::Truncated);
}

#[test]
fn prose_that_mentions_tasks_is_prose() {
    for text in [
        "I would split this into three tasks. Should the \"tasks\" run in parallel?",
        "The key \"tasks\": is where the list goes, once you confirm.",
        "Once you agree I will send {\"tasks\": [...]} with every step.",
        "Use a {set} of tasks",
    ] {
        assert_eq!(extract(text, "tasks"), Extraction::Absent, "{text}");
        assert_eq!(classify_reply(text), ReplyKind::Prose, "{text}");
    }
}

#[test]
fn task_ops_are_classified_before_plans() {
    let text = r#"{"taskOps": [{"op": "add", "task": {"title": "T", "prompt": "p", "dependencies": []}}]}"#;
    assert!(matches!(classify_reply(text), ReplyKind::TaskOps(_)));
    let plan = r#"{"tasks": [{"title": "T", "prompt": "p"}]}"#;
    assert!(matches!(classify_reply(plan), ReplyKind::Plan(_)));
    let broken_ops = r#"{"taskOps": [{"op": "remove" "task": 1}]}"#;
    assert!(matches!(
        classify_reply(broken_ops),
        ReplyKind::Broken { key: "taskOps", .. }
    ));
}

#[test]
fn raw_newlines_in_strings_are_accepted() {
    let text = "{\"tasks\": [{\"title\": \"A\", \"prompt\": \"line one\nline two\tend\"}]}";
    assert_eq!(
        found(text, "tasks")["tasks"][0]["prompt"],
        "line one\nline two\tend"
    );
}

// ---------------------------------------------------------------- plans

#[test]
fn a_valid_plan_resolves_ids_and_order_references() {
    let value = json!({
        "goal": "something the model made up",
        "tasks": [
            {"id": "limiter", "title": "Add a limiter", "prompt": "write it", "runner": "codex"},
            {"title": "Wire it in", "prompt": "wire", "dependencies": ["limiter"], "checks": ["cargo test"]},
            {"title": "Run the tests", "kind": "ops", "command": "cargo test", "dependencies": [1, "#2"]},
            {"title": "Check the dashboard", "kind": "manual", "steps": ["open it"], "dependencies": [3]}
        ]
    });
    let plan = plan_from_value(&value, "Add rate limiting", Some("claude-code"), &known).unwrap();
    assert_eq!(plan.goal, "Add rate limiting");
    assert_eq!(plan.runner.as_deref(), Some("claude-code"));
    let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "limiter",
            "wire-it-in",
            "run-the-tests",
            "check-the-dashboard"
        ]
    );
    assert_eq!(plan.tasks[2].dependencies, ["limiter", "wire-it-in"]);
    assert_eq!(plan.tasks[3].kind, TaskKind::Manual);
    assert!(plan.warnings.is_empty());
}

#[test]
fn a_cycle_is_a_later_dependency() {
    let value = json!({"tasks": [
        {"id": "a", "title": "A", "prompt": "p", "dependencies": ["b"]},
        {"id": "b", "title": "B", "prompt": "p", "dependencies": ["a"]}
    ]});
    assert_eq!(
        problems(value),
        [
            "task #1 \"a\" depends on \"b\" (#2), which comes later in the order; a task may only depend on earlier tasks"
        ]
    );
}

#[test]
fn self_later_and_unknown_dependencies_are_all_listed() {
    let value = json!({"tasks": [
        {"id": "a", "title": "A", "prompt": "p", "dependencies": [3]},
        {"id": "b", "title": "B", "prompt": "p", "dependencies": ["b", "ghost"]},
        {"id": "c", "title": "C", "prompt": "p"}
    ]});
    assert_eq!(
        problems(value),
        [
            "task #1 \"a\" depends on \"c\" (#3), which comes later in the order; a task may only depend on earlier tasks",
            "task #2 \"b\" depends on itself",
            "task #2 \"b\" depends on \"ghost\", which is not a task in this plan",
        ]
    );
}

#[test]
fn unknown_runners_are_problems_for_a_planner() {
    let value = json!({"tasks": [
        {"id": "a", "title": "A", "prompt": "p", "runner": "gpt-coder"},
        {"title": "Deploy", "kind": "ops", "command": "make deploy", "runner": "ignored-for-ops"}
    ]});
    assert_eq!(
        problems(value),
        [
            "task #1 \"a\" uses the runner \"gpt-coder\", which is not available; use one of the runners you were given, or omit `runner` for the default"
        ]
    );
}

#[test]
fn an_unknown_default_runner_is_only_a_warning() {
    // The default is the caller's choice, not the model's: nothing to repair.
    let value = json!({"tasks": [{"title": "A", "prompt": "p"}]});
    let plan = plan_from_value(&value, "g", Some("mystery"), &known).unwrap();
    assert_eq!(plan.warnings.len(), 1);
    assert!(plan.warnings[0].to_string().contains("\"mystery\""));
}

#[test]
fn duplicate_ids_and_kind_rules() {
    let value = json!({"tasks": [
        {"id": "a", "title": "A", "prompt": "p"},
        {"id": "a", "title": "A again", "prompt": "p"},
        {"id": "empty", "title": "Empty", "prompt": "  "},
        {"id": "deploy", "title": "Deploy", "kind": "ops"}
    ]});
    assert_eq!(
        problems(value),
        [
            "tasks #1 and #2 share the id \"a\"; ids must be unique",
            "task #3 \"empty\" is an AI task with an empty prompt",
            "task #4 \"deploy\" is an ops task with no command",
        ]
    );
}

#[test]
fn unknown_fields_name_the_task_and_plan_rules_are_still_checked() {
    let value = json!({"tasks": [
        {"id": "a", "title": "A", "prompt": "p"},
        {"id": "b", "title": "B", "prompt": "p", "assignee": "bob", "dependencies": ["c"]},
        {"id": "c", "title": "C", "prompt": "p"}
    ]});
    let found = problems(value);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("task #2: unknown field `assignee`, expected one of `id`, `title`"),
        "{}",
        found[0]
    );
    assert_eq!(
        found[1],
        "task #2 \"b\" depends on \"c\" (#3), which comes later in the order; a task may only depend on earlier tasks"
    );
}

#[test]
fn unreadable_tasks_are_all_reported() {
    let value = json!({"tasks": [
        {"title": "A", "kind": "robot", "prompt": "p"},
        "just a string",
        {"prompt": "no title"},
        {"title": "D", "prompt": "p", "dependencies": [1.5]}
    ]});
    let found = problems(value);
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(
        found[0].starts_with("task #1: unknown variant `robot`"),
        "{found:?}"
    );
    assert!(
        found[1].starts_with("task #2: invalid type: string"),
        "{found:?}"
    );
    assert_eq!(found[2], "task #3: missing field `title`");
    assert_eq!(
        found[3],
        "task #4: the dependency 1.5 is neither a task id nor an order number"
    );
}

#[test]
fn shape_problems() {
    assert_eq!(problems(json!({"tasks": []})), ["the plan has no tasks"]);
    assert_eq!(
        problems(json!({"tasks": "all of them"})),
        ["`tasks` must be an array of task objects, not a string"]
    );
    assert_eq!(
        problems(json!({"plan": [], "tasks": [{"title": "A", "prompt": "p"}]})),
        ["unknown top-level field `plan`; the plan object holds only `tasks`"]
    );
    assert_eq!(
        problems(json!([1])),
        ["the plan must be one JSON object of the form {\"tasks\": [...]}"]
    );
}

#[test]
fn long_reports_are_bounded_and_counted() {
    let ghosts: Vec<Value> = (0..120)
        .map(|i| json!({"id": format!("t{i}"), "title": "T", "prompt": "p", "dependencies": ["ghost"]}))
        .collect();
    let found = problems(json!({ "tasks": ghosts }));
    assert_eq!(found.len(), 51);
    assert_eq!(found[50], "and 70 more problems");

    let extra: Vec<Value> = (0..60)
        .map(|i| json!({"id": format!("t{i}"), "title": "T", "prompt": "p", "owner": "me"}))
        .collect();
    let found = problems(json!({ "tasks": extra }));
    assert_eq!(found.len(), 51);
    assert_eq!(found[50], "and 10 more problems");
}

#[test]
fn correctives_quote_every_problem() {
    let problems = PlanProblems::new(vec!["first problem".into(), "second problem".into()]);
    assert_eq!(problems.to_string(), "1. first problem\n2. second problem");
    let text = corrective_for_problems(&problems);
    assert!(text.starts_with(
        "Your plan could not be committed. Fix exactly these problems and re-send the complete plan as one JSON object `{\"tasks\": [...]}` with no other text:\n"
    ));
    assert!(text.ends_with("\n1. first problem\n2. second problem"));

    let broken = corrective_for_broken("expected value at line 3 column 15");
    assert!(broken.contains("expected value at line 3 column 15"));
    assert!(broken.contains("no code fences, no comments"));
    assert!(terse_reemit().contains("brief"));
    assert_eq!(MAX_REPAIRS, 2);
}

#[test]
fn the_repair_loop_round_trip() {
    // What the loop does: extract, validate, send the corrective, accept the fix.
    let first = "```json\n{\"tasks\": [{\"id\": \"a\", \"title\": \"A\", \"prompt\": \"p\", \"dependencies\": [\"b\"]}, {\"id\": \"b\", \"title\": \"B\", \"prompt\": \"p\"}]}\n```";
    let ReplyKind::Plan(value) = classify_reply(first) else {
        panic!()
    };
    let problems = plan_from_value(&value, "g", None, &known).unwrap_err();
    let corrective = corrective_for_problems(&problems);
    assert!(corrective.contains("1. task #1 \"a\" depends on \"b\" (#2)"));
    let second = "{\"tasks\": [{\"id\": \"b\", \"title\": \"B\", \"prompt\": \"p\"}, {\"id\": \"a\", \"title\": \"A\", \"prompt\": \"p\", \"dependencies\": [\"b\"]}]}";
    let ReplyKind::Plan(value) = classify_reply(second) else {
        panic!()
    };
    assert!(plan_from_value(&value, "g", None, &known).is_ok());
}

// ---------------------------------------------------------------- task ops

fn task(id: &str, title: &str, deps: &[&str]) -> Task {
    let mut task = Task::new(id, title);
    task.prompt = format!("do {id}");
    task.dependencies = deps.iter().map(|d| (*d).to_owned()).collect();
    task
}

/// `schema` → `server` (depends on schema) → `client` (depends on server).
fn base_plan() -> Plan {
    let mut plan = Plan {
        id: "0123456789abcdef0123456789abcdef".into(),
        goal: "Build the API".into(),
        status: PlanStatus::Approved,
        created_at: 0,
        updated_at: 0,
        runner: Some("claude-code".into()),
        revision: 3,
        tasks: vec![
            task("schema", "Write the schema", &[]),
            task("server", "Build the server", &["schema"]),
            task("client", "Build the client", &["server"]),
        ],
    };
    plan.renumber();
    plan
}

fn ops(value: Value) -> Vec<TaskOp> {
    parse_task_ops(&json!({ "taskOps": value })).unwrap()
}

fn apply(plan: &Plan, value: Value) -> Result<(Plan, Vec<String>), Vec<String>> {
    apply_task_ops(plan, &ops(value), &known)
        .map(|(plan, reports)| {
            let lines = reports.into_iter().flat_map(|r| r.lines).collect();
            (plan, lines)
        })
        .map_err(|p| p.problems)
}

fn ids(plan: &Plan) -> Vec<&str> {
    plan.tasks.iter().map(|t| t.id.as_str()).collect()
}

#[test]
fn add_after_a_task_and_at_the_end() {
    let plan = base_plan();
    let (next, lines) = apply(
        &plan,
        json!([
            {"op": "add", "task": {"id": "docs", "title": "Document the schema", "prompt": "p", "dependencies": [1]}, "after": "schema"},
            {"op": "add", "task": {"title": "Release", "kind": "ops", "command": "make release", "dependencies": ["client", "docs"]}},
            {"op": "add", "task": {"title": "Set up CI", "prompt": "p"}, "after": 0}
        ]),
    )
    .unwrap();
    assert_eq!(
        ids(&next),
        ["set-up-ci", "schema", "docs", "server", "client", "release"]
    );
    assert_eq!(next.tasks[2].dependencies, ["schema"]);
    assert_eq!(next.tasks[5].dependencies, ["client", "docs"]);
    assert_eq!(next.tasks[5].order, 6);
    assert_eq!(
        lines,
        [
            "added task #2 \"docs\": Document the schema",
            "added task #5 \"release\": Release",
            "added task #1 \"set-up-ci\": Set up CI",
        ]
    );
}

#[test]
fn remove_detaches_dependents_and_reports_it() {
    let plan = base_plan();
    let (next, lines) = apply(&plan, json!([{"op": "remove", "task": "server"}])).unwrap();
    assert_eq!(ids(&next), ["schema", "client"]);
    assert!(next.tasks[1].dependencies.is_empty());
    assert_eq!(
        lines,
        [
            "removed task \"server\" (was #2): Build the server",
            "detached it from task #2 \"client\", which depended on it",
        ]
    );
}

#[test]
fn update_sets_and_clears_fields() {
    let mut plan = base_plan();
    plan.tasks[1].model = Some("opus".into());
    let (next, lines) = apply(
        &plan,
        json!([{"op": "update", "task": "#2", "changes": {
            "prompt": "build it with axum", "runner": "codex", "model": null, "checks": ["cargo test"]
        }}]),
    )
    .unwrap();
    let server = &next.tasks[1];
    assert_eq!(server.prompt, "build it with axum");
    assert_eq!(server.runner.as_deref(), Some("codex"));
    assert_eq!(server.model, None);
    assert_eq!(server.checks, ["cargo test"]);
    assert_eq!(
        lines,
        ["updated task #2 \"server\": runner, model, prompt, checks"]
    );
}

#[test]
fn update_sets_and_clears_a_tasks_limits_and_refuses_a_bad_one_naming_it() {
    let mut plan = base_plan();
    plan.tasks[1].limits.budget_tokens = Some(5000);
    let (next, lines) = apply(
        &plan,
        json!([{"op": "update", "task": "#2", "changes": {
            "timeout": "30m", "idle_timeout": "5m", "budget_usd": 0.5, "budget_tokens": null
        }}]),
    )
    .unwrap();
    let limits = &next.tasks[1].limits;
    assert_eq!(limits.timeout, Some(std::time::Duration::from_secs(1800)));
    assert_eq!(
        limits.idle_timeout,
        Some(std::time::Duration::from_secs(300))
    );
    assert_eq!(limits.budget_usd, Some(0.5));
    assert_eq!(limits.budget_tokens, None, "null clears it");
    assert_eq!(lines.len(), 1, "{lines:?}");
    for (changes, named) in [
        (json!({"budget_usd": -1}), "budget_usd"),
        (json!({"timeout": "soon"}), "timeout"),
        (json!({"budget_tokens": [1]}), "budget_tokens"),
    ] {
        let problems = parse_task_ops(
            &json!({"taskOps": [{"op": "update", "task": "#2", "changes": changes}]}),
        )
        .unwrap_err()
        .problems;
        assert!(
            problems.len() == 1 && problems[0].contains(named),
            "{named}: {problems:?}"
        );
    }
}

#[test]
fn set_dependencies_and_every_kind_of_reference() {
    let plan = base_plan();
    let (next, _) = apply(
        &plan,
        json!([
            {"op": "set_dependencies", "task": "Build the client", "dependencies": [1, "#2"]},
            {"op": "set_dependencies", "task": 2, "dependencies": []},
            {"op": "update", "task": "3", "changes": {"title": "Build the web client"}}
        ]),
    )
    .unwrap();
    assert_eq!(next.tasks[2].dependencies, ["schema", "server"]);
    assert!(next.tasks[1].dependencies.is_empty());
    assert_eq!(next.tasks[2].title, "Build the web client");
}

#[test]
fn references_resolve_against_the_plan_before_the_batch() {
    let plan = base_plan();
    // After the removal `client` is #2, but "#3" still means the task that was #3.
    let (next, _) = apply(
        &plan,
        json!([
            {"op": "remove", "task": "#1"},
            {"op": "update", "task": "#3", "changes": {"prompt": "new"}},
            {"op": "update", "task": "Build the server", "changes": {"prompt": "newer"}}
        ]),
    )
    .unwrap();
    assert_eq!(ids(&next), ["server", "client"]);
    assert_eq!(next.tasks[1].prompt, "new");
    assert_eq!(next.tasks[0].prompt, "newer");
}

#[test]
fn tasks_added_in_the_batch_are_named_by_id_or_title() {
    let plan = base_plan();
    let (next, _) = apply(
        &plan,
        json!([
            {"op": "add", "task": {"id": "auth", "title": "Add auth", "prompt": "p"}, "after": 1},
            {"op": "set_dependencies", "task": "client", "dependencies": ["server", "auth"]},
            {"op": "update", "task": "Add auth", "changes": {"description": "tokens"}}
        ]),
    )
    .unwrap();
    assert_eq!(ids(&next), ["schema", "auth", "server", "client"]);
    assert_eq!(next.tasks[3].dependencies, ["server", "auth"]);
    assert_eq!(next.tasks[1].description.as_deref(), Some("tokens"));
}

#[test]
fn a_refused_op_refuses_the_whole_batch() {
    let plan = base_plan();
    let before = plan.clone();
    let problems = apply(
        &plan,
        json!([
            {"op": "update", "task": "schema", "changes": {"prompt": "fine"}},
            {"op": "set_dependencies", "task": "schema", "dependencies": ["client"]}
        ]),
    )
    .unwrap_err();
    assert_eq!(
        problems,
        [
            "op #2 (set_dependencies): task #1 \"schema\" depends on \"client\" (#3), which comes later in the order; a task may only depend on earlier tasks"
        ]
    );
    assert_eq!(plan, before);
}

#[test]
fn references_to_removed_or_missing_tasks() {
    let plan = base_plan();
    assert_eq!(
        apply(
            &plan,
            json!([{"op": "remove", "task": "client"}, {"op": "update", "task": 3, "changes": {"prompt": "x"}}])
        )
        .unwrap_err(),
        ["op #2 (update): task \"client\" was removed by op #1"]
    );
    assert_eq!(
        apply(&plan, json!([{"op": "remove", "task": "nope"}])).unwrap_err(),
        [
            "op #1 (remove): the plan has no task \"nope\"; name a task by its id, #order (as numbered before this batch) or exact title; tasks: #1 \"schema\", #2 \"server\", #3 \"client\""
        ]
    );
    assert_eq!(
        apply(&plan, json!([{"op": "remove", "task": 9}])).unwrap_err()[0],
        "op #1 (remove): the plan has no task #9; name a task by its id, #order (as numbered before this batch) or exact title; tasks: #1 \"schema\", #2 \"server\", #3 \"client\""
    );
}

#[test]
fn completed_and_running_tasks_are_locked() {
    let mut plan = base_plan();
    plan.tasks[0].status = TaskStatus::Completed;
    plan.tasks[1].status = TaskStatus::InProgress;
    let locked = "task #1 \"schema\" is completed; its fields are the record of what ran";
    for (op, expected) in [
        (
            json!({"op": "update", "task": "schema", "changes": {"prompt": "x"}}),
            format!("op #1 (update): {locked}"),
        ),
        (
            json!({"op": "remove", "task": "schema"}),
            format!("op #1 (remove): {locked}"),
        ),
        (
            json!({"op": "set_dependencies", "task": 1, "dependencies": []}),
            format!("op #1 (set_dependencies): {locked}"),
        ),
        (
            json!({"op": "update", "task": "server", "changes": {"title": "x"}}),
            "op #1 (update): task #2 \"server\" is in_progress; its fields are the record of what ran".to_owned(),
        ),
    ] {
        assert_eq!(apply(&plan, json!([op])).unwrap_err(), [expected]);
    }
}

#[test]
fn a_task_a_completed_task_depends_on_cannot_be_removed() {
    let mut plan = base_plan();
    plan.tasks[1].status = TaskStatus::Completed;
    assert_eq!(
        apply(&plan, json!([{"op": "remove", "task": "schema"}])).unwrap_err(),
        [
            "op #1 (remove): cannot remove task #1 \"schema\": completed task #2 \"server\" depends on it, and its dependencies are the record of what ran"
        ]
    );
}

#[test]
fn failed_and_skipped_tasks_may_be_rewritten() {
    // Revising a failed task's prompt is what `weft plan revise` is for; a skipped task
    // never ran, so its fields record nothing.
    let mut plan = base_plan();
    plan.tasks[0].status = TaskStatus::Failed;
    plan.tasks[2].status = TaskStatus::Skipped;
    let (next, _) = apply(
        &plan,
        json!([
            {"op": "update", "task": "schema", "changes": {"prompt": "try again, smaller"}},
            {"op": "remove", "task": "client"}
        ]),
    )
    .unwrap();
    assert_eq!(next.tasks[0].prompt, "try again, smaller");
    assert_eq!(ids(&next), ["schema", "server"]);
}

#[test]
fn unknown_runners_in_ops_are_refused() {
    let plan = base_plan();
    let refusal = "the runner \"gpt-coder\" is not available; use one of the runners you were given, or omit `runner` for the default";
    assert_eq!(
        apply(
            &plan,
            json!([{"op": "add", "task": {"title": "T", "prompt": "p", "runner": "gpt-coder"}}])
        )
        .unwrap_err(),
        [format!("op #1 (add): {refusal}")]
    );
    assert_eq!(
        apply(
            &plan,
            json!([{"op": "update", "task": "client", "changes": {"runner": "gpt-coder"}}])
        )
        .unwrap_err(),
        [format!("op #1 (update): {refusal}")]
    );
}

#[test]
fn malformed_ops_are_all_reported() {
    let problems = parse_task_ops(&json!({"taskOps": [
        {"op": "rename", "task": 1},
        {"op": "update", "task": "a", "changes": {"dependencies": ["b"], "prompt": "p"}},
        {"op": "update", "task": "a", "changes": {"assignee": "bob"}},
        {"op": "remove"},
        {"op": "set_dependencies", "task": 1.5, "dependencies": "a"},
        {"op": "add", "task": {"title": "T", "order": 3}},
        {"op": "update", "task": "a", "changes": {}},
        "remove a"
    ]}))
    .unwrap_err()
    .problems;
    assert_eq!(problems.len(), 9, "{problems:#?}");
    assert_eq!(
        problems[0],
        "op #1: unknown op \"rename\"; use \"add\", \"remove\", \"update\" or \"set_dependencies\""
    );
    assert_eq!(
        problems[1],
        "op #2 (update): an update cannot change dependencies; use {\"op\": \"set_dependencies\", \"task\": REF, \"dependencies\": [...]}"
    );
    assert!(
        problems[2].starts_with(
            "op #3 (update): `changes`: unknown field `assignee`, expected one of `title`"
        ),
        "{}",
        problems[2]
    );
    assert_eq!(
        problems[3],
        "op #4 (remove): `task` is missing: name the task by id, #order or exact title"
    );
    assert_eq!(
        problems[4],
        "op #5 (set_dependencies): `task`: 1.5 is not an order number (a whole number from 1)"
    );
    assert_eq!(
        problems[5],
        "op #5 (set_dependencies): `dependencies` must be an array of task references, not a string"
    );
    assert!(
        problems[6].starts_with("op #6 (add): `task`: unknown field `order`"),
        "{}",
        problems[6]
    );
    assert_eq!(
        problems[7],
        "op #7 (update): `changes` names no field to change"
    );
    assert_eq!(
        problems[8],
        "op #8: must be an object with an \"op\" field, not a string"
    );

    assert_eq!(
        parse_task_ops(&json!({"taskOps": []}))
            .unwrap_err()
            .problems,
        ["`taskOps` is empty; send at least one op, or reply in prose if nothing should change"]
    );
}

#[test]
fn parsed_ops_keep_references_as_written() {
    let parsed = ops(json!([
        {"op": "add", "task": {"title": "T", "prompt": "p", "dependencies": [2, "x"]}, "after": "#1"},
        {"op": "set_dependencies", "task": " Title ", "dependencies": [3]}
    ]));
    let TaskOp::Add { task, after } = &parsed[0] else {
        panic!()
    };
    assert_eq!(after, &Some(TaskRef::Text("#1".into())));
    assert_eq!(
        task.dependencies,
        [DependencyRef::Order(2), DependencyRef::Id("x".into())]
    );
    assert_eq!(
        parsed[1],
        TaskOp::SetDependencies {
            task: TaskRef::Text("Title".into()),
            dependencies: vec![TaskRef::Order(3)]
        }
    );
}

#[test]
fn ops_corrective_quotes_the_problems() {
    let problems = PlanProblems::single("op #2 (update): task \"client\" was removed by op #1");
    let text = corrective_for_ops(&problems);
    assert!(text.contains("refused and the plan was left unchanged"));
    assert!(text.contains("{\"taskOps\": [...]}"));
    assert!(text.ends_with("\n1. op #2 (update): task \"client\" was removed by op #1"));
}

// ---------------------------------------------------------------- PRD

#[test]
fn prd_blocks_are_extracted_with_a_safe_slug() {
    let text = "Here is the spec.\n<!-- WEFT_PRD_START slug=\"Rate Limiting v2\" -->\n\n# Rate limiting\n\nWhy.\n\n<!-- WEFT_PRD_END -->\nQuestions?";
    let prd = extract_prd(text, "fallback").unwrap();
    assert_eq!(prd.slug, "rate-limiting-v2");
    assert_eq!(prd.markdown, "# Rate limiting\n\nWhy.\n");
    assert_eq!(strip_prd(text), "Here is the spec.\n\nQuestions?");
    assert!(!prd_unclosed(text));

    let hostile = format!("{PRD_START} slug=\"../etc\" -->\nx\n{PRD_END}");
    assert_eq!(extract_prd(&hostile, "f").unwrap().slug, "etc");
    let dots = format!("{PRD_START} slug=\"..\" -->\nx\n{PRD_END}");
    assert_eq!(
        extract_prd(&dots, "../My Feature").unwrap().slug,
        "my-feature"
    );
}

#[test]
fn prd_without_slug_uses_the_fallback() {
    let text = format!("{PRD_START} -->\n# Spec\n{PRD_END}");
    let prd = extract_prd(&text, "Add Rate Limiting").unwrap();
    assert_eq!(prd.slug, "add-rate-limiting");
    assert_eq!(extract_prd(&text, "///").unwrap().slug, "prd");
}

#[test]
fn the_first_complete_prd_block_wins() {
    let text = format!(
        "{PRD_START} slug=\"one\" -->\nfirst\n{PRD_END}\n{PRD_START} slug=\"two\" -->\nsecond\n{PRD_END}"
    );
    let prd = extract_prd(&text, "f").unwrap();
    assert_eq!(
        (prd.slug.as_str(), prd.markdown.as_str()),
        ("one", "first\n")
    );
    assert_eq!(strip_prd(&text), "");
}

#[test]
fn an_unclosed_prd_block_is_not_extracted() {
    let text = format!("Spec:\n{PRD_START} slug=\"x\" -->\n# Half a spec");
    assert_eq!(extract_prd(&text, "f"), None);
    assert!(prd_unclosed(&text));
    assert_eq!(strip_prd(&text), text.trim());
    assert!(!prd_unclosed("no block here"));
}

// ---------------------------------------------------------------- properties

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z{}\\[\\]\":,\\\\ \n]{0,80}",
        "(\\{\"tasks\": ?\\[|\\{|\\}|\"|\\\\|<think>|</think>|,|\\]|[a-z ]){0,40}",
    ]
}

fn kind_strategy() -> impl Strategy<Value = Option<TaskKind>> {
    prop_oneof![
        Just(None),
        Just(Some(TaskKind::Ai)),
        Just(Some(TaskKind::Manual)),
        Just(Some(TaskKind::Ops)),
    ]
}

fn dependency_strategy() -> impl Strategy<Value = DependencyRef> {
    prop_oneof![
        any::<u64>().prop_map(DependencyRef::Order),
        any::<String>().prop_map(DependencyRef::Id),
    ]
}

fn spec_strategy() -> impl Strategy<Value = TaskSpec> {
    (
        (
            proptest::option::of(any::<String>()),
            any::<String>(),
            proptest::option::of(any::<String>()),
            proptest::option::of(any::<String>()),
            proptest::collection::vec(dependency_strategy(), 0..3),
            proptest::option::of("[a-z-]{1,12}"),
        ),
        (
            proptest::option::of(any::<String>()),
            kind_strategy(),
            proptest::option::of(any::<String>()),
            proptest::collection::vec(any::<String>(), 0..3),
            proptest::collection::vec(any::<String>(), 0..3),
        ),
    )
        .prop_map(
            |(
                (id, title, description, prompt, dependencies, runner),
                (model, kind, command, steps, checks),
            )| {
                TaskSpec {
                    id,
                    title,
                    description,
                    prompt,
                    dependencies,
                    runner,
                    model,
                    effort: None,
                    mode: None,
                    kind,
                    command,
                    steps,
                    checks,
                    timeout: None,
                    idle_timeout: None,
                    budget_usd: None,
                    budget_tokens: None,
                }
            },
        )
}

proptest! {
    #[test]
    fn extract_never_panics(text in text_strategy()) {
        let _ = extract(&text, "tasks");
        let _ = classify_reply(&text);
        let _ = extract_prd(&text, "f");
        let _ = strip_prd(&text);
    }

    #[test]
    fn any_plan_wrapped_in_prose_and_fences_comes_back(
        tasks in proptest::collection::vec(spec_strategy(), 1..4),
        before in "[A-Za-z0-9 .,:;!?'\"\n()\\[\\]-]{0,60}",
        after in "[A-Za-z0-9 .,:;!?'\"\n()\\[\\]-]{0,60}",
        pretty in any::<bool>(),
        fence in prop_oneof![Just(""), Just("```"), Just("```json")],
    ) {
        let value = json!({ "tasks": tasks });
        let json = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let text = if fence.is_empty() {
            format!("{before}{json}{after}")
        } else {
            format!("{before}\n{fence}\n{json}\n```\n{after}")
        };
        let Extraction::Found(extracted) = extract(&text, "tasks") else {
            panic!("not found in {text:?}");
        };
        prop_assert_eq!(&extracted, &value);
        let back: Vec<TaskSpec> = serde_json::from_value(extracted["tasks"].clone()).unwrap();
        prop_assert_eq!(back, tasks);
    }
}

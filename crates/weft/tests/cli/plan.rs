use crate::harness::{SAMPLE_TOML, Weft, read};
use crate::snapshot;

#[test]
fn import_shows_the_plan_map_and_makes_it_current() {
    let weft = Weft::new();
    let run = weft.import_sample();
    snapshot!(weft, run, weft.ok(&["status"]));
    assert!(weft.work().join(".weft/.gitignore").exists());
    assert_eq!(read(&weft.work().join(".weft/.gitignore")), "*\n");
}

#[test]
fn status_json_has_the_documented_shape() {
    let weft = Weft::new();
    weft.import_sample();
    let status = weft.status_json();
    let plan = &status["plan"];
    assert_eq!(plan["goal"], "Add rate limiting to the public API");
    assert_eq!(plan["status"], "approved");
    assert_eq!(plan["id"].as_str().unwrap().len(), 32);
    let tasks = plan["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    assert_eq!(tasks[0]["order"], 1);
    assert_eq!(tasks[0]["id"], "limiter");
    assert_eq!(tasks[0]["kind"], "ai");
    assert_eq!(tasks[0]["runner"], "claude-code");
    assert_eq!(tasks[1]["runner"], "codex");
    assert_eq!(tasks[2]["status"], "pending");
    assert_eq!(tasks[2]["kind"], "ops");
    assert_eq!(
        tasks[2]["dependencies"],
        serde_json::json!(["limiter", "wire-the-limiter-into-the-router"])
    );
    assert_eq!(
        tasks[3]["dependencies"],
        serde_json::json!(["run-the-whole-suite"])
    );
}

#[test]
fn export_then_import_round_trips_exactly() {
    let weft = Weft::new();
    weft.import_sample();
    for format in ["toml", "json"] {
        let first = weft.ok(&["plan", "export", "--format", format]).stdout;
        let file = format!("exported.{format}");
        weft.write(&file, &first);
        weft.ok(&["plan", "--file", &file]);
        let second = weft.ok(&["plan", "export", "--format", format]).stdout;
        assert_eq!(first, second, "{format} export changed after a round trip");
    }
    // Every field of the original survives (the TOML export is the reference text).
    let exported = weft.ok(&["plan", "export"]).stdout;
    for needle in [
        "goal = \"Add rate limiting to the public API\"",
        "runner = \"claude-code\"",
        "description = \"The API has no limit today.\"",
        "Keep it \"simple\" \\ small.",
        "model = \"sonnet\"",
        "effort = \"high\"",
        "mode = \"bypassPermissions\"",
        "checks = [\"cargo test limit\"]",
        "runner = \"codex\"",
        "command = \"cargo test --workspace\"",
        "\"Confirm 429s appear under load\"",
        "kind = \"manual\"",
    ] {
        assert!(
            exported.contains(needle),
            "missing {needle:?} in:\n{exported}"
        );
    }
}

#[test]
fn export_to_a_file_writes_the_same_text() {
    let weft = Weft::new();
    weft.import_sample();
    let stdout = weft.ok(&["plan", "export", "--format", "json"]).stdout;
    // The parent folder does not exist: weft reports the path instead of writing elsewhere.
    let missing = weft.run(&["plan", "export", "-o", "missing/dir/plan.json"]);
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("missing/dir/plan.json"),
        "{}",
        missing.stderr
    );
    std::fs::create_dir_all(weft.work().join("out")).unwrap();
    weft.ok(&["plan", "export", "-o", "out/plan.json"]);
    assert_eq!(read(&weft.work().join("out/plan.json")), stdout);
}

#[test]
fn schema_matches_the_committed_copy() {
    let weft = Weft::bare();
    let printed = weft.ok(&["plan", "schema"]).stdout;
    let committed_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/workflow.schema.json");
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        printed == committed,
        "schemas/workflow.schema.json is out of date; regenerate it with\n  cargo run -q -- plan schema > schemas/workflow.schema.json"
    );
    let schema: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(schema["required"], serde_json::json!(["goal", "tasks"]));
}

/// Every kind of bad file: a clear error naming the place, and nothing stored.
#[test]
fn bad_workflow_files_are_refused_and_store_nothing() {
    let weft = Weft::new();
    let cases = [
        (
            "syntax.toml",
            "goal = \"g\"\n[[tasks]]\ntitle = \"t\nprompt = \"p\"\n",
        ),
        (
            "syntax.json",
            "{\n  \"goal\": \"g\",\n  \"tasks\": [\n    {\"title\": \"t\",}\n  ]\n}\n",
        ),
        (
            "later.toml",
            "goal = \"g\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"p\"\ndependencies = [\"b\"]\n[[tasks]]\nid = \"b\"\ntitle = \"B\"\nprompt = \"p\"\n",
        ),
        (
            "unknown.toml",
            "goal = \"g\"\n[[tasks]]\ntitle = \"A\"\nprompt = \"p\"\ndependencies = [\"ghost\"]\n",
        ),
        (
            "own.toml",
            "goal = \"g\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"p\"\ndependencies = [\"a\"]\n",
        ),
        (
            "duplicate.toml",
            "goal = \"g\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"p\"\n[[tasks]]\nid = \"a\"\ntitle = \"B\"\nprompt = \"p\"\n",
        ),
        (
            "empty-prompt.toml",
            "goal = \"g\"\n[[tasks]]\ntitle = \"A\"\nprompt = \"  \"\n",
        ),
        (
            "no-command.json",
            "{\"goal\": \"g\", \"tasks\": [{\"title\": \"Deploy\", \"kind\": \"ops\"}]}",
        ),
        (
            "kind.toml",
            "goal = \"g\"\n[[tasks]]\ntitle = \"A\"\nprompt = \"p\"\nkind = \"robot\"\n",
        ),
        (
            "field.toml",
            "goal = \"g\"\n[[tasks]]\ntitle = \"A\"\npromt = \"p\"\n",
        ),
        (
            "order.toml",
            "goal = \"g\"\n[[tasks]]\ntitle = \"A\"\nprompt = \"p\"\ndependencies = [2]\n[[tasks]]\ntitle = \"B\"\nprompt = \"p\"\n",
        ),
        ("goal.toml", "goal = \"\"\ntasks = []\n"),
    ];
    let mut text = String::new();
    for (name, body) in cases {
        weft.write(name, body);
        let run = weft.fails(&["plan", "--file", name], 1);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        assert!(run.stderr.contains("hint: "), "{}", run.stderr);
        text.push_str(&weft.show(&run));
        text.push('\n');
    }
    let missing = weft.fails(&["plan", "--file", "nope.toml"], 1);
    text.push_str(&weft.show(&missing));
    assert!(
        !weft.work().join(".weft").exists(),
        "a refused import created .weft/"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn unknown_runner_is_a_warning_not_an_error() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"my-agent\"\n[[tasks]]\ntitle = \"A\"\nprompt = \"p\"\n",
    );
    let run = weft.ok(&["plan", "--file", "plan.toml"]);
    assert!(
        run.stderr
            .contains("warning: the plan's default runner \"my-agent\" is not known"),
        "{}",
        run.stderr
    );
    // A manifest makes it known.
    weft.write(
        ".weft/runners/my-agent.toml",
        "name = \"my-agent\"\ncommand = \"my-agent\"\nargs = [\"{{prompt}}\"]\n",
    );
    let run = weft.ok(&["plan", "--file", "plan.toml"]);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn json_files_import_and_format_can_be_forced() {
    let weft = Weft::new();
    let json = "{\"goal\": \"g\", \"tasks\": [{\"title\": \"A\", \"prompt\": \"p\"}, {\"title\": \"B\", \"prompt\": \"q\", \"dependencies\": [1]}]}";
    weft.write("plan.json", json);
    weft.ok(&["plan", "--file", "plan.json"]);
    weft.write("plan.txt", json);
    weft.ok(&["plan", "--file", "plan.txt"]);
    weft.write("plan.data", SAMPLE_TOML);
    weft.ok(&["plan", "--file", "plan.data", "--format", "toml"]);
    let status = weft.status_json();
    assert_eq!(status["plan"]["tasks"].as_array().unwrap().len(), 4);
}

#[test]
fn plan_without_file_explains_itself() {
    let weft = Weft::new();
    snapshot!(
        weft,
        weft.fails(&["plan"], 1),
        weft.fails(&["plan", "add a feature"], 1)
    );
}

//! The event contract from the outside: `weft events schema` is the committed schema, and
//! every line `weft run --json` prints is one event that validates against it.

use serde_json::{Map, Value, json};

use crate::harness::Weft;

fn committed_schema() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/events.schema.json");
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn events_schema_matches_the_committed_copy() {
    let weft = Weft::bare();
    let printed = weft.ok(&["events", "schema"]).stdout;
    assert!(
        printed == committed_schema(),
        "schemas/events.schema.json is out of date; regenerate it with\n  cargo run -q -- events schema > schemas/events.schema.json"
    );
    let schema: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(schema["required"], json!(["version", "seq", "at", "event"]));
}

/// Where `value` breaks `schema`, or `None`. Knows exactly the keywords schemars writes
/// for our types and refuses any other, so a schema it cannot check fails the test
/// instead of passing it.
pub(crate) fn violation(root: &Value, schema: &Value, value: &Value, at: &str) -> Option<String> {
    let schema = match schema {
        Value::Bool(true) => return None,
        Value::Bool(false) => return Some(format!("{at}: nothing is allowed here")),
        Value::Object(schema) => schema,
        other => return Some(format!("{at}: not a schema: {other}")),
    };
    for key in schema.keys() {
        let known = [
            "$schema",
            "$defs",
            "$ref",
            "title",
            "description",
            "type",
            "properties",
            "required",
            "items",
            "enum",
            "const",
            "oneOf",
            "anyOf",
            "format",
            "minimum",
        ];
        if !known.contains(&key.as_str()) {
            return Some(format!("{at}: the test's validator does not know `{key}`"));
        }
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference
            .strip_prefix("#/$defs/")
            .expect("local references");
        if let Some(problem) = violation(root, &root["$defs"][name], value, at) {
            return Some(problem);
        }
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => panic!("bad type"),
        };
        let matches = types.iter().any(|t| match *t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            other => panic!("unknown type {other}"),
        });
        if !matches {
            return Some(format!("{at}: {value} is not {types:?}"));
        }
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        return Some(format!("{at}: {value} is not {constant}"));
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        return Some(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let (Some(minimum), Some(number)) = (schema.get("minimum"), value.as_f64())
        && number < minimum.as_f64().unwrap()
    {
        return Some(format!("{at}: {value} is below {minimum}"));
    }
    if let Value::Object(object) = value {
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = required.as_str().unwrap();
            if !object.contains_key(name) {
                return Some(format!("{at}: `{name}` is missing"));
            }
        }
        for (name, property) in properties {
            if let Some(field) = object.get(name)
                && let Some(problem) = violation(root, property, field, &format!("{at}.{name}"))
            {
                return Some(problem);
            }
        }
    }
    if let (Some(items), Value::Array(values)) = (schema.get("items"), value) {
        for (index, item) in values.iter().enumerate() {
            if let Some(problem) = violation(root, items, item, &format!("{at}[{index}]")) {
                return Some(problem);
            }
        }
    }
    if let Some(Value::Array(options)) = schema.get("oneOf") {
        let problems: Vec<String> = options
            .iter()
            .filter_map(|option| violation(root, option, value, at))
            .collect();
        if options.len() - problems.len() != 1 {
            return Some(format!(
                "{at}: {value} matches {} of the oneOf options ({problems:?})",
                options.len() - problems.len()
            ));
        }
    }
    if let Some(Value::Array(options)) = schema.get("anyOf") {
        let problems: Vec<String> = options
            .iter()
            .filter_map(|option| violation(root, option, value, at))
            .collect();
        if problems.len() == options.len() {
            return Some(format!(
                "{at}: {value} matches no anyOf option ({problems:?})"
            ));
        }
    }
    None
}

#[test]
fn the_validator_refuses_what_the_schema_refuses() {
    let schema: Value = serde_json::from_str(&committed_schema()).unwrap();
    let good = json!({
        "version": 1, "seq": 3, "at": 5, "plan": null, "run": "r1", "task": "a", "attempt": null,
        "event": { "kind": "tasks_blocked", "by": "a", "tasks": ["b"] }
    });
    assert_eq!(violation(&schema, &schema, &good, "$"), None);
    for bad in [
        json!({ "version": 1, "seq": 3, "at": 5, "event": { "kind": "no_such_kind" } }),
        json!({ "version": 1, "seq": 3, "at": 5, "event": { "kind": "tasks_blocked", "by": "a" } }),
        json!({ "version": 1, "seq": "3", "at": 5, "event": { "kind": "task_held" } }),
        json!({ "seq": 3, "at": 5, "event": { "kind": "task_held" } }),
        json!({ "version": 1, "seq": 3, "at": 5, "event": { "kind": "task_edited",
                "changes": [{ "field": "kind", "value": "robot" }] } }),
    ] {
        assert!(
            violation(&schema, &schema, &bad, "$").is_some(),
            "{bad} should not validate"
        );
    }
}

#[test]
fn every_line_weft_run_json_prints_is_an_event_of_the_committed_schema() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"good\"\ntitle = \"Passes\"\nprompt = '''\n@fake say fine\n@fake marker\n'''\n\
         [[tasks]]\nid = \"bad\"\ntitle = \"Fails\"\nprompt = '''\n@fake say broken\n@fake exit 3\n'''\n\
         [[tasks]]\nid = \"after\"\ntitle = \"Blocked\"\ndependencies = [\"bad\"]\nprompt = '''\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let before = weft.ok(&["events", "--json"]).stdout.lines().count();
    let run = weft.run(&["run", "--json", "--without-isolation"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let schema: Value = serde_json::from_str(&committed_schema()).unwrap();
    let mut kinds = Vec::new();
    let mut last_seq = 0;
    for line in run.stdout.lines() {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
        if let Some(problem) = violation(&schema, &schema, &value, "$") {
            panic!("{problem}\nin {line}");
        }
        let seq = value["seq"].as_i64().unwrap();
        assert!(seq > last_seq, "sequence numbers go up: {line}");
        last_seq = seq;
        assert!(value["at"].as_i64().unwrap() > 0, "{line}");
        kinds.push(value["event"]["kind"].as_str().unwrap().to_owned());
    }
    for wanted in [
        "run_started",
        "task_started",
        "attempt_finished",
        "task_finished",
        "tasks_blocked",
        "run_ended",
    ] {
        assert!(
            kinds.iter().any(|k| k == wanted),
            "no {wanted} in {kinds:?}"
        );
    }
    // The run's end carries its totals; the failure its verdict and checks.
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ended = lines
        .iter()
        .find(|l| l["event"]["kind"] == "run_ended")
        .unwrap();
    assert_eq!(ended["event"]["totals"]["completed"], 1, "{ended}");
    assert_eq!(ended["event"]["totals"]["failed"], 1, "{ended}");
    assert_eq!(ended["event"]["totals"]["blocked"], 1, "{ended}");
    let failed = lines
        .iter()
        .find(|l| l["event"]["kind"] == "attempt_finished" && l["task"] == "bad")
        .unwrap();
    assert_eq!(failed["event"]["verdict"]["outcome"], "fail", "{failed}");
    assert!(
        failed["event"]["verdict"]["checks"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "{failed}"
    );
    let blocked = lines
        .iter()
        .find(|l| l["event"]["kind"] == "tasks_blocked")
        .unwrap();
    assert_eq!(blocked["event"]["tasks"], json!(["after"]), "{blocked}");
    // Exactly what the store replays: `weft events --json` after the run shows the same
    // lines after the ones that were there before.
    let replayed = weft.ok(&["events", "--json"]).stdout;
    let replayed: Vec<&str> = replayed.lines().skip(before).collect();
    assert_eq!(replayed, run.stdout.lines().collect::<Vec<_>>());
}

#[test]
fn the_event_log_reads_as_text_with_each_edit_and_its_new_value() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"do a\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["task", "edit", "1", "--title", "Renamed", "--model", "opus"]);
    let log = weft.ok(&["events"]).stdout;
    let last = log.lines().last().unwrap();
    assert!(
        last.contains("task \"a\": edited: model = opus; title = Renamed"),
        "{log}"
    );
    let json = weft.ok(&["events", "--json"]).stdout;
    let edited: Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
    assert_eq!(
        edited["event"],
        json!({ "kind": "task_edited", "changes": [
            { "field": "model", "value": "opus" },
            { "field": "title", "value": "Renamed" },
        ] })
    );
}

#[test]
fn a_secret_a_task_edit_quotes_is_masked_in_its_event_not_in_the_task() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"do a\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let args = [
        "task",
        "edit",
        "1",
        "--prompt",
        "use sk-live-0123456789 to call",
    ];
    let mut edit = weft.command(&args);
    edit.env("SERVICE_API_KEY", "sk-live-0123456789");
    let edited = weft.run_command(&args, edit);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    let json = weft.ok(&["events", "--json"]).stdout;
    assert!(!json.contains("sk-live-0123456789"), "{json}");
    let last: Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["event"]["changes"],
        json!([{ "field": "prompt", "value": "use **** to call" }])
    );
    // The task keeps what the user wrote.
    let exported = weft.ok(&["plan", "export"]).stdout;
    assert!(
        exported.contains("use sk-live-0123456789 to call"),
        "{exported}"
    );
}

#[test]
fn events_follow_replays_from_a_sequence_number_then_prints_new_events_as_they_are_stored() {
    use std::io::{BufRead, BufReader};
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"do a\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["task", "hold", "1"]);
    let seqs: Vec<i64> = weft
        .ok(&["events", "--json"])
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_i64()
                .unwrap()
        })
        .collect();
    // From after the first event: the hold, then (once stored) the release.
    let after = seqs[0].to_string();
    let mut follow = weft.command(&["events", "--json", "--follow", "--after", &after]);
    follow.stdout(std::process::Stdio::piped());
    let mut child = follow.spawn().unwrap();
    // A follower that never prints must fail the test, not hang it.
    let pid = child.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(30));
        let _ = std::process::Command::new("kill").arg(&pid).status();
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_kind = || {
        let line = lines.next().expect("a line").unwrap();
        serde_json::from_str::<Value>(&line).unwrap()["event"]["kind"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(next_kind(), "task_held");
    weft.ok(&["task", "release", "1"]);
    assert_eq!(next_kind(), "task_released");
    child.kill().unwrap();
    child.wait().unwrap();
}

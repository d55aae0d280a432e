use crate::harness::Weft;
use crate::snapshot;

#[test]
fn list_load_and_delete_by_short_id() {
    let weft = Weft::new();
    let empty = weft.ok(&["sessions", "list"]);
    weft.import_sample();
    let first = weft.status_json()["plan"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    weft.write(
        "second.toml",
        "goal = \"Second goal\"\n[[tasks]]\ntitle = \"Only\"\nprompt = \"p\"\n",
    );
    weft.ok(&["plan", "--file", "second.toml"]);
    let second = weft.status_json()["plan"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let list = weft.ok(&["sessions", "list"]);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with(&format!("* {}", &second[..8])),
        "{}",
        list.stdout
    );
    assert!(
        lines[1].starts_with(&format!("  {}", &first[..8])),
        "{}",
        list.stdout
    );

    // The short id printed by the list is accepted back.
    let load = weft.ok(&["sessions", "load", &first[..8]]);
    assert_eq!(weft.status_json()["plan"]["id"], first.as_str());
    let list_after = weft.ok(&["sessions", "list"]);
    assert!(list_after.stdout.contains(&format!("* {}", &first[..8])));

    let json: serde_json::Value =
        serde_json::from_str(&weft.ok(&["sessions", "list", "--json"]).stdout).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
    assert_eq!(
        json[0]["task_count"].as_u64().unwrap() + json[1]["task_count"].as_u64().unwrap(),
        5
    );

    let refused = weft.fails(&["sessions", "delete", &first[..8]], 1);
    assert_eq!(
        weft.ok(&["sessions", "list", "--json"])
            .stdout
            .matches("\"id\"")
            .count(),
        2
    );
    let deleted = weft.ok(&["sessions", "delete", &first[..8], "--yes"]);
    let after = weft.fails(&["status"], 1);
    snapshot!(weft, empty, list, load, list_after, refused, deleted, after);
}

#[test]
fn ambiguous_and_unknown_plan_ids_list_candidates() {
    let weft = Weft::new();
    // Plans until two share their first character, so a one-character prefix is ambiguous.
    let mut ids: Vec<String> = Vec::new();
    let shared = loop {
        weft.import_sample();
        let id = weft.status_json()["plan"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        if let Some(other) = ids.iter().find(|o| o[..1] == id[..1]) {
            break (id[..1].to_owned(), other.clone(), id);
        }
        ids.push(id);
        assert!(ids.len() <= 17, "17 hex ids must share a first character");
    };
    let ambiguous = weft.fails(&["sessions", "load", &shared.0], 1);
    assert!(
        ambiguous.stderr.contains("matches more than one plan"),
        "{}",
        ambiguous.stderr
    );
    assert!(ambiguous.stderr.contains(&shared.1[..8]) && ambiguous.stderr.contains(&shared.2[..8]));
    let unknown = weft.fails(&["sessions", "load", "zzzz"], 1);
    assert!(
        unknown
            .stderr
            .starts_with("error: no plan \"zzzz\" in this workspace"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("hint: plans here: "),
        "{}",
        unknown.stderr
    );
}

#[test]
fn status_without_any_plan_says_how_to_make_one() {
    let weft = Weft::new();
    let run = weft.fails(&["status"], 1);
    assert!(
        !weft.work().join(".weft").exists(),
        "reading created .weft/"
    );
    snapshot!(weft, run);
}

#[test]
fn no_workspace_outside_a_repository() {
    let weft = Weft::bare();
    let run = weft.fails(&["status"], 1);
    snapshot!(weft, run);
    // `weft init` makes the folder a workspace; then it is found from a subfolder.
    weft.ok(&["init"]);
    weft.write("sub/dir/.keep", "");
    let mut command = weft.command(&["sessions", "list"]);
    command.current_dir(weft.work().join("sub/dir"));
    let run = weft.run_command(&["sessions", "list"], command);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

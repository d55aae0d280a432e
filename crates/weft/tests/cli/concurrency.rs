use std::process::Stdio;

use crate::harness::Weft;

/// Two real processes editing one plan at once never lose an edit.
#[test]
fn two_processes_editing_one_plan_lose_nothing() {
    let weft = Weft::new();
    weft.write("plan.toml", "goal = \"race\"\ntasks = []\n");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let per_process = 15;
    let script = |name: &str| {
        format!(
            "for i in $(seq 1 {per_process}); do \"$WEFT\" task add --title \"{name} $i\" --prompt p || exit 1; done"
        )
    };
    let children: Vec<_> = ["alpha", "beta"]
        .iter()
        .map(|name| {
            let mut command = weft.env.command("sh");
            command
                .args(["-c", &script(name)])
                .env("WEFT", env!("CARGO_BIN_EXE_weft"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let status = weft.status_json();
    let titles: Vec<&str> = status["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 2 * per_process);
    for name in ["alpha", "beta"] {
        for i in 1..=per_process {
            assert!(
                titles.contains(&format!("{name} {i}").as_str()),
                "lost {name} {i}"
            );
        }
    }
    assert_eq!(
        status["plan"]["revision"].as_u64().unwrap(),
        1 + 2 * per_process as u64
    );
}

/// The first write of a workspace creates and migrates the store; processes racing to do
/// it all succeed and all their plans are kept.
#[test]
fn processes_racing_to_create_the_store_all_succeed() {
    for _round in 0..3 {
        let weft = Weft::new();
        weft.write(
            "plan.toml",
            "goal = \"race\"\n[[tasks]]\ntitle = \"A\"\nprompt = \"p\"\n",
        );
        let children: Vec<_> = (0..4)
            .map(|_| {
                let mut command = weft.command(&["plan", "--file", "plan.toml"]);
                command.stdout(Stdio::null()).stderr(Stdio::piped());
                command.spawn().unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let list: serde_json::Value =
            serde_json::from_str(&weft.ok(&["sessions", "list", "--json"]).stdout).unwrap();
        assert_eq!(list.as_array().unwrap().len(), 4);
    }
}

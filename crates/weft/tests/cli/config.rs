use crate::harness::Weft;
use crate::snapshot;

#[test]
fn every_setting_shows_its_source() {
    let weft = Weft::new();
    weft.write("weft.toml", "parallel = 4\nrunner = \"codex\"\n");
    let user = weft.env.home().join(".config/weft/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "halt_on_failure = true\nparallel = 9\n").unwrap();
    let mut command = weft.command(&["-c", "runner=exec", "config"]);
    command.env("WEFT_TASK_TIMEOUT", "90s");
    let run = weft.run_command(&["-c", "runner=exec", "config"], command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&weft.ok(&["config", "--json"]).stdout).unwrap();
    assert_eq!(json["parallel"]["value"], "4");
    assert_eq!(json["parallel"]["source"], "project");
    assert_eq!(json["halt_on_failure"]["source"], "user");
    assert_eq!(json["busy_timeout_ms"]["source"], "default");
    snapshot!(weft, run);
}

#[test]
fn bad_settings_are_refused_with_their_place() {
    let weft = Weft::new();
    weft.write("weft.toml", "parallel = 0\n");
    let zero = weft.fails(&["config"], 1);
    weft.write("weft.toml", "paralel = 2\n");
    let unknown = weft.fails(&["status"], 1);
    weft.write("weft.toml", "parallel = \n");
    let syntax = weft.fails(&["config"], 1);
    weft.write("weft.toml", "");
    let flag = weft.fails(&["-c", "parallel", "config"], 2);
    snapshot!(weft, zero, unknown, syntax, flag);
}

/// A duration that does not parse is refused from every source, never read as a default.
#[test]
fn a_bad_duration_is_refused_from_every_source_with_its_place() {
    let weft = Weft::new();
    let flag = weft.fails(&["-c", "task_timeout=soon", "status"], 2);
    assert!(
        flag.stderr
            .contains("setting `task_timeout` = \"soon\" from command line (-c) is not a duration"),
        "{}",
        flag.stderr
    );
    let mut command = weft.command(&["config"]);
    command.env("WEFT_MARKER_GRACE", "0s");
    let env = weft.run_command(&["config"], command);
    assert_eq!(env.code, 1, "{}", weft.show(&env));
    assert!(
        env.stderr.contains(
            "setting `marker_grace` = \"0s\" from environment (WEFT_MARKER_GRACE) must be longer than zero"
        ),
        "{}",
        env.stderr
    );
    weft.write("weft.toml", "idle_after = \"later\"\n");
    let file = weft.fails(&["config"], 1);
    assert!(
        file.stderr
            .contains("setting `idle_after` = \"later\" from project ("),
        "{}",
        file.stderr
    );
    assert!(
        file.stderr.contains("hint: idle_after: "),
        "{}",
        file.stderr
    );
}

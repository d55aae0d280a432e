use crate::harness::Weft;
use crate::snapshot;

#[test]
fn demo_creates_a_repository_with_the_built_in_plan() {
    let weft = Weft::bare();
    let dir = weft.env.root().join("demo");
    let run = weft.ok(&["demo", "--dir", dir.to_str().unwrap()]);
    assert!(dir.join(".git").exists());
    // Event lines arrive in an order that depends on timing; check them, snapshot the map.
    for line in [
        "▶ #1 Write the greeting [exec]",
        "✔ #3 Add a script that prints both: completed in",
        "run ",
        " completed: 4 completed, 0 skipped, 0 failed, 0 blocked, 0 waiting",
        "Landed as ",
    ] {
        assert!(
            run.stdout.contains(line),
            "missing {line:?} in:\n{}",
            run.stdout
        );
    }
    assert!(dir.join(".weft/weft.db").exists());
    let mut command = weft.command(&["status", "--json"]);
    command.current_dir(&dir);
    let status = weft.run_command(&["status", "--json"], command);
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let tasks = status["plan"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    assert!(
        tasks
            .iter()
            .filter(|t| t["kind"] == "ai")
            .all(|t| t["runner"] == "exec")
    );
    assert!(tasks.iter().all(|t| t["status"] == "completed"), "{status}");
    // The tasks really ran, in the demo repository.
    let greet = std::process::Command::new(dir.join("greet.sh"))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&greet.stdout),
        "hello from weft\ngoodbye from weft\n"
    );
    // .weft/ ignores itself, and the run was handed off into the demo's branch.
    let git = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&git.stdout), "");
    let mut command = weft.command(&["status"]);
    command.current_dir(&dir);
    snapshot!(weft, weft.run_command(&["status"], command));
}

#[test]
fn demo_refuses_a_folder_with_files_in_it() {
    let weft = Weft::bare();
    weft.write("keep.txt", "mine\n");
    let run = weft.fails(&["demo", "--dir", weft.work().to_str().unwrap()], 1);
    assert!(run.stderr.contains("is not empty"), "{}", run.stderr);
}

#[test]
fn colour_follows_no_color() {
    let weft = Weft::bare();
    let dir = weft.env.root().join("demo");
    weft.ok(&["demo", "--dir", dir.to_str().unwrap()]);
    let mut forced = weft.command(&["status"]);
    forced
        .current_dir(&dir)
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1");
    let coloured = weft.run_command(&["status"], forced);
    assert!(
        coloured.stdout.contains('\u{1b}'),
        "CLICOLOR_FORCE gave no colour"
    );
    let mut plain = weft.command(&["status"]);
    plain.current_dir(&dir);
    let plain = weft.run_command(&["status"], plain);
    assert!(!plain.stdout.contains('\u{1b}') && !plain.stderr.contains('\u{1b}'));
}

use crate::harness::Weft;
use crate::snapshot;

#[test]
fn demo_creates_a_repository_with_the_built_in_plan() {
    let weft = Weft::bare();
    let dir = weft.env.root().join("demo");
    let run = weft.ok(&["demo", "--dir", dir.to_str().unwrap()]);
    assert!(dir.join(".git").exists());
    assert!(dir.join(".weft/weft.db").exists());
    let mut command = weft.command(&["status", "--json"]);
    command.current_dir(&dir);
    let status = weft.run_command(&["status", "--json"], command);
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let tasks = status["plan"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 5);
    assert!(
        tasks
            .iter()
            .filter(|t| t["kind"] == "ai")
            .all(|t| t["runner"] == "exec")
    );
    // The repository is clean: .weft/ ignores itself.
    let git = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&git.stdout), "");
    snapshot!(weft, run);
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

//! Verifying the integration tip (issue 15 §1): a tip that fails `verify` is run once
//! more, bisected among the landings since the last green tip, and the culprit is
//! quarantined (the integration branch rebuilt without it); with `verify_gate` a
//! dependent starts only from a green tip. Real git, the `exec` runner.

use std::collections::BTreeMap;

use crate::engine::statuses;
use crate::harness::Weft;

/// Every event of the plan, as JSON.
fn events(weft: &Weft) -> Vec<serde_json::Value> {
    weft.ok(&["events", "--json", "--all"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_kind<'a>(events: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    events
        .iter()
        .filter(|e| e["event"]["kind"] == kind)
        .collect()
}

/// A tiny shell "program": `lib.sh` defines `greet`, every file in `callers/` calls it,
/// and `verify.sh` runs them all (it fails when a caller calls a function that is gone).
fn program(weft: &Weft) {
    weft.write("lib.sh", "greet() { echo hello; }\n");
    weft.write("callers/a.sh", "greet\n");
    weft.write(
        "verify.sh",
        ". ./lib.sh\nfor f in callers/*.sh; do . \"./$f\" || { echo \"$f failed\"; exit 1; }; done\necho all callers ran\n",
    );
}

fn task(id: &str, prompt: &str, deps: &[&str], checks: bool) -> String {
    let deps: Vec<String> = deps.iter().map(|d| format!("{d:?}")).collect();
    format!(
        "[[tasks]]\nid = {id:?}\ntitle = {id:?}\nprompt = '''\n{prompt}\n'''\ndependencies = [{}]\n{}\n",
        deps.join(", "),
        if checks {
            "checks = [\"sh verify.sh\"]"
        } else {
            ""
        }
    )
}

fn run_with(weft: &Weft, settings: &[&str], code: i32) -> crate::harness::Run {
    let mut args = vec!["run"];
    for setting in settings {
        args.push("-c");
        args.push(setting);
    }
    let run = weft.run(&args);
    assert_eq!(run.code, code, "{}", weft.show(&run));
    run
}

#[test]
fn two_tasks_green_alone_that_break_verify_together_get_the_later_one_quarantined() {
    let weft = Weft::new();
    program(&weft);
    let mut plan = String::from("goal = \"g\"\nrunner = \"exec\"\n");
    // One renames the function (and its one caller); the other adds a caller of the old
    // name. Each passes its own checks in its own worktree.
    plan.push_str(&task(
        "rename",
        "sed -i 's/greet/welcome/' lib.sh callers/a.sh",
        &[],
        true,
    ));
    plan.push_str(&task(
        "caller",
        "sleep 0.5\nprintf 'greet\\n' > callers/b.sh",
        &[],
        true,
    ));
    plan.push_str(&task(
        "uses-caller",
        "echo uses > uses.txt",
        &["caller"],
        false,
    ));
    plan.push_str(&task(
        "uses-rename",
        "echo after > after.txt",
        &["rename"],
        false,
    ));
    weft.write("plan.toml", &plan);
    weft.commit_all("the program");
    weft.ok(&["plan", "--file", "plan.toml"]);
    run_with(
        &weft,
        &["verify=sh verify.sh", "verify_batch=2", "parallel=2"],
        1,
    );

    let status = statuses(&weft);
    let expected: BTreeMap<String, String> = [
        ("rename", "completed"),
        ("caller", "failed"),
        ("uses-caller", "blocked"),
        ("uses-rename", "completed"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(status, expected);

    let all = events(&weft);
    let failed = of_kind(&all, "verification_failed");
    assert!(failed.len() >= 2, "the red run and its repeat: {failed:?}");
    let steps = of_kind(&all, "bisect_step");
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["event"]["passed"], true);
    let quarantined = of_kind(&all, "task_quarantined");
    assert_eq!(quarantined.len(), 1, "{all:?}");
    let q = &quarantined[0];
    assert_eq!(q["task"], "caller");
    assert_eq!(q["event"]["only_in_combination"], true);
    assert_eq!(q["event"]["command"], "sh verify.sh");

    // The rebuilt tip's tree is the last green tip plus the other landing: the tree of
    // the tip after the rename landed (the bisect step that passed).
    let rebuilt = q["event"]["rebuilt"].as_str().unwrap();
    let green_tip = steps[0]["event"]["tip"].as_str().unwrap();
    assert_eq!(
        weft.git(&["rev-parse", &format!("{rebuilt}^{{tree}}")]),
        weft.git(&["rev-parse", &format!("{green_tip}^{{tree}}")])
    );

    // The culprit's verdict quotes the command and its output, and names the tip.
    let json = weft.status_json();
    let caller = json["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "caller")
        .unwrap()
        .clone();
    let reason = caller["verdict"]["reason"].as_str().unwrap();
    let broke = q["event"]["broke"].as_str().unwrap();
    assert!(reason.contains("quarantined"), "{reason}");
    assert!(reason.contains("`sh verify.sh`"), "{reason}");
    assert!(reason.contains(&broke[..12]), "{reason}");
    assert!(reason.contains("callers/b.sh failed"), "{reason}");

    // The handoff holds only green work.
    weft.ok(&["handoff", "merge", "--yes"]);
    assert!(!weft.work().join("callers/b.sh").exists());
    assert!(weft.work().join("after.txt").exists());
    assert!(crate::harness::read(&weft.work().join("lib.sh")).contains("welcome"));
    let verify = weft
        .env
        .command("sh")
        .arg("verify.sh")
        .current_dir(weft.work())
        .output()
        .unwrap();
    assert!(verify.status.success());
}

#[test]
fn a_batch_of_8_landings_with_the_5th_broken_is_found_in_at_most_3_bisect_runs() {
    let weft = Weft::new();
    program(&weft);
    let mut plan = String::from("goal = \"g\"\nrunner = \"exec\"\n");
    for i in 1..=8 {
        let prompt = if i == 5 {
            "printf 'nosuchfunction\\n' > callers/t5.sh".to_owned()
        } else {
            format!("printf 'greet\\n' > callers/t{i}.sh")
        };
        plan.push_str(&task(&format!("t{i}"), &prompt, &[], false));
    }
    weft.write("plan.toml", &plan);
    weft.commit_all("the program");
    weft.ok(&["plan", "--file", "plan.toml"]);
    // One at a time, so the 8 landings come in plan order.
    run_with(
        &weft,
        &["verify=sh verify.sh", "verify_batch=8", "parallel=1"],
        1,
    );

    let all = events(&weft);
    let steps = of_kind(&all, "bisect_step");
    assert!(!steps.is_empty() && steps.len() <= 3, "{steps:?}");
    let quarantined = of_kind(&all, "task_quarantined");
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0]["task"], "t5");
    assert_eq!(quarantined[0]["event"]["bisect_runs"], steps.len());
    let purposes: Vec<&str> = of_kind(&all, "verification_started")
        .iter()
        .map(|e| e["event"]["purpose"].as_str().unwrap())
        .collect();
    // The red run, its repeat, the bisect, t5 alone, then the rebuilt tip (green).
    assert_eq!(&purposes[..2], &["landed", "repeat"], "{purposes:?}");
    assert_eq!(
        purposes.iter().filter(|p| **p == "bisect").count(),
        steps.len()
    );
    let status = statuses(&weft);
    for i in 1..=8 {
        let want = if i == 5 { "failed" } else { "completed" };
        assert_eq!(status[&format!("t{i}")], want, "{status:?}");
    }
    assert!(of_kind(&all, "verification_passed").len() >= 2);
}

#[test]
fn with_the_gate_a_dependent_starts_only_once_the_tip_holding_its_dependency_is_green() {
    let weft = Weft::new();
    program(&weft);
    // The plan's own `verify` (its workflow file), no setting.
    let mut plan = String::from("goal = \"g\"\nrunner = \"exec\"\nverify = [\"sh verify.sh\"]\n");
    plan.push_str(&task(
        "first",
        "printf 'greet\\n' > callers/first.sh",
        &[],
        false,
    ));
    plan.push_str(&task(
        "second",
        "echo second > second.txt",
        &["first"],
        false,
    ));
    weft.write("plan.toml", &plan);
    weft.commit_all("the program");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let exported = weft.ok(&["plan", "export"]);
    assert!(
        exported.stdout.contains("verify = [\"sh verify.sh\"]"),
        "{}",
        exported.stdout
    );
    run_with(&weft, &[], 0);

    let all = events(&weft);
    let seq = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        all.iter()
            .find(|e| pred(e))
            .map(|e| e["seq"].as_i64().unwrap())
            .unwrap()
    };
    let passed = seq(&|e| e["event"]["kind"] == "verification_passed");
    let second_started = seq(&|e| e["event"]["kind"] == "task_started" && e["task"] == "second");
    let first_landed = seq(&|e| e["event"]["kind"] == "task_finished" && e["task"] == "first");
    assert!(first_landed < passed && passed < second_started, "{all:?}");
}

#[test]
fn weft_verify_runs_the_commands_on_the_tip_by_hand_and_status_shows_the_green_tip() {
    let weft = Weft::new();
    program(&weft);
    let mut plan = String::from("goal = \"g\"\nrunner = \"exec\"\n");
    plan.push_str(&task(
        "first",
        "printf 'greet\\n' > callers/first.sh",
        &[],
        false,
    ));
    weft.write("plan.toml", &plan);
    weft.commit_all("the program");
    weft.ok(&["plan", "--file", "plan.toml"]);
    // Without `verify` set, there is nothing to verify with.
    let refused = weft.fails(&["verify"], 1);
    assert!(
        refused.stderr.contains("`verify` setting is empty"),
        "{}",
        refused.stderr
    );
    run_with(&weft, &["verify=sh verify.sh"], 0);
    let status = weft.ok(&["status"]);
    assert!(
        status.stdout.contains("verify: last green tip"),
        "{}",
        status.stdout
    );
    let tip = weft.status_json()["verification"]["green"]
        .as_str()
        .unwrap()
        .to_owned();

    let passed = weft.ok(&["-c", "verify=sh verify.sh", "verify"]);
    assert!(passed.stdout.contains(&tip[..12]), "{}", passed.stdout);
    let failed = weft.fails(&["-c", "verify=echo broken-by-hand; exit 4", "verify"], 1);
    assert!(failed.stderr.contains("exited 4"), "{}", failed.stderr);
    assert!(
        failed.stderr.contains("broken-by-hand"),
        "{}",
        failed.stderr
    );
    let all = events(&weft);
    let by_hand: Vec<_> = of_kind(&all, "verification_started")
        .into_iter()
        .filter(|e| e["event"]["purpose"] == "by_hand")
        .collect();
    assert_eq!(by_hand.len(), 2);
}

/// `weft run` with `settings`, its agents and commands not confined (they meet in a
/// file beside the workspace).
fn unconfined(weft: &Weft, settings: &[&str]) -> std::process::Command {
    let mut args = vec!["run".to_owned()];
    for setting in settings {
        args.push("-c".into());
        args.push((*setting).to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = weft.command(&args);
    command.env("WEFT_CONFINE", "off");
    command
}

/// One slot; `first` lands and its verification waits (up to 15 s) for a file only the
/// agent of `second`, an independent task, creates, then (on a tip without `second`'s
/// work) three seconds more; so it passes only if `second` started and its agent ran
/// while it ran, and `second`'s landing is ready during it.
fn verify_waiting_for_an_independent_agent(weft: &Weft) -> Vec<serde_json::Value> {
    let flag = weft.env.root().join("second-ran");
    let mut plan = String::from("goal = \"g\"\nrunner = \"exec\"\n");
    plan.push_str(&task("first", "echo first > first.txt", &[], false));
    plan.push_str(&task(
        "second",
        &format!("touch '{}'\necho second > second.txt", flag.display()),
        &[],
        false,
    ));
    weft.write("plan.toml", &plan);
    weft.commit_all("the plan");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let verify = format!(
        "verify=i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -gt 150 ] && exit 1; sleep 0.1; done; test -e second.txt || sleep 3",
        flag.display()
    );
    let settings = [verify.as_str(), "parallel=1"];
    let run = weft.run_command(&["run"], unconfined(weft, &settings));
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    events(weft)
}

fn seq_of(all: &[serde_json::Value], pred: &dyn Fn(&serde_json::Value) -> bool) -> i64 {
    all.iter()
        .find(|e| pred(e))
        .map(|e| e["seq"].as_i64().unwrap())
        .unwrap_or_else(|| panic!("no such event in {all:#?}"))
}

#[test]
fn an_independent_task_starts_and_its_agent_runs_while_a_slow_verification_runs() {
    let weft = Weft::new();
    let all = verify_waiting_for_an_independent_agent(&weft);
    let kind = |e: &serde_json::Value, k: &str| e["event"]["kind"] == k;
    let verifying = seq_of(&all, &|e| kind(e, "verification_started"));
    let second_started = seq_of(&all, &|e| kind(e, "task_started") && e["task"] == "second");
    let passed = seq_of(&all, &|e| kind(e, "verification_passed"));
    // The first verification passed: the agent of `second` ran while it waited.
    assert!(of_kind(&all, "verification_failed").is_empty(), "{all:#?}");
    assert!(
        verifying < second_started && second_started < passed,
        "{all:#?}"
    );
    let status = statuses(&weft);
    assert_eq!(status["first"], "completed", "{status:?}");
    assert_eq!(status["second"], "completed", "{status:?}");
}

#[test]
fn a_landing_that_finishes_during_a_verification_lands_after_it_and_a_later_one_covers_it() {
    let weft = Weft::new();
    let all = verify_waiting_for_an_independent_agent(&weft);
    let kind = |e: &serde_json::Value, k: &str| e["event"]["kind"] == k;
    // `second`'s agent ended while the verification still had seconds to go.
    let second_ended = seq_of(&all, &|e| {
        kind(e, "landing_started") && e["task"] == "second"
    });
    let first_passed = seq_of(&all, &|e| kind(e, "verification_passed"));
    let second_landed = seq_of(&all, &|e| kind(e, "task_finished") && e["task"] == "second");
    assert!(second_ended < first_passed, "{all:#?}");
    assert!(first_passed < second_landed, "{all:#?}");
    // A later verification passed on a tip that holds `second`'s work.
    let later: Vec<&serde_json::Value> = of_kind(&all, "verification_passed")
        .into_iter()
        .filter(|e| e["seq"].as_i64().unwrap() > second_landed)
        .collect();
    assert!(!later.is_empty(), "{all:#?}");
    let tip = later[0]["event"]["tip"].as_str().unwrap();
    let shown = weft.git(&["show", &format!("{tip}:second.txt")]);
    assert_eq!(shown, "second");
}

/// The process group of a running process (not a zombie), from `/proc/<pid>/stat`.
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat[stat.rfind(')')? + 2..].split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(1)?.parse().ok()
}

/// The live processes in process group `group`.
fn in_group(group: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| process_group(*pid) == Some(group))
        .collect()
}

#[test]
fn weft_stop_during_a_long_verification_ends_its_process_group_and_the_next_run_verifies_again() {
    use std::time::{Duration, Instant};
    let weft = Weft::new();
    let pid_file = weft.env.root().join("verify.pid");
    let may_pass = weft.env.root().join("may-pass");
    let mut plan = String::from("goal = \"g\"\nrunner = \"exec\"\n");
    plan.push_str(&task("only", "echo only > only.txt", &[], false));
    weft.write("plan.toml", &plan);
    weft.commit_all("the plan");
    weft.ok(&["plan", "--file", "plan.toml"]);
    // Until `may-pass` exists, the verification hangs (in a child, in its group).
    let verify = format!(
        "verify=test -e '{}' && exit 0; echo $$ > '{}'; sleep 300",
        may_pass.display(),
        pid_file.display()
    );
    let mut engine = unconfined(&weft, &[verify.as_str()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waited = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            break pid;
        }
        if waited.elapsed() > Duration::from_secs(30) {
            let _ = engine.kill();
            let output = engine.wait_with_output().unwrap();
            panic!(
                "the verification did not start: {}\n{:#?}",
                String::from_utf8_lossy(&output.stderr),
                events(&weft)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let group = process_group(pid).expect("the verify command runs");
    assert!(!in_group(group).is_empty());

    weft.ok(&["stop"]);
    let stopped = Instant::now();
    let status = loop {
        if let Some(status) = engine.try_wait().unwrap() {
            break status;
        }
        if stopped.elapsed() > Duration::from_secs(20) {
            let _ = engine.kill();
            panic!("weft run did not end within 20 s of weft stop during a verification");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = engine.wait_with_output().unwrap();
    assert!(
        status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(in_group(group), Vec::<u32>::new(), "left running");
    let all = events(&weft);
    assert!(of_kind(&all, "verification_passed").is_empty(), "{all:#?}");

    // The next run verifies the tip again (it passes now) and finishes.
    std::fs::write(&may_pass, "").unwrap();
    let run = weft.run_command(&["run"], unconfined(&weft, &[verify.as_str()]));
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let all = events(&weft);
    let passed = of_kind(&all, "verification_passed");
    assert_eq!(passed.len(), 1, "{all:#?}");
    let tip = passed[0]["event"]["tip"].as_str().unwrap();
    assert_eq!(weft.git(&["show", &format!("{tip}:only.txt")]), "only");
    assert_eq!(statuses(&weft)["only"], "completed");
}

//! The environment a task gets (issue 11 §4): an allow-list of yours, never all of it.
//!
//! The fake agent runs `env` through its shell tool; what it printed is in the task's
//! log. Every variable set here has a name no pattern of the base or the built-in
//! manifests matches unless the test says so.

use crate::engine::statuses;
use crate::harness::Weft;

/// A plan of one Claude Code task that prints its environment (its check passes only
/// when the unlisted variables did not reach it, or `EXPECT_ALL=1` did), and one exec
/// task that does the same (what checks and ops tasks get).
fn env_plan(weft: &Weft) {
    weft.write(
        "plan.toml",
        "goal = \"g\"\n\
         [[tasks]]\nid = \"agent\"\ntitle = \"agent\"\nrunner = \"claude-code\"\nprompt = '''\n@fake run env\n@fake marker\n'''\n\
         checks = ['test -z \"$UNLISTED_SETTING$DATABASE_URL\" || test \"$EXPECT_ALL\" = 1']\n\
         [[tasks]]\nid = \"shell\"\ntitle = \"shell\"\nrunner = \"exec\"\nprompt = 'env'\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
}

/// Runs the plan with `vars` in weft's environment and `args` after `run`; the logs of
/// the agent task and the exec task.
fn run_logs(weft: &Weft, vars: &[(&str, &str)], args: &[&str]) -> (String, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let mut command = weft.command(&all);
    for (name, value) in vars {
        command.env(name, value);
    }
    let run = weft.run_command(&all, command);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let s = statuses(weft);
    assert!(s.values().all(|v| v == "completed"), "{s:?}");
    let log = |task| weft.ok(&["log", task]).stdout;
    (log("agent"), log("shell"))
}

const VARS: &[(&str, &str)] = &[
    ("UNLISTED_SETTING", "plain-value-1"),
    (
        "DATABASE_URL",
        "postgres://admin:hunter2hunter2@db.internal/app",
    ),
    ("ANTHROPIC_MODEL", "claude-test-model"),
    ("CARGO_TARGET_DIR", "/tmp/shared-target"),
];

#[test]
fn a_variable_no_pattern_names_does_not_reach_the_agent_or_a_command() {
    let weft = Weft::with_agents();
    env_plan(&weft);
    let (agent, shell) = run_logs(&weft, VARS, &[]);
    for log in [&agent, &shell] {
        assert!(!log.contains("UNLISTED_SETTING"), "{log}");
        assert!(!log.contains("DATABASE_URL"), "{log}");
        // The base: what every program needs, and weft's own variables.
        assert!(log.contains("HOME="), "{log}");
        assert!(log.contains("PATH="), "{log}");
        assert!(log.contains("TMPDIR="), "{log}");
    }
    // The agent's manifest passes its CLI's own variables; the exec runner (checks and
    // ops tasks too) the build toolchains'.
    assert!(
        agent.contains("ANTHROPIC_MODEL=claude-test-model"),
        "{agent}"
    );
    assert!(!agent.contains("CARGO_TARGET_DIR"), "{agent}");
    assert!(
        shell.contains("CARGO_TARGET_DIR=/tmp/shared-target"),
        "{shell}"
    );
    assert!(!shell.contains("ANTHROPIC_MODEL"), "{shell}");
}

#[test]
fn the_env_pass_setting_passes_what_its_patterns_name_and_star_passes_everything() {
    let weft = Weft::with_agents();
    env_plan(&weft);
    let mut vars = VARS.to_vec();
    vars.push(("EXPECT_ALL", "1"));
    let (agent, shell) = run_logs(
        &weft,
        &vars,
        &["-c", "env_pass=UNLISTED_*,NOT_SET,EXPECT_ALL"],
    );
    for log in [&agent, &shell] {
        assert!(log.contains("UNLISTED_SETTING=plain-value-1"), "{log}");
        assert!(!log.contains("DATABASE_URL"), "{log}");
    }

    let weft = Weft::with_agents();
    env_plan(&weft);
    weft.write("weft.toml", "env_pass = [\"*\"]\n");
    let mut vars = VARS.to_vec();
    vars.push(("EXPECT_ALL", "1"));
    let (agent, shell) = run_logs(&weft, &vars, &[]);
    for log in [&agent, &shell] {
        assert!(log.contains("UNLISTED_SETTING=plain-value-1"), "{log}");
        assert!(log.contains("CARGO_TARGET_DIR=/tmp/shared-target"), "{log}");
        assert!(log.contains("ANTHROPIC_MODEL=claude-test-model"), "{log}");
        // Passed, and still masked wherever weft shows it.
        assert!(log.contains("DATABASE_URL=postgres://admin:"), "{log}");
        assert!(!log.contains("hunter2hunter2"), "{log}");
    }
}

#[test]
fn a_bad_env_pass_pattern_is_refused_naming_it() {
    let weft = Weft::with_agents();
    env_plan(&weft);
    let run = weft.fails(&["run", "-c", "env_pass=GOOD_*,BAD=VALUE"], 2);
    assert!(run.stderr.contains("`BAD=VALUE`"), "{}", run.stderr);
    assert_eq!(statuses(&weft)["agent"], "pending");
}

#[test]
fn prompt_shows_the_exact_environment_with_secret_values_masked() {
    let weft = Weft::with_agents();
    env_plan(&weft);
    let args = [
        "prompt",
        "agent",
        "-c",
        "env_pass=DATABASE_URL,MY_API_TOKEN",
    ];
    let mut command = weft.command(&args);
    for (name, value) in VARS {
        command.env(name, value);
    }
    command.env("MY_API_TOKEN", "tok-abcdefghijklmnopqrstuvwxyz");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let out = &run.stdout;
    let env: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("env:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect();
    let names: Vec<&str> = env.iter().filter_map(|l| l.split('=').next()).collect();
    assert!(names.contains(&"HOME"), "{out}");
    assert!(names.contains(&"ANTHROPIC_MODEL"), "{out}");
    assert!(names.contains(&"DATABASE_URL"), "{out}");
    assert!(names.contains(&"MY_API_TOKEN"), "{out}");
    assert!(names.contains(&"TMPDIR"), "{out}");
    assert!(!names.contains(&"UNLISTED_SETTING"), "{out}");
    assert!(!names.contains(&"CARGO_TARGET_DIR"), "{out}");
    assert!(!out.contains("hunter2hunter2"), "{out}");
    assert!(!out.contains("tok-abcdefghijklmnopqrstuvwxyz"), "{out}");
    assert!(out.contains("of your variables withheld"), "{out}");

    let json = weft.run(&["prompt", "agent", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(value["env_withheld"].as_u64().is_some(), "{value}");
}

#[test]
fn an_agent_cli_planner_gets_the_allow_listed_environment_too() {
    let weft = Weft::with_agents();
    let args = ["plan", "x", "--yes", "--planner", "claude-code"];
    let mut command = weft.command(&args);
    // Unconfined here, so that the planner's shell can leave what it saw in the workspace.
    command
        .env("WEFT_FAKE_SCRIPT", "run env > planner-env.txt\nsay done")
        .envs(VARS.iter().copied());
    let run = weft.run_command(&args, command);
    let seen = std::fs::read_to_string(weft.work().join("planner-env.txt"))
        .unwrap_or_else(|_| panic!("the planner's shell did not run: {}", weft.show(&run)));
    assert!(seen.contains("ANTHROPIC_MODEL=claude-test-model"), "{seen}");
    assert!(seen.contains("HOME="), "{seen}");
    assert!(!seen.contains("UNLISTED_SETTING"), "{seen}");
    assert!(!seen.contains("DATABASE_URL"), "{seen}");
    assert!(!seen.contains("CARGO_TARGET_DIR"), "{seen}");
}

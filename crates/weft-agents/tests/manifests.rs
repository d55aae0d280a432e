//! Runner manifests: built-ins rendered against the real CLIs' help texts, bad manifests,
//! the registry's override order, mode mapping, and preflight against real tiny programs.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs_err as fs;
use weft_agents::StreamKind;
use weft_agents::manifest::{
    LaunchSpec, LaunchVars, Manifest, ManifestError, Origin, PROMPT_ENV, PromptVia, Registry,
    TurnVars, builtin_names, builtin_source, user_runners_dir, workspace_runners_dir,
};
use weft_agents::preflight::{self, Problem, ResolveError, resolve_program};
use weft_agents::template::Var;

const SID: &str = "0b0e4f3c-6a8e-4c1e-9a57-3f2d1c0b9a88";
const PROMPT: &str = "Fix the bug.\nThen print the marker.";

fn vars() -> LaunchVars {
    LaunchVars {
        prompt: PROMPT.into(),
        prompt_file: None,
        model: None,
        effort: None,
        mode: None,
        cwd: "/work/tree".into(),
        session_id: SID.into(),
        running_as_root: false,
        relay: false,
        confined: false,
    }
}

fn all_set() -> LaunchVars {
    LaunchVars {
        model: Some("some-model".into()),
        effort: Some("high".into()),
        ..vars()
    }
}

fn builtin(name: &str) -> Manifest {
    Manifest::builtin(name).expect("built-in exists")
}

fn launch(name: &str, vars: &LaunchVars) -> LaunchSpec {
    builtin(name).launch(vars).expect("launches")
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// claude-code

#[test]
fn claude_autonomous_default() {
    let spec = launch("claude-code", &vars());
    assert_eq!(spec.program, "claude");
    assert_eq!(
        spec.args,
        strings(&[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--session-id",
            SID,
            "--permission-mode",
            "bypassPermissions",
        ])
    );
    assert_eq!(spec.env, vec![]);
    assert_eq!(spec.stdin.as_deref(), Some(PROMPT));
    assert_eq!(spec.prompt_file, None);
    assert_eq!(spec.cwd, PathBuf::from("/work/tree"));
    assert!(!spec.needs_tty);
    assert_eq!(spec.stream, StreamKind::ClaudeStreamJson);
    assert!(spec.receives_marker);
}

#[test]
fn claude_with_model_effort_and_mode() {
    let spec = launch(
        "claude-code",
        &LaunchVars {
            mode: Some("acceptEdits".into()),
            ..all_set()
        },
    );
    assert_eq!(
        spec.args,
        strings(&[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--session-id",
            SID,
            "--permission-mode",
            "acceptEdits",
            "--model",
            "some-model",
            "--effort",
            "high",
        ])
    );
    assert!(!spec.args.iter().any(|a| a.contains(PROMPT)));
}

#[test]
fn claude_plan_mode_and_claudes_own_default_mode() {
    let plan = launch(
        "claude-code",
        &LaunchVars {
            mode: Some("plan".into()),
            ..vars()
        },
    );
    // Plan mode is read-only: the edit tools are not even offered.
    assert_eq!(
        plan.args[6..],
        strings(&[
            "--permission-mode",
            "plan",
            "--disallowedTools",
            "Edit,Write,MultiEdit,NotebookEdit"
        ])
    );
    let ask = launch(
        "claude-code",
        &LaunchVars {
            mode: Some("ask".into()),
            ..vars()
        },
    );
    assert_eq!(ask.args[6..], strings(&["--permission-mode", "default"]));
}

#[test]
fn claude_as_root_gets_is_sandbox() {
    let spec = launch(
        "claude-code",
        &LaunchVars {
            running_as_root: true,
            ..vars()
        },
    );
    assert_eq!(spec.env, env(&[("IS_SANDBOX", "1")]));
    let plan_root = launch(
        "claude-code",
        &LaunchVars {
            running_as_root: true,
            mode: Some("plan".into()),
            ..all_set()
        },
    );
    assert_eq!(plan_root.env, env(&[("IS_SANDBOX", "1")]));
}

// ---------------------------------------------------------------------------------------
// codex

#[test]
fn codex_autonomous_default() {
    let spec = launch("codex", &vars());
    assert_eq!(spec.program, "codex");
    assert_eq!(
        spec.args,
        strings(&[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "-c",
            "approval_policy=\"never\"",
            "-",
        ])
    );
    assert_eq!(spec.env, vec![]);
    assert_eq!(spec.stdin.as_deref(), Some(PROMPT));
    assert_eq!(spec.stream, StreamKind::CodexJson);
    assert!(spec.receives_marker);
    assert!(!spec.needs_tty);
}

#[test]
fn codex_with_model_and_effort() {
    let spec = launch("codex", &all_set());
    assert_eq!(
        spec.args,
        strings(&[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "-c",
            "approval_policy=\"never\"",
            "-m",
            "some-model",
            "-c",
            "model_reasoning_effort=\"high\"",
            "-",
        ])
    );
}

#[test]
fn codex_plan_mode_is_read_only_and_root_changes_nothing() {
    let spec = launch(
        "codex",
        &LaunchVars {
            mode: Some("plan".into()),
            running_as_root: true,
            ..vars()
        },
    );
    assert_eq!(spec.args[3..5], strings(&["--sandbox", "read-only"]));
    assert_eq!(spec.env, vec![]);
    let full = launch(
        "codex",
        &LaunchVars {
            mode: Some("danger-full-access".into()),
            ..vars()
        },
    );
    assert_eq!(
        full.args[3..5],
        strings(&["--sandbox", "danger-full-access"])
    );
}

/// Codex's bubblewrap sandbox cannot start inside weft's Landlock ruleset (its mounts
/// are denied and every shell command fails while Codex exits 0), so a confined launch
/// skips it in every mode, the planner's read-only mode included; unconfined, the mode
/// picks Codex's own sandbox.
#[test]
fn codex_runs_without_its_own_sandbox_only_when_weft_confines_it() {
    let sandbox = |vars: &LaunchVars| {
        let args = launch("codex", vars).args;
        let at = args
            .iter()
            .position(|a| a == "--sandbox")
            .expect("a sandbox flag");
        assert_eq!(
            args.iter().filter(|a| *a == "--sandbox").count(),
            1,
            "{args:?}"
        );
        args[at + 1].clone()
    };
    for mode in [
        None,
        Some("plan"),
        Some("read-only"),
        Some("workspace-write"),
    ] {
        let confined = LaunchVars {
            mode: mode.map(Into::into),
            confined: true,
            ..vars()
        };
        assert_eq!(sandbox(&confined), "danger-full-access", "mode {mode:?}");
    }
    let unconfined = |mode: Option<&str>| LaunchVars {
        mode: mode.map(Into::into),
        ..vars()
    };
    assert_eq!(sandbox(&unconfined(None)), "workspace-write");
    assert_eq!(sandbox(&unconfined(Some("plan"))), "read-only");
    // The other built-ins have no sandbox of their own to skip: confinement changes nothing.
    for name in ["claude-code", "opencode", "exec"] {
        let confined = LaunchVars {
            confined: true,
            ..vars()
        };
        assert_eq!(
            launch(name, &confined).args,
            launch(name, &vars()).args,
            "{name}"
        );
    }
}

#[test]
fn codex_config_overrides_are_toml_key_value_pairs() {
    // `-c key=value`: the value is parsed as TOML; a quoted string is what the SDK passes.
    let spec = launch("codex", &all_set());
    let overrides: Vec<&String> = spec
        .args
        .iter()
        .zip(spec.args.iter().skip(1))
        .filter(|(flag, _)| *flag == "-c")
        .map(|(_, value)| value)
        .collect();
    assert_eq!(overrides.len(), 2);
    for value in overrides {
        let parsed: toml::Table = toml::from_str(value).expect("a TOML key = value");
        assert_eq!(parsed.len(), 1, "{value}");
    }
}

// ---------------------------------------------------------------------------------------
// opencode

#[test]
fn opencode_autonomous_default() {
    let spec = launch("opencode", &vars());
    assert_eq!(spec.program, "opencode");
    assert_eq!(
        spec.args,
        strings(&["run", "--format", "json", "--agent", "build", "--auto"])
    );
    assert_eq!(spec.env, env(&[("PWD", "/work/tree")]));
    assert_eq!(spec.stdin.as_deref(), Some(PROMPT));
    assert_eq!(spec.stream, StreamKind::OpencodeJson);
    assert!(spec.receives_marker);
}

#[test]
fn opencode_with_model_and_effort() {
    let spec = launch(
        "opencode",
        &LaunchVars {
            model: Some("anthropic/claude-sonnet-4-5".into()),
            ..all_set()
        },
    );
    assert_eq!(
        spec.args,
        strings(&[
            "run",
            "--format",
            "json",
            "--agent",
            "build",
            "--auto",
            "-m",
            "anthropic/claude-sonnet-4-5",
            "--variant",
            "high",
        ])
    );
}

#[test]
fn opencode_plan_mode_has_no_auto_approval() {
    let spec = launch(
        "opencode",
        &LaunchVars {
            mode: Some("plan".into()),
            running_as_root: true,
            ..all_set()
        },
    );
    assert_eq!(
        spec.args,
        strings(&[
            "run",
            "--format",
            "json",
            "--agent",
            "plan",
            "-m",
            "some-model",
            "--variant",
            "high",
        ])
    );
    assert_eq!(spec.env, env(&[("PWD", "/work/tree")]));
}

// ---------------------------------------------------------------------------------------
// exec

#[test]
fn exec_runs_the_prompt_as_a_shell_script() {
    let spec = launch("exec", &vars());
    assert_eq!(spec.program, "sh");
    assert_eq!(spec.args, strings(&["-c", PROMPT]));
    assert_eq!(spec.env, env(&[(PROMPT_ENV, PROMPT)]));
    assert_eq!(spec.stdin, None);
    assert_eq!(spec.stream, StreamKind::Plain);
    assert!(!spec.receives_marker);
    let root = launch(
        "exec",
        &LaunchVars {
            running_as_root: true,
            ..all_set()
        },
    );
    assert_eq!(root, spec);
}

#[test]
fn exec_has_no_modes() {
    let e = builtin("exec")
        .launch(&LaunchVars {
            mode: Some("plan".into()),
            ..vars()
        })
        .unwrap_err();
    assert!(
        matches!(&e, ManifestError::UnknownMode { runner, mode, known, .. }
        if runner == "exec" && mode == "plan" && known.is_empty())
    );
    assert!(e.to_string().contains("defines no modes"), "{e}");
}

#[test]
fn exec_script_really_runs_with_the_rendered_spec() {
    let spec = launch(
        "exec",
        &LaunchVars {
            prompt: "printf '%s|%s' \"$1\" \"$WEFT_PROMPT\" | head -c 200".into(),
            ..vars()
        },
    );
    let out = std::process::Command::new(&spec.program)
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "|printf '%s|%s' \"$1\" \"$WEFT_PROMPT\" | head -c 200"
    );
}

// ---------------------------------------------------------------------------------------
// The built-ins against the real help texts

fn help(file: &str) -> String {
    let path = weft_testkit::samples::agent_output_file(&format!("cli-help/{file}"));
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `flag` appears in `help` as an option name (not as part of a longer one).
fn documents(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + flag.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == ',')
            && after.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    })
}

/// Every launch of a built-in that a task or the planner can ask for: each mode, with and
/// without model and effort, as root or not, and as a planner turn that resumes a session
/// with a system prompt.
fn every_launch(name: &str) -> Vec<LaunchSpec> {
    let manifest = builtin(name);
    let mut modes: Vec<Option<String>> = vec![None];
    modes.extend(manifest.modes().map(|(id, _)| Some(id.to_owned())));
    let turn = TurnVars {
        resume: Some("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into()),
        system: Some("You are weft's planner.".into()),
    };
    let mut specs = Vec::new();
    for mode in modes {
        for base in [vars(), all_set()] {
            for root in [false, true] {
                let v = LaunchVars {
                    mode: mode.clone(),
                    running_as_root: root,
                    ..base.clone()
                };
                specs.push(manifest.launch(&v).unwrap());
                specs.push(manifest.launch_turn(&v, &turn).unwrap());
            }
        }
    }
    specs
}

#[test]
fn the_planner_turns_of_each_agent_read_only_and_resumed() {
    let turn = TurnVars {
        resume: Some("S-1".into()),
        system: Some("SYS".into()),
    };
    let plan = LaunchVars {
        mode: Some(weft_agents::manifest::PLAN_MODE.into()),
        session_id: String::new(),
        ..vars()
    };
    let claude = builtin("claude-code");
    assert!(claude.renders(Var::System) && claude.renders(Var::SessionId));
    let spec = claude.launch_turn(&plan, &turn).unwrap();
    assert_eq!(
        spec.args,
        strings(&[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--resume",
            "S-1",
            "--permission-mode",
            "plan",
            "--disallowedTools",
            "Edit,Write,MultiEdit,NotebookEdit",
            "--append-system-prompt",
            "SYS",
        ])
    );
    let codex = builtin("codex");
    assert!(!codex.renders(Var::System) && !codex.renders(Var::SessionId));
    let spec = codex.launch_turn(&plan, &turn).unwrap();
    assert_eq!(spec.args[3..5], strings(&["--sandbox", "read-only"]));
    assert!(spec.args.ends_with(&strings(&["resume", "S-1", "-"])));
    let opencode = builtin("opencode");
    assert!(!opencode.renders(Var::System));
    let spec = opencode.launch_turn(&plan, &turn).unwrap();
    assert_eq!(
        spec.args,
        strings(&[
            "run",
            "--format",
            "json",
            "--agent",
            "plan",
            "--session",
            "S-1"
        ])
    );
    // A task's launch sets neither.
    let task = claude.launch(&vars()).unwrap();
    assert!(!task.args.iter().any(|a| a == "--resume" || a == "SYS"));
}

fn flags(spec: &LaunchSpec) -> Vec<&str> {
    spec.args
        .iter()
        .map(String::as_str)
        .filter(|a| a.starts_with('-') && *a != "-")
        .collect()
}

/// The value after `flag` in every launch.
fn values_of(specs: &[LaunchSpec], flag: &str) -> Vec<String> {
    specs
        .iter()
        .flat_map(|s| {
            s.args
                .windows(2)
                .filter(|w| w[0] == flag)
                .map(|w| w[1].clone())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_claude_flag_is_in_claudes_help() {
    let help = help("claude-help.txt");
    let specs = every_launch("claude-code");
    for spec in &specs {
        for flag in flags(spec) {
            assert!(documents(&help, flag), "claude --help does not list {flag}");
        }
        // stream-json without --verbose makes claude exit 1.
        assert!(spec.args.contains(&"--verbose".to_owned()));
    }
    assert!(help.contains("-p, --print"));
    assert!(help.contains("--output-format <format>") && help.contains("\"stream-json\""));
    let choices = help
        .split("--permission-mode <mode>")
        .nth(1)
        .and_then(|rest| rest.split("(choices:").nth(1))
        .and_then(|rest| rest.split(')').next())
        .expect("the permission mode choices");
    for value in values_of(&specs, "--permission-mode") {
        assert!(
            choices.contains(&format!("\"{value}\"")),
            "claude does not accept --permission-mode {value}: {choices}"
        );
    }
    for (_, value) in builtin("claude-code").modes() {
        assert!(choices.contains(&format!("\"{value}\"")), "{value}");
    }
}

#[test]
fn every_codex_flag_is_in_codex_exec_help() {
    let help = help("codex-exec-help.txt");
    assert!(help.contains("Usage: codex exec [OPTIONS] [PROMPT]"));
    // The trailing `-` prompt means "read the prompt from stdin".
    assert!(help.contains("(or if `-` is used)"));
    let specs = every_launch("codex");
    for spec in &specs {
        assert_eq!(spec.args[0], "exec");
        assert_eq!(spec.args.last().map(String::as_str), Some("-"));
        for flag in flags(spec) {
            assert!(
                documents(&help, flag),
                "codex exec --help does not list {flag}"
            );
        }
    }
    let possible = help
        .split("--sandbox <SANDBOX_MODE>")
        .nth(1)
        .and_then(|rest| rest.split("[possible values:").nth(1))
        .and_then(|rest| rest.split(']').next())
        .expect("the sandbox values");
    let possible: Vec<&str> = possible.split(',').map(str::trim).collect();
    for value in values_of(&specs, "--sandbox") {
        assert!(possible.contains(&value.as_str()), "--sandbox {value}");
    }
    for removed in ["--full-auto", "-a", "--ask-for-approval"] {
        assert!(
            !documents(&help, removed),
            "{removed} is back in codex exec"
        );
    }
}

#[test]
fn every_opencode_flag_is_in_opencode_run_help() {
    let help = help("opencode-run-help.txt");
    assert!(help.starts_with("opencode run"));
    let specs = every_launch("opencode");
    for spec in &specs {
        assert_eq!(spec.args[0], "run");
        for flag in flags(spec) {
            assert!(
                documents(&help, flag),
                "opencode run --help does not list {flag}"
            );
        }
        assert!(
            spec.env
                .contains(&("PWD".to_owned(), "/work/tree".to_owned()))
        );
    }
    assert!(help.contains("[choices: \"default\", \"json\"]"));
    for value in values_of(&specs, "--agent") {
        assert!(value == "build" || value == "plan", "--agent {value}");
    }
}

#[test]
fn the_documented_version_flags_answer() {
    assert!(documents(&help("claude-help.txt"), "--version"));
    assert!(documents(&help("codex-exec-help.txt"), "--version"));
    assert!(documents(&help("opencode-run-help.txt"), "--version"));
    for name in ["claude-code", "codex", "opencode"] {
        assert_eq!(builtin(name).version_args(), ["--version"]);
    }
}

#[test]
fn builtin_sources_are_the_embedded_files() {
    for name in builtin_names() {
        let source = builtin_source(name).unwrap();
        assert!(source.contains(&format!("name = \"{name}\"")));
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/builtin")
            .join(format!("{name}.toml"));
        let parsed = Manifest::load(&file).unwrap();
        assert_eq!(parsed.args(), builtin(name).args());
    }
}

// ---------------------------------------------------------------------------------------
// Bad manifests

fn bad(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.toml");
    fs::write(&file, text).unwrap();
    let e = Manifest::load(&file).expect_err("the manifest is refused");
    let msg = e.to_string();
    assert!(
        msg.contains(&file.display().to_string()),
        "the message names the file: {msg}"
    );
    msg
}

#[test]
fn unknown_variable_names_entry_and_text() {
    let msg = bad("command = 'a'\nargs = ['run', '--model={{modle}}', '{{prompt}}']");
    assert!(msg.contains("args[1]"), "{msg}");
    assert!(msg.contains("--model={{modle}}"), "{msg}");
    assert!(msg.contains("unknown variable \"modle\""), "{msg}");
}

#[test]
fn unclosed_if() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}', '{{if model}}', '-m', '{{model}}']");
    assert!(
        msg.contains("args[1]") && msg.contains("never closed"),
        "{msg}"
    );
}

#[test]
fn stray_end_if() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}', '{{/if}}']");
    assert!(
        msg.contains("args[1]") && msg.contains("without an open"),
        "{msg}"
    );
}

#[test]
fn malformed_braces() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}', '--x={{model']");
    assert!(
        msg.contains("args[1]") && msg.contains("never closed"),
        "{msg}"
    );
    let msg = bad("command = 'a'\nargs = ['{{prompt}}', '{{model}}{{if effort}}', '{{/if}}']");
    assert!(msg.contains("entries of their own"), "{msg}");
}

#[test]
fn unknown_field() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}']\nargz = []");
    assert!(msg.contains("unknown field `argz`"), "{msg}");
}

#[test]
fn bad_prompt_via() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}']\nprompt_via = 'pipe'");
    assert!(msg.contains("pipe") && msg.contains("stdin"), "{msg}");
}

#[test]
fn bad_stream() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}']\nstream = 'jsonl'");
    assert!(
        msg.contains("jsonl") && msg.contains("claude-stream-json"),
        "{msg}"
    );
}

#[test]
fn wrong_types() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}']\nneeds_tty = 'yes'");
    assert!(msg.contains("needs_tty"), "{msg}");
    let msg = bad("command = 'a'\nargs = ['{{prompt}}']\n[env]\nX = 1");
    assert!(msg.contains("string"), "{msg}");
}

#[test]
fn empty_or_missing_command() {
    let msg = bad("command = ''\nargs = ['{{prompt}}']");
    assert!(msg.contains("command") && msg.contains("empty"), "{msg}");
    let msg = bad("command = '  '\nargs = ['{{prompt}}']");
    assert!(msg.contains("empty"), "{msg}");
    let msg = bad("args = ['{{prompt}}']");
    assert!(msg.contains("missing field `command`"), "{msg}");
    let msg = bad("command = 'npx claude'\nargs = ['{{prompt}}']");
    assert!(msg.contains("put its arguments in args"), "{msg}");
    let msg = bad("command = '~/bin/agent'\nargs = ['{{prompt}}']");
    assert!(msg.contains("not expanded"), "{msg}");
    let msg = bad("command = 'agent '\nargs = ['{{prompt}}']");
    assert!(msg.contains("whitespace"), "{msg}");
}

#[test]
fn name_must_match_the_file() {
    let msg = bad("name = 'other'\ncommand = 'a'\nargs = ['{{prompt}}']");
    assert!(
        msg.contains("other") && msg.contains("broken.toml"),
        "{msg}"
    );
    let e = Manifest::parse("command = 'a'\nargs = ['{{prompt}}']", None).unwrap_err();
    assert!(e.to_string().contains("name"), "{e}");
    let e = Manifest::parse("name = '-x'\ncommand = 'a'\nargs = ['{{prompt}}']", None).unwrap_err();
    assert!(e.to_string().contains("1 to 64"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("my agent.toml");
    fs::write(&file, "command = 'a'\nargs = ['{{prompt}}']").unwrap();
    assert!(Manifest::load(&file).is_err());
}

#[test]
fn the_prompt_must_reach_the_agent() {
    let msg = bad("command = 'a'\nargs = ['run']");
    assert!(
        msg.contains("prompt_via") && msg.contains("{{prompt}}"),
        "{msg}"
    );
    let msg = bad("command = 'a'\nargs = ['run']\nprompt_via = 'file'");
    assert!(msg.contains("{{prompt_file}}"), "{msg}");
    let msg = bad("command = 'a'\nargs = ['--in={{prompt_file}}']\nprompt_via = 'stdin'");
    assert!(msg.contains("only set when prompt_via = \"file\""), "{msg}");
    let msg = bad("command = 'a'\nprompt_via = 'env'\n[env]\nWEFT_PROMPT = 'x'");
    assert!(msg.contains("env.WEFT_PROMPT"), "{msg}");
    // A prompt delivered in a variable of the manifest's own is fine.
    Manifest::parse(
        "name = 'a'\ncommand = 'a'\n[env]\nMY_PROMPT = '{{prompt}}'",
        None,
    )
    .unwrap();
}

#[test]
fn env_values_are_checked_templates() {
    let msg = bad("command = 'a'\nprompt_via = 'stdin'\n[env]\nX = '{{if model}}'");
    assert!(
        msg.contains("env.X") && msg.contains("conditionals"),
        "{msg}"
    );
    let msg = bad("command = 'a'\nprompt_via = 'stdin'\n[root_env]\nX = '{{nope}}'");
    assert!(
        msg.contains("root_env.X") && msg.contains("unknown variable"),
        "{msg}"
    );
    let msg = bad("command = 'a'\nprompt_via = 'stdin'\n[env]\n'A=B' = '1'");
    assert!(msg.contains("'='"), "{msg}");
}

#[test]
fn modes_must_be_used_and_non_empty() {
    let msg = bad("command = 'a'\nprompt_via = 'stdin'\n[modes]\ndefault = 'x'");
    assert!(msg.contains("{{mode}}"), "{msg}");
    let msg = bad("command = 'a'\nargs = ['{{mode}}']\nprompt_via = 'stdin'\n[modes]\nplan = ''");
    assert!(msg.contains("modes.plan"), "{msg}");
}

#[test]
fn version_args_are_not_templates() {
    let msg = bad("command = 'a'\nargs = ['{{prompt}}']\nversion_args = ['{{model}}']");
    assert!(msg.contains("version_args[0]"), "{msg}");
}

#[test]
fn toml_syntax_errors_name_the_file() {
    let msg = bad("command = 'a\nargs = [");
    assert!(msg.contains("runner manifest"), "{msg}");
}

// ---------------------------------------------------------------------------------------
// Launch-time errors and prompt delivery

fn inline(text: &str) -> Manifest {
    Manifest::parse(text, None).expect("the manifest is valid")
}

#[test]
fn unknown_mode_names_runner_mode_and_known_modes() {
    let e = builtin("codex")
        .launch(&LaunchVars {
            mode: Some("yolo".into()),
            ..vars()
        })
        .unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("`codex`") && msg.contains("`yolo`"), "{msg}");
    assert!(
        msg.contains("default, plan, read-only, workspace-write, danger-full-access"),
        "{msg}"
    );
}

#[test]
fn an_empty_mode_is_the_default_mode() {
    let spec = launch(
        "claude-code",
        &LaunchVars {
            mode: Some(String::new()),
            ..vars()
        },
    );
    assert!(
        spec.args
            .ends_with(&strings(&["--permission-mode", "bypassPermissions"]))
    );
}

#[test]
fn without_a_default_mode_the_mode_is_unset() {
    let m = inline(
        "name = 'a'\ncommand = 'a'\nprompt_via = 'stdin'\n\
         args = ['{{if mode}}', '--mode', '{{mode}}', '{{/if}}', '{{mode}}']\n\
         [modes]\nfast = 'f'",
    );
    assert_eq!(m.launch(&vars()).unwrap().args, Vec::<String>::new());
    let spec = m
        .launch(&LaunchVars {
            mode: Some("fast".into()),
            ..vars()
        })
        .unwrap();
    assert_eq!(spec.args, strings(&["--mode", "f", "f"]));
}

#[test]
fn a_partial_entry_with_an_unset_variable_fails_at_launch() {
    let m = inline("name = 'a'\ncommand = 'a'\nargs = ['{{prompt}}', '--model={{model}}']");
    let e = m.launch(&vars()).unwrap_err();
    assert!(
        matches!(&e, ManifestError::UnsetVariable { var: Var::Model, place, .. } if place == "args[1]")
    );
    let msg = e.to_string();
    assert!(
        msg.contains("`a`") && msg.contains("--model={{model}}"),
        "{msg}"
    );
    assert_eq!(
        m.launch(&all_set()).unwrap().args,
        strings(&[PROMPT, "--model=some-model"])
    );
    let m = inline("name = 'a'\ncommand = 'a'\nprompt_via = 'stdin'\n[env]\nM = 'x-{{effort}}'");
    let e = m.launch(&vars()).unwrap_err();
    assert!(e.to_string().contains("env.M"), "{e}");
}

#[test]
fn env_values_that_are_one_unset_variable_are_left_out() {
    let m = inline(
        "name = 'a'\ncommand = 'a'\nprompt_via = 'stdin'\n[env]\nM = '{{model}}'\nE = '{{effort}}'",
    );
    assert_eq!(m.launch(&vars()).unwrap().env, vec![]);
    assert_eq!(
        m.launch(&all_set()).unwrap().env,
        env(&[("M", "some-model"), ("E", "high")])
    );
}

#[test]
fn prompt_by_file() {
    let m = inline(
        "name = 'a'\ncommand = 'a'\nprompt_via = 'file'\nargs = ['--prompt-file', '{{prompt_file}}']",
    );
    assert_eq!(m.prompt_via(), PromptVia::File);
    let spec = m
        .launch(&LaunchVars {
            prompt_file: Some("/tmp/p.md".into()),
            ..vars()
        })
        .unwrap();
    assert_eq!(spec.args, strings(&["--prompt-file", "/tmp/p.md"]));
    assert_eq!(
        spec.prompt_file,
        Some((PathBuf::from("/tmp/p.md"), PROMPT.to_owned()))
    );
    assert_eq!(spec.stdin, None);
    let e = m.launch(&vars()).unwrap_err();
    assert!(e.to_string().contains("no prompt file path"), "{e}");
}

#[test]
fn prompt_by_env() {
    let m = inline("name = 'a'\ncommand = 'a'\nprompt_via = 'env'\n[env]\nX = '1'");
    let spec = m.launch(&vars()).unwrap();
    assert_eq!(spec.env, env(&[("X", "1"), (PROMPT_ENV, PROMPT)]));
    assert_eq!(spec.stdin, None);
    assert_eq!(spec.args, Vec::<String>::new());
}

#[test]
fn defaults_of_an_minimal_manifest() {
    let m = inline("name = 'a'\ncommand = 'a'\nargs = ['{{prompt}}']");
    assert_eq!(m.prompt_via(), PromptVia::Arg);
    assert_eq!(m.version_args(), ["--version"]);
    assert_eq!(m.stream(), StreamKind::Plain);
    assert!(!m.needs_tty());
    assert!(m.marker());
    assert_eq!(m.install(), None);
    let spec = m.launch(&vars()).unwrap();
    assert_eq!(spec.args, strings(&[PROMPT]));
    assert!(spec.receives_marker);
}

// ---------------------------------------------------------------------------------------
// Registry

const AGENT: &str = "command = 'agent'\nargs = ['{{prompt}}']\n";

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let path = dir.join(file);
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn builtins_only_when_no_folders_exist() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, errors) = Registry::load(
        Some(&dir.path().join("missing-a")),
        Some(&dir.path().join("missing-b")),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["claude-code", "codex", "opencode", "exec"]
    );
    assert!(registry.iter().all(|l| l.origin == Origin::BuiltIn));
    let (none, errors) = Registry::load(None, None);
    assert!(errors.is_empty());
    assert_eq!(none.len(), 4);
}

#[test]
fn workspace_overrides_user_overrides_builtin() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let user = user_runners_dir(&home.path().join(".config/weft"));
    let workspace = workspace_runners_dir(work.path());
    assert!(workspace.ends_with(".weft/runners"));
    let user_claude = write(
        &user,
        "claude-code.toml",
        "command = '/opt/claude/bin/claude'\nprompt_via = 'stdin'",
    );
    let user_mine = write(&user, "mine.toml", AGENT);
    let user_both = write(
        &user,
        "both.toml",
        "command = 'user-both'\nargs = ['{{prompt}}']",
    );
    let work_both = write(
        &workspace,
        "both.toml",
        "command = 'work-both'\nargs = ['{{prompt}}']",
    );
    let work_codex = write(
        &workspace,
        "codex.toml",
        "command = './codex-wrapper'\nprompt_via = 'stdin'",
    );

    let (registry, errors) = Registry::load(Some(&workspace), Some(&user));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["claude-code", "codex", "opencode", "exec", "both", "mine"]
    );
    let claude = registry.get("claude-code").unwrap();
    assert_eq!(claude.origin, Origin::User(user_claude));
    assert_eq!(claude.overrides, vec![Origin::BuiltIn]);
    assert_eq!(claude.manifest.command(), "/opt/claude/bin/claude");

    let codex = registry.get("codex").unwrap();
    assert_eq!(codex.origin, Origin::Workspace(work_codex));
    assert_eq!(
        codex.manifest.command(),
        workspace.join("codex-wrapper").to_str().unwrap()
    );

    let both = registry.get("both").unwrap();
    assert_eq!(both.origin, Origin::Workspace(work_both));
    assert_eq!(both.overrides, vec![Origin::User(user_both)]);
    assert_eq!(both.manifest.command(), "work-both");

    let mine = registry.get("mine").unwrap();
    assert_eq!(mine.origin, Origin::User(user_mine.clone()));
    assert_eq!(mine.origin.path(), Some(user_mine.as_path()));
    assert!(mine.origin.to_string().starts_with("user manifest"));
    assert!(registry.get("nope").is_none());
    assert_eq!((&registry).into_iter().count(), 6);
}

#[test]
fn a_broken_manifest_is_reported_and_the_rest_still_load() {
    let work = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let workspace = workspace_runners_dir(work.path());
    write(user.path(), "fine.toml", AGENT);
    // A broken workspace override leaves the user manifest in force.
    let broken = write(
        &workspace,
        "fine.toml",
        "command = 'x'\nargs = ['{{nope}}']",
    );
    let mismatch = write(
        &workspace,
        "renamed.toml",
        "name = 'original'\ncommand = 'x'\nargs = ['{{prompt}}']",
    );
    write(&workspace, "good.toml", AGENT);
    write(&workspace, "notes.md", "not a manifest");
    write(&workspace, ".hidden.toml", "garbage = ");
    fs::create_dir_all(workspace.join("folder.toml")).unwrap();

    let (registry, errors) = Registry::load(Some(&workspace), Some(user.path()));
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(
        messages[0].contains(&broken.display().to_string()),
        "{messages:#?}"
    );
    assert!(
        messages[1].contains(&mismatch.display().to_string()),
        "{messages:#?}"
    );
    assert!(matches!(
        registry.get("fine").unwrap().origin,
        Origin::User(_)
    ));
    assert!(registry.get("good").is_some());
    assert!(registry.get("original").is_none() && registry.get("renamed").is_none());
}

#[test]
fn an_unreadable_folder_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = write(dir.path(), "runners", "a file, not a folder");
    let (registry, errors) = Registry::load(Some(&not_a_dir), None);
    assert_eq!(registry.len(), 4);
    assert_eq!(errors.len(), 1);
    assert!(matches!(errors[0], ManifestError::ReadDir { .. }));
}

// ---------------------------------------------------------------------------------------
// Preflight, against real tiny programs

const SHORT: Duration = Duration::from_secs(5);

struct Bin {
    dir: tempfile::TempDir,
}

impl Bin {
    fn new() -> Bin {
        Bin {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn file(&self, name: &str, contents: &[u8], mode: u32) -> PathBuf {
        let path = self.dir.path().join(name);
        fs::write(&path, contents).unwrap();
        fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn script(&self, name: &str, body: &str) -> PathBuf {
        self.file(name, format!("#!/bin/sh\n{body}\n").as_bytes(), 0o755)
    }

    /// Only this folder.
    fn path_only(&self) -> OsString {
        self.dir.path().as_os_str().to_owned()
    }

    /// This folder, then the system's.
    fn path(&self) -> OsString {
        let mut path = self.path_only();
        path.push(":/usr/bin:/bin");
        path
    }
}

fn runner(name: &str, command: &str) -> Manifest {
    Manifest::parse(
        &format!("name = '{name}'\ncommand = '{command}'\nargs = ['{{{{prompt}}}}']"),
        None,
    )
    .unwrap()
}

#[test]
fn preflight_missing_binary() {
    let bin = Bin::new();
    let a = preflight::check(&builtin("claude-code"), Some(&bin.path_only()), SHORT);
    assert!(!a.available);
    assert_eq!(a.runner, "claude-code");
    assert_eq!(a.problem, Some(Problem::NotFound));
    assert_eq!(a.program, None);
    assert_eq!(
        a.reason.as_deref(),
        Some(
            "claude was not found on PATH; install it with npm i -g @anthropic-ai/claude-code \
             or set command in .weft/runners/claude-code.toml"
        )
    );
    let missing = bin.dir.path().join("nope");
    let a = preflight::check(
        &runner("x", missing.to_str().unwrap()),
        Some(&bin.path()),
        SHORT,
    );
    assert_eq!(a.problem, Some(Problem::NotFound));
    assert!(a.reason.unwrap().contains("does not exist"));
}

#[test]
fn preflight_names_the_manifest_file_to_fix() {
    let bin = Bin::new();
    let file = write(
        bin.dir.path(),
        "mine.toml",
        "command = 'weft-no-such-agent'\nargs = ['{{prompt}}']",
    );
    let m = Manifest::load(&file).unwrap();
    let a = preflight::check(&m, Some(&bin.path_only()), SHORT);
    let reason = a.reason.unwrap();
    assert!(
        reason.contains(&format!("fix command in {}", file.display())),
        "{reason}"
    );
}

#[test]
fn preflight_non_executable_file() {
    let bin = Bin::new();
    bin.file("agent", b"#!/bin/sh\necho 1\n", 0o644);
    let a = preflight::check(&runner("x", "agent"), Some(&bin.path()), SHORT);
    assert!(!a.available);
    assert_eq!(a.problem, Some(Problem::NotExecutable));
    assert_eq!(a.program, Some(bin.dir.path().join("agent")));
    let reason = a.reason.unwrap();
    assert!(
        reason.contains("not executable") && reason.contains("chmod +x"),
        "{reason}"
    );
}

#[test]
fn preflight_prefers_a_later_executable_over_an_earlier_non_executable() {
    let first = Bin::new();
    let second = Bin::new();
    first.file("agent", b"#!/bin/sh\necho first\n", 0o644);
    second.script("agent", "echo second");
    let mut path = first.path_only();
    path.push(":");
    path.push(second.path());
    let a = preflight::check(&runner("x", "agent"), Some(&path), SHORT);
    assert!(a.available, "{a:?}");
    assert_eq!(a.version.as_deref(), Some("second"));
    assert_eq!(
        resolve_program("agent", Some(&path)).unwrap(),
        second.dir.path().join("agent")
    );
    assert!(matches!(
        resolve_program("weft-nothing", Some(&path)),
        Err(ResolveError::NotOnPath { .. })
    ));
}

#[test]
fn preflight_a_folder_is_not_a_program() {
    let bin = Bin::new();
    let folder = bin.dir.path().join("agent-dir");
    fs::create_dir_all(&folder).unwrap();
    let a = preflight::check(
        &runner("x", folder.to_str().unwrap()),
        Some(&bin.path()),
        SHORT,
    );
    assert_eq!(a.problem, Some(Problem::NotExecutable));
    assert!(a.reason.unwrap().contains("folder"));
}

#[test]
fn preflight_probe_that_exits_3() {
    let bin = Bin::new();
    bin.script(
        "agent",
        "echo starting\necho 'agent: config is broken' >&2\nexit 3",
    );
    let a = preflight::check(&runner("x", "agent"), Some(&bin.path()), SHORT);
    assert!(!a.available);
    assert_eq!(
        a.problem,
        Some(Problem::ProbeFailed {
            exit_code: Some(3),
            signal: None
        })
    );
    let reason = a.reason.unwrap();
    assert!(reason.contains("exited with code 3"), "{reason}");
    assert!(reason.contains("agent: config is broken"), "{reason}");
    assert!(reason.contains("--version"), "{reason}");
}

fn gone(pid: &str) -> bool {
    // Gone, or a zombie nobody has reaped yet (PID 1 in a container may not reap).
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn preflight_probe_that_hangs_is_killed_with_its_group() {
    let bin = Bin::new();
    let pids = bin.dir.path().join("pids");
    bin.script(
        "agent",
        &format!(
            "sleep 60 &\necho $! > {pids}.child\necho $$ > {pids}\nwait",
            pids = pids.display()
        ),
    );
    let started = Instant::now();
    let a = preflight::check(
        &runner("x", "agent"),
        Some(&bin.path()),
        Duration::from_millis(400),
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert!(took >= Duration::from_millis(400), "took {took:?}");
    assert!(!a.available);
    assert_eq!(a.problem, Some(Problem::TimedOut));
    assert!(a.reason.unwrap().contains("did not answer within 400ms"));
    let leader = fs::read_to_string(&pids).unwrap();
    let child = fs::read_to_string(pids.with_extension("child")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !(gone(&leader) && gone(&child)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(&leader), "the probe {leader} still runs");
    assert!(gone(&child), "its child {child} still runs");
}

#[test]
fn preflight_reads_the_version() {
    let bin = Bin::new();
    bin.script(
        "agent",
        "[ \"$1\" = --version ] || exit 9\nread line || true\necho\necho 'myagent 1.2.3 (build 7)'\necho second line",
    );
    let a = preflight::check(&runner("x", "agent"), Some(&bin.path()), SHORT);
    assert!(a.available, "{a:?}");
    assert_eq!(a.version.as_deref(), Some("myagent 1.2.3 (build 7)"));
    assert_eq!(a.reason, None);
    assert_eq!(a.problem, None);
    assert_eq!(a.program, Some(bin.dir.path().join("agent")));
}

#[test]
fn preflight_version_on_stderr_and_no_version_at_all() {
    let bin = Bin::new();
    bin.script("on-stderr", "echo 'v9 on stderr' >&2");
    bin.script("silent", "exit 0");
    let a = preflight::check(&runner("x", "on-stderr"), Some(&bin.path()), SHORT);
    assert_eq!(a.version.as_deref(), Some("v9 on stderr"));
    let a = preflight::check(&runner("x", "silent"), Some(&bin.path()), SHORT);
    assert!(a.available);
    assert_eq!(a.version, None);
}

#[test]
fn preflight_a_probe_that_leaves_a_process_holding_its_output() {
    let bin = Bin::new();
    let pid = bin.dir.path().join("pid");
    bin.script(
        "agent",
        &format!("echo 'agent 2.0'\nsleep 60 &\necho $! > {}", pid.display()),
    );
    let started = Instant::now();
    let a = preflight::check(&runner("x", "agent"), Some(&bin.path()), SHORT);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(a.available, "{a:?}");
    assert_eq!(a.version.as_deref(), Some("agent 2.0"));
    let left = fs::read_to_string(&pid).unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !gone(&left) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(&left), "the leftover {left} was not stopped");
}

#[test]
fn preflight_garbage_is_an_exec_format_error() {
    let bin = Bin::new();
    bin.file(
        "garbage",
        b"\x7fNOTELF\x00\x01\x02\xff\xfe binary junk",
        0o755,
    );
    bin.file("no-shebang", b"echo hi\n", 0o755);
    for name in ["garbage", "no-shebang"] {
        let a = preflight::check(&runner("x", name), Some(&bin.path()), SHORT);
        assert!(!a.available);
        assert_eq!(a.problem, Some(Problem::ExecFormat), "{name}: {a:?}");
        assert!(a.reason.unwrap().contains("exec format error"));
    }
}

#[test]
fn preflight_missing_interpreter() {
    let bin = Bin::new();
    bin.file("agent", b"#!/nonexistent/interpreter\n", 0o755);
    let a = preflight::check(&runner("x", "agent"), Some(&bin.path()), SHORT);
    assert_eq!(a.problem, Some(Problem::InterpreterNotFound), "{a:?}");
    assert!(a.reason.unwrap().contains("interpreter"));
}

#[test]
fn preflight_exec_runner_is_available() {
    let a = preflight::check(&builtin("exec"), None, SHORT);
    assert!(a.available, "{a:?}");
    assert_eq!(a.version.as_deref(), Some("POSIX sh"));
    assert!(a.program.unwrap().is_absolute());
    let a = preflight::check(
        &builtin("exec"),
        Some(std::ffi::OsStr::new("/usr/bin:/bin")),
        SHORT,
    );
    assert!(a.available, "{a:?}");
}

#[test]
fn preflight_of_every_builtin_with_an_empty_path() {
    let bin = Bin::new();
    let registry = Registry::builtin();
    let all = preflight::check_all(&registry, Some(&bin.path_only()), SHORT);
    assert_eq!(all.len(), 4);
    for a in &all {
        assert!(!a.available);
        assert_eq!(a.problem, Some(Problem::NotFound));
        let reason = a.reason.as_deref().unwrap();
        assert!(
            reason.contains(&format!(".weft/runners/{}.toml", a.runner)),
            "{reason}"
        );
    }
    assert!(
        all[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("npm i -g @openai/codex")
    );
    assert!(
        all[2]
            .reason
            .as_deref()
            .unwrap()
            .contains("npm i -g opencode-ai")
    );
    assert!(
        all[3]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("sh was not found")
    );
}

#[test]
fn preflight_passes_its_path_to_the_probe() {
    let bin = Bin::new();
    bin.script("helper-weft", "echo helped");
    bin.script("agent", "helper-weft");
    let a = preflight::check(&runner("x", "agent"), Some(&bin.path()), SHORT);
    assert_eq!(a.version.as_deref(), Some("helped"), "{a:?}");
}

#[test]
fn claude_code_relays_permission_requests_only_in_asking_modes() {
    let ask = LaunchVars {
        mode: Some("ask".into()),
        relay: true,
        ..vars()
    };
    let spec = launch("claude-code", &ask);
    assert_eq!(
        spec.relay,
        Some(weft_agents::manifest::RelayProtocol::ClaudeStdio)
    );
    let args = spec.args.join(" ");
    assert!(
        args.contains(
            "--permission-mode default --input-format stream-json --permission-prompt-tool stdio"
        ),
        "{args}"
    );
    // The default mode bypasses permissions: nothing to relay.
    let spec = launch(
        "claude-code",
        &LaunchVars {
            relay: true,
            ..vars()
        },
    );
    assert_eq!(spec.relay, None);
    assert!(!spec.args.iter().any(|a| a == "--permission-prompt-tool"));
    // Nobody to relay to: the CLI refuses such tools itself, as before.
    let spec = launch(
        "claude-code",
        &LaunchVars {
            relay: false,
            ..ask
        },
    );
    assert_eq!(spec.relay, None);
    assert!(!spec.args.iter().any(|a| a == "--input-format"));
}

#[test]
fn a_relay_needs_a_known_protocol_stdin_and_the_claude_stream() {
    let base = "command = \"x\"\nargs = [\"{{mode}}\"]\nprompt_via = \"stdin\"\nstream = \"claude-stream-json\"\n[modes]\nask = \"default\"\n";
    let ok = format!("name = \"x\"\nrelay = \"claude-stdio\"\nrelay_modes = [\"ask\"]\n{base}");
    let manifest = Manifest::parse(&ok, None).unwrap();
    assert!(manifest.relays(Some("ask")));
    assert!(!manifest.relays(None));
    for (text, problem) in [
        (
            format!("name = \"x\"\nrelay = \"smoke\"\n{base}"),
            "known protocols",
        ),
        (
            format!("name = \"x\"\nrelay = \"claude-stdio\"\nrelay_modes = [\"nope\"]\n{base}"),
            "[modes]",
        ),
        (
            format!("name = \"x\"\nrelay_modes = [\"ask\"]\n{base}"),
            "set `relay`",
        ),
        (
            "name = \"x\"\ncommand = \"x\"\nrelay = \"claude-stdio\"\n".to_owned(),
            "prompt_via",
        ),
    ] {
        let error = Manifest::parse(&text, None).unwrap_err().to_string();
        assert!(error.contains(problem), "{error}");
    }
}

#[test]
fn env_pass_patterns_are_read_and_a_bad_one_is_refused_naming_it() {
    let manifest = Manifest::parse(
        "name = 'a'\ncommand = 'a'\nargs = ['{{prompt}}']\nenv_pass = ['MYAGENT_*', '*_API_KEY']",
        None,
    )
    .unwrap();
    assert_eq!(manifest.env_pass(), ["MYAGENT_*", "*_API_KEY"]);
    let e = Manifest::parse(
        "name = 'a'\ncommand = 'a'\nargs = ['{{prompt}}']\nenv_pass = ['OK_*', 'NOT OK']",
        None,
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("env_pass") && text.contains("NOT OK"),
        "{text}"
    );
}

#[test]
fn the_built_in_agents_pass_their_own_variables_and_exec_the_build_toolchains() {
    let passes = |runner: &str, name: &str| {
        let manifest = Manifest::builtin(runner).unwrap();
        weft_agents::contain::env::filter([(name, std::ffi::OsStr::new("v"))], manifest.env_pass())
            .0
            .len()
            == 1
    };
    for (runner, name) in [
        ("claude-code", "ANTHROPIC_API_KEY"),
        ("claude-code", "CLAUDE_CONFIG_DIR"),
        ("codex", "OPENAI_BASE_URL"),
        ("codex", "CODEX_HOME"),
        ("opencode", "OPENCODE_CONFIG"),
        ("opencode", "XDG_DATA_HOME"),
        ("claude-code", "HTTPS_PROXY"),
        ("codex", "https_proxy"),
        ("opencode", "NODE_EXTRA_CA_CERTS"),
        ("claude-code", "DISABLE_AUTOUPDATER"),
        ("exec", "CARGO_HOME"),
        ("exec", "VIRTUAL_ENV"),
        ("exec", "SSL_CERT_FILE"),
    ] {
        assert!(passes(runner, name), "{runner} should pass {name}");
    }
    for (runner, name) in [
        ("claude-code", "AWS_SECRET_ACCESS_KEY"),
        ("codex", "DATABASE_URL"),
        ("opencode", "GITHUB_TOKEN"),
        ("exec", "ANTHROPIC_API_KEY"),
        ("exec", "GIT_DIR"),
    ] {
        assert!(!passes(runner, name), "{runner} should not pass {name}");
    }
}

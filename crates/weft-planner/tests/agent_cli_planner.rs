//! Agent-CLI planners against recorded streams: a stand-in script records its argv, stdin
//! and environment, prints a real recorded stream (and stderr), and exits with the code the
//! real CLI had.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use weft_agents::contain::{Containment, WritePaths};
use weft_planner::provider::agent_cli::{AgentCliConfig, AgentCliKind, AgentCliPlanner};
use weft_planner::{AgentPlanner, AgentReply, ProviderError, StepOutcome, StreamEvent};

const SYSTEM: &str = "You are weft's planner.\nAnswer with a plan as JSON.";
const MESSAGE: &str = "Plan: add a --dry-run flag.";

fn fixture(relative: &str) -> PathBuf {
    weft_testkit::samples::agent_output_file(relative)
}

/// A stand-in CLI: turn `n` prints `out.n` on stdout and `err.n` on stderr, sources
/// `after.n` if present, and exits with `code.n` (default 0).
struct FakeCli {
    dir: tempfile::TempDir,
    workspace: PathBuf,
    program: PathBuf,
}

impl FakeCli {
    fn new() -> FakeCli {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        fs_err::create_dir(&workspace).unwrap();
        let program = dir.path().join("fake-cli");
        let d = dir.path().display();
        let script = format!(
            r#"#!/bin/sh
d='{d}'
n=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$d/count"
: > "$d/argv.$n"
for a in "$@"; do printf '%s\0' "$a" >> "$d/argv.$n"; done
cat > "$d/stdin.$n"
printf '%s' "$PWD" > "$d/pwd.$n"
pwd -P > "$d/cwd.$n"
env > "$d/env.$n"
if [ -f "$d/out.$n" ]; then cat "$d/out.$n"; fi
if [ -f "$d/err.$n" ]; then cat "$d/err.$n" >&2; fi
if [ -f "$d/after.$n" ]; then . "$d/after.$n"; fi
exit "$(cat "$d/code.$n" 2>/dev/null || echo 0)"
"#
        );
        fs_err::write(&program, script).unwrap();
        fs_err::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeCli {
            dir,
            workspace,
            program,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Turn `n` replays `fixture` and exits with `code`.
    fn turn(&self, n: u32, fixture_file: &str, code: i32) -> &Self {
        fs_err::copy(fixture(fixture_file), self.path(&format!("out.{n}"))).unwrap();
        self.code(n, code)
    }

    fn raw_turn(&self, n: u32, stdout: &str, stderr: &str, code: i32) -> &Self {
        fs_err::write(self.path(&format!("out.{n}")), stdout).unwrap();
        fs_err::write(self.path(&format!("err.{n}")), stderr).unwrap();
        self.code(n, code)
    }

    fn code(&self, n: u32, code: i32) -> &Self {
        fs_err::write(self.path(&format!("code.{n}")), code.to_string()).unwrap();
        self
    }

    fn stderr_from(&self, n: u32, fixture_file: &str) -> &Self {
        fs_err::copy(fixture(fixture_file), self.path(&format!("err.{n}"))).unwrap();
        self
    }

    fn after(&self, n: u32, shell: &str) -> &Self {
        fs_err::write(self.path(&format!("after.{n}")), shell).unwrap();
        self
    }

    fn argv(&self, n: u32) -> Vec<String> {
        let raw = fs_err::read_to_string(self.path(&format!("argv.{n}"))).unwrap();
        raw.split_terminator('\0').map(str::to_owned).collect()
    }

    fn stdin(&self, n: u32) -> String {
        fs_err::read_to_string(self.path(&format!("stdin.{n}"))).unwrap()
    }

    fn read(&self, name: &str) -> String {
        fs_err::read_to_string(self.path(name)).unwrap()
    }

    fn planner(&self, kind: AgentCliKind) -> AgentCliPlanner {
        let mut config = AgentCliConfig::new(kind, &self.workspace);
        config.program = self.program.display().to_string();
        config.turn_timeout = Duration::from_secs(30);
        AgentCliPlanner::new(config)
    }
}

/// One turn; also checks that the streamed text adds up to the reply text.
fn send(planner: &mut AgentCliPlanner) -> (Result<AgentReply, ProviderError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let result = planner.send(SYSTEM, MESSAGE, &mut |e| events.push(e));
    if let Ok(reply) = &result {
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, reply.text, "Text events must add up to the reply");
    }
    (result, events)
}

fn agent_error(result: Result<AgentReply, ProviderError>, runner: &str) -> String {
    match result {
        Err(err @ ProviderError::Agent { .. }) => {
            let ProviderError::Agent { runner: r, .. } = &err else {
                unreachable!()
            };
            assert_eq!(r, runner);
            err.to_string()
        }
        other => panic!("expected an Agent error, got {other:?}"),
    }
}

fn value_after<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter()
        .position(|a| a == flag)
        .and_then(|i| argv.get(i + 1))
        .map(String::as_str)
}

// ---------------------------------------------------------------- Claude Code

#[test]
fn claude_reads_a_tool_call_and_resumes_its_session() {
    let cli = FakeCli::new();
    cli.turn(1, "claude/cc2.1.197-stream-json-tool-read-success.jsonl", 0)
        .turn(2, "claude/cc2.1.197-stream-json-tool-read-success.jsonl", 0);
    let mut planner = cli.planner(AgentCliKind::ClaudeCode);
    assert_eq!(planner.label(), "claude-code");

    let (result, events) = send(&mut planner);
    let reply = result.unwrap();
    assert_eq!(
        reply.text,
        "I will use a tool first.\n\nAll done. ORCH-DONE-MARKER-7f3a9c"
    );
    assert_eq!(reply.steps.len(), 1);
    let step = &reply.steps[0];
    assert_eq!(step.tool, "Read");
    assert_eq!(step.input, "/tmp/mockproj-claude/hello.txt");
    assert_eq!(step.outcome, StepOutcome::Success);
    assert!(step.detail.contains("hello from the fixture file"));
    let session = "11111111-2222-4333-8444-555555555555";
    assert_eq!(reply.session_id.as_deref(), Some(session));
    assert!(!reply.truncated);
    let usage = reply.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (240, 40));
    assert!(events.contains(&StreamEvent::ToolCallStarted {
        name: "Read".to_owned()
    }));
    assert_eq!(planner.session_id(), Some(session));

    // First turn: a fresh UUID v4 session, the system text as a flag, the message on stdin.
    let argv1 = cli.argv(1);
    assert_eq!(
        &argv1[..4],
        ["-p", "--output-format", "stream-json", "--verbose"]
    );
    assert_eq!(value_after(&argv1, "--permission-mode"), Some("plan"));
    assert_eq!(
        value_after(&argv1, "--disallowedTools"),
        Some("Edit,Write,MultiEdit,NotebookEdit")
    );
    assert_eq!(value_after(&argv1, "--append-system-prompt"), Some(SYSTEM));
    let fresh = value_after(&argv1, "--session-id").expect("--session-id on the first turn");
    assert_eq!(uuid::Uuid::parse_str(fresh).unwrap().get_version_num(), 4);
    assert!(!argv1.contains(&"--resume".to_owned()));
    assert_eq!(cli.stdin(1), MESSAGE);
    assert_eq!(
        cli.read("cwd.1"),
        format!("{}\n", cli.workspace.canonicalize().unwrap().display())
    );

    // Second turn resumes the session the stream reported. The system prompt is a process
    // flag Claude does not store with the session, so it is passed again.
    let (result, _) = send(&mut planner);
    result.unwrap();
    let argv2 = cli.argv(2);
    assert_eq!(value_after(&argv2, "--resume"), Some(session));
    assert!(!argv2.contains(&"--session-id".to_owned()));
    assert_eq!(value_after(&argv2, "--append-system-prompt"), Some(SYSTEM));
    assert_eq!(cli.stdin(2), MESSAGE);
}

#[test]
fn claude_not_logged_in_shows_the_cli_text() {
    let cli = FakeCli::new();
    cli.turn(1, "claude/cc2.1.197-stream-json-not-logged-in.jsonl", 1);
    let mut planner = cli.planner(AgentCliKind::ClaudeCode);
    let (result, events) = send(&mut planner);
    let text = agent_error(result, "claude-code");
    assert!(text.contains("Not logged in · Please run /login"), "{text}");
    // The CLI's synthetic message is not the assistant's reply.
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Text(_))));
    // A failed first turn commits no session: the next one starts fresh.
    assert_eq!(planner.session_id(), None);
}

#[test]
fn claude_invalid_key_401() {
    let cli = FakeCli::new();
    cli.turn(
        1,
        "claude/cc2.1.197-stream-json-invalid-api-key-401.jsonl",
        1,
    );
    let text = agent_error(
        send(&mut cli.planner(AgentCliKind::ClaudeCode)).0,
        "claude-code",
    );
    assert!(
        text.contains("Invalid API key · Fix external API key"),
        "{text}"
    );
    assert!(text.contains("HTTP 401"), "{text}");
}

#[test]
fn claude_bad_model_404() {
    let cli = FakeCli::new();
    cli.turn(1, "claude/cc2.1.197-stream-json-bad-model-404.jsonl", 1);
    let text = agent_error(
        send(&mut cli.planner(AgentCliKind::ClaudeCode)).0,
        "claude-code",
    );
    assert!(text.contains("issue with the selected model"), "{text}");
}

#[test]
fn claude_permission_refusals_are_denied_steps() {
    let cli = FakeCli::new();
    cli.turn(
        1,
        "claude/cc2.1.197-stream-json-permission-required-denied.jsonl",
        0,
    )
    .turn(
        2,
        "claude/cc2.1.197-stream-json-write-outside-workdir-denied.jsonl",
        0,
    );
    let mut planner = cli.planner(AgentCliKind::ClaudeCode);

    let reply = send(&mut planner).0.unwrap();
    assert_eq!(reply.steps.len(), 1, "{:?}", reply.steps);
    let step = &reply.steps[0];
    assert_eq!(step.tool, "Bash");
    assert_eq!(step.input, r#"python3 -c "print(6*7)""#);
    assert_eq!(step.outcome, StepOutcome::Denied);
    assert_eq!(step.detail, "This command requires approval");
    assert!(reply.text.ends_with("All done. ORCH-DONE-MARKER-7f3a9c"));

    let reply = send(&mut planner).0.unwrap();
    assert_eq!(reply.steps.len(), 1);
    assert_eq!(reply.steps[0].outcome, StepOutcome::Denied);
    assert!(reply.steps[0].detail.contains("was blocked"));
}

#[test]
fn claude_max_turns_uses_the_errors_list() {
    let cli = FakeCli::new();
    cli.turn(1, "claude/cc2.1.197-stream-json-error-max-turns.jsonl", 1);
    let text = agent_error(
        send(&mut cli.planner(AgentCliKind::ClaudeCode)).0,
        "claude-code",
    );
    assert!(
        text.contains("Reached maximum number of turns (1)"),
        "{text}"
    );
    assert!(text.contains("error_max_turns"), "{text}");
}

#[test]
fn claude_stream_without_a_result_is_an_error_even_with_exit_0() {
    let cli = FakeCli::new();
    cli.turn(1, "claude/failure-hang.stdout.jsonl", 0);
    let text = agent_error(
        send(&mut cli.planner(AgentCliKind::ClaudeCode)).0,
        "claude-code",
    );
    assert!(text.contains("without finishing the turn"), "{text}");
}

#[test]
fn extra_env_reaches_the_cli() {
    let cli = FakeCli::new();
    cli.turn(1, "claude/cc2.1.197-stream-json-tool-read-success.jsonl", 0);
    let mut config = cli.planner(AgentCliKind::ClaudeCode).config().clone();
    config
        .env
        .push(("WEFT_TEST_EXTRA".to_owned(), "on".to_owned()));
    send(&mut AgentCliPlanner::new(config)).0.unwrap();
    assert!(cli.read("env.1").lines().any(|l| l == "WEFT_TEST_EXTRA=on"));
}

// ---------------------------------------------------------------- Codex

#[test]
fn codex_answers_and_resumes_its_thread() {
    let cli = FakeCli::new();
    cli.turn(1, "codex/cx0.171.0-exec-json-success.jsonl", 0)
        .turn(2, "codex/cx0.171.0-exec-json-resume.jsonl", 0);
    let mut planner = cli.planner(AgentCliKind::Codex);
    assert_eq!(planner.label(), "codex");

    let reply = send(&mut planner).0.unwrap();
    assert_eq!(reply.text, "All done. ORCH-DONE-MARKER-7f3a9c");
    assert!(reply.steps.is_empty());
    let thread = "01a2294c-cdab-7ec2-b19d-8fe47915ddcd";
    assert_eq!(reply.session_id.as_deref(), Some(thread));
    let usage = reply.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (1200, 20));

    let argv1 = cli.argv(1);
    assert_eq!(
        &argv1[..7],
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "read-only",
            "-c",
            "approval_policy=\"never\""
        ]
    );
    assert_eq!(argv1.last().map(String::as_str), Some("-"));
    assert!(!argv1.contains(&"resume".to_owned()));
    // `codex exec` has no system-prompt option: the first message carries it.
    let stdin1 = cli.stdin(1);
    assert!(stdin1.starts_with(&format!(
        "<planner-instructions>\n{SYSTEM}\n</planner-instructions>"
    )));
    assert!(stdin1.ends_with(MESSAGE));

    let reply = send(&mut planner).0.unwrap();
    assert_eq!(reply.session_id.as_deref(), Some(thread));
    let argv2 = cli.argv(2);
    assert_eq!(&argv2[argv2.len() - 3..], ["resume", thread, "-"]);
    assert_eq!(cli.stdin(2), MESSAGE);
}

/// Confined by weft, the Codex planner cannot use Codex's read-only sandbox (bubblewrap
/// cannot start inside Landlock): it runs `danger-full-access` and weft's planner ruleset,
/// which grants no write to the workspace, is the sandbox. Unconfined it stays read-only.
#[test]
fn a_confined_codex_planner_runs_without_codex_sandbox_and_an_unconfined_one_read_only() {
    let cli = FakeCli::new();
    let sandbox = |planner: &AgentCliPlanner| {
        let turn = planner.plan_turn(SYSTEM, MESSAGE);
        let args = planner.launch(&turn).unwrap().args;
        value_after(&args, "--sandbox").map(str::to_owned)
    };
    let unconfined = cli.planner(AgentCliKind::Codex);
    assert_eq!(sandbox(&unconfined).as_deref(), Some("read-only"));

    let mut config = unconfined.config().clone();
    config.contain = Some(Containment {
        supervisor: cli.program.clone(),
        kill_grace: Duration::from_secs(1),
        confine: Some(WritePaths::default()),
        tmp_dir: None,
        env: None,
    });
    let confined = AgentCliPlanner::new(config.clone());
    assert_eq!(sandbox(&confined).as_deref(), Some("danger-full-access"));

    // Contained but not confined (`confine = "off"`): Codex's own sandbox again.
    config.contain.as_mut().unwrap().confine = None;
    assert_eq!(
        sandbox(&AgentCliPlanner::new(config)).as_deref(),
        Some("read-only")
    );
}

#[test]
fn codex_records_commands_as_steps() {
    let cli = FakeCli::new();
    cli.turn(1, "codex/cx0.171.0-exec-json-write-file-success.jsonl", 0);
    let (result, events) = send(&mut cli.planner(AgentCliKind::Codex));
    let reply = result.unwrap();
    assert_eq!(
        reply.text,
        "I will create hello.txt now.\n\nChecking the file.\n\nAll done: hello.txt has been written. WEFT_DONE_0123456789abcdef"
    );
    let steps: Vec<(&str, StepOutcome)> = reply
        .steps
        .iter()
        .map(|s| (s.tool.as_str(), s.outcome))
        .collect();
    assert_eq!(
        steps,
        [
            ("file_change", StepOutcome::Success),
            ("command_execution", StepOutcome::Success)
        ]
    );
    assert_eq!(reply.steps[1].input, "/bin/bash -lc 'cat hello.txt && ls'");
    assert_eq!(reply.steps[1].detail, "hi\nhello.txt\n");
    assert!(events.contains(&StreamEvent::ToolCallStarted {
        name: "command_execution".to_owned()
    }));
}

#[test]
fn codex_turn_failed_messages_are_shown() {
    for (file, expected) in [
        (
            "codex/cx0.171.0-exec-json-invalid-api-key-401.jsonl",
            "unexpected status 401 Unauthorized: Incorrect API key provided",
        ),
        (
            "codex/cx0.171.0-exec-json-bad-model.jsonl",
            "The requested model 'nonexistent-model' does not exist.",
        ),
        (
            "codex/cx0.171.0-exec-json-missing-env-key.jsonl",
            "Missing environment variable: `MOCK_API_KEY`.",
        ),
    ] {
        let cli = FakeCli::new();
        cli.turn(1, file, 1);
        let mut planner = cli.planner(AgentCliKind::Codex);
        let text = agent_error(send(&mut planner).0, "codex");
        assert!(text.contains(expected), "{file}: {text}");
        assert!(!text.contains("Reconnecting"), "{file}: {text}");
        assert_eq!(planner.session_id(), None);
    }
}

#[test]
fn codex_endless_reconnects_are_killed_by_the_turn_timeout() {
    let cli = FakeCli::new();
    cli.turn(1, "codex/cx0.171.0-exec-json-no-network-killed.jsonl", 0)
        .after(1, "sleep 60 & echo $! > \"$d/sleep.pid\"\nwait\n");
    let mut config = cli.planner(AgentCliKind::Codex).config().clone();
    config.turn_timeout = Duration::from_secs(1);
    let mut planner = AgentCliPlanner::new(config);

    let started = Instant::now();
    let (result, _) = send(&mut planner);
    let elapsed = started.elapsed();
    match result {
        Err(ProviderError::AgentTimeout {
            runner,
            after,
            last_words,
        }) => {
            assert_eq!(runner, "codex");
            assert_eq!(after, Duration::from_secs(1));
            // The retries say why the turn never ended.
            let words = last_words.expect("codex said something");
            assert!(words.contains("Reconnecting"), "{words}");
        }
        other => panic!("expected AgentTimeout, got {other:?}"),
    }
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    let sleep_pid: u32 = cli.read("sleep.pid").trim().parse().unwrap();
    assert!(
        !weft_agents::supervise::process_alive(sleep_pid),
        "the CLI's child {sleep_pid} survived the kill"
    );
    assert_eq!(planner.session_id(), None);
}

#[test]
fn an_interrupt_stops_the_turn_and_its_processes() {
    let cli = FakeCli::new();
    cli.turn(1, "codex/cx0.171.0-exec-json-no-network-killed.jsonl", 0)
        .after(1, "sleep 60 & echo $! > \"$d/sleep.pid\"\nwait\n");
    let interrupt = weft_core::interrupt::Interrupt::new();
    let mut config = cli.planner(AgentCliKind::Codex).config().clone();
    config.interrupt = Some(interrupt.clone());
    let mut planner = AgentCliPlanner::new(config);
    let raiser = {
        let interrupt = interrupt.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            interrupt.raise();
        })
    };
    let started = Instant::now();
    let (result, _) = send(&mut planner);
    raiser.join().unwrap();
    match result {
        Err(ProviderError::Interrupted { what }) => assert!(what.contains("codex"), "{what}"),
        other => panic!("expected Interrupted, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    let sleep_pid: u32 = cli.read("sleep.pid").trim().parse().unwrap();
    assert!(
        !weft_agents::supervise::process_alive(sleep_pid),
        "the CLI's child {sleep_pid} survived the interrupt"
    );
}

// ---------------------------------------------------------------- OpenCode

#[test]
fn opencode_reads_a_tool_call_and_continues_its_session() {
    let cli = FakeCli::new();
    cli.turn(
        1,
        "opencode/oc1.18.33-run-format-json-tool-read-success.jsonl",
        0,
    )
    .turn(
        2,
        "opencode/oc1.18.33-run-format-json-continue-session.jsonl",
        0,
    );
    let mut planner = cli.planner(AgentCliKind::OpenCode);
    assert_eq!(planner.label(), "opencode");

    let reply = send(&mut planner).0.unwrap();
    assert_eq!(
        reply.text,
        "I will use a tool first.\n\nAll done. ORCH-DONE-MARKER-7f3a9c"
    );
    assert_eq!(reply.steps.len(), 1);
    let step = &reply.steps[0];
    assert_eq!(
        (step.tool.as_str(), step.input.as_str(), step.outcome),
        ("read", "/tmp/mockproj-oc/hello.txt", StepOutcome::Success)
    );
    assert!(step.detail.contains("hello from the fixture file"));
    let session = "ses_dd6b17eedffeyGcEh8RWkIGo0T";
    assert_eq!(reply.session_id.as_deref(), Some(session));
    let usage = reply.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (1800, 40));

    let argv1 = cli.argv(1);
    assert_eq!(argv1, ["run", "--format", "json", "--agent", "plan"]);
    // `opencode run` resolves its directory from $PWD.
    let workspace = std::path::absolute(&cli.workspace).unwrap();
    assert_eq!(cli.read("pwd.1"), workspace.display().to_string());
    let stdin1 = cli.stdin(1);
    assert!(stdin1.starts_with(&format!(
        "<planner-instructions>\n{SYSTEM}\n</planner-instructions>"
    )));
    assert!(stdin1.ends_with(MESSAGE));

    let reply = send(&mut planner).0.unwrap();
    assert_eq!(reply.text, "All done. ORCH-DONE-MARKER-7f3a9c");
    assert_eq!(value_after(&cli.argv(2), "--session"), Some(session));
    assert_eq!(cli.stdin(2), MESSAGE);
}

#[test]
fn opencode_auto_rejected_permission_is_denied() {
    let cli = FakeCli::new();
    cli.turn(
        1,
        "opencode/oc1.18.33-run-format-json-permission-auto-rejected.jsonl",
        0,
    )
    .stderr_from(
        1,
        "opencode/oc1.18.33-run-format-json-permission-auto-rejected.stderr.txt",
    );
    let reply = send(&mut cli.planner(AgentCliKind::OpenCode)).0.unwrap();
    assert_eq!(reply.text, "I will use a tool first.");
    assert_eq!(reply.steps.len(), 1);
    assert_eq!(reply.steps[0].outcome, StepOutcome::Denied);
    assert!(reply.steps[0].detail.contains("rejected permission"));
}

#[test]
fn opencode_error_events_are_shown() {
    for (file, expected) in [
        (
            "opencode/oc1.18.33-run-format-json-unknown-model.jsonl",
            &["Unexpected server error", "UnknownError", "err_ab215d6e"][..],
        ),
        (
            "opencode/oc1.18.33-run-format-json-invalid-api-key-401.jsonl",
            &["Incorrect API key provided", "HTTP 401"][..],
        ),
        (
            "opencode/oc1.18.33-run-format-json-no-provider-default-zen-no-network.jsonl",
            &["Cannot connect to API"][..],
        ),
    ] {
        let cli = FakeCli::new();
        cli.turn(1, file, 1);
        let text = agent_error(send(&mut cli.planner(AgentCliKind::OpenCode)).0, "opencode");
        for want in expected {
            assert!(text.contains(want), "{file}: {text}");
        }
    }
}

#[test]
fn opencode_unknown_session_drops_the_resume_hint() {
    let cli = FakeCli::new();
    cli.turn(
        1,
        "opencode/oc1.18.33-run-format-json-tool-read-success.jsonl",
        0,
    )
    .raw_turn(2, "", "", 1)
    .stderr_from(2, "opencode/oc1.18.33-run-session-not-found.stderr.txt")
    .turn(
        3,
        "opencode/oc1.18.33-run-format-json-tool-read-success.jsonl",
        0,
    );
    let mut planner = cli.planner(AgentCliKind::OpenCode);
    send(&mut planner).0.unwrap();
    let text = agent_error(send(&mut planner).0, "opencode");
    assert!(text.contains("Error: Session not found"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "ANSI colours must be stripped: {text:?}"
    );
    assert!(text.contains("exit code 1"), "{text}");
    assert_eq!(planner.session_id(), None);
    // The third turn starts over, with the system text again.
    send(&mut planner).0.unwrap();
    assert!(!cli.argv(3).contains(&"--session".to_owned()));
    assert!(cli.stdin(3).starts_with("<planner-instructions>"));
}

// ---------------------------------------------------------------- every CLI

#[test]
fn a_missing_program_is_a_spawn_error_naming_it() {
    for program in [
        "weft-no-such-agent-cli",
        "/nonexistent/dir/weft-no-such-agent-cli",
    ] {
        let cli = FakeCli::new();
        let mut config = AgentCliConfig::new(AgentCliKind::Codex, &cli.workspace);
        config.program = program.to_owned();
        let err = AgentCliPlanner::new(config)
            .send(SYSTEM, MESSAGE, &mut |_| {})
            .unwrap_err();
        assert!(matches!(err, ProviderError::Spawn { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains(program), "{text}");
        assert!(text.contains("codex"), "{text}");
    }
}

#[test]
fn a_missing_workspace_is_a_spawn_error() {
    let cli = FakeCli::new();
    let mut config = cli.planner(AgentCliKind::OpenCode).config().clone();
    config.workspace = cli.path("gone");
    let err = AgentCliPlanner::new(config)
        .send(SYSTEM, MESSAGE, &mut |_| {})
        .unwrap_err();
    assert!(matches!(err, ProviderError::Spawn { .. }), "{err:?}");
    assert!(err.to_string().contains("gone"), "{err}");
}

#[test]
fn garbage_output_and_a_failed_exit_quote_stderr() {
    for kind in [
        AgentCliKind::ClaudeCode,
        AgentCliKind::Codex,
        AgentCliKind::OpenCode,
    ] {
        let cli = FakeCli::new();
        cli.raw_turn(
            1,
            "this is not JSON\n{\"truncated\": \n[1,2]\n",
            "warning: something odd\nfatal: the CLI broke down\n",
            2,
        );
        let text = agent_error(send(&mut cli.planner(kind)).0, kind.name());
        assert!(text.contains("fatal: the CLI broke down"), "{kind}: {text}");
        assert!(text.contains("exit code 2"), "{kind}: {text}");
    }
}

#[test]
fn garbage_stdout_is_quoted_when_stderr_is_empty() {
    let cli = FakeCli::new();
    cli.raw_turn(1, "Usage: claude [options]\n", "", 1);
    let text = agent_error(
        send(&mut cli.planner(AgentCliKind::ClaudeCode)).0,
        "claude-code",
    );
    assert!(text.contains("Usage: claude [options]"), "{text}");
}

#[test]
fn a_huge_stderr_is_capped() {
    let cli = FakeCli::new();
    let noise = "x".repeat(200) + "\n";
    cli.raw_turn(1, "", &(noise.repeat(2_000) + "the last word\n"), 3);
    let text = agent_error(send(&mut cli.planner(AgentCliKind::Codex)).0, "codex");
    assert!(text.contains("the last word"));
    assert!(text.chars().count() < 2_200, "{}", text.chars().count());
}

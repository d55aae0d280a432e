//! Conformance: the real Claude Code, Codex and OpenCode CLIs, run through weft exactly as
//! a user runs them, confined by Landlock, against weft-testkit's scripted mock model.
//!
//! Each test stores a one-task plan for one CLI and runs `weft run -c confine=landlock` in
//! a fresh git repository (isolated: the task works in its own worktree). The mock answers
//! the CLI's model requests in the CLI's own API (Anthropic Messages for Claude Code,
//! OpenAI Responses for Codex, chat completions for OpenCode), scripted: a file-writing
//! tool call, a shell command, then a final message with the completion marker weft's
//! prompt asked for. The test then proves what weft promises: the task passed on its
//! marker, the marker is in the attempt's output (`weft log`) and in the CLI's own
//! transcript (`weft transcript`), and both files landed on the run's integration branch.
//! The Codex planner, whose argv changes when weft confines it, gets its own: its research
//! command runs confined, its write is refused, its plan is stored.
//!
//! The CLIs come from `WEFT_AGENT_CLIS`, a folder holding `claude`, `codex` and
//! `opencode` (`.ci/run` installs the pinned versions from npm into a cache folder and
//! sets it). Without them each test prints a loud SKIPPED line and passes, unless `CI`
//! or `WEFT_REQUIRE_AGENT_CLIS=1` is set: then a missing CLI fails the test.
//!
//! Each CLI is pointed at the mock through its own documented settings, passed to weft
//! explicitly (the hermetic environment has nothing else): Claude Code
//! `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`; Codex a `model_providers` entry in
//! `$CODEX_HOME/config.toml` (`~/.codex`, which must exist) naming `MOCK_API_KEY`;
//! OpenCode an `@ai-sdk/openai-compatible` provider in `OPENCODE_CONFIG_CONTENT`, its
//! small model (the title generator, which runs beside the main requests) on the mock's
//! side channel.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fs_err as fs;
use serde_json::{Value, json};
use weft_testkit::Hermetic;
use weft_testkit::mock_model::{MockModel, MockReply};

/// What the scripted tool calls write, checked on the integration branch.
const WRITTEN: &str = "conformance.txt";
const SHELL_WROTE: &str = "shell.txt";

/// The folder holding the three CLIs, or `None` (after the loud notice) to skip.
fn agent_clis(cli: &str) -> Option<PathBuf> {
    let required = std::env::var_os("CI").is_some_and(|v| !v.is_empty())
        || std::env::var("WEFT_REQUIRE_AGENT_CLIS").is_ok_and(|v| v == "1");
    let folder = std::env::var_os("WEFT_AGENT_CLIS").map(PathBuf::from);
    let missing = match &folder {
        None => "WEFT_AGENT_CLIS is not set".to_owned(),
        Some(folder) if !folder.join(cli).exists() => {
            format!("WEFT_AGENT_CLIS={} holds no `{cli}`", folder.display())
        }
        Some(_) => return folder,
    };
    assert!(
        !required,
        "the real agent CLIs are required here (CI or WEFT_REQUIRE_AGENT_CLIS=1) but {missing}; \
         run .ci/run, which installs them, or point WEFT_AGENT_CLIS at a folder holding claude, codex and opencode"
    );
    #[allow(
        clippy::print_stderr,
        reason = "a skipped conformance test must say so where the test output is read"
    )]
    {
        eprintln!(
            "\n!!!!!!!! SKIPPED: the `{cli}` conformance test did not run: {missing}. \
         .ci/run installs the pinned CLIs and sets it. !!!!!!!!\n"
        );
    }
    None
}

/// One CLI's case: its runner, model, and how it is pointed at the mock.
struct Case {
    runner: &'static str,
    cli: &'static str,
    model: &'static str,
    /// Variables the CLI needs, given to weft (which hands them to the agent).
    env: Vec<(String, String)>,
}

fn conform(cli: &str, case: impl FnOnce(&Hermetic, &MockModel) -> Case, script: Vec<MockReply>) {
    let Some(clis) = agent_clis(cli) else {
        return;
    };
    let env = Hermetic::new();
    env.git_init();
    let mock = MockModel::start(script);
    let case = case(&env, &mock);
    assert_eq!(case.cli, cli);

    let plan = format!(
        "goal = \"conformance of {runner}\"\nrunner = \"{runner}\"\n\n[[tasks]]\nid = \"conform\"\ntitle = \"Write {WRITTEN} and run a shell command\"\nmodel = \"{model}\"\nprompt = \"Create {WRITTEN}, then run a shell command that writes {SHELL_WROTE}.\"\n",
        runner = case.runner,
        model = case.model,
    );
    fs::write(env.work().join("plan.toml"), plan).unwrap();
    let weft = |args: &[&str]| weft_in(&env, &clis, &case.env, args);
    let (code, _, stderr) = weft(&["plan", "--file", "plan.toml"]);
    assert_eq!(code, 0, "weft plan --file: {stderr}");

    let (code, stdout, stderr) = weft(&["run", "-c", "confine=landlock"]);
    let (_, log, _) = weft(&["log", "1"]);
    let (_, transcript, transcript_err) = weft(&["transcript", "1"]);
    let requests: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    let context = format!(
        "weft run exited {code}\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- weft log 1\n{log}\n--- weft transcript 1\n{transcript}{transcript_err}\n--- requests\n{requests:#?}\n--- script left: {}, asked past its end: {}",
        mock.remaining(),
        mock.exhausted()
    );
    assert_eq!(code, 0, "{context}");
    assert_eq!(
        mock.remaining(),
        0,
        "every scripted turn was asked: {context}"
    );
    assert_eq!(mock.exhausted(), 0, "{context}");

    let status = status_of_task(&weft(&["status", "--json"]).1);
    assert_eq!(status, "completed", "{context}");
    let marker = find_marker(&log).unwrap_or_else(|| panic!("no marker in the stream: {context}"));
    assert!(
        transcript.contains(&marker),
        "the transcript holds the marker {marker}: {context}"
    );

    let integration = integration_branch(env.work().as_path());
    let written = git(&env, &["show", &format!("{integration}:{WRITTEN}")]);
    assert!(
        written.contains(case.cli),
        "{WRITTEN}: {written:?}: {context}"
    );
    let shell = git(&env, &["show", &format!("{integration}:{SHELL_WROTE}")]);
    assert_eq!(shell.trim(), "ran", "{context}");
}

/// `weft args` in `env`'s workspace with the CLIs first on PATH and `vars` set.
fn weft_in(
    env: &Hermetic,
    clis: &Path,
    vars: &[(String, String)],
    args: &[&str],
) -> (i32, String, String) {
    let mut command = env.command(env!("CARGO_BIN_EXE_weft"));
    let mut path = clis.as_os_str().to_owned();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    command
        .args(args)
        .env("PATH", path)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    output(command)
}

fn output(mut command: Command) -> (i32, String, String) {
    let out = command.output().expect("weft starts");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn git(env: &Hermetic, args: &[&str]) -> String {
    let (code, stdout, stderr) = output({
        let mut command = env.command("git");
        command.args(args);
        command
    });
    assert_eq!(code, 0, "git {args:?}: {stderr}");
    stdout
}

fn integration_branch(work: &Path) -> String {
    let out = Command::new("git")
        .args([
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/weft/",
        ])
        .current_dir(work)
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|b| b.ends_with("/integration"))
        .map(str::to_owned)
        .expect("the run has an integration branch")
}

fn status_of_task(status_json: &str) -> String {
    let status: Value = serde_json::from_str(status_json).expect("status --json is JSON");
    status["plan"]["tasks"][0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The first `WEFT_DONE_` + 16 hex characters in `text`.
fn find_marker(text: &str) -> Option<String> {
    text.match_indices("WEFT_DONE_").find_map(|(at, prefix)| {
        let id = text.get(at + prefix.len()..at + prefix.len() + 16)?;
        id.bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            .then(|| format!("{prefix}{id}"))
    })
}

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Claude Code 2.1.197 over the Anthropic Messages API: its `Write` tool (absolute
/// path), its `Bash` tool, then the marker.
#[test]
fn claude_code_completes_a_confined_task_against_the_mock_messages_api() {
    let script = vec![
        MockReply::text_and_tool_calls(
            "I will write the file.",
            vec![(
                "Write",
                json!({"file_path": "{{cwd}}/conformance.txt", "content": "written by claude\n"}),
            )],
        ),
        MockReply::tool_calls(vec![(
            "Bash",
            json!({"command": "echo ran > shell.txt", "description": "Record that the shell ran"}),
        )]),
        MockReply::text("Both done.").with_marker(),
    ];
    conform(
        "claude",
        |_, mock| Case {
            runner: "claude-code",
            cli: "claude",
            model: "claude-mock",
            env: vars(&[
                ("ANTHROPIC_BASE_URL", &mock.root_url()),
                ("ANTHROPIC_API_KEY", "sk-ant-mock"),
                ("CLAUDE_CODE_MAX_RETRIES", "0"),
                ("DISABLE_TELEMETRY", "1"),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ]),
        },
        script,
    );
}

/// Codex 0.171.0 over the OpenAI Responses API: `exec_command` for the file and for the
/// shell command, then the marker.
#[test]
fn codex_completes_a_confined_task_against_the_mock_responses_api() {
    let script = vec![
        MockReply::text_and_tool_calls(
            "I will write the file.",
            vec![(
                "exec_command",
                json!({"cmd": "printf 'written by codex\\n' > conformance.txt"}),
            )],
        ),
        MockReply::tool_calls(vec![(
            "exec_command",
            json!({"cmd": "echo ran > shell.txt"}),
        )]),
        MockReply::text("Both done.").with_marker(),
    ];
    conform(
        "codex",
        |env, mock| Case {
            runner: "codex",
            cli: "codex",
            model: "mock-model",
            env: codex_setup(env, mock),
        },
        script,
    );
}

/// Points Codex at the mock: a `model_providers` entry in `~/.codex/config.toml` (the
/// folder must exist), its key in `MOCK_API_KEY`. Returns the variables to pass.
fn codex_setup(env: &Hermetic, mock: &MockModel) -> Vec<(String, String)> {
    let codex_home = env.home().join(".codex");
    fs::create_dir_all(&codex_home).unwrap();
    let config = format!(
        "model_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
        mock.base_url()
    );
    fs::write(codex_home.join("config.toml"), config).unwrap();
    vars(&[("MOCK_API_KEY", "sk-mock")])
}

/// The Codex planner, confined, runs without Codex's own sandbox (which cannot start
/// inside Landlock) yet writes nothing: its research command runs and its output reaches
/// the model, its write is refused by weft's planner ruleset, and its plan is stored.
#[test]
fn the_codex_planner_researches_confined_and_cannot_write_the_workspace() {
    let Some(clis) = agent_clis("codex") else {
        return;
    };
    let env = Hermetic::new();
    env.git_init();
    let plan =
        json!({"tasks": [{"id": "greet", "title": "Add a greeting", "prompt": "Add hello.txt."}]});
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![(
            "exec_command",
            json!({"cmd": "cat README.md; echo researched-$((6 * 7)); echo planned > planner-wrote.txt; echo exit=$?"}),
        )]),
        MockReply::text(serde_json::to_string_pretty(&plan).unwrap()),
    ]);
    let vars = codex_setup(&env, &mock);
    let (code, stdout, stderr) = weft_in(
        &env,
        &clis,
        &vars,
        &[
            "plan",
            "Add a greeting",
            "--yes",
            "--planner",
            "codex",
            "--model",
            "mock-model",
            "-c",
            "confine=landlock",
        ],
    );
    let context = format!("weft plan exited {code}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    assert_eq!(code, 0, "{context}");
    assert_eq!(mock.remaining(), 0, "{context}");
    // The research command's output, as Codex handed it back to the model.
    let answered = mock.model_requests()[1].raw_body.clone();
    // (What the shell computed, which no request text holds unless the command ran.)
    assert!(
        answered.contains("# test repository") && answered.contains("researched-42"),
        "the research command ran: {context}"
    );
    assert!(
        answered.contains("Permission denied") && answered.contains("exit=1"),
        "the write was refused: {context}"
    );
    assert!(!env.work().join("planner-wrote.txt").exists());
    let (_, status, _) = weft_in(&env, &clis, &vars, &["status", "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["plan"]["tasks"][0]["id"], "greet", "{context}");
}

/// OpenCode 1.18.33 over chat completions: its `write` and `bash` tools, then the marker.
#[test]
fn opencode_completes_a_confined_task_against_the_mock_chat_completions_api() {
    let script = vec![
        MockReply::text_and_tool_calls(
            "I will write the file.",
            vec![(
                "write",
                json!({"filePath": "{{cwd}}/conformance.txt", "content": "written by opencode\n"}),
            )],
        ),
        MockReply::tool_calls(vec![(
            "bash",
            json!({"command": "echo ran > shell.txt", "description": "Record that the shell ran"}),
        )]),
        MockReply::text("Both done.").with_marker(),
    ];
    conform(
        "opencode",
        |_, mock| {
            let provider = |url: String| {
                json!({
                    "npm": "@ai-sdk/openai-compatible",
                    "options": {"baseURL": url, "apiKey": "sk-mock"},
                    "models": {"mock-model": {"name": "Mock"}},
                })
            };
            let config = json!({
                "provider": {"mock": provider(mock.base_url()), "side": provider(mock.side_url())},
                "model": "mock/mock-model",
                "small_model": "side/mock-model",
                "share": "disabled",
                "autoupdate": false,
            });
            Case {
                runner: "opencode",
                cli: "opencode",
                model: "mock/mock-model",
                env: vars(&[
                    ("OPENCODE_CONFIG_CONTENT", &config.to_string()),
                    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
                    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
                    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
                ]),
            }
        },
        script,
    );
}

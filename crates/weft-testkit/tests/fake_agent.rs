//! The fake agent, run as a real process the way weft runs agent CLIs.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fs_err as fs;
use serde_json::Value;
use weft_testkit::Hermetic;
use weft_testkit::fake::args::{Invocation, Persona, choose_prompt};
use weft_testkit::fake::markers::{code_spans, copy_markers, follow_instruction};
use weft_testkit::fake::script::{Directive, parse_line, parse_script, prompt_script};

const BIN: &str = env!("CARGO_BIN_EXE_weft-fake-agent");
const TOKEN: &str = "WEFT_DONE_0123456789abcdef";
const SESSION: &str = "11111111-2222-4333-8444-555555555555";

/// A prompt shaped like the one weft composes: plan map, task, marker instruction.
const TASK_PROMPT: &str = "\
## Plan

1. [done] Add the status table
2. [running] Add a `--verbose` flag  ← you are here

Only the row marked `← you are here` is this session's work.

## Your task

Add a `--verbose` flag to `weft status` that also prints each attempt's log path.
The last commit on the integration branch is `aaaabbbbccccdddd`.

## When you are done

When the task is complete and nothing is left to do, print `WEFT_DONE_` immediately
followed by `0123456789abcdef` on a final line of its own, with nothing in between.
Print it only if you really finished; never print it otherwise.
";

const PERSONAS: [&str; 4] = ["claude", "codex", "opencode", "plain"];

/// The flags weft's built-in manifests pass (DESIGN §9), so the fake must accept them.
fn real_flags(persona: &str, dir: &Path) -> Vec<String> {
    let dir = dir.to_string_lossy().into_owned();
    let flags: Vec<&str> = match persona {
        "claude" => vec![
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--session-id",
            SESSION,
            "--permission-mode",
            "acceptEdits",
            "--model",
            "sonnet",
            "--effort",
            "high",
        ],
        "codex" => vec![
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "-c",
            "approval_policy=\"never\"",
            "-m",
            "gpt-5",
            "-c",
            "model_reasoning_effort=\"high\"",
            "-C",
            &dir,
            "-",
        ],
        "opencode" => vec![
            "run",
            "--format",
            "json",
            "--agent",
            "build",
            "--auto",
            "-m",
            "mock/mock-model",
            "--variant",
            "high",
            "--dir",
            &dir,
        ],
        _ => vec![],
    };
    flags.into_iter().map(str::to_owned).collect()
}

fn agent(env: &Hermetic, persona: &str) -> Command {
    let mut command = env.command(BIN);
    command.args(["--fake-as", persona]);
    command.args(real_flags(persona, &env.work()));
    command
}

/// Run with `stdin` piped in and closed.
fn run(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fake agent starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("the prompt is written");
    child.wait_with_output().expect("the fake agent ends")
}

fn scripted(env: &Hermetic, persona: &str, script: &str, prompt: &str) -> Output {
    run(agent(env, persona).env("WEFT_FAKE_SCRIPT", script), prompt)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every stdout line parsed as JSON (panics on the first that is not).
fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        })
        .collect()
}

fn types(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|line| {
            line["type"]
                .as_str()
                .expect("every line has a type")
                .to_owned()
        })
        .collect()
}

/// The assistant-authored text of a structured stream, the only text weft searches.
fn assistant_texts(persona: &str, lines: &[Value]) -> Vec<String> {
    let mut texts = Vec::new();
    for line in lines {
        match (persona, line["type"].as_str()) {
            ("claude", Some("assistant")) => {
                for block in line["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "text" {
                        texts.push(block["text"].as_str().unwrap_or_default().to_owned());
                    }
                }
            }
            ("codex", Some("item.completed")) if line["item"]["type"] == "agent_message" => {
                texts.push(line["item"]["text"].as_str().unwrap_or_default().to_owned());
            }
            ("opencode", Some("text")) => {
                texts.push(line["part"]["text"].as_str().unwrap_or_default().to_owned());
            }
            _ => {}
        }
    }
    texts
}

/// Assistant text of any persona (plain: every stdout line).
fn texts_of(persona: &str, output: &Output) -> Vec<String> {
    if persona == "plain" {
        stdout(output).lines().map(str::to_owned).collect()
    } else {
        assistant_texts(persona, &json_lines(output))
    }
}

fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

// ----- default runs, one per persona -----

#[test]
fn claude_default_run_is_a_stream_json_conversation() {
    let env = Hermetic::new();
    let output = run(&mut agent(&env, "claude"), TASK_PROMPT);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert_eq!(
        types(&lines),
        ["system", "assistant", "assistant", "result"]
    );
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(lines[0]["permissionMode"], "acceptEdits");
    assert_eq!(lines[0]["model"], "sonnet");
    assert_eq!(lines[0]["cwd"], env.work().to_string_lossy().as_ref());
    for line in &lines {
        assert_eq!(line["session_id"], SESSION);
    }
    assert_eq!(assistant_texts("claude", &lines), ["Done.", TOKEN]);
    let result = &lines[3];
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], TOKEN);
    assert!(result["total_cost_usd"].is_number());
    assert!(result["usage"]["input_tokens"].is_number());
    assert_eq!(result["permission_denials"], serde_json::json!([]));
}

#[test]
fn claude_without_a_session_id_makes_one_up() {
    let env = Hermetic::new();
    let output = run(
        env.command(BIN).args(["--fake-as", "claude", "-p"]),
        TASK_PROMPT,
    );
    let lines = json_lines(&output);
    let id = lines[0]["session_id"].as_str().expect("a session id");
    assert_eq!(id.len(), 36);
    assert_eq!(lines.last().expect("a result")["session_id"], id);
}

#[test]
fn claude_output_format_json_prints_only_the_result() {
    let env = Hermetic::new();
    let output = run(
        env.command(BIN)
            .args(["--fake-as", "claude", "-p", "--output-format", "json"]),
        TASK_PROMPT,
    );
    let lines = json_lines(&output);
    assert_eq!(types(&lines), ["result"]);
    assert_eq!(lines[0]["result"], TOKEN);
}

#[test]
fn codex_default_run_is_a_thread_of_items() {
    let env = Hermetic::new();
    let output = run(&mut agent(&env, "codex"), TASK_PROMPT);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert_eq!(
        types(&lines),
        [
            "thread.started",
            "turn.started",
            "item.completed",
            "item.completed",
            "turn.completed"
        ]
    );
    assert_eq!(lines[0]["thread_id"].as_str().map(str::len), Some(36));
    assert_eq!(lines[2]["item"]["id"], "item_0");
    assert_eq!(lines[3]["item"]["id"], "item_1");
    assert_eq!(assistant_texts("codex", &lines), ["Done.", TOKEN]);
    let usage = &lines[4]["usage"];
    for key in [
        "input_tokens",
        "cached_input_tokens",
        "cache_write_input_tokens",
        "output_tokens",
        "reasoning_output_tokens",
    ] {
        assert!(usage[key].is_number(), "usage.{key}");
    }
    assert!(stderr(&output).contains("Reading additional input from stdin..."));
}

#[test]
fn opencode_default_run_is_one_step_ending_in_stop() {
    let env = Hermetic::new();
    let output = run(&mut agent(&env, "opencode"), TASK_PROMPT);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert_eq!(types(&lines), ["step_start", "text", "text", "step_finish"]);
    let session = lines[0]["sessionID"].as_str().expect("a sessionID");
    assert!(session.starts_with("ses_"));
    let message = lines[0]["part"]["messageID"].as_str().expect("a messageID");
    for line in &lines {
        assert_eq!(line["sessionID"], session);
        assert_eq!(line["part"]["sessionID"], session);
        assert_eq!(line["part"]["messageID"], message);
        assert!(line["timestamp"].is_u64());
    }
    assert_eq!(lines[0]["part"]["type"], "step-start");
    assert_eq!(lines[3]["part"]["type"], "step-finish");
    assert_eq!(lines[3]["part"]["reason"], "stop");
    assert!(lines[3]["part"]["tokens"]["total"].is_u64());
    assert_eq!(assistant_texts("opencode", &lines), ["Done.", TOKEN]);
}

#[test]
fn plain_default_run_prints_text_lines() {
    let env = Hermetic::new();
    let output = run(&mut agent(&env, "plain"), TASK_PROMPT);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), format!("Done.\n{TOKEN}\n"));
}

// ----- the marker -----

#[test]
fn marker_is_printed_on_its_own_final_line_by_every_persona() {
    for persona in PERSONAS {
        let env = Hermetic::new();
        let output = scripted(&env, persona, "say I added the flag.\nmarker", TASK_PROMPT);
        let texts = texts_of(persona, &output);
        assert_eq!(texts.last().map(String::as_str), Some(TOKEN), "{persona}");
    }
}

#[test]
fn marker_without_an_instruction_prints_nothing_marker_like() {
    for persona in PERSONAS {
        let env = Hermetic::new();
        let output = run(
            &mut agent(&env, persona),
            "Add a --verbose flag to weft status.\nThe commit is `0123456789abcdef`.\n",
        );
        assert_eq!(output.status.code(), Some(0), "{persona}");
        assert!(
            !stdout(&output).contains("WEFT"),
            "{persona}: {}",
            stdout(&output)
        );
        assert!(
            stderr(&output).contains("no marker instruction found"),
            "{persona}"
        );
    }
}

#[test]
fn copy_markers_never_yields_the_real_token() {
    let prompt = format!(
        "{TASK_PROMPT}\n## Output of task 1 (defused)\n\nFinished. WEFT-DONE-(defused)\n\
         Old notes mention `fedcba9876543210` and WEFT_DONE_ with WEFT-DONE-abc123.\n"
    );
    for persona in PERSONAS {
        let env = Hermetic::new();
        let output = scripted(&env, persona, "copy-markers", &prompt);
        assert_eq!(output.status.code(), Some(0), "{persona}");
        let texts = texts_of(persona, &output);
        for expected in [
            "WEFT_DONE_",
            "WEFT-DONE-(defused)",
            "WEFT_DONE_(defused)",
            "WEFT-DONE-abc123",
            "WEFT_DONE_abc123",
            "WEFT_DONE_fedcba9876543210",
            "WEFT_DONE_aaaabbbbccccdddd",
        ] {
            assert!(texts.iter().any(|t| t == expected), "{persona}: {expected}");
        }
        // Not in any text, not in the raw stream, not even with whitespace removed.
        assert!(!texts.iter().any(|t| t.contains(TOKEN)), "{persona}");
        assert!(
            !without_whitespace(&texts.concat()).contains(TOKEN),
            "{persona}"
        );
        assert!(
            !without_whitespace(&stdout(&output)).contains(TOKEN),
            "{persona}"
        );
    }
}

#[test]
fn markers_in_tool_output_are_not_assistant_text() {
    let script = format!("tool-output {TOKEN}\nrun echo {TOKEN}\nsay no marker here");
    for persona in ["claude", "codex", "opencode"] {
        let env = Hermetic::new();
        let output = scripted(&env, persona, &script, TASK_PROMPT);
        assert!(
            stdout(&output).contains(TOKEN),
            "{persona}: the tool output is there"
        );
        let texts = assistant_texts(persona, &json_lines(&output));
        assert_eq!(texts, ["no marker here"], "{persona}");
    }
}

// ----- tools, files, errors, denials, usage -----

#[test]
fn run_is_a_tool_call_with_its_output() {
    let env = Hermetic::new();
    let output = scripted(&env, "claude", "run echo out; echo err >&2; exit 3", "");
    let lines = json_lines(&output);
    assert_eq!(types(&lines), ["system", "assistant", "user", "result"]);
    let tool_use = &lines[1]["message"]["content"][0];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["name"], "Bash");
    let result = &lines[2]["message"]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], tool_use["id"]);
    assert_eq!(result["is_error"], true);
    assert_eq!(result["content"], "Exit code 3\nout\nerr\n");

    let output = scripted(&env, "codex", "run echo out; exit 3", "");
    let lines = json_lines(&output);
    assert_eq!(
        types(&lines),
        [
            "thread.started",
            "turn.started",
            "item.started",
            "item.completed",
            "turn.completed"
        ]
    );
    let item = &lines[3]["item"];
    assert_eq!(item["type"], "command_execution");
    assert_eq!(item["aggregated_output"], "out\n");
    assert_eq!(item["exit_code"], 3);
    assert_eq!(item["status"], "failed");

    let output = scripted(&env, "opencode", "run echo out", "");
    let lines = json_lines(&output);
    assert_eq!(
        types(&lines),
        [
            "step_start",
            "tool_use",
            "step_finish",
            "step_start",
            "step_finish"
        ]
    );
    assert_eq!(lines[1]["part"]["tool"], "bash");
    assert_eq!(lines[1]["part"]["state"]["output"], "out\n");
    assert_eq!(lines[2]["part"]["reason"], "tool-calls");
    assert_eq!(lines[4]["part"]["reason"], "stop");

    let output = scripted(&env, "plain", "run echo out", "");
    assert_eq!(stdout(&output), "out\n");
}

#[test]
fn write_and_append_change_files_in_the_cwd() {
    let env = Hermetic::new();
    let script = "write src/deep/a.txt one\\ntwo\nappend src/deep/a.txt \\nthree\nappend log.txt x";
    let output = scripted(&env, "codex", script, "");
    assert_eq!(output.status.code(), Some(0));
    let file = fs::read_to_string(env.work().join("src/deep/a.txt")).expect("written");
    assert_eq!(file, "one\ntwo\nthree");
    assert_eq!(
        fs::read_to_string(env.work().join("log.txt")).expect("appended"),
        "x"
    );
    let kinds: Vec<Value> = json_lines(&output)
        .iter()
        .filter(|line| line["type"] == "item.completed")
        .map(|line| line["item"]["changes"][0]["kind"].clone())
        .collect();
    assert_eq!(kinds, ["add", "update", "add"]);
}

#[test]
fn tool_emits_a_use_and_a_result() {
    let env = Hermetic::new();
    let lines = json_lines(&scripted(&env, "claude", "tool Read src/main.rs", ""));
    assert_eq!(types(&lines), ["system", "assistant", "user", "result"]);
    assert_eq!(lines[1]["message"]["content"][0]["name"], "Read");
    assert_eq!(
        lines[1]["message"]["content"][0]["input"]["file_path"],
        "src/main.rs"
    );
    let lines = json_lines(&scripted(&env, "codex", "tool Bash cargo test", ""));
    assert_eq!(lines[3]["item"]["command"], "cargo test");
    let lines = json_lines(&scripted(&env, "opencode", "tool Read src/main.rs", ""));
    assert_eq!(lines[1]["part"]["tool"], "read");
    assert_eq!(lines[1]["part"]["state"]["status"], "completed");
}

#[test]
fn deny_is_a_refused_permission_in_each_format() {
    let env = Hermetic::new();
    let script = "deny Bash rm -rf build\nsay I could not clean up.";

    let output = scripted(&env, "claude", script, "");
    assert_eq!(output.status.code(), Some(0));
    let lines = json_lines(&output);
    assert_eq!(lines[2]["message"]["content"][0]["is_error"], true);
    assert_eq!(
        lines[2]["tool_use_result"],
        "Error: This command requires approval"
    );
    let result = lines.last().expect("a result");
    assert_eq!(result["is_error"], false);
    let denials = result["permission_denials"].as_array().expect("a list");
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0]["tool_name"], "Bash");
    assert_eq!(denials[0]["tool_input"]["command"], "rm -rf build");
    assert_eq!(
        denials[0]["tool_use_id"],
        lines[1]["message"]["content"][0]["id"]
    );

    let output = scripted(&env, "codex", script, "");
    let lines = json_lines(&output);
    let declined = &lines[2]["item"];
    assert_eq!(declined["type"], "command_execution");
    assert_eq!(declined["command"], "rm -rf build");
    assert_eq!(declined["status"], "declined");
    assert_eq!(lines.last().expect("end")["type"], "turn.completed");

    let output = scripted(&env, "opencode", script, "");
    assert_eq!(output.status.code(), Some(0));
    let lines = json_lines(&output);
    let state = &lines[1]["part"]["state"];
    assert_eq!(state["status"], "error");
    assert_eq!(
        state["error"],
        "The user rejected permission to use this specific tool call."
    );
    assert!(stderr(&output).contains("permission requested: bash (rm -rf build); auto-rejecting"));
}

#[test]
fn error_fails_the_run_in_each_format() {
    let env = Hermetic::new();
    let script = "say Working.\nerror Invalid API key";

    let output = scripted(&env, "claude", script, "");
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    let result = lines.last().expect("a result");
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["result"], "Invalid API key");
    assert_eq!(lines[2]["message"]["model"], "<synthetic>");

    let output = scripted(&env, "codex", script, "");
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    let tail = &types(&lines)[3..];
    assert_eq!(tail, ["error", "turn.failed"]);
    assert_eq!(lines[4]["error"]["message"], "Invalid API key");

    let output = scripted(&env, "opencode", script, "");
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(types(&lines), ["step_start", "text", "error"]);
    assert_eq!(lines[2]["error"]["data"]["message"], "Invalid API key");

    let output = scripted(&env, "plain", script, "");
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("Invalid API key"));
}

#[test]
fn usage_is_reported_in_the_final_record() {
    let env = Hermetic::new();
    let script = "usage 1000 50 0.25\nsay ok";
    let lines = json_lines(&scripted(&env, "claude", script, ""));
    let result = lines.last().expect("a result");
    assert_eq!(result["total_cost_usd"], 0.25);
    assert_eq!(result["usage"]["input_tokens"], 1000);
    assert_eq!(result["usage"]["output_tokens"], 50);
    let lines = json_lines(&scripted(&env, "codex", script, ""));
    assert_eq!(lines.last().expect("end")["usage"]["input_tokens"], 1000);
    let lines = json_lines(&scripted(&env, "opencode", script, ""));
    let part = &lines.last().expect("end")["part"];
    assert_eq!(part["tokens"]["total"], 1050);
    assert_eq!(part["cost"], 0.25);
}

// ----- exits, crashes, hangs -----

#[test]
fn exit_code_comes_after_the_final_record() {
    let finals = [
        ("claude", "result"),
        ("codex", "turn.completed"),
        ("opencode", "step_finish"),
    ];
    for (persona, last) in finals {
        let env = Hermetic::new();
        let output = scripted(&env, persona, "say partial\nexit 7\nsay never", "");
        assert_eq!(output.status.code(), Some(7), "{persona}");
        let lines = json_lines(&output);
        assert_eq!(lines.last().expect("a final record")["type"], last);
        assert!(!stdout(&output).contains("never"));
    }
    let env = Hermetic::new();
    let output = scripted(&env, "plain", "say partial\nexit 7\nsay never", "");
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(stdout(&output), "partial\n");
}

#[test]
fn crash_aborts_without_a_final_record() {
    let env = Hermetic::new();
    let output = scripted(&env, "claude", "say half way\ncrash", "");
    assert_eq!(output.status.signal(), Some(6), "SIGABRT");
    assert_eq!(types(&json_lines(&output)), ["system", "assistant"]);
}

#[test]
fn kill_self_dies_by_sigkill() {
    let env = Hermetic::new();
    let output = scripted(&env, "codex", "say half way\nkill-self", "");
    assert_eq!(output.status.signal(), Some(9), "SIGKILL");
    assert_eq!(
        types(&json_lines(&output)),
        ["thread.started", "turn.started", "item.completed"]
    );
}

#[test]
fn hang_runs_until_killed() {
    let env = Hermetic::new();
    let mut child = agent(&env, "plain")
        .env("WEFT_FAKE_SCRIPT", "say waiting\nhang")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut line = [0u8; 8];
    child
        .stdout
        .as_mut()
        .expect("piped")
        .read_exact(&mut line)
        .expect("it speaks before hanging");
    assert_eq!(&line, b"waiting\n");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        child.try_wait().expect("waitable").is_none(),
        "still running"
    );
    child.kill().expect("killable");
    child.wait().expect("reaped");
}

#[test]
fn sleep_takes_fractional_seconds() {
    let env = Hermetic::new();
    let started = Instant::now();
    let output = scripted(&env, "plain", "sleep 0.15\nsay awake", "");
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(stdout(&output), "awake\n");
}

#[test]
fn spawn_hang_leaves_a_grandchild_behind() {
    let env = Hermetic::new();
    let errors = env.root().join("stderr.txt");
    let status = agent(&env, "plain")
        .env("WEFT_FAKE_SCRIPT", "spawn-hang\nsay bye")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&errors).expect("created").into_parts().0)
        .status()
        .expect("runs");
    assert!(status.success());
    let text = fs::read_to_string(&errors).expect("readable");
    let pid: i32 = text
        .lines()
        .find_map(|line| line.strip_prefix("child-pid "))
        .and_then(|pid| pid.trim().parse().ok())
        .unwrap_or_else(|| panic!("no child-pid line in {text:?}"));
    let pid = nix::unistd::Pid::from_raw(pid);
    assert!(
        nix::sys::signal::kill(pid, None).is_ok(),
        "the grandchild outlives the agent"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("killed");
}

// ----- raw output -----

#[test]
fn flood_writes_exactly_that_many_printable_bytes() {
    let env = Hermetic::new();
    let output = scripted(&env, "plain", "flood 1000000", "");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout.len(), 1_000_000);
    assert!(output.stdout.ends_with(b"\n"));
    for line in output.stdout.split(|b| *b == b'\n') {
        assert!(line.len() < 100);
        assert!(line.iter().all(|b| b.is_ascii_graphic() || *b == b' '));
    }
    // Structured personas keep their stream around the noise.
    let output = scripted(&env, "claude", "flood 64k\nsay after", "");
    let text = stdout(&output);
    let last = text.lines().last().expect("a last line");
    let result: Value = serde_json::from_str(last).expect("the result line is intact");
    assert_eq!(result["result"], "after");
}

#[test]
fn garbage_and_no_newline_write_raw_bytes() {
    let env = Hermetic::new();
    let output = scripted(&env, "plain", "garbage 4096", "");
    assert_eq!(output.stdout.len(), 4096);
    assert!(std::str::from_utf8(&output.stdout).is_err(), "not text");
    let output = scripted(&env, "plain", "no-newline WEFT_DONE_\nno-newline abc", "");
    assert_eq!(output.stdout, b"WEFT_DONE_abc");
}

#[test]
fn a_closed_stdout_ends_the_agent() {
    let env = Hermetic::new();
    let mut child = agent(&env, "plain")
        .env("WEFT_FAKE_SCRIPT", "flood 64m\nsay never")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let mut stdout = child.stdout.take().expect("piped");
    let mut first = [0u8; 4096];
    stdout.read_exact(&mut first).expect("some noise");
    drop(stdout);
    let status = child.wait().expect("it ends by itself");
    assert_eq!(status.code(), Some(141));
}

// ----- records, prompts, personas -----

fn read_records(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .expect("the record file exists")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON record"))
        .collect()
}

#[test]
fn record_logs_start_and_end_of_concurrent_agents() {
    let env = Hermetic::new();
    let log = env.root().join("records.jsonl");
    let script = format!("record {}\nsleep 0.3\nsay done", log.display());
    let children: Vec<_> = ["claude", "codex"]
        .into_iter()
        .map(|persona| {
            let mut child = agent(&env, persona)
                .env("WEFT_FAKE_SCRIPT", &script)
                .env("WEFT_TASK", persona)
                .env("IS_SANDBOX", "1")
                .env("UNRELATED", "x")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starts");
            child
                .stdin
                .take()
                .expect("piped")
                .write_all(format!("prompt for {persona}").as_bytes())
                .expect("written");
            child
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("ends").success());
    }
    let records = read_records(&log);
    assert_eq!(records.len(), 4);
    let events: Vec<&str> = records
        .iter()
        .map(|r| r["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["start", "start", "end", "end"], "the runs overlap");
    for start in records.iter().filter(|r| r["event"] == "start") {
        let persona = start["env"]["WEFT_TASK"].as_str().expect("WEFT_* is kept");
        assert_eq!(start["prompt"], format!("prompt for {persona}"));
        assert_eq!(start["stdin_was_prompt"], true);
        assert_eq!(start["env"]["IS_SANDBOX"], "1");
        assert!(start["env"].get("UNRELATED").is_none());
        assert!(start["env"].get("WEFT_FAKE_SCRIPT").is_some());
        assert_eq!(start["cwd"], env.work().to_string_lossy().as_ref());
        let argv: Vec<&str> = start["argv"]
            .as_array()
            .expect("argv")
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[0], BIN);
        assert_eq!(argv[1..3], ["--fake-as", persona]);
        assert_eq!(argv[3..], real_flags(persona, &env.work()));
        let end = records
            .iter()
            .find(|r| r["event"] == "end" && r["pid"] == start["pid"])
            .expect("a matching end");
        let (began, ended) = (start["ts_ms"].as_u64(), end["ts_ms"].as_u64());
        assert!(began.unwrap() + 300 <= ended.unwrap());
    }
}

#[test]
fn prompt_comes_from_the_last_argument_or_weft_prompt_when_stdin_is_empty() {
    let env = Hermetic::new();
    let log = env.root().join("records.jsonl");
    let output = env
        .command(BIN)
        .args(["--fake-as", "claude", "-p", "--verbose", TASK_PROMPT])
        .env(
            "WEFT_FAKE_SCRIPT",
            format!("record {}\nmarker", log.display()),
        )
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(json_lines(&output).last().unwrap()["result"], TOKEN);

    let output = env
        .command(BIN)
        .args(["--fake-as", "opencode", "run", "--format", "json"])
        .env(
            "WEFT_FAKE_SCRIPT",
            format!("record {}\nmarker", log.display()),
        )
        .env("WEFT_PROMPT", TASK_PROMPT)
        .output()
        .expect("runs");
    assert_eq!(assistant_texts("opencode", &json_lines(&output)), [TOKEN]);

    let records = read_records(&log);
    let starts: Vec<&Value> = records.iter().filter(|r| r["event"] == "start").collect();
    assert_eq!(starts.len(), 2);
    for start in starts {
        assert_eq!(start["prompt"], TASK_PROMPT);
        assert_eq!(start["stdin_was_prompt"], false);
    }
}

#[test]
fn prompt_lines_add_directives_after_the_environment_script() {
    let env = Hermetic::new();
    let prompt = format!("{TASK_PROMPT}\n@fake say from the prompt\n  @fake marker\n");
    let output = scripted(&env, "plain", "say from the env", &prompt);
    assert_eq!(
        stdout(&output),
        format!("from the env\nfrom the prompt\n{TOKEN}\n")
    );
}

#[test]
fn script_can_come_from_a_file() {
    let env = Hermetic::new();
    let file = env.root().join("script.txt");
    fs::write(&file, "# a comment\n\nsay from a file\n").expect("written");
    let output = scripted(&env, "plain", &format!("@{}", file.display()), "");
    assert_eq!(stdout(&output), "from a file\n");
}

#[test]
fn unknown_directives_exit_64_before_any_output() {
    let env = Hermetic::new();
    let output = scripted(&env, "claude", "say hi\nfrobnicate now", "");
    assert_eq!(output.status.code(), Some(64));
    assert!(output.stdout.is_empty());
    assert!(stderr(&output).contains("unknown directive `frobnicate`"));

    let output = run(&mut agent(&env, "codex"), "do it\n@fake frobnicate\n");
    assert_eq!(output.status.code(), Some(64));
    assert!(output.stdout.is_empty());

    let output = scripted(&env, "plain", "exit lots", "");
    assert_eq!(output.status.code(), Some(64));

    let output = run(env.command(BIN).args(["--fake-as", "gemini"]), "");
    assert_eq!(output.status.code(), Some(64));
}

#[test]
fn version_answers_like_the_real_clis() {
    let env = Hermetic::new();
    let expected = [
        ("claude", "2.1.197 (Claude Code)"),
        ("codex", "codex-cli 0.171.0"),
        ("opencode", "1.18.33"),
    ];
    for (persona, line) in expected {
        let output = run(
            env.command(BIN).args(["--fake-as", persona, "--version"]),
            "",
        );
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(stdout(&output), format!("{line}\n"));
    }
    let output = run(
        env.command(BIN).args(["--fake-as", "plain", "--version"]),
        "",
    );
    assert!(stdout(&output).starts_with("weft-fake-agent "));
}

#[test]
fn persona_follows_the_program_name() {
    let env = Hermetic::new();
    let bin = env.root().join("bin");
    fs::create_dir_all(&bin).expect("created");
    for name in ["claude", "codex", "opencode", "my-agent"] {
        std::os::unix::fs::symlink(BIN, bin.join(name)).expect("symlinked");
    }
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let first_type = |name: &str| {
        let output = run(
            env.command(name)
                .env("PATH", &path)
                .args(["--unknown-flag"]),
            TASK_PROMPT,
        );
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        stdout(&output)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(first_type("claude").contains(r#""subtype":"init""#));
    assert!(first_type("codex").contains(r#""type":"thread.started""#));
    assert!(first_type("opencode").contains(r#""type":"step_start""#));
    assert_eq!(first_type("my-agent"), "Done.");

    let output = run(env.command(bin.join("codex")).arg("--version"), "");
    assert_eq!(stdout(&output), "codex-cli 0.171.0\n");
    // `--fake-as` wins over the name.
    let output = run(
        env.command(bin.join("claude")).args(["--fake-as", "plain"]),
        TASK_PROMPT,
    );
    assert_eq!(stdout(&output), format!("Done.\n{TOKEN}\n"));
}

#[test]
fn unknown_flags_are_accepted() {
    let env = Hermetic::new();
    let output = run(
        env.command(BIN).args([
            "--fake-as",
            "claude",
            "-p",
            "--brand-new-flag",
            "value",
            "--another",
            "--x=y",
            "-Z",
            "--output-format",
            "stream-json",
            "--verbose",
        ]),
        TASK_PROMPT,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json_lines(&output).last().unwrap()["result"], TOKEN);
}

#[test]
fn codex_and_opencode_honour_their_directory_flags() {
    let env = Hermetic::new();
    let elsewhere = env.root().join("elsewhere");
    fs::create_dir_all(&elsewhere).expect("created");
    let dir = elsewhere.to_string_lossy().into_owned();
    for (persona, flag) in [("codex", "-C"), ("opencode", "--dir")] {
        let output = run(
            env.command(BIN)
                .args(["--fake-as", persona, flag, &dir])
                .env(
                    "WEFT_FAKE_SCRIPT",
                    format!("write {persona}.txt hi\nrun pwd"),
                ),
            "",
        );
        assert_eq!(output.status.code(), Some(0));
        assert!(
            elsewhere.join(format!("{persona}.txt")).exists(),
            "{persona}"
        );
        assert!(stdout(&output).contains(&format!("{dir}\\n")), "{persona}");
    }
}

#[test]
fn binary_helper_finds_the_same_program() {
    let path = weft_testkit::fake::binary();
    let output = Command::new(&path)
        .args(["--fake-as", "codex", "--version"])
        .output()
        .expect("the helper's binary runs");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "codex-cli 0.171.0\n"
    );
}

// ----- Claude's stdio permission protocol (`ask`) -----

/// The flags weft passes to relay Claude's permission requests.
const STDIO_FLAGS: [&str; 11] = [
    "--fake-as=claude",
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--session-id",
    SESSION,
    "--permission-prompt-tool",
    "stdio",
];

/// The prompt line Claude reads in stream-json input mode.
fn user_line(text: &str) -> String {
    let line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
        "session_id": "",
    });
    format!("{line}\n")
}

fn ask_prompt() -> String {
    "Clean up, please.\n@fake ask Bash {\"command\":\"ls\"}\n@fake say after\n".to_owned()
}

fn control_response(request_id: &Value, decision: Value) -> String {
    let line = serde_json::json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": decision},
    });
    format!("{line}\n")
}

/// How long a conversation waits for the agent's next line, or for it to exit.
const TALK_TIMEOUT: Duration = Duration::from_secs(20);

/// A fake Claude talking the stdio protocol: stdin stays open until [`Conversation::end`]
/// (or [`Conversation::close_stdin`]). stdout is read on a thread, so a stuck agent fails
/// the test instead of hanging it; a conversation dropped early kills its agent.
struct Conversation {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::sync::mpsc::Receiver<String>,
    lines: Vec<Value>,
}

impl Conversation {
    fn start(env: &Hermetic, flags: &[&str], prompt: &str) -> Conversation {
        let mut child = env
            .command(BIN)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the fake agent starts");
        let mut stdin = child.stdin.take().expect("stdin is piped");
        stdin
            .write_all(user_line(prompt).as_bytes())
            .expect("the prompt line is written");
        let pipe = child.stdout.take().expect("stdout is piped");
        let (sender, stdout) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Conversation {
            child,
            stdin: Some(stdin),
            stdout,
            lines: Vec::new(),
        }
    }

    /// The next stdout line, parsed; `None` at the end of stdout.
    fn next(&mut self) -> Option<Value> {
        use std::sync::mpsc::RecvTimeoutError;
        let line = match self.stdout.recv_timeout(TALK_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no stdout line in {TALK_TIMEOUT:?}; so far: {:?}",
                    self.lines
                )
            }
        };
        let value: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        self.lines.push(value.clone());
        Some(value)
    }

    /// Read up to and including the `control_request`, which is returned.
    fn control_request(&mut self) -> Value {
        while let Some(line) = self.next() {
            if line["type"] == "control_request" {
                return line;
            }
            assert_ne!(line["type"], "result", "the run ended without asking");
        }
        panic!("stdout ended without a control_request: {:?}", self.lines);
    }

    fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin.write_all(text.as_bytes()).expect("stdin is writable");
        stdin.flush().expect("stdin is flushed");
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Read up to the `result` line, then expect the agent to exit by itself, stdin being
    /// still open (unless closed before), with nothing printed after the `result`.
    fn end(mut self) -> (Option<i32>, Vec<Value>, String) {
        while let Some(line) = self.next() {
            if line["type"] == "result" {
                break;
            }
        }
        let deadline = Instant::now() + TALK_TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("the agent can be waited for") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the agent did not exit after its result: {:?}",
                self.lines
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let before = self.lines.len();
        while self.next().is_some() {}
        assert_eq!(
            self.lines.len(),
            before,
            "nothing follows the result line: {:?}",
            self.lines
        );
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_string(&mut stderr)
                .expect("stderr is readable");
        }
        (status.code(), std::mem::take(&mut self.lines), stderr)
    }
}

impl Drop for Conversation {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `tool_result` block of the user line answering `tool_use_id`.
fn tool_result<'l>(lines: &'l [Value], tool_use_id: &str) -> &'l Value {
    lines
        .iter()
        .filter(|line| line["type"] == "user")
        .map(|line| &line["message"]["content"][0])
        .find(|block| block["tool_use_id"] == tool_use_id)
        .unwrap_or_else(|| panic!("no tool_result for {tool_use_id}: {lines:?}"))
}

#[test]
fn ask_over_stdio_waits_for_an_allow() {
    let env = Hermetic::new();
    let mut talk = Conversation::start(&env, &STDIO_FLAGS, &ask_prompt());
    let request = talk.control_request();

    // The assistant's tool_use comes first, as in the real recording.
    let types_so_far = types(&talk.lines);
    assert_eq!(types_so_far, ["system", "assistant", "control_request"]);
    let tool_use = &talk.lines[1]["message"]["content"][0];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["name"], "Bash");
    assert_eq!(tool_use["input"], serde_json::json!({"command": "ls"}));
    let request_id = request["request_id"].as_str().expect("a request id");
    let parsed = uuid::Uuid::parse_str(request_id).expect("a uuid");
    assert_eq!(parsed.get_version_num(), 4);
    assert_eq!(
        request["request"],
        serde_json::json!({
            "subtype": "can_use_tool",
            "tool_name": "Bash",
            "display_name": "Bash",
            "input": {"command": "ls"},
            "description": "Bash",
            "permission_suggestions": [],
            "decision_reason": "This command requires approval",
            "decision_reason_type": "other",
            "tool_use_id": tool_use["id"],
        })
    );
    assert_eq!(tool_use["id"], "toolu_fake_1");

    // Lines that are not the answer are skipped.
    talk.send("{\"type\":\"keep_alive\"}\n");
    talk.send(&control_response(
        &serde_json::json!("someone-else"),
        serde_json::json!({"behavior": "deny", "message": "wrong request"}),
    ));
    talk.send(&control_response(
        &request["request_id"],
        serde_json::json!({"behavior": "allow", "updatedInput": {"command": "ls"}}),
    ));
    let (code, lines, stderr) = talk.end();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        types(&lines),
        [
            "system",
            "assistant",
            "control_request",
            "user",
            "assistant",
            "assistant",
            "result"
        ]
    );
    let result_block = tool_result(&lines, "toolu_fake_1");
    assert_eq!(result_block["content"], "allowed");
    assert_eq!(result_block["is_error"], false);
    assert_eq!(
        assistant_texts("claude", &lines),
        ["ASK-ALLOWED Bash", "after"]
    );
    let result = lines.last().expect("a result");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "after");
    assert_eq!(result["permission_denials"], serde_json::json!([]));
    for line in &lines {
        if line["type"] != "control_request" {
            assert_eq!(line["session_id"], SESSION);
        }
    }
}

#[test]
fn ask_over_stdio_reports_a_deny() {
    let env = Hermetic::new();
    let prompt = "@fake ask Bash {\"command\":\"rm -rf build\",\"description\":\"clean\"}\n\
        @fake say after\n";
    let mut talk = Conversation::start(&env, &STDIO_FLAGS, prompt);
    let request = talk.control_request();
    assert_eq!(request["request"]["description"], "clean");
    talk.send(&control_response(
        &request["request_id"],
        serde_json::json!({"behavior": "deny", "message": "not on main", "interrupt": false}),
    ));
    let (code, lines, stderr) = talk.end();
    assert_eq!(code, Some(0), "{stderr}");
    let result_block = tool_result(&lines, "toolu_fake_1");
    assert_eq!(result_block["content"], "not on main");
    assert_eq!(result_block["is_error"], true);
    assert_eq!(
        assistant_texts("claude", &lines),
        ["ASK-DENIED Bash: not on main", "after"]
    );
    let result = lines.last().expect("a result");
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], false);
    assert_eq!(
        result["permission_denials"],
        serde_json::json!([{
            "tool_name": "Bash",
            "tool_use_id": "toolu_fake_1",
            "tool_input": {"command": "rm -rf build", "description": "clean"},
        }])
    );
}

#[test]
fn ask_over_stdio_without_an_answer_is_denied() {
    let env = Hermetic::new();
    let mut talk = Conversation::start(&env, &STDIO_FLAGS, &ask_prompt());
    talk.control_request();
    talk.close_stdin();
    let (code, lines, stderr) = talk.end();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        assistant_texts("claude", &lines),
        ["ASK-DENIED Bash: no answer", "after"]
    );
    let result_block = tool_result(&lines, "toolu_fake_1");
    assert_eq!(result_block["is_error"], true);
    assert_eq!(result_block["content"], "no answer");
    let denials = &lines.last().expect("a result")["permission_denials"];
    assert_eq!(denials[0]["tool_name"], "Bash");

    // A line that is not JSON ends the wait the same way.
    let mut talk = Conversation::start(&env, &STDIO_FLAGS, &ask_prompt());
    talk.control_request();
    talk.send("yes please\n");
    let (code, lines, _) = talk.end();
    assert_eq!(code, Some(0));
    assert_eq!(
        assistant_texts("claude", &lines),
        ["ASK-DENIED Bash: no answer", "after"]
    );
}

#[test]
fn ask_without_a_prompt_tool_is_refused_headless() {
    let env = Hermetic::new();
    // stream-json input, but nobody to ask.
    let flags = &STDIO_FLAGS[..9];
    assert!(!flags.contains(&"--permission-prompt-tool"));
    let talk = Conversation::start(&env, flags, &ask_prompt());
    let (code, lines, stderr) = talk.end();
    assert_eq!(code, Some(0), "{stderr}");
    assert_headless_refusal(&lines);

    // The usual `-p` prompt read to EOF: same refusal.
    let output = run(&mut agent(&env, "claude"), &ask_prompt());
    assert_eq!(output.status.code(), Some(0));
    assert_headless_refusal(&json_lines(&output));
}

fn assert_headless_refusal(lines: &[Value]) {
    assert!(
        !types(lines).iter().any(|kind| kind == "control_request"),
        "{lines:?}"
    );
    assert_eq!(
        assistant_texts("claude", lines),
        ["ASK-DENIED Bash: headless", "after"]
    );
    let tool_use = &lines[1]["message"]["content"][0];
    assert_eq!(tool_use["name"], "Bash");
    assert_eq!(tool_use["input"], serde_json::json!({"command": "ls"}));
    assert_eq!(lines[2]["message"]["content"][0]["is_error"], true);
    assert_eq!(
        lines[2]["tool_use_result"],
        "Error: This command requires approval"
    );
    let result = lines.last().expect("a result");
    assert_eq!(result["type"], "result");
    assert_eq!(
        result["permission_denials"],
        serde_json::json!([{
            "tool_name": "Bash",
            "tool_use_id": tool_use["id"],
            "tool_input": {"command": "ls"},
        }])
    );
}

#[test]
fn ask_is_deny_for_the_other_personas() {
    let env = Hermetic::new();
    let script = "ask Bash {\"command\":\"rm -rf build\"}";
    let lines = json_lines(&scripted(&env, "codex", script, ""));
    assert_eq!(lines[2]["item"]["command"], "rm -rf build");
    assert_eq!(lines[2]["item"]["status"], "declined");
    let output = scripted(&env, "opencode", script, "");
    assert_eq!(json_lines(&output)[1]["part"]["state"]["status"], "error");
    assert!(stderr(&output).contains("permission requested: bash (rm -rf build)"));
}

#[test]
fn stream_json_input_needs_a_user_message_first() {
    let env = Hermetic::new();
    for first in ["hello there\n", "{\"type\":\"control_response\"}\n", "\n"] {
        let output = run(env.command(BIN).args(STDIO_FLAGS), first);
        assert_eq!(output.status.code(), Some(64), "{first:?}");
        assert!(output.stdout.is_empty(), "{first:?}");
        assert!(
            stderr(&output).contains("--input-format stream-json"),
            "{}",
            stderr(&output)
        );
    }

    // Content blocks carry the prompt too.
    let line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": [
            {"type": "text", "text": "@fake say from blocks"},
            {"type": "text", "text": TASK_PROMPT},
        ]},
        "parent_tool_use_id": null,
        "session_id": "",
    });
    let output = run(env.command(BIN).args(STDIO_FLAGS), &format!("{line}\n"));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        assistant_texts("claude", &json_lines(&output)),
        ["from blocks"]
    );

    // No line at all: the usual fallbacks (here the last argument).
    let mut command = env.command(BIN);
    command.args(STDIO_FLAGS).arg(TASK_PROMPT);
    let output = run(&mut command, "");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json_lines(&output).last().unwrap()["result"], TOKEN);
}

#[test]
fn ask_lines_must_carry_a_json_object() {
    let env = Hermetic::new();
    for script in ["ask Bash {\"command\":", "ask Bash", "ask Bash [1]", "ask"] {
        let output = scripted(&env, "claude", script, "");
        assert_eq!(output.status.code(), Some(64), "{script}");
        assert!(output.stdout.is_empty(), "{script}");
    }
    assert_eq!(
        parse_line("ask Bash {\"command\": \"ls -l\"}"),
        Ok(Some(Directive::Ask {
            tool: "Bash".into(),
            input: serde_json::json!({"command": "ls -l"}),
        }))
    );
}

// ----- parsing, without a process -----

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[test]
fn invocation_parsing_knows_each_clis_flags() {
    let claude = Invocation::parse(&argv(&[
        "/x/claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--session-id",
        SESSION,
        "the prompt",
    ]))
    .unwrap();
    assert_eq!(claude.persona, Persona::Claude);
    assert_eq!(claude.flag(&["--session-id"]), Some(SESSION));
    assert_eq!(claude.prompt_arg(), Some("the prompt"));
    assert_eq!(claude.permission_prompt_tool, None);
    assert!(!claude.stream_json_input());

    let asking = Invocation::parse(&argv(&[
        "claude",
        "-p",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
    ]))
    .unwrap();
    assert_eq!(asking.permission_prompt_tool.as_deref(), Some("stdio"));
    assert!(asking.stream_json_input());
    assert!(asking.prompts_on_stdio());
    assert!(asking.positionals.is_empty());
    let mcp = Invocation::parse(&argv(&[
        "claude",
        "--input-format=stream-json",
        "--permission-prompt-tool=mcp__weft__approve",
    ]))
    .unwrap();
    assert_eq!(
        mcp.permission_prompt_tool.as_deref(),
        Some("mcp__weft__approve")
    );
    assert!(!mcp.prompts_on_stdio());

    let codex = Invocation::parse(&argv(&[
        "codex", "exec", "--json", "-c", "a=b", "-C", "/w", "resume", "T1", "-",
    ]))
    .unwrap();
    assert_eq!(codex.persona, Persona::Codex);
    assert_eq!(codex.resume_id.as_deref(), Some("T1"));
    assert_eq!(codex.positionals, ["-"]);
    assert_eq!(codex.prompt_arg(), None);

    let opencode = Invocation::parse(&argv(&[
        "weft-fake-agent",
        "--fake-as=opencode",
        "run",
        "-s",
        "ses_1",
        "--auto",
        "hello",
    ]))
    .unwrap();
    assert_eq!(opencode.persona, Persona::OpenCode);
    assert_eq!(opencode.flag(&["-s", "--session"]), Some("ses_1"));
    assert_eq!(opencode.positionals, ["hello"]);

    // An unknown flag takes a value unless that value is the last argument.
    let plain = Invocation::parse(&argv(&["agent", "--mystery", "v", "prompt"])).unwrap();
    assert_eq!(plain.flag(&["--mystery"]), Some("v"));
    assert_eq!(plain.prompt_arg(), Some("prompt"));
    let plain = Invocation::parse(&argv(&["agent", "--mystery", "prompt"])).unwrap();
    assert_eq!(plain.prompt_arg(), Some("prompt"));

    assert_eq!(
        choose_prompt(Some(""), Some("arg"), Some("env")),
        ("arg".into(), false)
    );
    assert_eq!(
        choose_prompt(Some("in"), Some("arg"), None),
        ("in".into(), true)
    );
    assert_eq!(
        choose_prompt(None, None, Some("env")),
        ("env".into(), false)
    );
}

#[test]
fn script_parsing() {
    assert_eq!(parse_line("  # note"), Ok(None));
    assert_eq!(
        parse_line("write a/b.txt x\\ny"),
        Ok(Some(Directive::Write {
            path: "a/b.txt".into(),
            text: "x\ny".into()
        }))
    );
    assert_eq!(parse_line("flood 2k"), Ok(Some(Directive::Flood(2048))));
    assert_eq!(
        parse_line("sleep 0.5"),
        Ok(Some(Directive::Sleep(Duration::from_millis(500))))
    );
    assert!(parse_line("sleep soon").is_err());
    assert!(parse_line("exit 256").is_err());
    assert!(parse_line("usage 1 2").is_err());
    assert!(parse_line("write").is_err());
    let error = parse_script("say a\nbogus", "WEFT_FAKE_SCRIPT").unwrap_err();
    assert_eq!(error.origin, "WEFT_FAKE_SCRIPT line 2");
    assert_eq!(
        prompt_script("x\n@fake say a\n @fake marker\n@fakex"),
        "say a\nmarker\n"
    );
}

#[test]
fn marker_parsing() {
    assert_eq!(
        code_spans("a `x` b ``y ` z`` `` c `unclosed"),
        ["x", "y ` z"]
    );
    assert_eq!(follow_instruction(TASK_PROMPT).as_deref(), Some(TOKEN));
    // The instruction, not an earlier hex span, decides; the last instruction wins.
    let two = "`WEFT_DONE_` then `1111111111111111`; later `WEFT_DONE_` then `2222222222222222`";
    assert_eq!(
        follow_instruction(two).as_deref(),
        Some("WEFT_DONE_2222222222222222")
    );
    assert_eq!(
        follow_instruction("`WEFT_DONE_` and `0123456789ABCDEF`"),
        None
    );
    assert_eq!(
        follow_instruction("WEFT_DONE_ and `0123456789abcdef`"),
        None
    );
    let copied = copy_markers(TASK_PROMPT);
    assert_eq!(copied, ["WEFT_DONE_", "WEFT_DONE_aaaabbbbccccdddd"]);

    // The exact paragraph weft-core's `Marker::instruction` writes.
    let weft_core = "When the task is fully done, and not before, print one final line that holds \
        only your completion marker. The marker has two parts: first `WEFT_DONE_`, then directly \
        after it `0123456789abcdef`. Write them joined into one token with nothing between them \
        (no space, quote, backtick or line break), and print nothing after that line.";
    assert_eq!(follow_instruction(weft_core).as_deref(), Some(TOKEN));
    assert_eq!(copy_markers(weft_core), ["WEFT_DONE_"]);
    // weft-core's defused form is copied both ways, never completed.
    assert_eq!(
        copy_markers("done: WEFT-DONE-(defused)"),
        ["WEFT-DONE-(defused)", "WEFT_DONE_(defused)"]
    );
}

use super::*;
use crate::log::StepOutcome;
use std::path::Path;

use serde_json::Value;

fn planner(kind: AgentCliKind) -> AgentCliPlanner {
    let mut config = AgentCliConfig::new(kind, "/repo");
    config.model = Some("m-1".to_owned());
    config.effort = Some("high".to_owned());
    AgentCliPlanner::new(config)
}

fn fresh(id: Option<&str>) -> TurnPlan {
    TurnPlan {
        system: "SYS".to_owned(),
        message: "MSG".to_owned(),
        session: TurnSession::Fresh {
            session_id: id.map(str::to_owned),
        },
    }
}

fn resume(id: &str) -> TurnPlan {
    TurnPlan {
        system: "SYS".to_owned(),
        message: "MSG".to_owned(),
        session: TurnSession::Resume {
            session_id: id.to_owned(),
        },
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn kinds_have_names_programs_and_parse() {
    for kind in [
        AgentCliKind::ClaudeCode,
        AgentCliKind::Codex,
        AgentCliKind::OpenCode,
    ] {
        assert_eq!(kind.name().parse::<AgentCliKind>(), Ok(kind));
        assert_eq!(kind.to_string(), kind.name());
    }
    assert_eq!(AgentCliKind::ClaudeCode.default_program(), "claude");
    assert_eq!(AgentCliKind::Codex.default_program(), "codex");
    assert_eq!("claude".parse(), Ok(AgentCliKind::ClaudeCode));
    let err = "gemini".parse::<AgentCliKind>().unwrap_err();
    assert!(err.to_string().contains("`gemini`"));
}

#[test]
fn config_defaults() {
    let config = AgentCliConfig::new(AgentCliKind::OpenCode, "/w");
    assert_eq!(config.program, "opencode");
    assert_eq!(config.turn_timeout, Duration::from_secs(600));
    assert!(config.model.is_none() && config.effort.is_none() && config.env.is_empty());
}

#[test]
fn debug_hides_env_values() {
    let mut config = AgentCliConfig::new(AgentCliKind::Codex, "/w");
    config
        .env
        .push(("TOKEN".to_owned(), "s3cret-value".to_owned()));
    let shown = format!("{config:?}");
    assert!(shown.contains("TOKEN"));
    assert!(!shown.contains("s3cret-value"));
}

/// The turn's argv (without the program).
fn argv(p: &AgentCliPlanner, turn: &TurnPlan) -> Vec<String> {
    p.launch(turn).unwrap().args
}

#[test]
fn claude_argv_first_turn_and_resume() {
    let p = planner(AgentCliKind::ClaudeCode);
    let turn = |session: &[&str]| {
        let mut args = strs(&["-p", "--output-format", "stream-json", "--verbose"]);
        args.extend(strs(session));
        args.extend(strs(&[
            "--permission-mode",
            "plan",
            "--disallowedTools",
            "Edit,Write,MultiEdit,NotebookEdit",
            "--append-system-prompt",
            "SYS",
            "--model",
            "m-1",
            "--effort",
            "high",
        ]));
        args
    };
    assert_eq!(
        argv(&p, &fresh(Some("u-1"))),
        turn(&["--session-id", "u-1"])
    );
    assert_eq!(argv(&p, &resume("u-1")), turn(&["--resume", "u-1"]));
    let spec = p.launch(&fresh(Some("u-1"))).unwrap();
    assert_eq!(spec.program, "claude");
    assert_eq!(spec.cwd, Path::new("/repo"));
    assert_eq!(spec.stream, weft_agents::StreamKind::ClaudeStreamJson);
    // Claude reads the message from stdin as is; the system text is a flag.
    assert_eq!(p.stdin_text(&fresh(Some("u-1"))), "MSG");
}

#[test]
fn claude_argv_without_model_effort_or_system() {
    let p = AgentCliPlanner::new(AgentCliConfig::new(AgentCliKind::ClaudeCode, "/r"));
    let mut turn = fresh(Some("u"));
    turn.system = "  ".to_owned();
    let argv = argv(&p, &turn);
    for flag in ["--model", "--effort", "--append-system-prompt", "--resume"] {
        assert!(!argv.iter().any(|a| a == flag), "{flag} in {argv:?}");
    }
    assert_eq!(argv[4..6], strs(&["--session-id", "u"]));
}

#[test]
fn claude_plans_a_fresh_uuid_then_resumes() {
    let mut p = planner(AgentCliKind::ClaudeCode);
    let TurnSession::Fresh {
        session_id: Some(id),
    } = p.plan_turn("s", "m").session
    else {
        panic!("expected a fresh session with an id");
    };
    let parsed = uuid::Uuid::parse_str(&id).unwrap();
    assert_eq!(parsed.get_version_num(), 4);
    p.set_session(Some(id.clone()));
    assert_eq!(
        p.plan_turn("s", "m").session,
        TurnSession::Resume { session_id: id }
    );
}

#[test]
fn codex_argv_first_turn_and_resume() {
    let p = planner(AgentCliKind::Codex);
    let base = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "read-only",
        "-c",
        "approval_policy=\"never\"",
        "-m",
        "m-1",
        "-c",
        "model_reasoning_effort=\"high\"",
    ];
    let mut first = strs(&base);
    first.push("-".to_owned());
    assert_eq!(argv(&p, &fresh(None)), first);
    let mut later = strs(&base);
    later.extend(strs(&["resume", "th-1", "-"]));
    assert_eq!(argv(&p, &resume("th-1")), later);
    // No fresh id is planned for Codex: it mints the thread id.
    assert_eq!(
        p.plan_turn("s", "m").session,
        TurnSession::Fresh { session_id: None }
    );
}

#[test]
fn opencode_argv_first_turn_and_resume() {
    let p = planner(AgentCliKind::OpenCode);
    let base = [
        "run",
        "--format",
        "json",
        "--agent",
        "plan",
        "-m",
        "m-1",
        "--variant",
        "high",
    ];
    assert_eq!(argv(&p, &fresh(None)), strs(&base));
    let mut later = strs(&base);
    later.extend(strs(&["--session", "ses_1"]));
    assert_eq!(argv(&p, &resume("ses_1")), later);
    // `opencode run` takes its directory from $PWD, after the configured environment.
    let mut config = p.config().clone();
    config.env.push(("PWD".to_owned(), "/elsewhere".to_owned()));
    let env = AgentCliPlanner::new(config)
        .launch(&fresh(None))
        .unwrap()
        .env;
    assert_eq!(
        env,
        [
            ("PWD".to_owned(), "/elsewhere".to_owned()),
            ("PWD".to_owned(), "/repo".to_owned())
        ]
    );
}

#[test]
fn codex_and_opencode_prefix_the_system_text_on_the_first_turn_only() {
    for kind in [AgentCliKind::Codex, AgentCliKind::OpenCode] {
        let p = planner(kind);
        let first = p.stdin_text(&fresh(None));
        assert_eq!(
            first,
            "<planner-instructions>\nSYS\n</planner-instructions>\n\nMSG"
        );
        assert_eq!(p.stdin_text(&resume("x")), "MSG");
        let mut no_system = fresh(None);
        no_system.system = String::new();
        assert_eq!(p.stdin_text(&no_system), "MSG");
    }
}

#[test]
fn set_session_ignores_blank_ids() {
    let mut p = planner(AgentCliKind::OpenCode);
    p.set_session(Some("  ".to_owned()));
    assert_eq!(p.session_id(), None);
    p.set_session(Some("ses_x".to_owned()));
    assert_eq!(p.session_id(), Some("ses_x"));
    p.set_session(None);
    assert_eq!(p.session_id(), None);
}

/// Feeds JSON lines through the CLI's shared stream parser into a turn, as the supervisor
/// and `send` do.
fn read(kind: AgentCliKind, lines: &[Value], exit_ok: bool) -> (Verdict, AgentReply) {
    let stream = kind.manifest().stream();
    let mut parser = weft_agents::stream::parser(stream);
    let mut turn = Collector::default();
    let feed = |events: Vec<weft_agents::AgentEvent>, turn: &mut Collector| {
        for event in events {
            turn.event(event, kind.product(), &mut |_| {});
        }
    };
    for line in lines {
        let line = line.to_string();
        turn.stdout_line(&line);
        feed(parser.line(&line), &mut turn);
    }
    feed(parser.finish(), &mut turn);
    let verdict = turn.verdict(stream, exit_ok);
    (verdict, turn.into_reply())
}

#[test]
fn claude_ignores_subagent_text_but_logs_its_tools() {
    use serde_json::json;
    let lines = [
        json!({"type":"assistant","parent_tool_use_id":null,"message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"description":"look around"}}]}}),
        json!({"type":"assistant","parent_tool_use_id":"t1","message":{"id":"s1","content":[{"type":"text","text":"SUBAGENT TALK"}]}}),
        json!({"type":"assistant","parent_tool_use_id":"t1","message":{"id":"s1","content":[{"type":"tool_use","id":"t2","name":"Grep","input":{"pattern":"fn","path":"src"}}]}}),
        json!({"type":"user","parent_tool_use_id":"t1","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"src/a.rs"}]}]}}),
        json!({"type":"user","parent_tool_use_id":null,"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"digest"}]}}),
        json!({"type":"assistant","parent_tool_use_id":null,"message":{"id":"m2","content":[{"type":"text","text":"{\"plan\":1}"}]}}),
        json!({"type":"result","subtype":"success","is_error":false,"result":"{\"plan\":1}","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}}),
    ];
    let (verdict, reply) = read(AgentCliKind::ClaudeCode, &lines, true);
    assert_eq!(verdict, Verdict::Success);
    assert_eq!(reply.text, "{\"plan\":1}");
    let tools: Vec<(&str, &str, StepOutcome)> = reply
        .steps
        .iter()
        .map(|s| (s.tool.as_str(), s.input.as_str(), s.outcome))
        .collect();
    assert_eq!(
        tools,
        [
            ("Task", "look around", StepOutcome::Success),
            ("Grep", "fn in src", StepOutcome::Success),
        ]
    );
    assert_eq!(reply.steps[1].detail, "src/a.rs");
    assert_eq!(
        reply.usage,
        Some(crate::chat::Usage {
            input_tokens: 15,
            output_tokens: 3
        })
    );
}

#[test]
fn claude_exit_plan_mode_plan_is_reply_text_and_max_tokens_truncates() {
    use serde_json::json;
    let lines = [
        json!({"type":"assistant","parent_tool_use_id":null,"message":{"id":"m1","content":[{"type":"text","text":"Here it is."}]}}),
        json!({"type":"assistant","parent_tool_use_id":null,"message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"ExitPlanMode","input":{"plan":"PLAN BODY"}}]}}),
        json!({"type":"result","subtype":"success","is_error":false,"stop_reason":"max_tokens","result":"x","permission_denials":[{"tool_name":"ExitPlanMode","tool_use_id":"t1","tool_input":{"plan":"PLAN BODY"}}]}),
    ];
    let (verdict, reply) = read(AgentCliKind::ClaudeCode, &lines, true);
    assert_eq!(verdict, Verdict::Success);
    assert_eq!(reply.text, "Here it is.\nPLAN BODY");
    assert!(reply.truncated);
    assert_eq!(reply.steps[0].outcome, StepOutcome::Denied);
    assert_eq!(reply.steps[0].input, "plan");
}

#[test]
fn claude_without_result_is_undecided_and_keeps_unanswered_calls() {
    use serde_json::json;
    let lines = [
        json!({"type":"system","subtype":"init","session_id":"abc"}),
        json!({"type":"assistant","parent_tool_use_id":null,"message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/x"}}]}}),
    ];
    let (verdict, reply) = read(AgentCliKind::ClaudeCode, &lines, true);
    assert_eq!(verdict, Verdict::Undecided { note: None });
    assert_eq!(reply.session_id.as_deref(), Some("abc"));
    assert_eq!(reply.steps[0].outcome, StepOutcome::NotExecuted);
    assert!(!reply.steps[0].detail.is_empty());
}

#[test]
fn codex_commands_map_to_outcomes() {
    use serde_json::json;
    let cmd = |id: &str, exit: i64, status: &str, out: &str| json!({"type":"item.completed","item":{"id":id,"type":"command_execution","command":"/bin/bash -lc 'x'","aggregated_output":out,"exit_code":exit,"status":status}});
    let lines = [
        json!({"type":"thread.started","thread_id":"th"}),
        json!({"type":"item.started","item":{"id":"i1","type":"command_execution","command":"/bin/bash -lc 'ls'","aggregated_output":"","exit_code":null,"status":"in_progress"}}),
        cmd("i1", 0, "completed", "a\nb\n"),
        cmd("i2", 2, "failed", "ls: cannot access 'nope'"),
        cmd(
            "i3",
            1,
            "failed",
            "touch: cannot touch 'f': Read-only file system",
        ),
        json!({"type":"item.completed","item":{"id":"i4","type":"command_execution","command":"rm -rf x","aggregated_output":"","exit_code":null,"status":"declined"}}),
        json!({"type":"item.completed","item":{"id":"i5","type":"reasoning","text":"hmm"}}),
        json!({"type":"item.completed","item":{"id":"i6","type":"agent_message","text":"one"}}),
        json!({"type":"item.completed","item":{"id":"i7","type":"agent_message","text":"two"}}),
        json!({"type":"turn.completed","usage":{"input_tokens":7,"output_tokens":2}}),
    ];
    let (verdict, reply) = read(AgentCliKind::Codex, &lines, true);
    assert_eq!(verdict, Verdict::Success);
    assert_eq!(reply.text, "one\n\ntwo");
    let outcomes: Vec<StepOutcome> = reply.steps.iter().map(|s| s.outcome).collect();
    assert_eq!(
        outcomes,
        [
            StepOutcome::Success,
            StepOutcome::Failure,
            StepOutcome::Refused,
            StepOutcome::Denied
        ]
    );
    assert_eq!(reply.steps[0].tool, "command_execution");
    assert!(reply.steps[2].detail.contains("Read-only file system"));
    assert_eq!(reply.steps[3].detail, "declined by Codex's approval policy");
    assert_eq!(reply.steps[0].input, "/bin/bash -lc 'ls'");
    assert!(reply.steps[1].detail.ends_with("exit code 2"));
}

#[test]
fn codex_reconnects_alone_do_not_fail_a_turn() {
    use serde_json::json;
    let lines = [
        json!({"type":"thread.started","thread_id":"th"}),
        json!({"type":"error","message":"Reconnecting... 1/5 (boom)"}),
        json!({"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"ok"}}),
        json!({"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}),
    ];
    let (verdict, reply) = read(AgentCliKind::Codex, &lines, true);
    assert_eq!(verdict, Verdict::Success);
    assert_eq!(reply.text, "ok");
    let (verdict, _) = read(AgentCliKind::Codex, &lines[..2], false);
    assert_eq!(
        verdict,
        Verdict::Undecided {
            note: Some("Reconnecting... 1/5 (boom)".to_owned())
        }
    );
}

#[test]
fn opencode_sums_usage_and_reads_length_stops() {
    use serde_json::json;
    let step = |reason: &str| json!({"type":"step_finish","sessionID":"ses","part":{"reason":reason,"tokens":{"input":10,"output":2,"reasoning":1,"cache":{"read":4,"write":0}}}});
    let lines = [
        json!({"type":"text","sessionID":"ses","part":{"messageID":"m1","text":"a"}}),
        json!({"type":"text","sessionID":"ses","part":{"messageID":"m1","text":"b"}}),
        json!({"type":"text","sessionID":"ses","part":{"messageID":"m1","text":"hidden","synthetic":true}}),
        step("tool-calls"),
        json!({"type":"text","sessionID":"ses","part":{"messageID":"m2","text":"c"}}),
        step("length"),
    ];
    let (verdict, reply) = read(AgentCliKind::OpenCode, &lines, true);
    assert_eq!(verdict, Verdict::Success);
    assert_eq!(reply.text, "a\nb\n\nc");
    assert!(reply.truncated);
    assert_eq!(
        reply.usage,
        Some(crate::chat::Usage {
            input_tokens: 28,
            output_tokens: 6
        })
    );
    // No error event but a failed exit: the exit status must explain.
    let (verdict, _) = read(AgentCliKind::OpenCode, &lines, false);
    assert_eq!(verdict, Verdict::Undecided { note: None });
}

#[test]
fn claude_api_error_messages_are_never_reply_text() {
    use serde_json::json;
    // The planner reads the task runners' parser, so it knows `isApiErrorMessage` too.
    let lines = [
        json!({"type":"assistant","isApiErrorMessage":true,"parent_tool_use_id":null,"message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"API Error: Overloaded"}]}}),
    ];
    let (verdict, reply) = read(AgentCliKind::ClaudeCode, &lines, false);
    assert_eq!(
        verdict,
        Verdict::Undecided {
            note: Some("API Error: Overloaded".to_owned())
        }
    );
    assert_eq!(reply.text, "");
}

//! End to end: what an agent prints reaches the attempt's log file, its tail and its
//! events masked by shape as well as by known value. The agent is weft-testkit's fake
//! agent, started exactly like a real CLI.

use std::path::Path;
use std::sync::mpsc::channel;
use std::time::Duration;

use weft_agents::StreamKind;
use weft_agents::manifest::LaunchSpec;
use weft_agents::supervise::{Attempt, SuperviseOptions, SupervisorEvent};
use weft_core::secrets::encode_base64;

const SECRET: &str = "hunter2-service-token-42";
const GHP: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
const SCRIPT: &str = "say DATABASE_URL=postgres://admin:pw@db/x\n\
    say found ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5 in the config\n\
    run printf %s \"$MY_SERVICE_TOKEN\" | base64\n\
    say done";

fn fake(dir: &Path, persona: &str, stream: StreamKind) -> LaunchSpec {
    let mut args = vec!["--fake-as".to_owned(), persona.to_owned()];
    if persona == "claude" {
        args.extend(["-p", "--output-format", "stream-json", "--verbose"].map(String::from));
    }
    args.push("do the task".into());
    LaunchSpec {
        program: weft_testkit::fake::binary().display().to_string(),
        args,
        env: vec![
            ("WEFT_FAKE_SCRIPT".into(), SCRIPT.into()),
            ("MY_SERVICE_TOKEN".into(), SECRET.into()),
        ],
        stdin: None,
        prompt_file: None,
        cwd: dir.to_owned(),
        needs_tty: false,
        stream,
        receives_marker: false,
        relay: None,
    }
}

fn run(persona: &str, stream: StreamKind) -> (String, String, Vec<SupervisorEvent>) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/attempt.log");
    let mut options = SuperviseOptions::new(log.clone(), Duration::from_secs(30));
    // What weft passes: the values of the secret-named variables of the environment.
    options.secrets = weft_core::secrets::secret_values([("MY_SERVICE_TOKEN", SECRET)]);
    let (tx, rx) = channel();
    let attempt = Attempt::start(&fake(dir.path(), persona, stream), options, tx).unwrap();
    let outcome = attempt.wait();
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.tail);
    let text = String::from_utf8(std::fs::read(&log).unwrap()).unwrap();
    (text, outcome.tail, rx.try_iter().collect())
}

fn assert_masked(what: &str, text: &str) {
    let encoded = encode_base64(SECRET.as_bytes(), false);
    for leak in [":pw@", &GHP[4..], SECRET, encoded.trim_end_matches('=')] {
        assert!(!text.contains(leak), "{what} shows {leak:?}:\n{text}");
    }
}

#[test]
fn url_passwords_tokens_and_base64_of_secrets_are_masked_in_the_log_of_a_plain_agent() {
    let (log, tail, events) = run("plain", StreamKind::Plain);
    assert!(
        log.contains("DATABASE_URL=postgres://admin:****@db/x\n"),
        "{log}"
    );
    assert!(log.contains("found ghp_**** in the config\n"), "{log}");
    assert!(log.contains("done\n"), "{log}");
    assert_masked("the log", &log);
    assert_masked("the tail", &tail);
    assert_masked("the events", &format!("{events:?}"));
}

#[test]
fn url_passwords_tokens_and_base64_of_secrets_are_masked_in_a_json_stream_that_still_parses() {
    let (log, tail, events) = run("claude", StreamKind::ClaudeStreamJson);
    assert!(log.contains("postgres://admin:****@db/x"), "{log}");
    assert!(log.contains("ghp_****"), "{log}");
    assert_masked("the log", &log);
    assert_masked("the tail", &tail);
    assert_masked("the events", &format!("{events:?}"));
    for line in log.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "a masked line no longer parses: {line}"
        );
    }
    // The parsed stream carried the (masked) assistant text and the final result.
    let texts: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            SupervisorEvent::Agent(weft_agents::event::AgentEvent::AssistantText {
                text, ..
            }) => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t == "DATABASE_URL=postgres://admin:****@db/x"),
        "{texts:?}"
    );
}

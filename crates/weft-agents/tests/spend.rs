//! Live spend from the real CLIs' recorded streams: each parser's `Spend` events fed to a
//! `weft_core::spend::Meter` give the figures the CLI itself reported at its end.

use weft_agents::{AgentEvent, StreamKind, stream};
use weft_core::spend::{Meter, PriceTable, Spend, Tokens};
use weft_testkit::samples::agent_output_file;

/// The meter's spend after each `Spend` event of the sample, in order.
fn replay(kind: StreamKind, rel: &str, model: Option<&str>) -> Vec<Spend> {
    let path = agent_output_file(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut parser = stream::parser(kind);
    let mut meter = Meter::new(PriceTable::default(), model.map(str::to_owned));
    let mut seen = Vec::new();
    let mut events: Vec<AgentEvent> = text.lines().flat_map(|l| parser.line(l)).collect();
    events.extend(parser.finish());
    for event in events {
        if let AgentEvent::Spend {
            total,
            message,
            model,
            tokens,
            cost_usd,
        } = event
        {
            if total {
                meter.final_total(tokens, cost_usd);
            } else {
                meter.message(message.as_deref(), model.as_deref(), tokens, cost_usd);
            }
            seen.push(meter.spend());
        }
    }
    seen
}

#[test]
fn claude_codes_messages_are_counted_once_each_and_its_result_replaces_the_estimate() {
    let seen = replay(
        StreamKind::ClaudeStreamJson,
        "claude/cc2.1.197-stream-json-write-file-success.jsonl",
        None,
    );
    // Five assistant lines of three messages (100 input tokens each), then `result`.
    let live = &seen[seen.len() - 2];
    assert_eq!(live.tokens.input, 300, "{seen:?}");
    assert_eq!(live.tokens.output, 3);
    assert!(
        (live.usd - (300.0 * 3.0 + 3.0 * 15.0) / 1e6).abs() < 1e-12,
        "{live:?}"
    );
    let end = seen.last().unwrap();
    assert_eq!(end.cost_usd(), Some(0.00135));
    assert_eq!(end.tokens.total(), 330);
    assert!(
        seen.windows(2)
            .take(seen.len() - 2)
            .all(|w| w[1].usd >= w[0].usd),
        "monotone while live"
    );
}

#[test]
fn codexs_turn_total_is_priced_by_the_tasks_model_and_unknown_without_one() {
    let priced = replay(
        StreamKind::CodexJson,
        "codex/cx0.171.0-exec-json-write-file-success.jsonl",
        Some("gpt-5"),
    );
    let end = priced.last().unwrap();
    assert_eq!(
        end.tokens,
        Tokens {
            input: 3000,
            output: 60,
            ..Tokens::default()
        }
    );
    assert!((end.usd - (3000.0 * 1.25 + 60.0 * 10.0) / 1e6).abs() < 1e-12);
    // The recording's model, gpt-5.5, has no default price: unknown, never free.
    let unknown = replay(
        StreamKind::CodexJson,
        "codex/cx0.171.0-exec-json-write-file-success.jsonl",
        Some("gpt-5.5"),
    );
    let end = unknown.last().unwrap();
    assert_eq!(end.cost_usd(), None);
    assert_eq!(end.unpriced.as_deref(), Some("gpt-5.5"));
    assert_eq!(end.tokens.total(), 3060);
}

#[test]
fn opencodes_steps_add_up_and_a_zero_cost_step_with_tokens_is_priced_by_weft() {
    let seen = replay(
        StreamKind::OpencodeJson,
        "opencode/oc1.18.33-run-format-json-write-file-success.jsonl",
        Some("claude-haiku-4-5"),
    );
    assert_eq!(seen.len(), 3, "one per step");
    let end = seen.last().unwrap();
    assert_eq!(end.tokens.total(), 3 * 920);
    assert!((end.usd - 3.0 * (900.0 * 1.0 + 20.0 * 5.0) / 1e6).abs() < 1e-12);
    // The recording's mock model has no price: its cost is unknown.
    let unknown = replay(
        StreamKind::OpencodeJson,
        "opencode/oc1.18.33-run-format-json-write-file-success.jsonl",
        None,
    );
    assert_eq!(unknown.last().unwrap().cost_usd(), None);
}

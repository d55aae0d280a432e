//! The Anthropic Messages API (`POST …/v1/messages`): Claude Code with
//! `ANTHROPIC_BASE_URL` pointing here.
//!
//! A stream is `event: NAME` + `data: {json}` pairs: `message_start` (the message with
//! input usage), per content block `content_block_start`, its deltas (`thinking_delta`
//! and a `signature_delta`, `text_delta`, or for a `tool_use` block `input_json_delta`
//! pieces of the arguments) and `content_block_stop`, a `ping` after the first block
//! starts, then `message_delta` (stop reason and output usage) and `message_stop`.
//! `POST …/v1/messages/count_tokens` is answered from the request size without taking a
//! scripted reply.

use std::io;
use std::net::TcpStream;

use serde_json::{Value, json};

use super::http::{Sse, write_json};
use super::script::{Ending, Finish, PIECES, Turn, estimate_tokens, split_pieces};
use super::{RecordedRequest, Shared};

fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "end_turn",
        Finish::ToolCalls => "tool_use",
        Finish::Length => "max_tokens",
    }
}

fn id(turn: &Turn) -> String {
    format!("msg_mock_{}", turn.number)
}

fn tool_use_id(number: u64) -> String {
    format!("toolu_mock_{number}")
}

/// A fixed stand-in for the signature the real API puts on thinking blocks.
const SIGNATURE: &str = "bW9jay1zaWduYXR1cmU=";

/// An error body the way the Messages API sends it.
pub(super) fn error_body(message: &str) -> String {
    json!({"type": "error", "error": {"type": "api_error", "message": message}}).to_string()
}

/// The answer to `count_tokens`.
pub(super) fn count_tokens(request: &RecordedRequest) -> String {
    json!({"input_tokens": estimate_tokens(request.raw_body.len())}).to_string()
}

/// The content blocks of the turn, whole: thinking, text, then one `tool_use` per call.
fn blocks(turn: &Turn) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !turn.reasoning.is_empty() {
        blocks
            .push(json!({"type": "thinking", "thinking": turn.reasoning, "signature": SIGNATURE}));
    }
    if !turn.text.is_empty() {
        blocks.push(json!({"type": "text", "text": turn.text}));
    }
    for call in &turn.calls {
        let input: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
        blocks.push(json!({
            "type": "tool_use",
            "id": tool_use_id(call.number),
            "name": call.name,
            "input": input,
        }));
    }
    blocks
}

fn message(turn: &Turn, content: Vec<Value>, stop: Value, output_tokens: u64) -> Value {
    json!({
        "id": id(turn),
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {
            "input_tokens": turn.usage.0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": output_tokens,
        },
    })
}

pub(super) fn write(
    shared: &Shared,
    stream: &mut TcpStream,
    request: &RecordedRequest,
    turn: &Turn,
    plain_json: bool,
) -> io::Result<()> {
    if plain_json || !request.wants_stream() {
        let stop = match turn.ending {
            Ending::Finish(finish) => Value::from(stop_reason(finish)),
            Ending::Cut | Ending::Stall => Value::Null,
        };
        let body = message(turn, blocks(turn), stop, turn.usage.1).to_string();
        return write_json(shared, stream, &turn.ending, &body);
    }
    let mut sse = Sse::start(stream)?;
    sse.named(
        "message_start",
        &json!({"type": "message_start", "message": message(turn, Vec::new(), Value::Null, 1)}),
    )?;
    for (index, block) in blocks(turn).into_iter().enumerate() {
        let (start, deltas) = block_events(&block);
        sse.named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        )?;
        if index == 0 {
            sse.named("ping", &json!({"type": "ping"}))?;
        }
        for delta in deltas {
            sse.named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )?;
        }
        sse.named(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        )?;
    }
    sse.end(shared, &turn.ending, |sse| {
        let Ending::Finish(finish) = turn.ending else {
            return Ok(());
        };
        sse.named(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason(finish), "stop_sequence": null},
                "usage": {"output_tokens": turn.usage.1},
            }),
        )?;
        sse.named("message_stop", &json!({"type": "message_stop"}))
    })
}

/// A block's `content_block_start` payload (empty) and the deltas that fill it.
fn block_events(block: &Value) -> (Value, Vec<Value>) {
    let text = |key: &str| block[key].as_str().unwrap_or_default().to_owned();
    match block["type"].as_str() {
        Some("thinking") => {
            let thinking = text("thinking");
            let mut deltas: Vec<Value> = split_pieces(&thinking, PIECES)
                .into_iter()
                .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                .collect();
            deltas.push(json!({"type": "signature_delta", "signature": SIGNATURE}));
            (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            )
        }
        Some("tool_use") => {
            let arguments = block["input"].to_string();
            let deltas = split_pieces(&arguments, PIECES)
                .into_iter()
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect();
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                deltas,
            )
        }
        _ => {
            let body = text("text");
            let deltas = split_pieces(&body, PIECES)
                .into_iter()
                .map(|piece| json!({"type": "text_delta", "text": piece}))
                .collect();
            (json!({"type": "text", "text": ""}), deltas)
        }
    }
}

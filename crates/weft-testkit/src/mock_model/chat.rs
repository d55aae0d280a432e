//! OpenAI chat completions (`POST …/chat/completions`): weft's planner and OpenCode's
//! `@ai-sdk/openai-compatible` provider.
//!
//! Streams are `data: {chat.completion.chunk}` events, tool-call arguments split across
//! chunks by `index`, usage in a last chunk when the request asked for
//! `stream_options.include_usage`, then `data: [DONE]`.

use std::io;
use std::net::TcpStream;

use serde_json::{Value, json};

use super::http::{Sse, write_json};
use super::script::{Ending, Finish, PIECES, Turn, split_pieces};
use super::{RecordedRequest, Shared};

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "stop",
        Finish::ToolCalls => "tool_calls",
        Finish::Length => "length",
    }
}

fn id(turn: &Turn) -> String {
    format!("chatcmpl-mock-{}", turn.number)
}

fn call_id(number: u64) -> String {
    format!("call_{number}")
}

fn chunk(turn: &Turn, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": id(turn),
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn usage(turn: &Turn) -> Value {
    let (prompt, completion) = turn.usage;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
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
        return write_json(shared, stream, &turn.ending, &whole(turn));
    }
    let include_usage = request
        .body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let mut sse = Sse::start(stream)?;
    let first_content = if turn.calls.is_empty() {
        json!("")
    } else {
        Value::Null
    };
    sse.data(&chunk(
        turn,
        json!({"role": "assistant", "content": first_content}),
        None,
    ))?;
    for piece in split_pieces(&turn.reasoning, PIECES) {
        sse.data(&chunk(turn, json!({"reasoning": piece}), None))?;
    }
    for piece in split_pieces(&turn.text, PIECES) {
        sse.data(&chunk(turn, json!({"content": piece}), None))?;
    }
    for (index, call) in turn.calls.iter().enumerate() {
        sse.data(&chunk(
            turn,
            json!({"tool_calls": [{
                "index": index,
                "id": call_id(call.number),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            None,
        ))?;
        for piece in split_pieces(&call.arguments, PIECES) {
            sse.data(&chunk(
                turn,
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ))?;
        }
    }
    sse.end(shared, &turn.ending, |sse| {
        let Ending::Finish(finish) = turn.ending else {
            return Ok(());
        };
        sse.data(&chunk(turn, json!({}), Some(finish_reason(finish))))?;
        if include_usage {
            sse.data(&json!({
                "id": id(turn),
                "object": "chat.completion.chunk",
                "created": turn.created,
                "model": turn.model,
                "choices": [],
                "usage": usage(turn),
            }))?;
        }
        sse.text("data: [DONE]\n\n")
    })
}

/// The whole `chat.completion` object.
fn whole(turn: &Turn) -> String {
    let finish = match turn.ending {
        Ending::Finish(finish) => Value::from(finish_reason(finish)),
        Ending::Cut | Ending::Stall => Value::Null,
    };
    let content = if turn.text.is_empty() && !turn.calls.is_empty() {
        Value::Null
    } else {
        Value::from(turn.text.as_str())
    };
    let mut message = json!({"role": "assistant", "content": content});
    if !turn.reasoning.is_empty() {
        message["reasoning"] = Value::from(turn.reasoning.as_str());
    }
    if !turn.calls.is_empty() {
        message["tool_calls"] = turn
            .calls
            .iter()
            .map(|call| {
                json!({
                    "id": call_id(call.number),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
    }
    json!({
        "id": id(turn),
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage(turn),
    })
    .to_string()
}

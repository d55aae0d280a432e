//! The OpenAI Responses API (`POST …/responses`): Codex with a `model_providers` entry
//! whose `wire_api = "responses"` points here.
//!
//! A stream is `event: NAME` + `data: {json}` pairs, each with a `sequence_number`:
//! `response.created` and `response.in_progress`; per output item
//! `response.output_item.added`, its deltas (a reasoning item's summary text, a message's
//! `response.content_part.added` / `response.output_text.delta` / `.done` /
//! `response.content_part.done`, a function call's
//! `response.function_call_arguments.delta` / `.done`) and `response.output_item.done`;
//! then `response.completed` with usage (`response.incomplete` when the output limit cut
//! it).

use std::io;
use std::net::TcpStream;

use serde_json::{Value, json};

use super::http::{Sse, write_json};
use super::script::{Ending, Finish, PIECES, Turn, split_pieces};
use super::{RecordedRequest, Shared};

fn id(turn: &Turn) -> String {
    format!("resp_mock_{}", turn.number)
}

fn usage(turn: &Turn) -> Value {
    let (input, output) = turn.usage;
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}

/// The output items of the turn, whole: reasoning, the message, then the calls.
fn items(turn: &Turn) -> Vec<Value> {
    let mut items = Vec::new();
    if !turn.reasoning.is_empty() {
        items.push(json!({
            "id": format!("rs_mock_{}", turn.number),
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": turn.reasoning}],
        }));
    }
    if !turn.text.is_empty() {
        items.push(json!({
            "id": format!("msg_mock_{}", turn.number),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
        }));
    }
    for call in &turn.calls {
        items.push(json!({
            "id": format!("fc_mock_{}", call.number),
            "type": "function_call",
            "status": "completed",
            "call_id": format!("call_{}", call.number),
            "name": call.name,
            "arguments": call.arguments,
        }));
    }
    items
}

/// The `response` object in a given status with these output items.
fn response(turn: &Turn, status: &str, output: Vec<Value>, with_usage: bool) -> Value {
    let mut response = json!({
        "id": id(turn),
        "object": "response",
        "created_at": turn.created,
        "status": status,
        "model": turn.model,
        "output": output,
        "usage": null,
        "incomplete_details": null,
        "error": null,
    });
    if with_usage {
        response["usage"] = usage(turn);
    }
    if status == "incomplete" {
        response["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    response
}

fn final_status(ending: Ending) -> &'static str {
    match ending {
        Ending::Finish(Finish::Length) => "incomplete",
        Ending::Finish(_) => "completed",
        Ending::Cut | Ending::Stall => "in_progress",
    }
}

/// Numbers the events of one stream.
struct Events<'s, 'a> {
    sse: &'s mut Sse<'a>,
    sequence: u64,
}

impl Events<'_, '_> {
    fn send(&mut self, name: &str, mut data: Value) -> io::Result<()> {
        data["type"] = Value::from(name);
        data["sequence_number"] = Value::from(self.sequence);
        self.sequence += 1;
        self.sse.named(name, &data)
    }

    /// One output item: added (empty), its deltas, done (whole).
    fn item(&mut self, index: usize, item: &Value) -> io::Result<()> {
        let item_id = item["id"].clone();
        let mut empty = item.clone();
        empty["status"] = Value::from("in_progress");
        match item["type"].as_str() {
            Some("message") => empty["content"] = json!([]),
            Some("function_call") => empty["arguments"] = Value::from(""),
            Some("reasoning") => empty["summary"] = json!([]),
            _ => {}
        }
        self.send(
            "response.output_item.added",
            json!({"output_index": index, "item": empty}),
        )?;
        let at = json!({"item_id": item_id, "output_index": index});
        let with = |extra: Value| {
            let mut event = at.clone();
            if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
                event.extend(extra.clone());
            }
            event
        };
        match item["type"].as_str() {
            Some("message") => {
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                let part = json!({"type": "output_text", "text": "", "annotations": []});
                self.send(
                    "response.content_part.added",
                    with(json!({"content_index": 0, "part": part})),
                )?;
                for piece in split_pieces(text, PIECES) {
                    self.send(
                        "response.output_text.delta",
                        with(json!({"content_index": 0, "delta": piece})),
                    )?;
                }
                self.send(
                    "response.output_text.done",
                    with(json!({"content_index": 0, "text": text})),
                )?;
                self.send(
                    "response.content_part.done",
                    with(json!({"content_index": 0, "part": item["content"][0]})),
                )?;
            }
            Some("function_call") => {
                let arguments = item["arguments"].as_str().unwrap_or_default();
                for piece in split_pieces(arguments, PIECES) {
                    self.send(
                        "response.function_call_arguments.delta",
                        with(json!({"delta": piece})),
                    )?;
                }
                self.send(
                    "response.function_call_arguments.done",
                    with(json!({"arguments": arguments})),
                )?;
            }
            Some("reasoning") => {
                let text = item["summary"][0]["text"].as_str().unwrap_or_default();
                for piece in split_pieces(text, PIECES) {
                    self.send(
                        "response.reasoning_summary_text.delta",
                        with(json!({"summary_index": 0, "delta": piece})),
                    )?;
                }
                self.send(
                    "response.reasoning_summary_text.done",
                    with(json!({"summary_index": 0, "text": text})),
                )?;
            }
            _ => {}
        }
        self.send(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        )
    }
}

pub(super) fn write(
    shared: &Shared,
    stream: &mut TcpStream,
    request: &RecordedRequest,
    turn: &Turn,
    plain_json: bool,
) -> io::Result<()> {
    let output = items(turn);
    if plain_json || !request.wants_stream() {
        let body = response(turn, final_status(turn.ending), output, true).to_string();
        return write_json(shared, stream, &turn.ending, &body);
    }
    let mut sse = Sse::start(stream)?;
    let mut events = Events {
        sse: &mut sse,
        sequence: 0,
    };
    let pending = response(turn, "in_progress", Vec::new(), false);
    events.send("response.created", json!({"response": pending}))?;
    events.send("response.in_progress", json!({"response": pending}))?;
    for (index, item) in output.iter().enumerate() {
        events.item(index, item)?;
    }
    let sequence = events.sequence;
    sse.end(shared, &turn.ending, |sse| {
        let mut events = Events { sse, sequence };
        let status = final_status(turn.ending);
        let name = if status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        events.send(
            name,
            json!({"response": response(turn, status, output.clone(), true)}),
        )
    })
}

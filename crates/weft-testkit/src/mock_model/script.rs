//! What the mock answers: scripted replies, and one reply made ready to send (a [`Turn`])
//! whatever API it is sent in.
//!
//! A script is written once, in the terms every model API shares (reasoning, text, tool
//! calls by name and JSON arguments, how the answer ends); each API module renders a
//! [`Turn`] in its own wire format. So one test script reads the same whether the client
//! is weft's planner (chat completions), Claude Code (Anthropic Messages) or Codex (OpenAI
//! Responses).

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{RecordedRequest, Shared};

/// One scripted answer to a model request (chat completions, Messages or Responses).
#[derive(Debug, Clone)]
pub struct MockReply {
    pub(super) shape: Shape,
    pub(super) delay: Duration,
    pub(super) usage: Option<(u64, u64)>,
    pub(super) plain_json: bool,
    /// Append the completion marker the request's prompt asks for (see
    /// [`MockReply::with_marker`]).
    pub(super) marker: bool,
}

#[derive(Debug, Clone)]
pub(super) enum Shape {
    Completion {
        reasoning: String,
        text: String,
        calls: Vec<(String, Value)>,
        ending: Ending,
    },
    Status {
        code: u16,
        body: String,
    },
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
    Hang,
}

/// How a completion ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// Normally, for this reason, with the API's closing events.
    Finish(Finish),
    /// The connection closes after the content, with no reason and no closing events.
    Cut,
    /// The content is sent, then nothing more until the server is dropped.
    Stall,
}

/// Why a finished answer stopped; each API has its own word for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finish {
    /// The model is done (`stop`, `end_turn`, `completed`).
    Stop,
    /// The model wants its tool calls run (`tool_calls`, `tool_use`).
    ToolCalls,
    /// The output limit cut it (`length`, `max_tokens`, `max_output_tokens`).
    Length,
}

impl MockReply {
    /// An assistant text, streamed in a few chunks, finishing normally.
    pub fn text(text: impl Into<String>) -> MockReply {
        MockReply::completion("", text.into(), Vec::new(), Ending::Finish(Finish::Stop))
    }

    /// A text cut by the output limit (`length`, `max_tokens`, `max_output_tokens`).
    pub fn text_then_length(text: impl Into<String>) -> MockReply {
        MockReply::completion("", text.into(), Vec::new(), Ending::Finish(Finish::Length))
    }

    /// Reasoning first (chat: `delta.reasoning`; Messages: a thinking block; Responses: a
    /// reasoning item), then the text.
    pub fn reasoning_then_text(reasoning: impl Into<String>, text: impl Into<String>) -> MockReply {
        MockReply::completion(
            &reasoning.into(),
            text.into(),
            Vec::new(),
            Ending::Finish(Finish::Stop),
        )
    }

    /// One assistant message making these tool calls (name, arguments), finishing so the
    /// client runs them. [`CWD`] (`{{cwd}}`) in a string of the arguments becomes the
    /// working folder the request's prompt states, the way a model reads it (Claude Code:
    /// `Primary working directory:`, Codex: `<cwd>`, OpenCode: `Working directory:`), for
    /// tools that want absolute paths. Call ids count across the whole server in the order calls are
    /// served (`call_1`, `toolu_mock_2`, … by API); each call's arguments arrive split
    /// across several events.
    pub fn tool_calls<N: Into<String>>(calls: Vec<(N, Value)>) -> MockReply {
        MockReply::text_and_tool_calls("", calls)
    }

    /// Some text (a model saying what it is about to do), then tool calls.
    pub fn text_and_tool_calls<N: Into<String>>(
        text: impl Into<String>,
        calls: Vec<(N, Value)>,
    ) -> MockReply {
        let calls = calls.into_iter().map(|(n, a)| (n.into(), a)).collect();
        MockReply::completion("", text.into(), calls, Ending::Finish(Finish::ToolCalls))
    }

    /// An HTTP error. A JSON object `body_text` is sent as is (`application/json`); other text
    /// is wrapped as the API does (OpenAI: `{"error":{"message":…}}`; Anthropic:
    /// `{"type":"error","error":{…}}`). An empty body stays empty.
    pub fn status(code: u16, body_text: impl Into<String>) -> MockReply {
        MockReply::from_shape(Shape::Status {
            code,
            body: body_text.into(),
        })
    }

    /// Headers and a few chunks of `partial_text`, then the connection closes: no finish
    /// reason, no closing events, no terminating chunk.
    pub fn cut(partial_text: impl Into<String>) -> MockReply {
        MockReply::completion("", partial_text.into(), Vec::new(), Ending::Cut)
    }

    /// Headers and a few chunks of `partial_text`, then silence until the server is dropped
    /// (an idle stream, for read timeouts).
    pub fn stall(partial_text: impl Into<String>) -> MockReply {
        MockReply::completion("", partial_text.into(), Vec::new(), Ending::Stall)
    }

    /// Read the request, never answer (until the server is dropped).
    pub fn hang() -> MockReply {
        MockReply::from_shape(Shape::Hang)
    }

    /// `reply`, after waiting `delay` (before any byte of the response).
    pub fn delay(delay: Duration, reply: MockReply) -> MockReply {
        MockReply {
            delay: reply.delay + delay,
            ..reply
        }
    }

    /// Exactly this response: status, content type and body bytes (for odd servers: CRLF
    /// streams, comments, mid-stream errors, hand-written SSE).
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<String>) -> MockReply {
        MockReply::from_shape(Shape::Raw {
            status,
            content_type: content_type.into(),
            body: body.into(),
        })
    }

    /// Report these token counts instead of the estimate (input ≈ request bytes / 4,
    /// output ≈ output bytes / 4).
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> MockReply {
        self.usage = Some((prompt_tokens, completion_tokens));
        self
    }

    /// Answer with one `application/json` body even when the request asked for a stream,
    /// like servers that ignore `stream`.
    pub fn non_streamed(mut self) -> MockReply {
        self.plain_json = true;
        self
    }

    /// Append, on a line of its own after the text, the completion marker weft's prompt
    /// in the request asks for (assembled from its two halves as an obedient agent would;
    /// nothing when the request holds no marker instruction). The script stays static
    /// while every attempt's marker is new.
    pub fn with_marker(mut self) -> MockReply {
        self.marker = true;
        self
    }

    fn completion(
        reasoning: &str,
        text: String,
        calls: Vec<(String, Value)>,
        ending: Ending,
    ) -> MockReply {
        MockReply::from_shape(Shape::Completion {
            reasoning: reasoning.to_owned(),
            text,
            calls,
            ending,
        })
    }

    fn from_shape(shape: Shape) -> MockReply {
        MockReply {
            shape,
            delay: Duration::ZERO,
            usage: None,
            plain_json: false,
            marker: false,
        }
    }
}

/// One tool call of a turn, numbered.
#[derive(Debug, Clone)]
pub(super) struct Call {
    /// The server-wide call number (from 1), which each API turns into its own id shape.
    pub number: u64,
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// A completion ready to be sent, in any API: ids drawn, usage settled.
#[derive(Debug, Clone)]
pub(super) struct Turn {
    /// The server-wide reply number (from 1).
    pub number: u64,
    pub model: String,
    /// Seconds since the epoch.
    pub created: u64,
    pub reasoning: String,
    pub text: String,
    pub calls: Vec<Call>,
    /// (input tokens, output tokens)
    pub usage: (u64, u64),
    pub ending: Ending,
}

impl Turn {
    /// Draw the ids of a scripted completion and settle its usage for `request`.
    pub(super) fn new(
        shared: &Shared,
        request: &RecordedRequest,
        reply_usage: Option<(u64, u64)>,
        marker: bool,
        parts: (String, String, Vec<(String, Value)>, Ending),
    ) -> Turn {
        let (reasoning, mut text, calls, ending) = parts;
        if marker && let Some(marker) = requested_marker(&request.body) {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&marker);
        }
        let cwd = stated_cwd(&request.body);
        let calls: Vec<Call> = calls
            .into_iter()
            .map(|(name, arguments)| {
                let mut arguments = arguments.to_string();
                if let Some(cwd) = &cwd {
                    // The JSON text of the folder, without its quotes.
                    let escaped = Value::from(cwd.as_str()).to_string();
                    arguments = arguments.replace(CWD, &escaped[1..escaped.len() - 1]);
                }
                Call {
                    number: shared.next_call_id.fetch_add(1, Ordering::SeqCst) + 1,
                    name,
                    arguments,
                }
            })
            .collect();
        let output_bytes = reasoning.len()
            + text.len()
            + calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>();
        let usage = reply_usage.unwrap_or((
            estimate_tokens(request.raw_body.len()),
            estimate_tokens(output_bytes),
        ));
        Turn {
            number: shared.next_completion_id.fetch_add(1, Ordering::SeqCst) + 1,
            model: request
                .body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("mock-model")
                .to_owned(),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default(),
            reasoning,
            text,
            calls,
            usage,
            ending,
        }
    }
}

/// The placeholder a tool call's arguments may hold for the client's working folder.
pub const CWD: &str = "{{cwd}}";

/// How each agent CLI states its working folder in its prompt: Claude Code's environment
/// section, Codex's `<environment_context>`, OpenCode's environment section.
const CWD_LEADS: [(&str, &str); 3] = [
    ("Primary working directory: ", "\n"),
    ("<cwd>", "</cwd>"),
    ("Working directory: ", "\n"),
];

/// The working folder the request's prompt states, as a model would read it.
fn stated_cwd(body: &Value) -> Option<String> {
    let mut all = Vec::new();
    strings(body, &mut all);
    CWD_LEADS.iter().find_map(|(lead, end)| {
        all.iter().find_map(|text| {
            let at = text.find(lead)? + lead.len();
            let rest = &text[at..];
            let path = rest[..rest.find(end).unwrap_or(rest.len())].trim();
            path.starts_with('/').then(|| path.to_owned())
        })
    })
}

fn strings<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The marker the last marker instruction in any string of `body` asks for. Strings are
/// searched one by one: code spans never pair across two of them.
fn requested_marker(body: &Value) -> Option<String> {
    let mut all = Vec::new();
    strings(body, &mut all);
    all.into_iter()
        .rev()
        .find_map(crate::fake::markers::follow_instruction)
}

pub(super) fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4).max(1)
}

/// Into how many pieces streamed text and tool arguments are split.
pub(super) const PIECES: usize = 3;

/// `text` in up to `count` non-empty pieces on character boundaries.
pub(super) fn split_pieces(text: &str, count: usize) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let per_piece = chars.div_ceil(count.max(1));
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(per_piece)
            .map_or(rest.len(), |(i, _)| i);
        pieces.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    pieces
}

//! A scripted OpenAI-compatible model server on loopback, for planner tests.
//!
//! Real HTTP/1.1 over std sockets, so planner unit tests and a separate `weft` process in
//! end-to-end tests talk to it exactly as they would to a chat-completions endpoint. Each
//! `POST …/chat/completions` consumes the next scripted [`MockReply`]; every request is
//! recorded. One request per connection (`connection: close`) keeps the server simple and
//! makes a cut reply look like a real dropped connection.
//!
//! Streams follow OpenAI's format: `data: {chat.completion.chunk}` events, tool-call
//! arguments split across chunks by `index`, usage in a last chunk when the request asked
//! for `stream_options.include_usage`, then `data: [DONE]`, sent with chunked transfer
//! encoding like the real service.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// Request heads larger than this are refused (real clients send a few hundred bytes).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Request bodies carry whole conversations; this only guards against a runaway client.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// A client that stops sending its request for this long is dropped.
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);
/// How often blocked loops look at the shutdown flag.
const POLL: Duration = Duration::from_millis(10);
/// Into how many pieces streamed text and tool arguments are split.
const PIECES: usize = 3;

/// One request the server received, as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// The request target, query included (e.g. `/v1/chat/completions`).
    pub path: String,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; a body that is not JSON is kept as a JSON string.
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    fn is_chat_completion(&self) -> bool {
        let path = self.path.split('?').next().unwrap_or_default();
        self.method == "POST" && path.ends_with("/chat/completions")
    }

    fn wants_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    fn wants_usage(&self) -> bool {
        self.body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true)
    }
}

/// One scripted answer to a chat-completions request.
#[derive(Debug, Clone)]
pub struct MockReply {
    shape: Shape,
    delay: Duration,
    usage: Option<(u64, u64)>,
    plain_json: bool,
}

#[derive(Debug, Clone)]
enum Shape {
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
#[derive(Debug, Clone)]
enum Ending {
    /// Normally, with this finish reason and `[DONE]`.
    Finish(String),
    /// The connection closes after the content, with no finish reason and no `[DONE]`.
    Cut,
    /// The content is sent, then nothing more until the server is dropped.
    Stall,
}

impl MockReply {
    /// An assistant text, streamed in a few chunks, finishing with `stop`.
    pub fn text(text: impl Into<String>) -> MockReply {
        MockReply::completion("", text.into(), Vec::new(), Ending::Finish("stop".into()))
    }

    /// A text cut by the output limit: finish reason `length`.
    pub fn text_then_length(text: impl Into<String>) -> MockReply {
        MockReply::completion("", text.into(), Vec::new(), Ending::Finish("length".into()))
    }

    /// Reasoning deltas (`delta.reasoning`) first, then the text.
    pub fn reasoning_then_text(reasoning: impl Into<String>, text: impl Into<String>) -> MockReply {
        MockReply::completion(
            &reasoning.into(),
            text.into(),
            Vec::new(),
            Ending::Finish("stop".into()),
        )
    }

    /// One assistant message making these tool calls (name, arguments), finishing with
    /// `tool_calls`. Ids are `call_1`, `call_2`, … numbered across the whole server in the
    /// order calls are served; each call's arguments arrive split across several chunks.
    pub fn tool_calls<N: Into<String>>(calls: Vec<(N, Value)>) -> MockReply {
        MockReply::text_and_tool_calls("", calls)
    }

    /// Some text (a model saying what it is about to look at), then tool calls.
    pub fn text_and_tool_calls<N: Into<String>>(
        text: impl Into<String>,
        calls: Vec<(N, Value)>,
    ) -> MockReply {
        let calls = calls.into_iter().map(|(n, a)| (n.into(), a)).collect();
        MockReply::completion("", text.into(), calls, Ending::Finish("tool_calls".into()))
    }

    /// An HTTP error. A JSON object `body_text` is sent as is (`application/json`); other text
    /// is wrapped as OpenAI does: `{"error":{"message":…}}`. An empty body stays empty.
    pub fn status(code: u16, body_text: impl Into<String>) -> MockReply {
        MockReply::from_shape(Shape::Status {
            code,
            body: body_text.into(),
        })
    }

    /// Headers and a few chunks of `partial_text`, then the connection closes: no finish
    /// reason, no `[DONE]`, no terminating chunk.
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

    /// Report these token counts instead of the estimate (prompt ≈ request bytes / 4,
    /// completion ≈ output bytes / 4).
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> MockReply {
        self.usage = Some((prompt_tokens, completion_tokens));
        self
    }

    /// Answer with one `application/json` completion even when the request asked for a
    /// stream, like servers that ignore `stream`.
    pub fn non_streamed(mut self) -> MockReply {
        self.plain_json = true;
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
        }
    }
}

/// The scripted server. Dropping it stops it: hung and stalled replies close their
/// connections, and the drop does not wait for clients.
#[derive(Debug)]
pub struct MockModel {
    address: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    script: Mutex<VecDeque<MockReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    exhausted: AtomicUsize,
    next_call_id: AtomicU64,
    next_completion_id: AtomicU64,
    stopping: Mutex<bool>,
    wake: Condvar,
}

impl Shared {
    fn stopped(&self) -> bool {
        *lock(&self.stopping)
    }

    /// Sleep up to `duration` (forever when `None`), waking early on shutdown. True when
    /// the server is stopping.
    fn sleep(&self, duration: Option<Duration>) -> bool {
        let deadline = duration.map(|d| Instant::now() + d);
        let mut stopping = lock(&self.stopping);
        loop {
            if *stopping {
                return true;
            }
            let wait = match deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    deadline - now
                }
                None => Duration::from_secs(3600),
            };
            stopping = self
                .wake
                .wait_timeout(stopping, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MockModel {
    /// Listen on `127.0.0.1:0` and answer chat completions with `script`, in order.
    pub fn start(script: Vec<MockReply>) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("the mock model can bind loopback");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        // Non-blocking accept lets the loop notice shutdown without a wake-up connection.
        listener
            .set_nonblocking(true)
            .expect("the listener can be made non-blocking");
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            ..Shared::default()
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("mock-model-accept".into())
                .spawn(move || accept_loop(&listener, &shared))
                .expect("the accept thread can start")
        };
        MockModel {
            address,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT/v1`, what `WEFT_PLANNER_BASE_URL` should be set to.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Every request received so far (chat completions and anything else), in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Only the chat-completions requests.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_chat_completion)
            .collect()
    }

    /// Replies not yet served.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// How many chat requests arrived after the script ran out (each answered HTTP 500).
    pub fn exhausted(&self) -> usize {
        self.shared.exhausted.load(Ordering::SeqCst)
    }

    /// Append a reply to the script while the server runs.
    pub fn push(&self, reply: MockReply) {
        lock(&self.shared.script).push_back(reply);
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        *lock(&self.shared.stopping) = true;
        self.shared.wake.notify_all();
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stopped() {
        match listener.accept() {
            Ok((stream, _)) => {
                let shared = Arc::clone(shared);
                // Connection threads are not joined: each ends on its own once the server
                // stops, so dropping the server never waits for a slow client.
                let _ = thread::Builder::new()
                    .name("mock-model-conn".into())
                    .spawn(move || serve(&shared, stream));
            }
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => thread::sleep(POLL),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => thread::sleep(POLL),
        }
    }
}

fn serve(shared: &Shared, mut stream: TcpStream) {
    // Some platforms hand out accepted sockets in the listener's non-blocking mode.
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_nodelay(true);
    let Ok(request) = read_request(shared, &mut stream) else {
        return;
    };
    if !request.is_chat_completion() {
        lock(&shared.requests).push(request);
        let body = error_body("the mock model only serves POST /v1/chat/completions");
        let _ = write_plain(&mut stream, 404, "application/json", &body);
        finish(stream);
        return;
    }
    // Pop and record under the script lock so the recorded order is the serving order.
    let reply = {
        let mut script = lock(&shared.script);
        let reply = script.pop_front();
        lock(&shared.requests).push(request.clone());
        reply
    };
    let Some(reply) = reply else {
        shared.exhausted.fetch_add(1, Ordering::SeqCst);
        let body = error_body("mock script exhausted: no scripted reply is left for this request");
        let _ = write_plain(&mut stream, 500, "application/json", &body);
        finish(stream);
        return;
    };
    if !reply.delay.is_zero() && shared.sleep(Some(reply.delay)) {
        return;
    }
    let _ = play(shared, &mut stream, &request, reply);
    finish(stream);
}

/// Close our side, then drain briefly so unread client bytes cannot turn the close into a
/// reset that would destroy data the client has not read yet.
fn finish(mut stream: TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut sink = [0u8; 1024];
    while Instant::now() < deadline {
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

fn play(
    shared: &Shared,
    stream: &mut TcpStream,
    request: &RecordedRequest,
    reply: MockReply,
) -> io::Result<()> {
    match reply.shape {
        Shape::Hang => {
            shared.sleep(None);
            Ok(())
        }
        Shape::Status { code, body } => {
            if body.is_empty() {
                write_plain(stream, code, "text/plain", "")
            } else if serde_json::from_str::<Value>(&body)
                .is_ok_and(|v| v.is_object() || v.is_array())
            {
                write_plain(stream, code, "application/json", &body)
            } else {
                write_plain(stream, code, "application/json", &error_body(&body))
            }
        }
        Shape::Raw {
            status,
            content_type,
            body,
        } => write_plain(stream, status, &content_type, &body),
        Shape::Completion {
            reasoning,
            text,
            calls,
            ending,
        } => {
            let calls: Vec<(String, String, String)> = calls
                .into_iter()
                .map(|(name, arguments)| {
                    let id = shared.next_call_id.fetch_add(1, Ordering::SeqCst) + 1;
                    (format!("call_{id}"), name, arguments.to_string())
                })
                .collect();
            let output_bytes = reasoning.len()
                + text.len()
                + calls
                    .iter()
                    .map(|(_, n, a)| n.len() + a.len())
                    .sum::<usize>();
            let usage = reply.usage.unwrap_or((
                estimate_tokens(request.raw_body.len()),
                estimate_tokens(output_bytes),
            ));
            let completion = Completion {
                id: format!(
                    "chatcmpl-mock-{}",
                    shared.next_completion_id.fetch_add(1, Ordering::SeqCst) + 1
                ),
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
            };
            if reply.plain_json || !request.wants_stream() {
                completion.write_json(shared, stream, &ending)
            } else {
                completion.write_stream(shared, stream, &ending, request.wants_usage())
            }
        }
    }
}

fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4).max(1)
}

/// A completion ready to be sent, streamed or whole.
struct Completion {
    id: String,
    model: String,
    created: u64,
    reasoning: String,
    text: String,
    /// (id, name, arguments as JSON text)
    calls: Vec<(String, String, String)>,
    usage: (u64, u64),
}

impl Completion {
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    fn usage_json(&self) -> Value {
        let (prompt, completion) = self.usage;
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        })
    }

    fn write_stream(
        &self,
        shared: &Shared,
        stream: &mut TcpStream,
        ending: &Ending,
        include_usage: bool,
    ) -> io::Result<()> {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        stream.write_all(head.as_bytes())?;
        let mut send = |event: &Value| write_event(stream, &format!("data: {event}\n\n"));

        let first_content = if self.calls.is_empty() {
            json!("")
        } else {
            Value::Null
        };
        send(&self.chunk(json!({"role": "assistant", "content": first_content}), None))?;
        for piece in split_pieces(&self.reasoning, PIECES) {
            send(&self.chunk(json!({"reasoning": piece}), None))?;
        }
        for piece in split_pieces(&self.text, PIECES) {
            send(&self.chunk(json!({"content": piece}), None))?;
        }
        for (index, (id, name, arguments)) in self.calls.iter().enumerate() {
            send(&self.chunk(
                json!({"tool_calls": [{
                    "index": index,
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }]}),
                None,
            ))?;
            for piece in split_pieces(arguments, PIECES) {
                send(&self.chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                ))?;
            }
        }
        match ending {
            Ending::Finish(reason) => {
                send(&self.chunk(json!({}), Some(reason)))?;
                if include_usage {
                    send(&json!({
                        "id": self.id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": self.usage_json(),
                    }))?;
                }
                write_event(stream, "data: [DONE]\n\n")?;
                // The terminating zero-length chunk ends the HTTP body.
                stream.write_all(b"0\r\n\r\n")?;
                stream.flush()
            }
            Ending::Cut => {
                stream.flush()?;
                let _ = stream.shutdown(Shutdown::Both);
                Ok(())
            }
            Ending::Stall => {
                stream.flush()?;
                shared.sleep(None);
                Ok(())
            }
        }
    }

    fn write_json(
        &self,
        shared: &Shared,
        stream: &mut TcpStream,
        ending: &Ending,
    ) -> io::Result<()> {
        let finish_reason = match ending {
            Ending::Finish(reason) => Value::from(reason.as_str()),
            Ending::Cut | Ending::Stall => Value::Null,
        };
        let mut message = json!({
            "role": "assistant",
            "content": if self.text.is_empty() && !self.calls.is_empty() { Value::Null } else { Value::from(self.text.as_str()) },
        });
        if !self.reasoning.is_empty() {
            message["reasoning"] = Value::from(self.reasoning.as_str());
        }
        if !self.calls.is_empty() {
            message["tool_calls"] = self
                .calls
                .iter()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                })
                .collect();
        }
        let body = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": self.usage_json(),
        })
        .to_string();
        match ending {
            Ending::Finish(_) => write_plain(stream, 200, "application/json", &body),
            // Promise the whole body, send half of it.
            Ending::Cut | Ending::Stall => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                stream.write_all(head.as_bytes())?;
                stream.write_all(&body.as_bytes()[..body.len() / 2])?;
                stream.flush()?;
                if matches!(ending, Ending::Stall) {
                    shared.sleep(None);
                } else {
                    let _ = stream.shutdown(Shutdown::Both);
                }
                Ok(())
            }
        }
    }
}

/// One SSE event as one HTTP chunk, flushed at once.
fn write_event(stream: &mut TcpStream, event: &str) -> io::Result<()> {
    let framed = format!("{:x}\r\n{event}\r\n", event.len());
    stream.write_all(framed.as_bytes())?;
    stream.flush()
}

fn write_plain(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &str,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        reason_phrase(status),
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "mock_error", "code": null}}).to_string()
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// `text` in up to `count` non-empty pieces on character boundaries.
fn split_pieces(text: &str, count: usize) -> Vec<&str> {
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

/// Bytes of a request read so far, refilled from the socket with the shutdown flag in view.
struct Incoming<'a> {
    stream: &'a mut TcpStream,
    shared: &'a Shared,
    buf: Vec<u8>,
    pos: usize,
    deadline: Instant,
}

impl Incoming<'_> {
    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if self.shared.stopped() || Instant::now() > self.deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "request not received",
                ));
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "client closed mid-request",
                    ));
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(err) => return Err(err),
            }
        }
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    fn line(&mut self) -> io::Result<String> {
        loop {
            if let Some(end) = self.available().iter().position(|&b| b == b'\n') {
                let line = String::from_utf8_lossy(&self.available()[..end])
                    .trim_end()
                    .to_owned();
                self.pos += end + 1;
                return Ok(line);
            }
            if self.available().len() > MAX_HEAD_BYTES {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
            }
            self.fill()?;
        }
    }

    fn take(&mut self, count: usize) -> io::Result<Vec<u8>> {
        while self.available().len() < count {
            self.fill()?;
        }
        let bytes = self.available()[..count].to_vec();
        self.pos += count;
        Ok(bytes)
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

fn read_request(shared: &Shared, stream: &mut TcpStream) -> io::Result<RecordedRequest> {
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut incoming = Incoming {
        stream,
        shared,
        buf: Vec::new(),
        pos: 0,
        deadline: Instant::now() + REQUEST_DEADLINE,
    };
    let request_line = incoming.line()?;
    let mut parts = request_line.split_whitespace();
    let method = parts
        .next()
        .ok_or_else(|| invalid("empty request line"))?
        .to_owned();
    let path = parts
        .next()
        .ok_or_else(|| invalid("no request target"))?
        .to_owned();

    let mut headers = Vec::new();
    let mut head_bytes = request_line.len();
    loop {
        let line = incoming.line()?;
        if line.is_empty() {
            break;
        }
        head_bytes += line.len();
        if head_bytes > MAX_HEAD_BYTES {
            return Err(invalid("request head too large"));
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };

    if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        incoming
            .stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body = if header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        let mut body = Vec::new();
        loop {
            let size_line = incoming.line()?;
            let size_hex = size_line.split(';').next().unwrap_or_default().trim();
            let size =
                usize::from_str_radix(size_hex, 16).map_err(|_| invalid("bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the blank line.
                while !incoming.line()?.is_empty() {}
                break;
            }
            if body.len() + size > MAX_BODY_BYTES {
                return Err(invalid("request body too large"));
            }
            body.extend(incoming.take(size)?);
            incoming.line()?;
        }
        body
    } else if let Some(length) = header("content-length") {
        let length: usize = length.parse().map_err(|_| invalid("bad content-length"))?;
        if length > MAX_BODY_BYTES {
            return Err(invalid("request body too large"));
        }
        incoming.take(length)?
    } else {
        Vec::new()
    };

    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let body = serde_json::from_slice(&body).unwrap_or_else(|_| Value::String(raw_body.clone()));
    Ok(RecordedRequest {
        method,
        path,
        headers,
        body,
        raw_body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw HTTP/1.1 answer: status, lower-cased headers, decoded body, and whether a
    /// chunked body ended properly.
    #[derive(Debug)]
    struct Answer {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
        complete: bool,
    }

    impl Answer {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }

        /// The JSON payloads of the `data:` events, `[DONE]` as a string.
        fn events(&self) -> Vec<Value> {
            self.body
                .lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .map(|data| serde_json::from_str(data).unwrap_or_else(|_| Value::from(data)))
                .collect()
        }

        fn streamed_text(&self) -> String {
            self.events()
                .iter()
                .filter_map(|e| {
                    e.pointer("/choices/0/delta/content")
                        .and_then(Value::as_str)
                })
                .collect()
        }

        fn finish_reasons(&self) -> Vec<String> {
            self.events()
                .iter()
                .filter_map(|e| {
                    e.pointer("/choices/0/finish_reason")
                        .and_then(Value::as_str)
                })
                .map(str::to_owned)
                .collect()
        }
    }

    fn post(model: &MockModel, path: &str, body: &Value, extra_headers: &[(&str, &str)]) -> Answer {
        send(
            model,
            "POST",
            path,
            &body.to_string(),
            extra_headers,
            Duration::from_secs(10),
        )
        .expect("the mock answers")
    }

    fn send(
        model: &MockModel,
        method: &str,
        path: &str,
        body: &str,
        extra_headers: &[(&str, &str)],
        read_timeout: Duration,
    ) -> io::Result<Answer> {
        let mut stream = TcpStream::connect(model.address())?;
        stream.set_read_timeout(Some(read_timeout))?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            model.address(),
            body.len()
        );
        for (name, value) in extra_headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(body.as_bytes())?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        Ok(parse_answer(&raw))
    }

    fn parse_answer(raw: &[u8]) -> Answer {
        let text = String::from_utf8_lossy(raw);
        let (head, rest) = text.split_once("\r\n\r\n").expect("a complete head");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v == "chunked");
        let (body, complete) = if chunked {
            dechunk(rest)
        } else {
            (rest.to_owned(), true)
        };
        Answer {
            status,
            headers,
            body,
            complete,
        }
    }

    fn dechunk(mut rest: &str) -> (String, bool) {
        let mut body = String::new();
        loop {
            let Some((size, after)) = rest.split_once("\r\n") else {
                return (body, false);
            };
            let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
                return (body, false);
            };
            if size == 0 {
                return (body, true);
            }
            if after.len() < size + 2 {
                body.push_str(&after[..after.len().min(size)]);
                return (body, false);
            }
            body.push_str(&after[..size]);
            rest = &after[size + 2..];
        }
    }

    fn chat_body(stream: bool, include_usage: bool) -> Value {
        json!({
            "model": "mock/test",
            "messages": [{"role": "user", "content": "hello"}],
            "stream": stream,
            "stream_options": {"include_usage": include_usage},
        })
    }

    #[test]
    fn replies_are_served_in_order_then_the_script_is_exhausted() {
        let model = MockModel::start(vec![
            MockReply::text("first"),
            MockReply::status(429, "slow down"),
            MockReply::text("third"),
        ]);
        let path = "/v1/chat/completions";
        let first = post(&model, path, &chat_body(true, false), &[]);
        assert_eq!(first.status, 200);
        assert_eq!(first.streamed_text(), "first");

        let second = post(&model, path, &chat_body(true, false), &[]);
        assert_eq!(second.status, 429);
        assert_eq!(second.header("content-type"), Some("application/json"));
        let error: Value = serde_json::from_str(&second.body).unwrap();
        assert_eq!(error["error"]["message"], "slow down");

        assert_eq!(model.remaining(), 1);
        let third = post(&model, path, &chat_body(true, false), &[]);
        assert_eq!(third.streamed_text(), "third");

        let fourth = post(&model, path, &chat_body(true, false), &[]);
        assert_eq!(fourth.status, 500);
        assert!(
            fourth.body.contains("mock script exhausted"),
            "{}",
            fourth.body
        );
        assert_eq!(model.exhausted(), 1);
        assert_eq!(model.requests().len(), 4);
    }

    #[test]
    fn requests_are_recorded_with_lowercased_headers_and_parsed_bodies() {
        let model = MockModel::start(vec![MockReply::text("ok")]);
        let body = chat_body(true, true);
        post(
            &model,
            "/v1/chat/completions",
            &body,
            &[("Authorization", "Bearer sk-test"), ("X-Custom", "Yes")],
        );
        let requests = model.requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body, body);
        assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(request.header("X-CUSTOM"), Some("Yes"));
        assert!(
            request
                .headers
                .iter()
                .all(|(n, _)| *n == n.to_ascii_lowercase())
        );
        assert_eq!(model.chat_requests().len(), 1);
    }

    #[test]
    fn a_text_stream_has_the_openai_shape_and_usage_only_when_asked() {
        let model = MockModel::start(vec![
            MockReply::text("Hello, streaming world!").with_usage(12, 34),
            MockReply::text("no usage here"),
        ]);
        let answer = post(&model, "/v1/chat/completions", &chat_body(true, true), &[]);
        assert_eq!(answer.status, 200);
        assert_eq!(answer.header("content-type"), Some("text/event-stream"));
        assert_eq!(answer.header("connection"), Some("close"));
        assert!(answer.complete);
        assert!(answer.body.ends_with("data: [DONE]\n\n"));
        let events = answer.events();
        let content_chunks = events
            .iter()
            .filter(|e| {
                e.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
                    .is_some_and(|c| !c.is_empty())
            })
            .count();
        assert!(content_chunks >= 2, "text arrives in several chunks");
        assert_eq!(events[0]["object"], "chat.completion.chunk");
        assert_eq!(events[0]["model"], "mock/test");
        assert_eq!(answer.streamed_text(), "Hello, streaming world!");
        assert_eq!(answer.finish_reasons(), vec!["stop"]);
        let usage = events
            .iter()
            .find(|e| e.get("usage").is_some())
            .expect("a usage chunk");
        assert_eq!(usage["usage"]["prompt_tokens"], 12);
        assert_eq!(usage["usage"]["completion_tokens"], 34);

        let plain = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
        assert!(plain.events().iter().all(|e| e.get("usage").is_none()));
    }

    #[test]
    fn tool_call_arguments_are_split_across_chunks_by_index() {
        let model = MockModel::start(vec![
            MockReply::tool_calls(vec![
                (
                    "read_file",
                    json!({"path": "src/main.rs", "max_lines": 200}),
                ),
                ("grep", json!({"pattern": "fn main", "path": "."})),
            ]),
            MockReply::tool_calls(vec![("list_dir", json!({"path": "."}))]),
        ]);
        let answer = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
        let mut names = vec![String::new(); 2];
        let mut ids = vec![String::new(); 2];
        let mut arguments = vec![String::new(); 2];
        let mut argument_chunks = [0; 2];
        for event in answer.events() {
            let Some(calls) = event
                .pointer("/choices/0/delta/tool_calls")
                .and_then(Value::as_array)
            else {
                continue;
            };
            for call in calls {
                let index = call["index"].as_u64().unwrap() as usize;
                if let Some(id) = call["id"].as_str() {
                    ids[index] = id.to_owned();
                }
                if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                    names[index].push_str(name);
                }
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    if !args.is_empty() {
                        argument_chunks[index] += 1;
                    }
                    arguments[index].push_str(args);
                }
            }
        }
        assert_eq!(names, vec!["read_file", "grep"]);
        assert_eq!(ids, vec!["call_1", "call_2"]);
        assert!(
            argument_chunks.iter().all(|&n| n >= 2),
            "{argument_chunks:?}"
        );
        let first: Value = serde_json::from_str(&arguments[0]).unwrap();
        assert_eq!(first, json!({"path": "src/main.rs", "max_lines": 200}));
        let second: Value = serde_json::from_str(&arguments[1]).unwrap();
        assert_eq!(second, json!({"pattern": "fn main", "path": "."}));
        assert_eq!(answer.finish_reasons(), vec!["tool_calls"]);

        // Ids keep counting across replies.
        let next = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
        assert!(next.body.contains("\"call_3\""));
    }

    #[test]
    fn a_cut_reply_closes_without_finish_or_done() {
        let model = MockModel::start(vec![MockReply::cut("partial answer that never ends")]);
        let started = Instant::now();
        let answer = post(&model, "/v1/chat/completions", &chat_body(true, true), &[]);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(answer.status, 200);
        assert!(
            !answer.complete,
            "the chunked body has no terminating chunk"
        );
        assert!(!answer.body.contains("[DONE]"));
        assert!(answer.finish_reasons().is_empty());
        assert_eq!(answer.streamed_text(), "partial answer that never ends");
    }

    #[test]
    fn status_replies_carry_their_code_and_wrap_plain_text() {
        let model = MockModel::start(vec![
            MockReply::status(401, "Incorrect API key provided"),
            MockReply::status(503, r#"{"error":{"message":"overloaded","code":503}}"#),
            MockReply::status(500, ""),
        ]);
        let unauthorized = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
        assert_eq!(unauthorized.status, 401);
        let body: Value = serde_json::from_str(&unauthorized.body).unwrap();
        assert_eq!(body["error"]["message"], "Incorrect API key provided");

        let overloaded = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
        assert_eq!(overloaded.status, 503);
        assert_eq!(
            overloaded.body,
            r#"{"error":{"message":"overloaded","code":503}}"#
        );

        let empty = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
        assert_eq!(empty.status, 500);
        assert_eq!(empty.body, "");
    }

    #[test]
    fn other_paths_get_404_and_are_recorded_without_consuming_the_script() {
        let model = MockModel::start(vec![MockReply::text("kept")]);
        let answer = send(&model, "GET", "/v1/models", "", &[], Duration::from_secs(5)).unwrap();
        assert_eq!(answer.status, 404);
        assert_eq!(model.remaining(), 1);
        assert_eq!(model.requests().len(), 1);
        assert!(model.chat_requests().is_empty());
    }

    #[test]
    fn a_non_streamed_request_gets_one_json_completion() {
        let model = MockModel::start(vec![
            MockReply::tool_calls(vec![("read_file", json!({"path": "a"}))]),
            MockReply::text("plain anyway").non_streamed(),
        ]);
        let answer = post(
            &model,
            "/v1/chat/completions",
            &chat_body(false, false),
            &[],
        );
        assert_eq!(answer.header("content-type"), Some("application/json"));
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            body["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "read_file"
        );
        assert_eq!(
            body["choices"][0]["message"]["tool_calls"][0]["id"],
            "call_1"
        );

        let forced = post(&model, "/v1/chat/completions", &chat_body(true, true), &[]);
        let body: Value = serde_json::from_str(&forced.body).unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], "plain anyway");
        assert!(body["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    }

    #[test]
    fn delay_waits_before_answering() {
        let model = MockModel::start(vec![MockReply::delay(
            Duration::from_millis(300),
            MockReply::text("late"),
        )]);
        let started = Instant::now();
        let answer = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(answer.streamed_text(), "late");
    }

    #[test]
    fn a_hung_reply_says_nothing_and_dropping_the_server_releases_the_client() {
        let model = MockModel::start(vec![MockReply::hang(), MockReply::stall("half")]);
        let timed_out = send(
            &model,
            "POST",
            "/v1/chat/completions",
            &chat_body(true, false).to_string(),
            &[],
            Duration::from_millis(300),
        )
        .expect_err("nothing arrives");
        assert!(
            matches!(
                timed_out.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{timed_out:?}"
        );
        assert_eq!(
            model.chat_requests().len(),
            1,
            "the hung request was still recorded"
        );

        // A client waiting on a stalled stream sees the connection end once the server drops.
        let address = model.address();
        let client = thread::spawn(move || {
            let mut stream = TcpStream::connect(address).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let body = chat_body(true, false).to_string();
            let request = format!(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(request.as_bytes()).unwrap();
            let mut raw = Vec::new();
            let started = Instant::now();
            let result = stream.read_to_end(&mut raw);
            (result.is_ok(), started.elapsed(), parse_answer(&raw))
        });
        while model.chat_requests().len() < 2 {
            thread::sleep(POLL);
        }
        thread::sleep(Duration::from_millis(100));
        let dropped = Instant::now();
        drop(model);
        assert!(
            dropped.elapsed() < Duration::from_secs(2),
            "drop does not hang"
        );
        let (closed_cleanly, waited, answer) = client.join().unwrap();
        assert!(closed_cleanly, "the client saw the connection close");
        assert!(waited < Duration::from_secs(5));
        assert_eq!(answer.streamed_text(), "half");
        assert!(!answer.complete);
        assert!(!answer.body.contains("[DONE]"));
    }

    #[test]
    fn split_pieces_respects_characters() {
        assert_eq!(split_pieces("", 3), Vec::<&str>::new());
        assert_eq!(split_pieces("ab", 3), vec!["a", "b"]);
        assert_eq!(split_pieces("héllo wörld", 3).concat(), "héllo wörld");
        assert_eq!(split_pieces("abcdefghi", 3), vec!["abc", "def", "ghi"]);
    }
}

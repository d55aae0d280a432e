//! A scripted model server on loopback speaking three APIs: OpenAI chat completions
//! (weft's planner, OpenCode), the Anthropic Messages API (Claude Code) and the OpenAI
//! Responses API (Codex).
//!
//! Real HTTP/1.1 over std sockets, so planner unit tests, a separate `weft` process and
//! the real agent CLIs talk to it exactly as they would to the real service. Each model
//! request (`POST …/chat/completions`, `POST …/v1/messages`, `POST …/responses`) takes
//! the next scripted [`MockReply`] whatever its API, rendered in that API's format; every
//! request is recorded. The side requests a client makes around its model calls are
//! answered without taking a reply: Anthropic's `count_tokens` from the request size, a
//! model listing (`GET …/models`) with the one model `mock-model`; anything else gets a
//! 404 and is recorded. One request per connection (`connection: close`) keeps the
//! server simple and makes a cut reply look like a real dropped connection.
//!
//! Module layout: `script` holds what a test writes (the replies) and the API-neutral
//! turn a reply becomes; `chat`, `anthropic` and `responses` each render a turn in their
//! wire format (streamed as server-sent events with chunked transfer encoding, or one
//! JSON body); `http` reads requests and frames answers.
//!
//! Threads and bounds: one accept thread, one thread per connection (not joined; each
//! ends once the server stops). Request heads are capped at 64 KiB, bodies at 64 MiB, a
//! request must arrive within 30 s. Dropping the server wakes hung and stalled replies.

mod anthropic;
mod chat;
mod http;
mod responses;
mod script;

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use script::{CWD, MockReply};
use script::{Shape, Turn};

/// How often blocked loops look at the shutdown flag.
const POLL: Duration = Duration::from_millis(10);
/// The one model a listing names.
const MODEL_ID: &str = "mock-model";
/// Model requests under this prefix are side requests (see [`MockModel::side_url`]).
const SIDE_PREFIX: &str = "/side/";
/// What every side request is answered.
const SIDE_ANSWER: &str = "Mock title";

/// The model APIs the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI chat completions: `POST …/chat/completions`.
    Chat,
    /// Anthropic Messages: `POST …/v1/messages`.
    Messages,
    /// OpenAI Responses: `POST …/responses`.
    Responses,
}

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

    /// The request target without its query.
    fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }

    /// The model API this request calls, if it is a model request (one that takes a
    /// scripted reply).
    pub fn api(&self) -> Option<Api> {
        if self.method != "POST" {
            return None;
        }
        let route = self.route().trim_end_matches('/');
        if route.ends_with("/chat/completions") {
            Some(Api::Chat)
        } else if route.ends_with("/messages") {
            Some(Api::Messages)
        } else if route.ends_with("/responses") {
            Some(Api::Responses)
        } else {
            None
        }
    }

    /// A model request on the side channel ([`MockModel::side_url`]).
    pub fn is_side(&self) -> bool {
        self.route().starts_with(SIDE_PREFIX)
    }

    fn wants_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
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
pub(super) struct Shared {
    script: Mutex<VecDeque<MockReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    exhausted: AtomicUsize,
    next_call_id: AtomicU64,
    next_completion_id: AtomicU64,
    stopping: Mutex<bool>,
    wake: Condvar,
}

impl Shared {
    pub(super) fn stopped(&self) -> bool {
        *lock(&self.stopping)
    }

    /// Sleep up to `duration` (forever when `None`), waking early on shutdown. True when
    /// the server is stopping.
    pub(super) fn sleep(&self, duration: Option<Duration>) -> bool {
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
    /// Listen on `127.0.0.1:0` and answer model requests (any API) with `script`, in order.
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

    /// `http://127.0.0.1:PORT/v1`, what `WEFT_PLANNER_BASE_URL`, an OpenAI-compatible
    /// provider's `baseURL` or a Codex provider's `base_url` should be set to.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// `http://127.0.0.1:PORT/side/v1`: model requests here (any API) are answered
    /// `Mock title` without taking a scripted reply. For the small model a CLI asks on the
    /// side, concurrently with its main requests (OpenCode's title generator), whose
    /// order against them no script could fix.
    pub fn side_url(&self) -> String {
        format!("http://{}{SIDE_PREFIX}v1", self.address)
    }

    /// `http://127.0.0.1:PORT`, what `ANTHROPIC_BASE_URL` should be set to (the client
    /// adds `/v1/messages`).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Every request received so far (model requests and anything else), in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Only the chat-completions requests.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests_to(Api::Chat)
    }

    /// The requests that took a scripted reply (or found the script exhausted), in any
    /// API, in serving order (side requests not included).
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.api().is_some() && !r.is_side())
            .collect()
    }

    /// The scripted requests in one API.
    pub fn requests_to(&self, api: Api) -> Vec<RecordedRequest> {
        self.model_requests()
            .into_iter()
            .filter(|r| r.api() == Some(api))
            .collect()
    }

    /// Replies not yet served.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// How many model requests arrived after the script ran out (each answered HTTP 500).
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
    let Ok(request) = http::read_request(shared, &mut stream) else {
        return;
    };
    let Some(api) = request.api() else {
        let _ = side_request(&mut stream, &request);
        lock(&shared.requests).push(request);
        http::finish(stream);
        return;
    };
    if request.is_side() {
        lock(&shared.requests).push(request.clone());
        let _ = play(
            shared,
            &mut stream,
            &request,
            api,
            MockReply::text(SIDE_ANSWER),
        );
        http::finish(stream);
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
        let body = error_body(
            api,
            "mock script exhausted: no scripted reply is left for this request",
        );
        let _ = http::write_plain(&mut stream, 500, "application/json", &body);
        http::finish(stream);
        return;
    };
    if !reply.delay.is_zero() && shared.sleep(Some(reply.delay)) {
        return;
    }
    let _ = play(shared, &mut stream, &request, api, reply);
    http::finish(stream);
}

/// A request that takes no scripted reply: token counting, a model listing, or a 404.
fn side_request(stream: &mut TcpStream, request: &RecordedRequest) -> io::Result<()> {
    let route = request.route().trim_end_matches('/');
    if request.method == "POST" && route.ends_with("/messages/count_tokens") {
        let body = anthropic::count_tokens(request);
        return http::write_plain(stream, 200, "application/json", &body);
    }
    if request.method == "GET" && route.ends_with("/models") {
        let body = json!({
            "object": "list",
            "data": [{
                "id": MODEL_ID,
                "object": "model",
                "type": "model",
                "display_name": "Mock",
                "created": 0,
                "created_at": "2026-01-01T00:00:00Z",
                "owned_by": "mock",
            }],
            "models": [],
            "has_more": false,
            "first_id": MODEL_ID,
            "last_id": MODEL_ID,
        });
        return http::write_plain(stream, 200, "application/json", &body.to_string());
    }
    let body = error_body(
        Api::Chat,
        &format!(
            "the mock model serves POST …/chat/completions, …/v1/messages and …/responses, not {} {}",
            request.method, request.path
        ),
    );
    http::write_plain(stream, 404, "application/json", &body)
}

/// An error body in the API's own shape.
fn error_body(api: Api, message: &str) -> String {
    match api {
        Api::Messages => anthropic::error_body(message),
        Api::Chat | Api::Responses => {
            json!({"error": {"message": message, "type": "mock_error", "code": null}}).to_string()
        }
    }
}

fn play(
    shared: &Shared,
    stream: &mut TcpStream,
    request: &RecordedRequest,
    api: Api,
    reply: MockReply,
) -> io::Result<()> {
    match reply.shape {
        Shape::Hang => {
            shared.sleep(None);
            Ok(())
        }
        Shape::Status { code, body } => {
            if body.is_empty() {
                http::write_plain(stream, code, "text/plain", "")
            } else if serde_json::from_str::<Value>(&body)
                .is_ok_and(|v| v.is_object() || v.is_array())
            {
                http::write_plain(stream, code, "application/json", &body)
            } else {
                http::write_plain(stream, code, "application/json", &error_body(api, &body))
            }
        }
        Shape::Raw {
            status,
            content_type,
            body,
        } => http::write_plain(stream, status, &content_type, &body),
        Shape::Completion {
            reasoning,
            text,
            calls,
            ending,
        } => {
            let turn = Turn::new(
                shared,
                request,
                reply.usage,
                reply.marker,
                (reasoning, text, calls, ending),
            );
            let plain = reply.plain_json;
            match api {
                Api::Chat => chat::write(shared, stream, request, &turn, plain),
                Api::Messages => anthropic::write(shared, stream, request, &turn, plain),
                Api::Responses => responses::write(shared, stream, request, &turn, plain),
            }
        }
    }
}

#[cfg(test)]
mod tests;

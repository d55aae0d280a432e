//! The OpenAI-compatible chat-completions provider (streaming, tool calls).
//!
//! One `POST {base_url}/chat/completions` per completion, streamed as server-sent events and
//! parsed as the bytes arrive, so a front end can show the reply live. Servers that ignore
//! `stream` and answer one JSON completion are understood too.
//!
//! There are no automatic retries, on purpose: a failed request is reported once, naming
//! what the user can act on (the key variable, the address, the server's own message), and
//! the conversation loop above decides what happens next. Nothing is sent twice behind the
//! user's back, so a paid request is never silently repeated.
//!
//! The API key never leaves this module except in the `Authorization` header: `Debug`
//! masks it and every message relayed from the server is masked too.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Value, json};

use crate::chat::{
    ChatModel, FinishReason, Message, Reply, Role, StreamEvent, ToolCall, ToolSpec, Usage,
};
use crate::error::ProviderError;

pub const BASE_URL_VAR: &str = "WEFT_PLANNER_BASE_URL";
pub const API_KEY_VAR: &str = "WEFT_PLANNER_API_KEY";
pub const MODEL_VAR: &str = "WEFT_PLANNER_MODEL";
/// Where a key is looked for, first match wins.
pub const KEY_VARS: [&str; 3] = [API_KEY_VAR, "OPENAI_API_KEY", "OPENROUTER_API_KEY"];
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

/// A reply's text larger than this is refused: a planner reply is a few kilobytes, so
/// megabytes mean a runaway model or server, and memory stays bounded.
pub const TEXT_CAP: usize = 2 * 1024 * 1024;
/// The same bound for the arguments of all tool calls of one reply together.
pub const ARGUMENTS_CAP: usize = 1024 * 1024;
/// At most this many tool calls in one reply.
const TOOL_CALLS_CAP: usize = 256;
/// One SSE event (or line) can hold at most everything a reply may hold.
const EVENT_CAP: usize = TEXT_CAP + ARGUMENTS_CAP + 64 * 1024;
/// A whole non-streamed JSON completion.
const JSON_BODY_CAP: u64 = 8 * 1024 * 1024;
/// How much of an error body is read to find the server's message.
const ERROR_BODY_CAP: u64 = 64 * 1024;
/// How much of the server's message an error quotes.
const MESSAGE_CAP: usize = 500;

/// Where and how to reach an OpenAI-compatible endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Up to and including the API version, without a trailing `/` (e.g. `…/v1`).
    pub base_url: String,
    pub api_key: Option<String>,
    /// Which environment variable the key came from, for error messages.
    pub key_var: Option<String>,
    pub model: String,
    pub connect_timeout: Duration,
    /// The longest silence allowed between bytes of the reply (including the wait for the
    /// first byte).
    pub idle_timeout: Duration,
    /// The longest a whole request may take, streaming included.
    pub request_timeout: Duration,
    pub max_tokens: Option<u32>,
    /// Raised by the front end when the user interrupts: the stream is dropped at its next
    /// line.
    pub interrupt: Option<weft_core::interrupt::Interrupt>,
}

impl OpenAiConfig {
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

    /// A keyless configuration with the default timeouts (for local servers and tests).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            key_var: None,
            model: model.into(),
            connect_timeout: OpenAiConfig::DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: OpenAiConfig::DEFAULT_IDLE_TIMEOUT,
            request_timeout: OpenAiConfig::DEFAULT_REQUEST_TIMEOUT,
            max_tokens: None,
            interrupt: None,
        }
    }

    /// Read the configuration from the environment through `get` (a closure, so tests pass
    /// a map). Values are trimmed; empty ones count as unset.
    ///
    /// - base URL: `WEFT_PLANNER_BASE_URL`, else OpenRouter's when the key came from
    ///   `OPENROUTER_API_KEY`, else OpenAI's. A pasted `…/chat/completions` is cut off.
    /// - key: `WEFT_PLANNER_API_KEY`, else `OPENAI_API_KEY`, else `OPENROUTER_API_KEY`; not
    ///   needed when the base URL is on loopback (Ollama, llama.cpp, vLLM on this machine).
    /// - model: `model_override`, else `WEFT_PLANNER_MODEL`.
    pub fn from_env(
        get: &dyn Fn(&str) -> Option<String>,
        model_override: Option<&str>,
    ) -> Result<OpenAiConfig, ProviderError> {
        let var = |name: &str| {
            get(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let key = KEY_VARS
            .iter()
            .find_map(|name| var(name).map(|key| (key, *name)));
        if let Some((key, name)) = &key
            && !key.chars().all(|c| c.is_ascii_graphic())
        {
            return Err(ProviderError::NotConfigured {
                what: format!(
                    "the API key in {name} contains spaces or characters an HTTP header cannot carry"
                ),
            });
        }

        let base_url = match var(BASE_URL_VAR) {
            Some(url) => {
                let url = url.trim_end_matches('/');
                url.strip_suffix("/chat/completions")
                    .unwrap_or(url)
                    .trim_end_matches('/')
                    .to_owned()
            }
            None if key
                .as_ref()
                .is_some_and(|(_, name)| *name == "OPENROUTER_API_KEY") =>
            {
                OPENROUTER_BASE_URL.to_owned()
            }
            None => OPENAI_BASE_URL.to_owned(),
        };
        let endpoint = Endpoint::parse(&base_url).map_err(|why| ProviderError::NotConfigured {
            what: format!("{BASE_URL_VAR} `{base_url}` {why}"),
        })?;

        let model = model_override
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .or_else(|| var(MODEL_VAR));

        let mut missing = Vec::new();
        if model.is_none() {
            missing.push(format!("no model: set {MODEL_VAR} (or pass a model)"));
        }
        if key.is_none() && !endpoint.is_loopback() {
            missing.push(format!(
                "no API key for {base_url}: set {API_KEY_VAR} (OPENAI_API_KEY and OPENROUTER_API_KEY are also read)"
            ));
        }
        if !missing.is_empty() {
            return Err(ProviderError::NotConfigured {
                what: missing.join("; "),
            });
        }

        let (api_key, key_var) = match key {
            Some((key, name)) => (Some(key), Some(name.to_owned())),
            None => (None, None),
        };
        Ok(OpenAiConfig {
            base_url,
            api_key,
            key_var,
            model: model.unwrap_or_default(),
            ..OpenAiConfig::new("", "")
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// `host:port` of the base URL, as connection errors name it.
    pub fn address(&self) -> String {
        Endpoint::parse(&self.base_url)
            .map(|e| e.address())
            .unwrap_or_else(|_| self.base_url.clone())
    }

    /// The variable to blame when the key is refused.
    fn key_var_name(&self) -> &str {
        self.key_var.as_deref().unwrap_or(API_KEY_VAR)
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "****"))
            .field("key_var", &self.key_var)
            .field("model", &self.model)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// The scheme, host and port of a base URL (no URL crate needed for this much).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Endpoint {
    host: String,
    port: u16,
}

impl Endpoint {
    fn parse(url: &str) -> Result<Endpoint, &'static str> {
        let (default_port, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (443, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (80, rest)
        } else {
            return Err("must start with http:// or https://");
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host_port = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
            let (host, after) = bracketed.split_once(']').ok_or("has an unclosed `[`")?;
            (host, after.strip_prefix(':'))
        } else {
            match host_port.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (host_port, None),
            }
        };
        if host.is_empty() {
            return Err("has no host");
        }
        let port = match port {
            Some(port) => port.parse().map_err(|_| "has an invalid port")?,
            None => default_port,
        };
        Ok(Endpoint {
            host: host.to_owned(),
            port,
        })
    }

    fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Local servers need no key and are never reached through a proxy.
    fn is_loopback(&self) -> bool {
        let host = self.host.to_ascii_lowercase();
        host == "localhost"
            || host.ends_with(".localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// A model behind an OpenAI-compatible chat-completions endpoint.
#[derive(Clone)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    agent: ureq::Agent,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    pub fn new(config: OpenAiConfig) -> OpenAiModel {
        let loopback = Endpoint::parse(&config.base_url).is_ok_and(|e| e.is_loopback());
        let mut builder = ureq::Agent::config_builder()
            // Error statuses carry the server's message: read them, don't turn them into
            // opaque errors.
            .http_status_as_error(false)
            // A redirected POST is answered as a status naming the new location, instead
            // of being silently replayed as a GET.
            .max_redirects(0)
            .max_redirects_will_error(false)
            .timeout_resolve(Some(config.connect_timeout))
            .timeout_connect(Some(config.connect_timeout))
            .timeout_per_read(Some(config.idle_timeout))
            .timeout_per_write(Some(config.idle_timeout))
            .timeout_global(Some(config.request_timeout))
            .user_agent(concat!("weft/", env!("CARGO_PKG_VERSION")));
        if loopback {
            builder = builder.proxy(None);
        }
        OpenAiModel {
            config,
            agent: builder.build().new_agent(),
        }
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The JSON body of a completion request.
    pub fn request_body(&self, messages: &[Message], tools: &[ToolSpec]) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": messages.iter().map(message_json).collect::<Vec<_>>(),
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.parameters,
                        },
                    })
                })
                .collect();
            body["tool_choice"] = json!("auto");
        }
        if let Some(max_tokens) = self.config.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        body
    }

    /// `text` with the key masked, cut to [`MESSAGE_CAP`] characters.
    fn quote(&self, text: &str) -> String {
        let text = text.trim();
        let masked = match &self.config.api_key {
            Some(key) if key.len() >= 4 => {
                weft_core::secrets::mask(text, std::slice::from_ref(key))
            }
            _ => text.to_owned(),
        };
        cap_chars(&masked, MESSAGE_CAP)
    }

    fn timeout(&self, after: Duration) -> ProviderError {
        ProviderError::Timeout {
            url: self.config.endpoint(),
            after,
        }
    }

    fn unreachable(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Unreachable {
            address: self.config.address(),
            message: self.quote(&message.into()),
        }
    }

    fn protocol(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Protocol {
            url: self.config.endpoint(),
            message: self.quote(&message.into()),
        }
    }

    fn stream_cut(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::StreamCut {
            url: self.config.endpoint(),
            message: self.quote(&message.into()),
        }
    }

    /// A refusal or error status, from the HTTP status line or an error inside the stream.
    fn status_error(&self, status: u16, message: &str) -> ProviderError {
        let message = self.quote(message);
        if status == 401 || status == 403 {
            let message = if self.config.api_key.is_none() {
                format!("{message} (no API key was sent; set {API_KEY_VAR})")
            } else {
                message
            };
            ProviderError::Unauthorized {
                url: self.config.endpoint(),
                key_var: self.config.key_var_name().to_owned(),
                status,
                message,
            }
        } else {
            ProviderError::Status {
                url: self.config.endpoint(),
                status,
                message,
            }
        }
    }

    fn timeout_kind(&self, kind: ureq::Timeout) -> ProviderError {
        match kind {
            ureq::Timeout::Resolve | ureq::Timeout::Connect => self.unreachable(format!(
                "no connection within {}s",
                self.config.connect_timeout.as_secs_f32()
            )),
            ureq::Timeout::Global | ureq::Timeout::PerCall => {
                self.timeout(self.config.request_timeout)
            }
            _ => self.timeout(self.config.idle_timeout),
        }
    }

    /// An error before any response arrived.
    fn send_error(&self, err: ureq::Error) -> ProviderError {
        match err {
            ureq::Error::Timeout(kind) => self.timeout_kind(kind),
            ureq::Error::HostNotFound => {
                self.unreachable("the host name could not be resolved (DNS lookup failed)")
            }
            ureq::Error::Io(io) => match io.kind() {
                io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe => {
                    self.unreachable(format!("the connection closed before any answer ({io})"))
                }
                _ => self.unreachable(io.to_string()),
            },
            ureq::Error::ConnectionFailed => self.unreachable("the connection failed"),
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::Pem(_) => {
                self.unreachable(format!("TLS failed: {err}"))
            }
            ureq::Error::BadUri(_) | ureq::Error::RequireHttpsOnly(_) => {
                ProviderError::NotConfigured {
                    what: format!(
                        "{BASE_URL_VAR} `{}` is not a usable URL ({err})",
                        self.config.base_url
                    ),
                }
            }
            ureq::Error::Http(_) => ProviderError::NotConfigured {
                what: format!(
                    "the request could not be built ({err}); check the key in {} and {MODEL_VAR}",
                    self.config.key_var_name()
                ),
            },
            other => self.protocol(other.to_string()),
        }
    }

    /// An error while the body was being read.
    fn read_error(&self, err: io::Error, partial: &Accumulator<'_>) -> ProviderError {
        match ureq::Error::from(err) {
            ureq::Error::Timeout(kind) => self.timeout_kind(kind),
            ureq::Error::Io(io)
                if matches!(
                    io.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                self.timeout(self.config.idle_timeout)
            }
            ureq::Error::Io(io) => self.stream_cut(format!(
                "the connection broke after {} ({io})",
                partial.progress()
            )),
            ureq::Error::Protocol(proto) => self.stream_cut(format!(
                "the HTTP body broke off after {} ({proto})",
                partial.progress()
            )),
            other => self.protocol(other.to_string()),
        }
    }

    fn fault(&self, fault: Fault) -> ProviderError {
        match fault {
            Fault::Protocol(message) => self.protocol(message),
            Fault::Remote {
                status: Some(status),
                message,
            } => self.status_error(status, &message),
            Fault::Remote {
                status: None,
                message,
            } => self.protocol(format!("the endpoint reported an error: {message}")),
        }
    }

    /// Read an error response's body and turn it into the matching error.
    fn error_response(&self, response: ureq::http::Response<ureq::Body>) -> ProviderError {
        let status = response.status();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        // Whatever arrives before an error or the cap is enough to quote.
        let _ = response
            .into_body()
            .into_reader()
            .take(ERROR_BODY_CAP)
            .read_to_end(&mut body);
        let text = String::from_utf8_lossy(&body);
        let mut message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| error_message(&v))
            .unwrap_or_else(|| text.trim().to_owned());
        if message.is_empty() {
            message = status.canonical_reason().unwrap_or("no message").to_owned();
        }
        if let Some(location) = location.filter(|_| status.is_redirection()) {
            message = format!("{message} (redirected to {location}; set {BASE_URL_VAR} to it)");
        }
        self.status_error(status.as_u16(), &message)
    }

    /// Read a server-sent-events stream into `acc`.
    fn read_stream(
        &self,
        reader: impl Read,
        acc: &mut Accumulator<'_>,
    ) -> Result<(), ProviderError> {
        let mut reader = BufReader::with_capacity(16 * 1024, reader);
        let mut line = Vec::new();
        let mut data = String::new();
        let mut has_data = false;
        loop {
            if weft_core::interrupt::Interrupt::raised(self.config.interrupt.as_ref()) {
                return Err(ProviderError::Interrupted {
                    what: format!("reply from {}", self.config.endpoint()),
                });
            }
            line.clear();
            let read = read_line(&mut reader, &mut line, EVENT_CAP);
            let ended = match read {
                Ok(LineRead::Line) => false,
                Ok(LineRead::End) => true,
                Ok(LineRead::TooLong) => {
                    return Err(self.protocol(format!(
                        "a stream line is longer than weft's {} MiB cap",
                        EVENT_CAP / (1024 * 1024)
                    )));
                }
                // The model had finished; only the closing formalities were lost.
                Err(_) if acc.finished() => return Ok(()),
                Err(err) => return Err(self.read_error(err, acc)),
            };
            if ended {
                if has_data {
                    acc.event(&data).map_err(|f| self.fault(f))?;
                }
                return Ok(());
            }
            let text = std::str::from_utf8(&line)
                .map_err(|_| self.protocol("the stream is not UTF-8 text"))?
                .trim_end_matches(['\n', '\r']);
            if !acc.saw_bytes && !text.trim().is_empty() {
                acc.saw_bytes = true;
                if text.trim_start().starts_with('{') {
                    // A plain JSON completion although a stream was asked for.
                    let mut body = text.as_bytes().to_vec();
                    reader
                        .take(JSON_BODY_CAP)
                        .read_to_end(&mut body)
                        .map_err(|err| self.read_error(err, acc))?;
                    return self.read_json(&body, acc);
                }
            }
            if text.is_empty() {
                // A blank line ends the event.
                if has_data {
                    acc.event(&data).map_err(|f| self.fault(f))?;
                    data.clear();
                    has_data = false;
                    if acc.done {
                        return Ok(());
                    }
                }
                continue;
            }
            if text.starts_with(':') {
                continue; // a comment (keep-alive)
            }
            let (field, value) = match text.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (text, ""),
            };
            if field == "data" {
                if has_data {
                    data.push('\n');
                }
                data.push_str(value);
                has_data = true;
                if data.len() > EVENT_CAP {
                    return Err(self.protocol(format!(
                        "a stream event is longer than weft's {} MiB cap",
                        EVENT_CAP / (1024 * 1024)
                    )));
                }
            }
            // `event:`, `id:` and `retry:` carry nothing chat completions need.
        }
    }

    /// Read a whole (non-streamed) JSON completion into `acc`.
    fn read_json(&self, body: &[u8], acc: &mut Accumulator<'_>) -> Result<(), ProviderError> {
        if body.len() as u64 > JSON_BODY_CAP {
            return Err(self.protocol(format!(
                "the completion is larger than weft's {} MiB cap",
                JSON_BODY_CAP / (1024 * 1024)
            )));
        }
        let value: Value = serde_json::from_slice(body).map_err(|err| {
            self.protocol(format!(
                "the completion is not valid JSON ({err}): {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ))
        })?;
        acc.completion(&value).map_err(|f| self.fault(f))?;
        acc.done = true;
        Ok(())
    }
}

impl ChatModel for OpenAiModel {
    fn label(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    /// With an interrupt configured, the request runs on its own thread so that Ctrl-C is
    /// heard even while a server sends nothing; the abandoned thread ends with its
    /// connection.
    fn complete(
        &mut self,
        messages: &[Message],
        tools: &[ToolSpec],
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Reply, ProviderError> {
        let Some(interrupt) = self.config.interrupt.clone() else {
            return self.complete_here(messages, tools, on_event);
        };
        enum Msg {
            Event(StreamEvent),
            Done(Result<Reply, ProviderError>),
        }
        let mut worker = self.clone();
        let (messages, tools) = (messages.to_vec(), tools.to_vec());
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("weft-planner-http".into())
            .spawn(move || {
                let events = sender.clone();
                let result = worker.complete_here(&messages, &tools, &mut |event| {
                    let _ = events.send(Msg::Event(event));
                });
                let _ = sender.send(Msg::Done(result));
            })
            .map_err(|err| self.protocol(format!("cannot start the request thread: {err}")))?;
        loop {
            match receiver.recv_timeout(INTERRUPT_POLL) {
                Ok(Msg::Event(event)) => on_event(event),
                Ok(Msg::Done(result)) => return result,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if interrupt.is_raised() {
                        return Err(ProviderError::Interrupted {
                            what: format!("reply from {}", self.config.endpoint()),
                        });
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(self.protocol("the request thread ended without a reply"));
                }
            }
        }
    }
}

/// How often a request waiting on a silent server looks at the interrupt flag.
const INTERRUPT_POLL: Duration = Duration::from_millis(100);

impl OpenAiModel {
    /// One completion on this thread.
    fn complete_here(
        &mut self,
        messages: &[Message],
        tools: &[ToolSpec],
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Reply, ProviderError> {
        let body = serde_json::to_vec(&self.request_body(messages, tools))
            .map_err(|err| self.protocol(format!("the request could not be encoded: {err}")))?;
        let mut request = self
            .agent
            .post(self.config.endpoint())
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        if let Some(key) = &self.config.api_key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        let response = request
            .send(&body[..])
            .map_err(|err| self.send_error(err))?;
        if !response.status().is_success() {
            return Err(self.error_response(response));
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let reader = response.into_body().into_reader();

        let mut acc = Accumulator::new(on_event);
        if content_type.contains("json") && !content_type.contains("event-stream") {
            let mut body = Vec::new();
            reader
                .take(JSON_BODY_CAP + 1)
                .read_to_end(&mut body)
                .map_err(|err| self.read_error(err, &acc))?;
            self.read_json(&body, &mut acc)?;
        } else {
            self.read_stream(reader, &mut acc)?;
        }

        if !acc.finished() {
            return Err(if !acc.saw_bytes {
                self.stream_cut("the stream ended before any event")
            } else if !acc.saw_chunk {
                self.protocol("the stream held no chat.completion.chunk events")
            } else {
                self.stream_cut(format!(
                    "the stream ended after {} without a finish reason or [DONE]",
                    acc.progress()
                ))
            });
        }
        Ok(acc.into_reply())
    }
}

/// What went wrong inside a reply, before it is tied to the endpoint's URL.
#[derive(Debug)]
enum Fault {
    Protocol(String),
    /// The server reported an error in the body (`{"error": …}`).
    Remote {
        status: Option<u16>,
        message: String,
    },
}

/// A tool call being assembled from deltas.
#[derive(Debug)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// The reply so far, built from chunks (or from one whole completion).
struct Accumulator<'a> {
    on_event: &'a mut dyn FnMut(StreamEvent),
    text: String,
    calls: Vec<PartialCall>,
    arguments_len: usize,
    finish: Option<String>,
    usage: Option<Usage>,
    /// `[DONE]` arrived (or a whole JSON completion was read).
    done: bool,
    /// Any non-blank byte of the body arrived.
    saw_bytes: bool,
    /// Any chunk with `choices` arrived.
    saw_chunk: bool,
}

impl<'a> Accumulator<'a> {
    fn new(on_event: &'a mut dyn FnMut(StreamEvent)) -> Accumulator<'a> {
        Accumulator {
            on_event,
            text: String::new(),
            calls: Vec::new(),
            arguments_len: 0,
            finish: None,
            usage: None,
            done: false,
            saw_bytes: false,
            saw_chunk: false,
        }
    }

    /// The model said it was done: a finish reason or `[DONE]` arrived.
    fn finished(&self) -> bool {
        self.done || self.finish.is_some()
    }

    /// How much arrived, for error messages.
    fn progress(&self) -> String {
        format!(
            "{} characters of text and {} tool call(s)",
            self.text.chars().count(),
            self.calls.len()
        )
    }

    /// One SSE event's data.
    fn event(&mut self, data: &str) -> Result<(), Fault> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        match serde_json::from_str::<Value>(data) {
            Ok(chunk) => self.chunk(&chunk),
            // Servers that forget the blank line between events put several on one event.
            Err(_) if data.contains('\n') => {
                for line in data.lines().filter(|l| !l.trim().is_empty()) {
                    let line = line.strip_prefix("data:").map_or(line, str::trim_start);
                    self.event(line)?;
                }
                Ok(())
            }
            Err(err) => Err(Fault::Protocol(format!(
                "a stream event is not JSON ({err}): {}",
                cap_chars(data, 200)
            ))),
        }
    }

    fn check_error(value: &Value) -> Result<(), Fault> {
        match value.get("error") {
            Some(error) if !error.is_null() => Err(Fault::Remote {
                status: error_status(value),
                message: error_message(value).unwrap_or_else(|| error.to_string()),
            }),
            _ => Ok(()),
        }
    }

    fn chunk(&mut self, chunk: &Value) -> Result<(), Fault> {
        Accumulator::check_error(chunk)?;
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(parse_usage(usage));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        self.saw_chunk = true;
        for choice in choices.iter().filter(|c| first_choice(c)) {
            if let Some(delta) = choice.get("delta") {
                self.delta(delta, false)?;
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(reason.to_owned());
            }
        }
        Ok(())
    }

    /// A whole non-streamed completion.
    fn completion(&mut self, value: &Value) -> Result<(), Fault> {
        self.saw_bytes = true;
        Accumulator::check_error(value)?;
        let Some(choices) = value.get("choices").and_then(Value::as_array) else {
            return Err(Fault::Protocol(format!(
                "the completion has no `choices`: {}",
                cap_chars(&value.to_string(), 200)
            )));
        };
        self.saw_chunk = true;
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(parse_usage(usage));
        }
        for choice in choices.iter().filter(|c| first_choice(c)) {
            if let Some(message) = choice.get("message") {
                self.delta(message, true)?;
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(reason.to_owned());
            }
        }
        Ok(())
    }

    /// A delta (or a whole message when `whole`): reasoning, content, tool calls.
    fn delta(&mut self, delta: &Value, whole: bool) -> Result<(), Fault> {
        let reasoning = ["reasoning_content", "reasoning"]
            .iter()
            .filter_map(|field| delta.get(*field).and_then(Value::as_str))
            .find(|r| !r.is_empty());
        if let Some(reasoning) = reasoning {
            (self.on_event)(StreamEvent::Reasoning(reasoning.to_owned()));
        }

        let content = content_text(delta.get("content"));
        if !content.is_empty() {
            if self.text.len() + content.len() > TEXT_CAP {
                return Err(Fault::Protocol(format!(
                    "the reply text is longer than weft's {} MiB cap",
                    TEXT_CAP / (1024 * 1024)
                )));
            }
            self.text.push_str(&content);
            (self.on_event)(StreamEvent::Text(content));
        }

        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
            return Ok(());
        };
        for (position, call) in calls.iter().enumerate() {
            self.tool_call_delta(call, whole.then_some(position as u64))?;
        }
        Ok(())
    }

    fn tool_call_delta(&mut self, call: &Value, position: Option<u64>) -> Result<(), Fault> {
        let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        let index = match call.get("index").and_then(Value::as_u64).or(position) {
            Some(index) => index,
            // No index: a new id starts a call, anything else continues the last one.
            None => match self.calls.last() {
                Some(last) if id.is_empty() || last.id == id => last.index,
                Some(_) => self.calls.iter().map(|c| c.index).max().unwrap_or(0) + 1,
                None => 0,
            },
        };
        let slot = match self.calls.iter().position(|c| c.index == index) {
            Some(slot) => slot,
            None => {
                if self.calls.len() >= TOOL_CALLS_CAP {
                    return Err(Fault::Protocol(format!(
                        "the reply makes more than weft's cap of {TOOL_CALLS_CAP} tool calls"
                    )));
                }
                self.calls.push(PartialCall {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let function = call.get("function").unwrap_or(&Value::Null);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = match function.get("arguments") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            // Some servers send the arguments as an object rather than JSON text.
            Some(other) => other.to_string(),
        };

        let partial = &mut self.calls[slot];
        if partial.id.is_empty() && !id.is_empty() {
            partial.id = id.to_owned();
        }
        if partial.name.is_empty() && !name.is_empty() {
            partial.name = name.to_owned();
            (self.on_event)(StreamEvent::ToolCallStarted {
                name: name.to_owned(),
            });
        }
        if !arguments.is_empty() {
            if self.arguments_len + arguments.len() > ARGUMENTS_CAP {
                return Err(Fault::Protocol(format!(
                    "the tool call arguments are longer than weft's {} MiB cap",
                    ARGUMENTS_CAP / (1024 * 1024)
                )));
            }
            self.arguments_len += arguments.len();
            self.calls[slot].arguments.push_str(&arguments);
        }
        Ok(())
    }

    fn into_reply(self) -> Reply {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .filter(|c| !c.name.is_empty() || !c.arguments.is_empty())
            .map(|c| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{}", c.index)
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        let finish = match self.finish.as_deref() {
            // Some servers (Gemini's, older Ollama) say `stop` after tool calls.
            Some("stop") | None if !tool_calls.is_empty() => FinishReason::ToolCalls,
            Some("stop") | None => FinishReason::Stop,
            Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
            Some("length") => FinishReason::Length,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        Reply {
            text: self.text,
            tool_calls,
            finish,
            usage: self.usage,
        }
    }
}

/// Only the first choice counts (weft never asks for `n` > 1).
fn first_choice(choice: &Value) -> bool {
    choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0
}

/// `content` as text: a string, or the text parts of a list of parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str).unwrap_or("text") == "text")
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn parse_usage(usage: &Value) -> Usage {
    let count = |fields: [&str; 2]| {
        fields
            .iter()
            .find_map(|f| usage.get(*f).and_then(Value::as_u64))
            .unwrap_or(0)
    };
    Usage {
        input_tokens: count(["prompt_tokens", "input_tokens"]),
        output_tokens: count(["completion_tokens", "output_tokens"]),
    }
}

/// The server's own message in an error body: `error.message` (with OpenRouter's
/// upstream text), `error` as a string, `message` or `detail`.
fn error_message(body: &Value) -> Option<String> {
    let error = body.get("error");
    if let Some(message) = error.and_then(|e| e.get("message")).and_then(Value::as_str) {
        let raw = error
            .and_then(|e| e.pointer("/metadata/raw"))
            .and_then(Value::as_str)
            .filter(|raw| !raw.is_empty() && *raw != message);
        return Some(match raw {
            Some(raw) => format!("{message}: {raw}"),
            None => message.to_owned(),
        });
    }
    error
        .and_then(Value::as_str)
        .or_else(|| body.get("message").and_then(Value::as_str))
        .or_else(|| body.get("detail").and_then(Value::as_str))
        .map(str::to_owned)
}

/// An HTTP status an in-body error carries (`error.code` or `error.status`), if any.
fn error_status(body: &Value) -> Option<u16> {
    let error = body.get("error")?;
    ["code", "status"]
        .iter()
        .filter_map(|f| error.get(*f))
        .find_map(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (100..=599).contains(code))
}

fn message_json(message: &Message) -> Value {
    match message.role {
        Role::System => json!({"role": "system", "content": message.content}),
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Assistant if message.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": message.content})
        }
        Role::Assistant => {
            let content = if message.content.is_empty() {
                Value::Null
            } else {
                Value::from(message.content.as_str())
            };
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
    }
}

enum LineRead {
    Line,
    End,
    TooLong,
}

/// Read up to and including the next `\n` into `line`, refusing lines over `cap` bytes.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> io::Result<LineRead> {
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buffer.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::End
            } else {
                LineRead::Line
            });
        }
        let (taken, complete) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (buffer.len(), false),
        };
        line.extend_from_slice(&buffer[..taken]);
        reader.consume(taken);
        if line.len() > cap {
            return Ok(LineRead::TooLong);
        }
        if complete {
            return Ok(LineRead::Line);
        }
    }
}

/// `text` cut to `max` characters, marked with `…` when cut.
fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_hosts_ports_and_loopback() {
        let e = Endpoint::parse("http://127.0.0.1:8080/v1").unwrap();
        assert_eq!(e.address(), "127.0.0.1:8080");
        assert!(e.is_loopback());
        let e = Endpoint::parse("https://api.openai.com/v1").unwrap();
        assert_eq!(e.address(), "api.openai.com:443");
        assert!(!e.is_loopback());
        let e = Endpoint::parse("http://[::1]:11434/v1").unwrap();
        assert_eq!(e.address(), "[::1]:11434");
        assert!(e.is_loopback());
        assert!(
            Endpoint::parse("http://LOCALHOST/v1")
                .unwrap()
                .is_loopback()
        );
        assert!(
            Endpoint::parse("http://user:pw@localhost:1/v1")
                .unwrap()
                .is_loopback()
        );
        assert!(Endpoint::parse("ftp://x").is_err());
        assert!(Endpoint::parse("http:///v1").is_err());
        assert!(Endpoint::parse("http://host:notaport/v1").is_err());
    }

    #[test]
    fn cap_chars_cuts_on_characters() {
        assert_eq!(cap_chars("héllo", 2), "hé…");
        assert_eq!(cap_chars("hé", 2), "hé");
    }

    #[test]
    fn a_finish_of_stop_with_tool_calls_means_tool_calls() {
        let mut events = Vec::new();
        let mut on_event = |e| events.push(e);
        let mut acc = Accumulator::new(&mut on_event);
        acc.event(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"grep","arguments":{"pattern":"x"}}}]},"finish_reason":"stop"}]}"#)
            .unwrap();
        let reply = acc.into_reply();
        assert_eq!(reply.finish, FinishReason::ToolCalls);
        assert_eq!(reply.tool_calls[0].arguments, r#"{"pattern":"x"}"#);
        assert_eq!(
            events,
            vec![StreamEvent::ToolCallStarted {
                name: "grep".into()
            }]
        );
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let mut on_event = |_| {};
        let mut acc = Accumulator::new(&mut on_event);
        for data in [
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"one","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"two","arguments":"[]"}}]}}]}"#,
        ] {
            acc.event(data).unwrap();
        }
        let reply = acc.into_reply();
        let calls: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, vec![("a", "one", "{}"), ("b", "two", "[]")]);
    }
}

//! A small HTTP/1.1 server on `std::net`, with `httparse` for the request head.
//!
//! Contract:
//! - Threads: one accept thread per listening socket, one thread per connection (at most
//!   [`MAX_CONNECTIONS`] at once; the next is answered 503 and closed). A connection
//!   serves requests one after the other (keep-alive) until the client closes it, sends
//!   `Connection: close`, stays idle for [`IDLE_TIMEOUT`], or gets a streamed response.
//! - Bounds: a request head of at most [`MAX_HEAD`] bytes and [`MAX_HEADERS`] headers, a
//!   body of at most [`MAX_BODY`] bytes given by `Content-Length` (a chunked request body
//!   is refused with 411); anything else is answered 400/413/431 and the connection closed.
//! - A streamed response (server-sent events, followed output) is written without a
//!   length and ends the connection when its writer returns; a failed write (the client
//!   went away) ends it too.
//!
//! Why not a framework: the server is local, serves one person's browser and a few
//! scripts, and runs on machines with two cores; hyper + tokio (or axum) would add about
//! a hundred crates and most of a minute of build time, tiny_http binds one address per
//! server and hides the socket the event stream needs. This is ~300 lines over a parser
//! that is already in the dependency tree.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Most bytes of a request line and headers.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most headers of one request.
pub const MAX_HEADERS: usize = 64;
/// Most bytes of a request body (a workflow file of a very large plan fits).
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// Most connections served at once.
pub const MAX_CONNECTIONS: usize = 512;
/// How long a kept-alive connection may wait for its next request.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// One parsed request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path, percent-decoded, without the query.
    pub path: String,
    /// The query's pairs, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The address the connection came in on (this server's side).
    pub local: SocketAddr,
}

impl Request {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first query parameter of that name.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path split at `/`, without empty segments.
    pub fn segments(&self) -> Vec<&str> {
        self.path.split('/').filter(|s| !s.is_empty()).collect()
    }
}

/// What a streamed response runs: it writes the body until it is done or a write fails.
pub type StreamBody = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// A response body: bytes with a length, or a stream that ends the connection.
pub enum Body {
    Bytes(Vec<u8>),
    Stream(StreamBody),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Bytes(bytes) => write!(f, "Bytes({} bytes)", bytes.len()),
            Body::Stream(_) => f.write_str("Stream"),
        }
    }
}

/// One response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Response {
    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Bytes(body),
        }
    }

    pub fn json(status: u16, value: &impl serde::Serialize) -> Response {
        let mut body = serde_json::to_vec_pretty(value).unwrap_or_else(|e| {
            format!("{{\"error\":\"cannot encode the response as JSON: {e}\"}}").into_bytes()
        });
        body.push(b'\n');
        Response::bytes(status, "application/json", body)
    }

    pub fn text(status: u16, text: impl Into<String>) -> Response {
        Response::bytes(
            status,
            "text/plain; charset=utf-8",
            text.into().into_bytes(),
        )
    }

    pub fn stream(content_type: &str, body: StreamBody) -> Response {
        Response {
            status: 200,
            headers: vec![
                ("Content-Type".into(), content_type.into()),
                ("Cache-Control".into(), "no-store".into()),
            ],
            body: Body::Stream(body),
        }
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// What answers every request.
pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// Accept connections on `listener` until the process ends, each on its own thread.
pub fn serve(listener: TcpListener, handler: Handler) -> io::Result<std::thread::JoinHandle<()>> {
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("weft-http-accept".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    open.fetch_sub(1, Ordering::SeqCst);
                    let _ = refuse(stream, 503, "too many connections");
                    continue;
                }
                let handler = handler.clone();
                let open = open.clone();
                let spawned = std::thread::Builder::new()
                    .name("weft-http-conn".into())
                    .stack_size(256 * 1024)
                    .spawn({
                        let open = open.clone();
                        move || {
                            connection(stream, &handler);
                            open.fetch_sub(1, Ordering::SeqCst);
                        }
                    });
                if spawned.is_err() {
                    open.fetch_sub(1, Ordering::SeqCst);
                }
            }
        })
}

fn refuse(mut stream: TcpStream, status: u16, why: &str) -> io::Result<()> {
    let response = Response::json(
        status,
        &serde_json::json!({"error": why, "hint": null, "causes": []}),
    );
    write_response(&mut stream, response, true)
}

/// Serve one connection's requests, one after the other.
fn connection(stream: TcpStream, handler: &Handler) {
    let Ok(local) = stream.local_addr() else {
        return;
    };
    let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let request = match read_request(&mut reader, local) {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(Refusal { status, why }) => {
                let body = serde_json::json!({"error": why, "hint": null, "causes": []});
                let _ = write_response(&mut writer, Response::json(status, &body), true);
                return;
            }
        };
        let close = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let response = handler(&request);
        let streamed = matches!(response.body, Body::Stream(_));
        if write_response(&mut writer, response, close).is_err() || close || streamed {
            let _ = writer.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

struct Refusal {
    status: u16,
    why: String,
}

fn refusal(status: u16, why: impl Into<String>) -> Refusal {
    Refusal {
        status,
        why: why.into(),
    }
}

/// The next request, `None` when the client closed the connection (or idled out).
fn read_request(
    reader: &mut BufReader<TcpStream>,
    local: SocketAddr,
) -> Result<Option<Request>, Refusal> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let read = reader
            .by_ref()
            .take((MAX_HEAD - head.len()) as u64 + 1)
            .read_until(b'\n', &mut line);
        match read {
            Ok(0) if head.is_empty() => return Ok(None),
            Ok(0) => return Err(refusal(400, "the request head ended early")),
            Ok(_) => {}
            Err(_) if head.is_empty() => return Ok(None),
            Err(e) => return Err(refusal(400, format!("cannot read the request: {e}"))),
        }
        // Blank lines before a request line are tolerated (RFC 9112 2.2).
        if head.is_empty() && (line == b"\r\n" || line == b"\n") {
            continue;
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err(refusal(431, "the request head is too large"));
        }
        if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") {
            break;
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(refusal(400, "the request head is incomplete"));
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(refusal(431, format!("more than {MAX_HEADERS} headers")));
        }
        Err(e) => return Err(refusal(400, format!("malformed request: {e}"))),
    }
    let method = parsed.method.unwrap_or_default().to_owned();
    let target = parsed.path.unwrap_or("/");
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).trim().to_owned(),
            )
        })
        .collect();
    let find = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    if find("transfer-encoding").is_some() {
        return Err(refusal(
            411,
            "a chunked request body is not accepted: send Content-Length",
        ));
    }
    let length = match find("content-length") {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| refusal(400, format!("Content-Length {text:?} is not a number")))?,
    };
    if length > MAX_BODY {
        return Err(refusal(
            413,
            format!("the request body is larger than {MAX_BODY} bytes"),
        ));
    }
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .map_err(|e| refusal(400, format!("the request body ended early: {e}")))?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Some(Request {
        method,
        path: percent_decode(path),
        query: parse_query(query),
        headers,
        body,
        local,
    }))
}

/// `a=1&b=x%20y` as pairs (`+` is a space, as forms send it).
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (
                percent_decode(&k.replace('+', " ")),
                percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

/// `%XX` sequences decoded; invalid ones are kept as they are.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

fn write_response(stream: &mut dyn Write, response: Response, close: bool) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("X-Content-Type-Options: nosniff\r\n");
    match response.body {
        Body::Bytes(bytes) => {
            head.push_str(&format!("Content-Length: {}\r\n", bytes.len()));
            if close {
                head.push_str("Connection: close\r\n");
            }
            head.push_str("\r\n");
            let mut all = head.into_bytes();
            all.extend_from_slice(&bytes);
            stream.write_all(&all)?;
            stream.flush()
        }
        Body::Stream(body) => {
            head.push_str("Connection: close\r\n\r\n");
            stream.write_all(head.as_bytes())?;
            stream.flush()?;
            body(stream)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_keeps_invalid_escapes_and_decodes_valid_ones() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }

    #[test]
    fn a_query_splits_into_decoded_pairs_in_order() {
        assert_eq!(
            parse_query("after=5&code=a%2Bb&x"),
            vec![
                ("after".into(), "5".into()),
                ("code".into(), "a+b".into()),
                ("x".into(), String::new()),
            ]
        );
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    fn encode(text: &str) -> String {
        text.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    }

    proptest! {
        /// Decoding what was percent-encoded gives back the text.
        #[test]
        fn percent_decoding_inverts_percent_encoding(text in "\\PC{0,40}") {
            prop_assert_eq!(percent_decode(&encode(&text)), text);
        }

        /// Any query string parses without panicking into at most one pair per `&` part.
        #[test]
        fn any_query_parses(query in "[ -~]{0,80}") {
            let pairs = parse_query(&query);
            prop_assert!(pairs.len() <= query.split('&').count());
        }
    }
}

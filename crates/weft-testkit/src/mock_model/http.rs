//! HTTP/1.1 over std sockets: reading one request, writing plain and streamed answers.
//!
//! One request per connection (`connection: close`). Streams are server-sent events sent
//! with chunked transfer encoding, one event per HTTP chunk, flushed at once, like the
//! real services.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::script::Ending;
use super::{RecordedRequest, Shared};

/// Request heads larger than this are refused (real clients send a few kilobytes).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Request bodies carry whole conversations; this only guards against a runaway client.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// A client that stops sending its request for this long is dropped.
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// A streamed answer in progress: the head is sent by [`Sse::start`], each event is one
/// chunk, and [`Sse::end`] ends it as the reply's [`Ending`] says.
pub(super) struct Sse<'a> {
    stream: &'a mut TcpStream,
}

impl<'a> Sse<'a> {
    pub(super) fn start(stream: &'a mut TcpStream) -> io::Result<Sse<'a>> {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        stream.write_all(head.as_bytes())?;
        stream.flush()?;
        Ok(Sse { stream })
    }

    /// `data: {json}` alone (OpenAI chat completions).
    pub(super) fn data(&mut self, data: &Value) -> io::Result<()> {
        write_event(self.stream, &format!("data: {data}\n\n"))
    }

    /// `event: NAME` then `data: {json}` (Anthropic Messages, OpenAI Responses).
    pub(super) fn named(&mut self, name: &str, data: &Value) -> io::Result<()> {
        write_event(self.stream, &format!("event: {name}\ndata: {data}\n\n"))
    }

    /// Exactly this event text (e.g. `data: [DONE]\n\n`).
    pub(super) fn text(&mut self, event: &str) -> io::Result<()> {
        write_event(self.stream, event)
    }

    /// After the content: a finished stream gets `closing` and its terminating chunk; a
    /// cut one is closed mid-body; a stalled one waits for the server to stop.
    pub(super) fn end(
        self,
        shared: &Shared,
        ending: &Ending,
        closing: impl FnOnce(&mut Sse<'a>) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut sse = self;
        match ending {
            Ending::Finish(_) => {
                closing(&mut sse)?;
                // The terminating zero-length chunk ends the HTTP body.
                sse.stream.write_all(b"0\r\n\r\n")?;
                sse.stream.flush()
            }
            Ending::Cut => {
                sse.stream.flush()?;
                let _ = sse.stream.shutdown(Shutdown::Both);
                Ok(())
            }
            Ending::Stall => {
                sse.stream.flush()?;
                shared.sleep(None);
                Ok(())
            }
        }
    }
}

/// One whole JSON answer; a cut or stalled reply promises the whole body and sends half.
pub(super) fn write_json(
    shared: &Shared,
    stream: &mut TcpStream,
    ending: &Ending,
    body: &str,
) -> io::Result<()> {
    match ending {
        Ending::Finish(_) => write_plain(stream, 200, "application/json", body),
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

/// Close our side, then drain briefly so unread client bytes cannot turn the close into a
/// reset that would destroy data the client has not read yet.
pub(super) fn finish(mut stream: TcpStream) {
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

/// One SSE event as one HTTP chunk, flushed at once.
fn write_event(stream: &mut TcpStream, event: &str) -> io::Result<()> {
    let framed = format!("{:x}\r\n{event}\r\n", event.len());
    stream.write_all(framed.as_bytes())?;
    stream.flush()
}

pub(super) fn write_plain(
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

pub(super) fn read_request(shared: &Shared, stream: &mut TcpStream) -> io::Result<RecordedRequest> {
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

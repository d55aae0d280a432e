//! An attempt's live output over HTTP, read through the store by byte offset
//! (`Store::read_output`), so any attempt is readable, whichever process runs it.
//!
//! - `GET /api/attempts/{id}/output?offset=N&max=M`: up to `M` bytes (default and most:
//!   the store's chunk cap) from `N`; headers `X-Weft-Next-Offset` (where to read next),
//!   `X-Weft-Live: 1` while the attempt runs, `X-Weft-Done: 1` once no more output will
//!   come. The bytes are made safe to show with `weft_core::terminal` (control sequences
//!   escaped as `\xNN`, colour removed; `&colour=1` keeps SGR colour) unless `&raw=1`.
//!   A range that ends inside an escape sequence or a UTF-8 character shows that piece
//!   escaped; the stream below carries the sanitizer across chunks instead.
//! - `GET /api/attempts/{id}/output/stream?offset=N`: server-sent events, one `output`
//!   message per chunk (`id:` the offset after it, `data:` the text as a JSON string), until
//!   the attempt ends (then one `end` message) or the client goes away. A reconnecting
//!   EventSource resumes from its `Last-Event-ID`. Polled every [`FOLLOW_POLL`] while the
//!   attempt runs and nothing new is there.

use std::io::Write;
use std::time::Duration;

use weft_core::terminal::{Keep, Sanitizer};
use weft_store::Store;

use crate::api::{App, Call};
use crate::error::{ApiError, ApiResult};
use crate::http::{Request, Response};

/// How often a followed attempt's output is looked at when nothing new came.
pub const FOLLOW_POLL: Duration = Duration::from_millis(100);
/// Bytes one stream message carries at most.
const STREAM_CHUNK: usize = 64 * 1024;

fn number(request: &Request, name: &str, default: u64) -> ApiResult<u64> {
    match request.query(name) {
        None | Some("") => Ok(default),
        Some(text) => text.parse().map_err(|_| {
            ApiError::bad_request(format!("{name} {text:?} is not a number of bytes"))
        }),
    }
}

fn flag(request: &Request, name: &str) -> bool {
    request.query(name).is_some_and(|v| v == "1" || v == "true")
}

fn keep(request: &Request) -> Keep {
    if flag(request, "colour") || flag(request, "color") {
        Keep::Colour
    } else {
        Keep::Nothing
    }
}

/// A range of `attempt`'s output as the response (see the module docs).
pub(crate) fn read(store: &Store, attempt: &str, request: &Request) -> ApiResult {
    let offset = number(request, "offset", 0)?;
    let max = number(request, "max", weft_store::OUTPUT_CHUNK_MAX as u64)?;
    let chunk = store
        .read_output(attempt, offset, usize::try_from(max).unwrap_or(usize::MAX))?
        .ok_or_else(|| unknown(attempt))?;
    let bytes = if flag(request, "raw") {
        chunk.bytes
    } else {
        let mut sanitizer = Sanitizer::new(keep(request));
        let mut out = Vec::with_capacity(chunk.bytes.len());
        sanitizer.push(&chunk.bytes, &mut out);
        sanitizer.finish(&mut out);
        out
    };
    let kind = if flag(request, "raw") {
        "application/octet-stream"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut response =
        Response::bytes(200, kind, bytes).with_header("X-Weft-Next-Offset", chunk.next.to_string());
    if chunk.live {
        response = response.with_header("X-Weft-Live", "1");
    }
    if chunk.finished {
        response = response.with_header("X-Weft-Done", "1");
    }
    Ok(response)
}

fn unknown(attempt: &str) -> ApiError {
    ApiError::not_found(format!("no attempt {attempt:?} in this workspace"))
        .hint("GET /api/plans/{plan}/tasks/{task}/attempts lists a task's attempts")
}

pub(crate) fn range(app: &App, call: &Call) -> ApiResult {
    read(&app.store()?, call.param("id"), call.request)
}

pub(crate) fn stream(app: &App, call: &Call) -> ApiResult {
    let store = app.store()?;
    let attempt = call.param("id").to_owned();
    let resume = call.request.header("last-event-id").map(str::to_owned);
    let offset = match (call.request.query("offset"), resume) {
        (Some(_), _) | (None, None) => number(call.request, "offset", 0)?,
        (None, Some(id)) => id
            .trim()
            .parse()
            .map_err(|_| ApiError::bad_request(format!("Last-Event-ID {id:?} is not an offset")))?,
    };
    // Unknown attempts are refused before the stream starts.
    store
        .read_output(&attempt, offset, 1)?
        .ok_or_else(|| unknown(&attempt))?;
    let raw = flag(call.request, "raw");
    let keep = keep(call.request);
    Ok(Response::stream(
        "text/event-stream",
        Box::new(move |out: &mut dyn Write| follow(out, &store, &attempt, offset, raw, keep)),
    ))
}

fn follow(
    out: &mut dyn Write,
    store: &Store,
    attempt: &str,
    mut offset: u64,
    raw: bool,
    keep: Keep,
) -> std::io::Result<()> {
    let mut sanitizer = Sanitizer::new(keep);
    let mut idle = Duration::ZERO;
    loop {
        let chunk = store
            .read_output(attempt, offset, STREAM_CHUNK)
            .map_err(std::io::Error::other)?
            .ok_or_else(|| std::io::Error::other("the attempt is gone"))?;
        let mut text = Vec::new();
        if raw {
            text.extend_from_slice(&chunk.bytes);
        } else {
            sanitizer.push(&chunk.bytes, &mut text);
            if chunk.finished {
                sanitizer.finish(&mut text);
            }
        }
        offset = chunk.next;
        if !text.is_empty() {
            let data = serde_json::to_string(&String::from_utf8_lossy(&text))
                .unwrap_or_else(|_| "\"\"".into());
            write!(out, "id: {offset}\nevent: output\ndata: {data}\n\n")?;
            out.flush()?;
            idle = Duration::ZERO;
        }
        if chunk.finished {
            write!(
                out,
                "id: {offset}\nevent: end\ndata: {{\"next\":{offset}}}\n\n"
            )?;
            return out.flush();
        }
        if chunk.bytes.is_empty() {
            std::thread::sleep(FOLLOW_POLL);
            idle += FOLLOW_POLL;
            if idle >= crate::events::HEARTBEAT {
                out.write_all(b": hb\n\n")?;
                out.flush()?;
                idle = Duration::ZERO;
            }
        }
    }
}

//! `GET /api/events`: the store's event log as server-sent events.
//!
//! Contract:
//! - Each message is `id: <seq>`, `event: <kind>`, `data: <the typed event as one line of
//!   JSON, exactly as `weft events --json` prints it>`. A stream first replays every event
//!   after `?after=SEQ` (or the `Last-Event-ID` header, which a reconnecting EventSource
//!   sends; `?after` wins), then follows new ones as they are stored, in sequence order,
//!   each once. `?plan=REF` keeps one plan's events.
//! - Following: one poller thread ([`Hub`]) runs while at least one stream is open. Every
//!   [`POLL`] it asks the store for its last sequence number (one indexed read) and, when
//!   it moved, reads the new events once and hands each, encoded once, to every stream.
//!   An edit made in any process (the CLI, an engine, this server) reaches an open stream
//!   within about one poll.
//! - Bounds: each stream has a buffer of at most [`CLIENT_BUFFER`] messages. A client
//!   that does not read fast enough to keep it from filling is dropped: its stream ends,
//!   and it resumes with `Last-Event-ID` (EventSource reconnects by itself), so it loses
//!   nothing. A comment line `: hb` is sent after [`HEARTBEAT`] of silence, so proxies and
//!   browsers keep the connection and a closed one is noticed.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use weft_core::Event;
use weft_store::Store;

use crate::Host;
use crate::api::{App, Call};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;

/// How often the poller looks at the store while a stream is open.
pub const POLL: Duration = Duration::from_millis(25);
/// Messages buffered per stream before its client counts as too slow and is dropped.
pub const CLIENT_BUFFER: usize = 1024;
/// Silence after which a heartbeat comment is sent.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// Events read per query.
const PAGE: u32 = 500;

/// One encoded message.
#[derive(Debug)]
pub struct Frame {
    pub seq: i64,
    pub plan: Option<String>,
    pub text: String,
}

impl Frame {
    pub fn of(event: &Event) -> Frame {
        let data = serde_json::to_string(event).unwrap_or_else(|_| "null".into());
        Frame {
            seq: event.seq,
            plan: event.plan.clone(),
            text: format!(
                "id: {}\nevent: {}\ndata: {data}\n\n",
                event.seq,
                event.kind_name()
            ),
        }
    }
}

struct Subscriber {
    sender: SyncSender<Arc<Frame>>,
    dropped: Arc<AtomicBool>,
}

#[derive(Default)]
struct HubState {
    subscribers: Vec<Subscriber>,
    /// The last sequence number handed out; `None` while no poller runs.
    seen: Option<i64>,
}

/// The poller and the open streams.
pub struct Hub {
    host: Arc<dyn Host>,
    state: Arc<Mutex<HubState>>,
    buffer: usize,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("buffer", &self.buffer)
            .finish_non_exhaustive()
    }
}

/// An open stream's end of the hub.
#[derive(Debug)]
pub struct Subscription {
    pub receiver: Receiver<Arc<Frame>>,
    /// Set when the hub dropped this stream (its buffer was full).
    pub dropped: Arc<AtomicBool>,
}

impl Hub {
    pub fn with_buffer(host: Arc<dyn Host>, buffer: usize) -> Hub {
        Hub {
            host,
            state: Arc::default(),
            buffer: buffer.max(1),
        }
    }

    /// Register a stream; every event stored from now on reaches it (or drops it). The
    /// poller starts with the first stream, at the store's current end, before this
    /// returns: a replay the caller does next overlaps the followed events, never misses
    /// one (the caller skips what it already sent by sequence number).
    pub fn subscribe(&self, store: &Store) -> ApiResult<Subscription> {
        let (sender, receiver) = sync_channel(self.buffer);
        let dropped = Arc::new(AtomicBool::new(false));
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.subscribers.push(Subscriber {
            sender,
            dropped: dropped.clone(),
        });
        if state.seen.is_none() {
            state.seen = Some(store.last_event_seq()?);
            let state = self.state.clone();
            let host = self.host.clone();
            std::thread::Builder::new()
                .name("weft-events".into())
                .spawn(move || poll(&*host, &state))
                .map_err(|e| ApiError::internal(format!("cannot start the event poller: {e}")))?;
        }
        Ok(Subscription { receiver, dropped })
    }
}

/// The poller: runs until no stream is left.
fn poll(host: &dyn Host, state: &Mutex<HubState>) {
    let mut store = None;
    loop {
        std::thread::sleep(POLL);
        let mut guard = state.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .subscribers
            .retain(|s| !s.dropped.load(Ordering::SeqCst));
        if guard.subscribers.is_empty() {
            guard.seen = None;
            return;
        }
        let seen = guard.seen.unwrap_or(0);
        drop(guard);
        if store.is_none() {
            store = host.store(false).ok().flatten();
        }
        let Some(handle) = &store else { continue };
        let Ok(last) = handle.last_event_seq() else {
            store = None;
            continue;
        };
        if last <= seen {
            continue;
        }
        let mut after = seen;
        while let Ok(page) = handle.events(None, after, PAGE) {
            let frames: Vec<Arc<Frame>> = page.iter().map(|e| Arc::new(Frame::of(e))).collect();
            let Some(last_frame) = frames.last() else {
                break;
            };
            after = last_frame.seq;
            let mut guard = state.lock().unwrap_or_else(PoisonError::into_inner);
            guard.seen = Some(after);
            guard.subscribers.retain(|s| {
                for frame in &frames {
                    match s.sender.try_send(frame.clone()) {
                        Ok(()) => {}
                        Err(TrySendError::Full(_)) => {
                            s.dropped.store(true, Ordering::SeqCst);
                            return false;
                        }
                        Err(TrySendError::Disconnected(_)) => return false,
                    }
                }
                true
            });
            drop(guard);
            if frames.len() < PAGE as usize {
                break;
            }
        }
    }
}

/// Where a stream starts: `?after`, else `Last-Event-ID`, else 0 (everything).
fn start_after(call: &Call) -> ApiResult<i64> {
    let text = call
        .request
        .query("after")
        .or_else(|| call.request.header("last-event-id"));
    match text {
        None | Some("") => Ok(0),
        Some(text) => text.trim().parse::<i64>().map_err(|_| {
            ApiError::bad_request(format!("{text:?} is not an event sequence number"))
                .hint("pass ?after=SEQ with the `id:` of the last event you saw")
        }),
    }
}

pub(crate) fn stream(app: &App, call: &Call) -> ApiResult {
    let after = start_after(call)?;
    let heartbeat = match call.request.query("heartbeat_ms") {
        Some(ms) => ms
            .parse::<u64>()
            .map(|ms| Duration::from_millis(ms.clamp(100, 600_000)))
            .map_err(|_| ApiError::bad_request(format!("heartbeat_ms {ms:?} is not a number")))?,
        None => HEARTBEAT,
    };
    let store = app.store_for_write()?;
    let plan = match call.request.query("plan") {
        Some(reference) => Some(crate::api::plan_id(&store, reference)?),
        None => None,
    };
    let subscription = app.events.subscribe(&store)?;
    Ok(Response::stream(
        "text/event-stream",
        Box::new(move |out: &mut dyn Write| {
            follow(
                out,
                &store,
                plan.as_deref(),
                after,
                &subscription,
                heartbeat,
            )
        }),
    )
    .with_header("X-Accel-Buffering", "no"))
}

fn follow(
    out: &mut dyn Write,
    store: &Store,
    plan: Option<&str>,
    after: i64,
    subscription: &Subscription,
    heartbeat: Duration,
) -> std::io::Result<()> {
    out.write_all(b"retry: 1000\n\n")?;
    out.flush()?;
    let mut sent = after;
    // Replay.
    loop {
        let page = store
            .events(plan, sent, PAGE)
            .map_err(std::io::Error::other)?;
        for event in &page {
            out.write_all(Frame::of(event).text.as_bytes())?;
            sent = event.seq;
        }
        out.flush()?;
        if page.len() < PAGE as usize {
            break;
        }
    }
    // Follow.
    loop {
        if subscription.dropped.load(Ordering::SeqCst) {
            return Ok(());
        }
        match subscription.receiver.recv_timeout(heartbeat) {
            Ok(frame) => {
                if frame.seq <= sent || plan.is_some_and(|p| frame.plan.as_deref() != Some(p)) {
                    continue;
                }
                sent = frame.seq;
                out.write_all(frame.text.as_bytes())?;
                out.flush()?;
            }
            Err(RecvTimeoutError::Timeout) => {
                out.write_all(b": hb\n\n")?;
                out.flush()?;
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

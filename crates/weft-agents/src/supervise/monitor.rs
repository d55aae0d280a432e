//! The monitor thread: every byte of output passes through here, and every deadline is
//! kept here. See the parent module for the overall design.

use std::os::unix::process::ExitStatusExt;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::buffers::{LineSplitter, LogFile, Masker, Secrets, Tail, keep_first};
use super::process::{group_alive, signal_group};
use super::{
    LINE_EVENT_MAX, MAX_PENDING_PERMISSIONS, MAX_PERMISSION_DENIALS, Outcome, OutputStream,
    PTY_COLS, PTY_ROWS, PermissionAnswer, PermissionRelay, PermissionRequest, STDERR_TAIL_BYTES,
    SuperviseOptions, SupervisorEvent,
};
use crate::event::{AgentEvent, StreamKind};
use crate::evidence::{MarkerScanner, ScanOptions, Views, text_contains_marker};
use crate::stream::{StreamParser, parser};

/// What the other threads tell the monitor.
#[derive(Debug)]
pub(crate) enum Msg {
    Chunk(OutputStream, Vec<u8>),
    Eof(OutputStream),
    /// The leader exited; it is not reaped yet.
    Exited,
    Cancel,
}

/// `at + wait`, or about a century later when that overflows (`Duration::MAX` means "never").
fn after(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait)
        .unwrap_or_else(|| at + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// A structured stream's lines may be long (a whole tool result); beyond this they are
/// cut and not parsed.
const STRUCTURED_LINE_CAP: usize = 4 * 1024 * 1024;
/// How long a pipe may stay open once the leader exited and the group is gone.
const DRAIN_AFTER_GROUP: Duration = Duration::from_secs(1);
/// After `SIGKILL`, how long to wait for the group to disappear before giving up on it.
const GIVE_UP_AFTER_KILL: Duration = Duration::from_secs(2);
/// How often the group is checked once the leader exited.
const GROUP_POLL: Duration = Duration::from_millis(20);
/// Silence after which a dirty rendered screen is read.
const QUIET_FLUSH: Duration = Duration::from_millis(250);
/// Live `Line` events per second; more are counted and reported in a note.
const LINES_PER_SECOND: u32 = 1000;
/// Longest `stream_error`.
const STREAM_ERROR_MAX: usize = 4096;
/// The longest wait without anything to do (a safety net; deadlines wake earlier).
const MAX_SLEEP: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kill {
    NotStarted,
    Termed { kill_at: Instant },
    Killed { at: Instant },
}

/// Per-pipe state.
struct Pipe {
    open: bool,
    masker: Masker,
    splitter: LineSplitter,
    scanner: Option<MarkerScanner>,
}

/// Live line events in one-second windows.
struct LineRate {
    window_start: Instant,
    sent: u32,
    suppressed: u64,
}

pub(crate) struct Monitor {
    rx: Receiver<Msg>,
    events: Sender<SupervisorEvent>,
    /// Set by `Canceller::cancel` (which also sends `Msg::Cancel` to wake the monitor).
    cancel: Arc<AtomicBool>,
    pgid: i32,
    /// The leader is a containment supervisor (`crate::contain`).
    contained: bool,
    /// The time limit was reached while the contained agent had already exited: the
    /// supervisor was given one more `kill_grace` to end its leftovers.
    timeout_extended: bool,
    timeout_at: Instant,
    idle_after: Duration,
    /// `SuperviseOptions::idle_timeout` (zero: off) and what counts as activity for it:
    /// output (every stream event is output) and file changes under `watch_dir`.
    idle_timeout: Duration,
    watch_dir: Option<std::path::PathBuf>,
    last_activity: Instant,
    kill_grace: Duration,
    marker_grace: Duration,
    token: Option<String>,
    secrets: Secrets,
    started: Instant,
    last_output: Instant,
    idle_reported: bool,
    quiet_flushed: bool,
    marker_deadline: Option<Instant>,
    kill: Kill,
    exited_at: Option<Instant>,
    group_clear: bool,
    next_group_poll: Instant,
    drain_deadline: Option<Instant>,
    pipes: [Pipe; 2],
    parser: Option<Box<dyn StreamParser>>,
    /// Relayed permission requests: who decides, and the agent's stdin for the answers
    /// (dropped after the final `result`, which closes stdin).
    relay: Option<(PermissionRelay, Sender<String>)>,
    /// Permission requests being decided right now (each on its own thread).
    relay_pending: Arc<std::sync::atomic::AtomicUsize>,
    log: LogFile,
    tail: Tail,
    stderr_tail: Tail,
    rate: LineRate,
    out: Outcome,
}

impl Monitor {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        rx: Receiver<Msg>,
        events: Sender<SupervisorEvent>,
        options: &SuperviseOptions,
        token: Option<String>,
        stream: StreamKind,
        log: LogFile,
        tty: bool,
        cancel: Arc<AtomicBool>,
        started: Instant,
        pgid: i32,
        relay: Option<(PermissionRelay, Sender<String>)>,
    ) -> Self {
        let structured = stream != StreamKind::Plain;
        let pipe = |open: bool| Pipe {
            open,
            masker: Masker::default(),
            splitter: if structured {
                LineSplitter::new(STRUCTURED_LINE_CAP, LINE_EVENT_MAX)
            } else {
                LineSplitter::new(LINE_EVENT_MAX, LINE_EVENT_MAX)
            },
            // Plain output is scanned as bytes; structured output only through the
            // assistant's own text.
            scanner: match &token {
                Some(token) if open && !structured => Some(MarkerScanner::with_options(
                    token,
                    ScanOptions {
                        // Only a terminal's output is worth emulating a screen for.
                        views: if tty { Views::ALL } else { Views::LINEAR },
                        rows: PTY_ROWS,
                        cols: PTY_COLS,
                        ..ScanOptions::default()
                    },
                )),
                _ => None,
            },
        };
        // Under a pty, stdout and stderr are the one master side.
        let pipes = [pipe(true), pipe(!tty)];
        Self {
            rx,
            events,
            cancel,
            pgid,
            contained: options.contain.is_some(),
            timeout_extended: false,
            timeout_at: after(started, options.timeout),
            idle_after: options.idle_after,
            idle_timeout: options.idle_timeout,
            watch_dir: options.watch_dir.clone(),
            last_activity: started,
            kill_grace: options.kill_grace,
            marker_grace: options.marker_grace,
            token,
            secrets: Secrets::new(&options.secrets),
            started,
            last_output: started,
            idle_reported: false,
            quiet_flushed: true,
            marker_deadline: None,
            kill: Kill::NotStarted,
            exited_at: None,
            group_clear: false,
            next_group_poll: started,
            drain_deadline: None,
            pipes,
            parser: structured.then(|| parser(stream)),
            relay,
            relay_pending: Arc::default(),
            log,
            tail: Tail::new(options.tail_bytes),
            stderr_tail: Tail::new(STDERR_TAIL_BYTES),
            rate: LineRate {
                window_start: started,
                sent: 0,
                suppressed: 0,
            },
            out: Outcome::default(),
        }
    }

    /// Runs the attempt to its end. Sends `Started` first: the monitor is the only
    /// sender of events.
    pub(crate) fn run(mut self, mut child: Child) -> Outcome {
        self.emit(SupervisorEvent::Started {
            pid: child.id(),
            process_group: self.pgid,
        });
        loop {
            let now = Instant::now();
            self.tick(now);
            if self.finished(now) {
                break;
            }
            let wake = self.next_wake(now);
            match self.rx.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    // The output thread is gone (and no canceller is left).
                    for index in 0..2 {
                        if self.pipes[index].open {
                            self.close_pipe(index);
                        }
                    }
                    if self.exited_at.is_none() {
                        self.on_exited(Instant::now());
                    }
                    thread::sleep(GROUP_POLL);
                }
            }
        }
        self.finish(&mut child)
    }

    fn handle(&mut self, msg: Msg) {
        let now = Instant::now();
        match msg {
            Msg::Chunk(stream, bytes) => self.on_chunk(stream, &bytes, now),
            Msg::Eof(stream) => self.close_pipe(stream.index()),
            Msg::Exited => self.on_exited(now),
            // Only a wake-up: `tick` acts on the flag.
            Msg::Cancel => {}
        }
    }

    fn on_exited(&mut self, now: Instant) {
        self.exited_at = Some(now);
        self.next_group_poll = now;
        // A supervisor that ended its whole tree says so (`contain::exited_clear`): the
        // group has no other member, and a `/proc` scan (one read per process on the
        // machine, about a millisecond here) is not needed. Otherwise the scan below
        // finds what a killed or overwhelmed supervisor left in the group.
        if self.contained && crate::contain::exited_clear(self.pgid) {
            self.group_clear = true;
            self.drain_deadline = Some(now + DRAIN_AFTER_GROUP);
        }
        for index in 0..2 {
            self.flush_scanner(index, now);
        }
    }

    fn begin_kill(&mut self, now: Instant) {
        if self.kill == Kill::NotStarted {
            signal_group(self.pgid, Signal::SIGTERM);
            signal_group(self.pgid, Signal::SIGCONT);
            self.kill = Kill::Termed {
                kill_at: after(now, self.kill_grace),
            };
        }
    }

    /// Deadlines: timeout, marker grace, kill escalation, idle notice, the group after
    /// the leader's exit.
    fn tick(&mut self, now: Instant) {
        if self.exited_at.is_none() {
            if !self.out.cancelled && self.cancel.load(Ordering::SeqCst) {
                self.out.cancelled = true;
                self.begin_kill(now);
            }
            if self.kill == Kill::NotStarted {
                if now >= self.timeout_at
                    && self.contained
                    && !self.timeout_extended
                    && crate::contain::is_ending(self.pgid)
                {
                    // The agent finished in time; what it left is being ended.
                    self.timeout_extended = true;
                    self.timeout_at = after(now, self.kill_grace);
                } else if now >= self.timeout_at {
                    self.out.timed_out = true;
                    self.begin_kill(now);
                } else if self.marker_deadline.is_some_and(|at| now >= at) {
                    self.out.killed_after_marker = true;
                    self.begin_kill(now);
                } else if !self.idle_timeout.is_zero()
                    && now.saturating_duration_since(self.last_activity) >= self.idle_timeout
                {
                    match self.watch_dir.as_deref().and_then(newest_change) {
                        // A file changed meanwhile: the silence counts from then.
                        Some(age) if age < self.idle_timeout => {
                            self.last_activity = now.checked_sub(age).unwrap_or(now);
                        }
                        _ => {
                            self.out.idle_timed_out = true;
                            self.out.timed_out = true;
                            self.begin_kill(now);
                        }
                    }
                }
            }
            let silent = now.saturating_duration_since(self.last_output);
            if !self.idle_after.is_zero() && !self.idle_reported && silent >= self.idle_after {
                self.idle_reported = true;
                self.emit(SupervisorEvent::Idle { silent_for: silent });
            }
            if !self.quiet_flushed && silent >= QUIET_FLUSH {
                self.quiet_flushed = true;
                for index in 0..2 {
                    self.flush_scanner(index, now);
                }
            }
        }
        if let Kill::Termed { kill_at } = self.kill
            && now >= kill_at
        {
            signal_group(self.pgid, Signal::SIGKILL);
            self.kill = Kill::Killed { at: now };
        }
        if self.exited_at.is_some() && !self.group_clear && now >= self.next_group_poll {
            self.next_group_poll = now + GROUP_POLL;
            if !group_alive(self.pgid) {
                self.group_clear = true;
                self.drain_deadline = Some(now + DRAIN_AFTER_GROUP);
            } else if let Kill::Killed { at } = self.kill {
                if now >= at + GIVE_UP_AFTER_KILL {
                    self.note(
                        OutputStream::Stderr,
                        &format!(
                            "[weft: process group {} still has members after SIGKILL; not waiting for them]",
                            self.pgid
                        ),
                    );
                    self.group_clear = true;
                    self.drain_deadline = Some(now);
                }
            } else {
                // The agent is gone; what it left running in its group goes too.
                self.begin_kill(now);
            }
        }
        if self.rate.suppressed > 0 && now >= self.rate.window_start + Duration::from_secs(1) {
            self.flush_rate_note(now);
        }
    }

    fn finished(&self, now: Instant) -> bool {
        self.exited_at.is_some()
            && self.group_clear
            && (self.pipes.iter().all(|p| !p.open)
                || self.drain_deadline.is_some_and(|at| now >= at))
    }

    fn next_wake(&self, now: Instant) -> Instant {
        let mut wake = now + MAX_SLEEP;
        let mut at = |t: Instant| wake = wake.min(t);
        if self.exited_at.is_none() {
            if self.kill == Kill::NotStarted {
                at(self.timeout_at);
                if let Some(deadline) = self.marker_deadline {
                    at(deadline);
                }
            }
            if !self.idle_after.is_zero() && !self.idle_reported {
                at(after(self.last_output, self.idle_after));
            }
            if !self.idle_timeout.is_zero() && self.kill == Kill::NotStarted {
                at(after(self.last_activity, self.idle_timeout));
            }
            if !self.quiet_flushed {
                at(self.last_output + QUIET_FLUSH);
            }
        } else if !self.group_clear {
            at(self.next_group_poll);
        } else if let Some(deadline) = self.drain_deadline {
            at(deadline);
        }
        if let Kill::Termed { kill_at } = self.kill {
            at(kill_at);
        }
        if self.rate.suppressed > 0 {
            at(self.rate.window_start + Duration::from_secs(1));
        }
        wake
    }

    fn on_chunk(&mut self, stream: OutputStream, bytes: &[u8], now: Instant) {
        let index = stream.index();
        self.out.output_bytes += bytes.len() as u64;
        self.last_output = now;
        self.last_activity = now;
        self.idle_reported = false;
        self.quiet_flushed = false;
        if let Some(scanner) = &mut self.pipes[index].scanner
            && let Some(view) = scanner.feed(bytes)
        {
            self.pipes[index].scanner = None;
            self.saw_marker(view.as_str(), now);
        }
        let mut masked = Vec::with_capacity(bytes.len());
        self.pipes[index]
            .masker
            .push(&self.secrets, bytes, &mut masked);
        self.emit_bytes(stream, &masked, now);
    }

    fn flush_scanner(&mut self, index: usize, now: Instant) {
        if let Some(scanner) = &mut self.pipes[index].scanner
            && let Some(view) = scanner.flush()
        {
            self.pipes[index].scanner = None;
            self.saw_marker(view.as_str(), now);
        }
    }

    fn close_pipe(&mut self, index: usize) {
        let now = Instant::now();
        let stream = if index == 0 {
            OutputStream::Stdout
        } else {
            OutputStream::Stderr
        };
        let pipe = &mut self.pipes[index];
        pipe.open = false;
        let mut rest = Vec::new();
        pipe.masker.finish(&self.secrets, &mut rest);
        self.emit_bytes(stream, &rest, now);
        let mut splitter = std::mem::take(&mut self.pipes[index].splitter);
        splitter.finish(&mut |line, total| self.on_line(stream, line, total, now));
        self.flush_scanner(index, now);
    }

    /// Masked bytes: to the log, the tail and the line splitter.
    fn emit_bytes(&mut self, stream: OutputStream, bytes: &[u8], now: Instant) {
        if bytes.is_empty() {
            return;
        }
        self.log.write(bytes);
        self.tail.push(bytes);
        if stream == OutputStream::Stderr {
            self.stderr_tail.push(bytes);
        }
        let index = stream.index();
        let mut splitter = std::mem::take(&mut self.pipes[index].splitter);
        splitter.push(bytes, &mut |line, total| {
            self.on_line(stream, line, total, now);
        });
        self.pipes[index].splitter = splitter;
    }

    fn on_line(&mut self, stream: OutputStream, line: &[u8], total: Option<u64>, now: Instant) {
        let text = String::from_utf8_lossy(line);
        if self.rate_allows(now) {
            let shown = match total {
                None => keep_first(&text, LINE_EVENT_MAX).to_owned(),
                Some(total) => {
                    let note = format!(" [weft: line cut, {total} bytes]");
                    let mut shown = keep_first(&text, LINE_EVENT_MAX - note.len()).to_owned();
                    shown.push_str(&note);
                    shown
                }
            };
            let shown = if shown.len() > LINE_EVENT_MAX {
                // Lossy decoding grew it: cut again.
                keep_first(&shown, LINE_EVENT_MAX).to_owned()
            } else {
                shown
            };
            self.emit(SupervisorEvent::Line {
                stream,
                text: shown,
            });
        }
        if total.is_some() {
            // Only the head of the line is known: nothing to parse.
            return;
        }
        if stream == OutputStream::Stdout && self.relay.is_some() {
            self.relay_line(&text);
        }
        let Some(parser) = &mut self.parser else {
            return;
        };
        let events = match stream {
            OutputStream::Stdout => parser.line(&text),
            OutputStream::Stderr => parser.stderr_line(&text),
        };
        for event in events {
            self.on_agent_event(event, now);
        }
    }

    /// Claude's stdio permission protocol: answer each `control_request` on a thread of its
    /// own (the decision may wait for a person while the monitor keeps watching), and close
    /// stdin after the final `result`.
    fn relay_line(&mut self, text: &str) {
        let cheap = text.contains("\"control_request\"") || text.contains("\"result\"");
        if !cheap {
            return;
        }
        let Ok(line) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        match line.get("type").and_then(serde_json::Value::as_str) {
            Some("result") => self.relay = None,
            Some("control_request") => {
                let Some((relay, answers)) = &self.relay else {
                    return;
                };
                let Some(id) = line.get("request_id").cloned() else {
                    return;
                };
                let request = line.get("request").cloned().unwrap_or_default();
                let request_id = id.clone();
                let reply = move |response: serde_json::Value| {
                    serde_json::json!({
                        "type": "control_response",
                        "response": {"subtype": "success", "request_id": request_id, "response": response},
                    })
                    .to_string()
                };
                if request.get("subtype").and_then(serde_json::Value::as_str)
                    != Some("can_use_tool")
                {
                    // Nothing else is expected from a headless run: refuse, never hang.
                    let _ = answers.send(
                        serde_json::json!({
                            "type": "control_response",
                            "response": {"subtype": "error", "request_id": id,
                                "error": "weft does not handle this request"},
                        })
                        .to_string(),
                    );
                    return;
                }
                let mut input = request.get("input").cloned().unwrap_or_default();
                // The line was masked as bytes; a secret written with JSON escapes is only
                // visible once decoded.
                let escaped_secret = mask_strings(&mut input, &self.secrets);
                let asked = PermissionRequest {
                    tool: request
                        .get("tool_name")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("tool")
                        .to_owned(),
                    input: input.clone(),
                    description: request
                        .get("description")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned),
                };
                let (relay, answers) = (relay.clone(), answers.clone());
                let masked = escaped_secret || input.to_string().contains(super::buffers::MASK);
                // A real agent waits for each answer; one that floods requests gets the
                // excess refused instead of a thread each.
                let pending = Arc::clone(&self.relay_pending);
                let flooded = pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING_PERMISSIONS;
                let _ = thread::Builder::new()
                    .name("weft-permission".into())
                    .spawn(move || {
                        // Input with a masked secret cannot be handed back unchanged.
                        let answer = if flooded {
                            PermissionAnswer::Deny {
                                message: format!(
                                    "more than {MAX_PENDING_PERMISSIONS} permission requests are waiting; ask one at a time"
                                ),
                            }
                        } else if masked {
                            PermissionAnswer::Deny {
                                message: "weft masks secret values, so it cannot approve a call that contains one; try it without the secret".into(),
                            }
                        } else {
                            (relay.0)(asked)
                        };
                        pending.fetch_sub(1, Ordering::SeqCst);
                        let response = match answer {
                            PermissionAnswer::Allow => {
                                serde_json::json!({"behavior": "allow", "updatedInput": input})
                            }
                            PermissionAnswer::Deny { message } => serde_json::json!({
                                "behavior": "deny", "message": message, "interrupt": false,
                            }),
                        };
                        let _ = answers.send(reply(response));
                    });
            }
            _ => {}
        }
    }

    fn rate_allows(&mut self, now: Instant) -> bool {
        if now >= self.rate.window_start + Duration::from_secs(1) {
            self.flush_rate_note(now);
        }
        if self.rate.sent < LINES_PER_SECOND {
            self.rate.sent += 1;
            true
        } else {
            self.rate.suppressed += 1;
            false
        }
    }

    /// Starts a new window, reporting how many lines the last ones did not show.
    fn flush_rate_note(&mut self, now: Instant) {
        let suppressed = std::mem::take(&mut self.rate.suppressed);
        self.rate.window_start = now;
        self.rate.sent = 0;
        if suppressed > 0 {
            self.note(
                OutputStream::Stdout,
                &if self.log.keeps_file() {
                    format!("[weft: {suppressed} lines not shown live; see the log]")
                } else {
                    format!("[weft: {suppressed} lines not shown live]")
                },
            );
        }
    }

    fn on_agent_event(&mut self, event: AgentEvent, now: Instant) {
        let event = mask_event(&self.secrets, event);
        match &event {
            AgentEvent::Session { id } => self.out.session_id = Some(id.clone()),
            AgentEvent::AssistantText { text, .. } => {
                if let Some(token) = &self.token
                    && let Some(view) = text_contains_marker(text, token)
                {
                    self.saw_marker(view.as_str(), now);
                }
            }
            AgentEvent::ToolUse { .. }
            | AgentEvent::ToolResult { .. }
            | AgentEvent::Reasoning { .. }
            | AgentEvent::PlanText { .. }
            | AgentEvent::Truncated
            | AgentEvent::Spend { .. } => {}
            AgentEvent::PermissionDenied { tool, detail, .. } => {
                if self.out.permission_denials.len() < MAX_PERMISSION_DENIALS {
                    self.out
                        .permission_denials
                        .push((tool.clone(), detail.clone()));
                }
            }
            AgentEvent::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
                ..
            } => {
                self.out.input_tokens = input_tokens.or(self.out.input_tokens);
                self.out.output_tokens = output_tokens.or(self.out.output_tokens);
                self.out.cost_usd = cost_usd.or(self.out.cost_usd);
            }
            AgentEvent::Final {
                text,
                is_error,
                detail,
            } => {
                if let Some(text) = text {
                    self.out.final_text = Some(text.clone());
                    if let Some(token) = &self.token
                        && text_contains_marker(text, token).is_some()
                    {
                        self.saw_marker("final_result", now);
                    }
                }
                if *is_error {
                    let detail = detail
                        .clone()
                        .unwrap_or_else(|| "the agent's final record reports an error".into());
                    self.out.stream_error = Some(keep_first(&detail, STREAM_ERROR_MAX).into());
                }
            }
            AgentEvent::Error { message } => {
                self.out.stream_error = Some(keep_first(message, STREAM_ERROR_MAX).into());
            }
        }
        self.emit(SupervisorEvent::Agent(event));
    }

    fn saw_marker(&mut self, view: &'static str, now: Instant) {
        if self.out.marker.is_some() {
            return;
        }
        self.out.marker = Some(view);
        for pipe in &mut self.pipes {
            pipe.scanner = None;
        }
        self.emit(SupervisorEvent::MarkerSeen { view });
        if self.exited_at.is_none() {
            self.marker_deadline = Some(after(now, self.marker_grace));
        }
    }

    fn note(&mut self, stream: OutputStream, text: &str) {
        self.emit(SupervisorEvent::Line {
            stream,
            text: text.to_owned(),
        });
    }

    fn emit(&self, event: SupervisorEvent) {
        // Nobody listening is fine: the outcome still says everything.
        let _ = self.events.send(event);
    }

    fn finish(mut self, child: &mut Child) -> Outcome {
        let now = Instant::now();
        for index in 0..2 {
            if self.pipes[index].open {
                // Abandoned to a process outside the group: process what arrived.
                self.close_pipe(index);
            }
        }
        if let Some(mut parser) = self.parser.take() {
            for event in parser.finish() {
                self.on_agent_event(event, now);
            }
        }
        if self.rate.suppressed > 0 {
            self.flush_rate_note(now);
        }
        self.log.close();
        if let Some(error) = self.log.error.take() {
            self.note(
                OutputStream::Stderr,
                &format!("[weft: output log incomplete: {error}]"),
            );
        }
        let mut out = self.out;
        match child.wait() {
            Ok(status) => {
                out.exit_code = status.code();
                out.signal = status.signal();
            }
            Err(err) => {
                let _ = self.events.send(SupervisorEvent::Line {
                    stream: OutputStream::Stderr,
                    text: format!("[weft: cannot read the exit status: {err}]"),
                });
            }
        }
        out.tail = self.tail.into_string();
        out.stderr_tail = self.stderr_tail.into_string();
        out.log_truncated = self.log.truncated;
        out.duration = self.exited_at.unwrap_or(now).duration_since(self.started);
        out
    }
}

/// `event` with every secret masked (the stream was masked before parsing, but JSON
/// escapes can hide a secret from the byte-level masker).
/// Mask every string inside `value`; whether any changed.
fn mask_strings(value: &mut serde_json::Value, secrets: &Secrets) -> bool {
    match value {
        serde_json::Value::String(text) => {
            let masked = secrets.mask_str(text);
            let changed = masked != *text;
            *text = masked;
            changed
        }
        serde_json::Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, item| mask_strings(item, secrets) | any),
        serde_json::Value::Object(map) => map
            .values_mut()
            .fold(false, |any, item| mask_strings(item, secrets) | any),
        _ => false,
    }
}

fn mask_event(secrets: &Secrets, event: AgentEvent) -> AgentEvent {
    let m = |s: String| secrets.mask_str(&s);
    match event {
        AgentEvent::Session { id } => AgentEvent::Session { id: m(id) },
        AgentEvent::AssistantText { text, message } => AgentEvent::AssistantText {
            text: m(text),
            message,
        },
        AgentEvent::Reasoning { text } => AgentEvent::Reasoning { text: m(text) },
        AgentEvent::PlanText { text, message } => AgentEvent::PlanText {
            text: m(text),
            message,
        },
        AgentEvent::ToolUse {
            id,
            name,
            summary,
            subagent,
        } => AgentEvent::ToolUse {
            id,
            name: m(name),
            summary: m(summary),
            subagent,
        },
        AgentEvent::ToolResult {
            id,
            outcome,
            detail,
        } => AgentEvent::ToolResult {
            id,
            outcome,
            detail: m(detail),
        },
        AgentEvent::PermissionDenied { id, tool, detail } => AgentEvent::PermissionDenied {
            id,
            tool: m(tool),
            detail: m(detail),
        },
        AgentEvent::Final {
            text,
            is_error,
            detail,
        } => AgentEvent::Final {
            text: text.map(m),
            is_error,
            detail: detail.map(m),
        },
        AgentEvent::Error { message } => AgentEvent::Error {
            message: m(message),
        },
        event @ (AgentEvent::Usage { .. } | AgentEvent::Truncated | AgentEvent::Spend { .. }) => {
            event
        }
    }
}

/// How long ago the newest file under `dir` changed (its mtime), looking at no more than
/// [`super::IDLE_SCAN_MAX`] entries, never into `.git` nor through symlinks (linked
/// dependency folders are not the attempt's work). `None` when nothing could be read.
fn newest_change(dir: &std::path::Path) -> Option<Duration> {
    let mut newest: Option<std::time::SystemTime> = None;
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > super::IDLE_SCAN_MAX {
                stack.clear();
                break;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if let Ok(modified) = meta.modified() {
                newest = Some(newest.map_or(modified, |n| n.max(modified)));
            }
            if meta.is_dir() && entry.file_name() != ".git" {
                stack.push(entry.path());
            }
        }
    }
    newest.map(|t| t.elapsed().unwrap_or_default())
}

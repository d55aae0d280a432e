//! Notifications: telling a person, once, when something needs them or is finished.
//!
//! A transition is one stored event ([`transition`] decides which): an approval question
//! waits (`approval_asked`), a task failed or conflicted (`task_finished` with that
//! status), a run ended (`run_ended`), the plan's budget was reached (`budget_reached`,
//! which the run loop stores once per transition). Because every event is stored once with its own
//! sequence number and the [`Follower`] reads the log strictly after the last number it
//! saw, each transition is told exactly once — however often the engine polls, and
//! whichever process stored it (a `weft approvals`, a `weft cancel` elsewhere).
//!
//! For each one, in order: the `notify` setting's shell command line runs (through
//! `sh -c`, unconfined, in the workspace root, in a process group of its own, stdout
//! discarded) with the event as one line of compact JSON on stdin (the typed
//! `weft_core::event::Event`, its `seq` included) and a one-line [`summary`] in
//! `WEFT_NOTIFY_SUMMARY`; `notify-send` shows it when `desktop` is set and the program is
//! on PATH; the front end's `sink` (the terminal bell of `weft run`) is called.
//!
//! A command that fails (a non-zero exit, a signal, no start at all) or runs past
//! [`COMMAND_TIMEOUT`] is not dropped without a word: the follower stores one
//! `notify_failed` event naming it (secrets masked by `weft_core::secrets::Masker`), how
//! it ended and the last [`STDERR_TAIL`] bytes of its stderr. Once per command per run:
//! a command that fails on every transition (a typo, a missing program) says so once,
//! not once per task; its later failures are counted nowhere. The event is stored like
//! every other, so `weft run` shows it once (those stored after the run loop's last
//! report, for the run's own end, are handed back by [`Follower::finish`] and reported
//! by `engine::run`), `weft events` lists it, and the dashboard and TUI see it.
//!
//! The timeout ends the whole process group (`SIGTERM`, then `SIGKILL` after
//! [`KILL_GRACE`]), so `sleep 100 & sleep 100` leaves nothing behind; a command that
//! exits in time may leave background children on purpose (`play ding.wav &`) and they
//! are left alone. Unconfined, as the issue asks: it is the user's own command line.
//!
//! Threads and bounds: the follower is one thread of its own, so the run loop never waits
//! for a notification; each command gets [`COMMAND_TIMEOUT`] (plus the kill's grace);
//! its stdin is written and its stderr read by a short-lived thread each, the stderr
//! kept to its last [`STDERR_TAIL`] bytes (a reader a background child keeps the pipe
//! open for ends with that child); the follower reads at most [`PAGE`] events per poll.
//! When the run ends the follower reads once more (the run's end is stored last) and
//! delivers what it found before the engine returns, so `weft run` does not exit before
//! its last notification ran (at most one timeout per pending notification). A store the
//! follower cannot read ends the follower, never the run; a notice it cannot store is
//! dropped.

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use weft_core::TaskStatus;
use weft_core::event::{Event, EventKind};
use weft_core::secrets::Masker;
use weft_store::{OpenOptions, Store};

/// The longest a `notify` command (or `notify-send`) may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// After the timeout's `SIGTERM`, how long the command's group has before `SIGKILL`.
pub const KILL_GRACE: Duration = Duration::from_millis(500);
/// How much of a failed command's stderr its notice keeps (its end).
pub const STDERR_TAIL: usize = 1024;
/// After the command ended, how long its stderr's reader may take to reach the end (a
/// background child holding the pipe open is not waited for).
const STDERR_DRAIN: Duration = Duration::from_millis(200);
/// How often the follower reads the event log.
pub const POLL: Duration = Duration::from_millis(100);
/// Events read per poll.
pub const PAGE: u32 = 200;

/// What a front end is told of each transition: the event and its summary.
pub type Sink = Arc<dyn Fn(&Event, &str) + Send + Sync>;

/// Who is told, resolved once by the front end from the `notify`, `bell` and
/// `desktop_notify` settings.
#[derive(Clone, Default)]
pub struct NotifyConfig {
    /// A shell command line run for each transition.
    pub command: Option<String>,
    /// Show a desktop notification through `notify-send` where it exists.
    pub desktop: bool,
    /// The front end's own way (the terminal bell), called on the follower's thread.
    pub sink: Option<Sink>,
}

impl std::fmt::Debug for NotifyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyConfig")
            .field("command", &self.command)
            .field("desktop", &self.desktop)
            .field("sink", &self.sink.as_ref().map(|_| "…"))
            .finish()
    }
}

impl NotifyConfig {
    fn is_empty(&self) -> bool {
        self.command.is_none() && !self.desktop && self.sink.is_none()
    }
}

/// The kinds of moment a person is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    ApprovalWaiting,
    TaskFailed,
    TaskConflicted,
    RunFinished,
    /// The plan's spend reached its budget: nothing new starts (stored once per
    /// transition by the run loop, so told once).
    BudgetReached,
}

/// Whether `event` is a moment a person is told about.
pub fn transition(event: &Event) -> Option<Transition> {
    match &event.event {
        EventKind::ApprovalAsked { .. } => Some(Transition::ApprovalWaiting),
        EventKind::TaskFinished {
            status: TaskStatus::Failed,
            ..
        } => Some(Transition::TaskFailed),
        EventKind::TaskFinished {
            status: TaskStatus::Conflicted,
            ..
        } => Some(Transition::TaskConflicted),
        // A run ended by its engine carries totals; a handoff's end does not.
        EventKind::RunEnded {
            totals: Some(_), ..
        } => Some(Transition::RunFinished),
        EventKind::BudgetReached { .. } => Some(Transition::BudgetReached),
        _ => None,
    }
}

/// One line saying what happened (bounded: long titles and subjects are cut).
pub fn summary(event: &Event) -> String {
    let cut = |text: &str| -> String {
        let mut out: String = text.chars().take(120).collect();
        if text.chars().count() > 120 {
            out.push('…');
        }
        out.replace(['\n', '\r'], " ")
    };
    match &event.event {
        EventKind::ApprovalAsked { ask, subject, .. } => {
            format!("weft: approval {ask} waits: {}", cut(subject))
        }
        EventKind::TaskFinished {
            order,
            title,
            status,
            reason,
            ..
        } => format!(
            "weft: task #{order} {} {}: {}",
            cut(title),
            status.as_str(),
            cut(reason)
        ),
        EventKind::RunEnded { status, totals, .. } => {
            let run = event.run.as_deref().unwrap_or("?");
            match totals {
                Some(t) => format!(
                    "weft: run {run} ended {}: {} completed, {} failed, {} blocked",
                    status.as_str(),
                    t.completed,
                    t.failed,
                    t.blocked
                ),
                None => format!("weft: run {run} ended {}", status.as_str()),
            }
        }
        EventKind::BudgetReached { limit, spent, .. } => format!(
            "weft: budget reached ({}): spent {}; no new task starts",
            cut(limit),
            cut(spent)
        ),
        other => format!("weft: {}", other.name()),
    }
}

/// How a `notify_failed` event reads, in one line (`weft run`, `weft events`): the
/// command (cut), how it ended, and the last lines of its stderr (at most
/// [`SHOWN_STDERR`] characters of them).
pub fn failure_line(command: &str, failure: &str, stderr: &str) -> String {
    let one_line = |text: &str| text.replace(['\n', '\r'], " ");
    let mut command_shown: String = command.chars().take(80).collect();
    if command.chars().count() > 80 {
        command_shown.push('…');
    }
    let mut line = format!(
        "the notify command `{}` {failure}",
        one_line(&command_shown)
    );
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if !lines.is_empty() {
        let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
        let count = tail.chars().count();
        let shown: String = tail
            .chars()
            .skip(count.saturating_sub(SHOWN_STDERR))
            .collect();
        let cut = if count > SHOWN_STDERR { "…" } else { "" };
        line.push_str(&format!(" (stderr: {cut}{})", one_line(&shown)));
    }
    line.push_str("; its later failures in this run are not reported");
    line
}

/// Characters of a failed command's stderr its one line shows.
pub const SHOWN_STDERR: usize = 240;

/// Tells each transition of one plan's events as they are stored (see the module docs).
/// [`Follower::finish`] (or dropping it) reads the log a last time, delivers, and joins
/// the thread.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Event>>>,
}

impl Follower {
    /// Follow the plan's events stored from now on; `None` when nobody is to be told or
    /// the store cannot be read (then nothing is told: notifications never stop a run).
    /// `secrets`: the values masked in a failed command's notice (shapes always are).
    pub fn start(
        config: &NotifyConfig,
        workspace: PathBuf,
        state_dir: &std::path::Path,
        plan_id: &str,
        busy_timeout: Duration,
        secrets: &[String],
    ) -> Option<Follower> {
        if config.is_empty() {
            return None;
        }
        let mut store = Store::open_existing(state_dir, OpenOptions { busy_timeout })
            .ok()
            .flatten()?;
        store.set_secrets(secrets.to_vec());
        let after = store.last_event_seq().ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            let mut teller = Teller {
                config: config.clone(),
                workspace,
                plan_id: plan_id.to_owned(),
                masker: Masker::new(secrets),
                failed: BTreeSet::new(),
                stored: Vec::new(),
            };
            std::thread::Builder::new()
                .name("weft-notify".into())
                .spawn(move || {
                    teller.follow(&mut store, after, &stop);
                    teller.stored_notices(&store)
                })
                .ok()?
        };
        Some(Follower {
            stop,
            thread: Some(thread),
        })
    }

    /// Read the log a last time, deliver, and stop; the `notify_failed` events stored
    /// during the run, as stored (a front end reports those it has not seen yet).
    pub fn finish(mut self) -> Vec<Event> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Vec<Event> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The follower thread's state: who is told, and which commands already failed.
struct Teller {
    config: NotifyConfig,
    workspace: PathBuf,
    plan_id: String,
    masker: Masker,
    /// Commands whose failure is stored already (once per command per run).
    failed: BTreeSet<String>,
    /// Sequence numbers of the notices it stored.
    stored: Vec<i64>,
}

impl Teller {
    fn follow(&mut self, store: &mut Store, mut after: i64, stop: &AtomicBool) {
        loop {
            // Read the stop flag before reading: a stop seen here still gets this last read.
            let last = stop.load(Ordering::SeqCst);
            loop {
                let Ok(page) = store.events(Some(&self.plan_id), after, PAGE) else {
                    return;
                };
                for event in &page {
                    after = event.seq;
                    if transition(event).is_some() {
                        self.deliver(store, event);
                    }
                }
                if page.len() < PAGE as usize {
                    break;
                }
            }
            if last {
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    fn deliver(&mut self, store: &mut Store, event: &Event) {
        let text = summary(event);
        if let Some(command) = self.config.command.clone() {
            let mut line = serde_json::to_string(event).unwrap_or_default();
            line.push('\n');
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(&command)
                .current_dir(&self.workspace)
                .env("WEFT_NOTIFY_SUMMARY", &text);
            if let Err(failure) = run_bounded(sh, Some(line.into_bytes())) {
                self.failed(store, event, &command, failure);
            }
        }
        if self.config.desktop && on_path("notify-send") {
            let mut send = Command::new("notify-send");
            send.arg("weft").arg(&text);
            if let Err(failure) = run_bounded(send, None) {
                self.failed(store, event, "notify-send", failure);
            }
        }
        if let Some(sink) = &self.config.sink {
            sink(event, &text);
        }
    }

    /// Store the first failure of `command` in this run as a `notify_failed` event.
    fn failed(&mut self, store: &mut Store, about: &Event, command: &str, failure: Failure) {
        if !self.failed.insert(command.to_owned()) {
            return;
        }
        let mut notice = Event::new(EventKind::NotifyFailed {
            command: self.masker.mask(command).into_owned(),
            about: about.seq,
            failure: failure.describe(),
            exit_code: failure.exit_code(),
            timed_out: matches!(failure.ended, Ended::TimedOut),
            stderr: self
                .masker
                .mask(&String::from_utf8_lossy(&failure.stderr))
                .into_owned(),
        });
        notice.run = about.run.clone();
        if let Ok(seq) = store.record_event(Some(&self.plan_id), notice, crate::engine::now()) {
            self.stored.push(seq);
        }
    }

    /// The notices it stored, read back as stored.
    fn stored_notices(&self, store: &Store) -> Vec<Event> {
        let Some(first) = self.stored.first() else {
            return Vec::new();
        };
        let mut found = Vec::new();
        let mut after = first - 1;
        while found.len() < self.stored.len() {
            let Ok(page) = store.events(Some(&self.plan_id), after, PAGE) else {
                break;
            };
            let Some(last) = page.last() else {
                break;
            };
            after = last.seq;
            found.extend(page.into_iter().filter(|e| self.stored.contains(&e.seq)));
        }
        found
    }
}

/// How a command that did not tell ended.
#[derive(Debug)]
enum Ended {
    Status(ExitStatus),
    TimedOut,
    NotStarted(String),
}

/// A failed run of a command: how it ended and the end of its stderr.
#[derive(Debug)]
struct Failure {
    ended: Ended,
    stderr: Vec<u8>,
}

impl Failure {
    fn describe(&self) -> String {
        match &self.ended {
            Ended::Status(status) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => format!("ended: {status}"),
            },
            Ended::TimedOut => format!("timed out after {} s", COMMAND_TIMEOUT.as_secs()),
            Ended::NotStarted(error) => format!("could not start: {error}"),
        }
    }

    fn exit_code(&self) -> Option<i32> {
        match &self.ended {
            Ended::Status(status) => status.code(),
            _ => None,
        }
    }
}

/// Run a command in a process group of its own with its stdout discarded and the end of
/// its stderr kept; past [`COMMAND_TIMEOUT`] its whole group is ended. `Err` when it did
/// not exit 0 in time.
fn run_bounded(mut command: Command, stdin: Option<Vec<u8>>) -> Result<(), Failure> {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().map_err(|error| Failure {
        ended: Ended::NotStarted(error.to_string()),
        stderr: Vec::new(),
    })?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // On a thread: a command that never reads its stdin must not hold the follower
        // past its timeout (a full pipe blocks). One that closes it is not an error.
        let _ = std::thread::Builder::new()
            .name("weft-notify-stdin".into())
            .spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
    }
    let tail = Arc::new(Mutex::new(Vec::new()));
    let (done, drained) = mpsc::channel::<()>();
    if let Some(mut pipe) = child.stderr.take() {
        let tail = Arc::clone(&tail);
        let _ = std::thread::Builder::new()
            .name("weft-notify-stderr".into())
            .spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = tail.lock().unwrap_or_else(|e| e.into_inner());
                    kept.extend_from_slice(&buf[..n]);
                    let excess = kept.len().saturating_sub(STDERR_TAIL);
                    kept.drain(..excess);
                }
                let _ = done.send(());
            });
    }
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ended::Status(status),
            Err(error) => break Ended::NotStarted(error.to_string()),
            Ok(None) if Instant::now() >= deadline => {
                // The group is the child's own (`process_group(0)`): its id is the pid.
                let group = i32::try_from(child.id()).unwrap_or(0);
                if !weft_agents::supervise::kill_group(group, KILL_GRACE) {
                    let _ = child.kill();
                }
                let _ = child.wait();
                break Ended::TimedOut;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    if let Ended::Status(status) = &ended
        && status.success()
    {
        return Ok(());
    }
    let _ = drained.recv_timeout(STDERR_DRAIN);
    let stderr = tail.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Err(Failure { ended, stderr })
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::RunStatus;
    use weft_core::event::RunTotals;

    fn finished(status: TaskStatus) -> Event {
        Event::new(EventKind::TaskFinished {
            order: 2,
            title: "Add a limiter".into(),
            status,
            reason: "its checks failed".into(),
            after_restart: false,
        })
    }

    #[test]
    fn failed_and_conflicted_tasks_waiting_approvals_and_ended_runs_are_transitions() {
        assert_eq!(
            transition(&finished(TaskStatus::Failed)),
            Some(Transition::TaskFailed)
        );
        assert_eq!(
            transition(&finished(TaskStatus::Conflicted)),
            Some(Transition::TaskConflicted)
        );
        assert_eq!(transition(&finished(TaskStatus::Completed)), None);
        let asked = Event::new(EventKind::ApprovalAsked {
            ask: 3,
            scope: "path:/etc/hosts".into(),
            subject: "read /etc/hosts".into(),
        });
        assert_eq!(transition(&asked), Some(Transition::ApprovalWaiting));
        let ended = Event::new(EventKind::RunEnded {
            status: RunStatus::Failed,
            totals: Some(RunTotals::default()),
        })
        .run("894a4fac");
        assert_eq!(transition(&ended), Some(Transition::RunFinished));
        assert_eq!(
            summary(&ended),
            "weft: run 894a4fac ended failed: 0 completed, 0 failed, 0 blocked"
        );
        let handed_off = Event::new(EventKind::RunEnded {
            status: RunStatus::Completed,
            totals: None,
        });
        assert_eq!(transition(&handed_off), None);
    }

    #[test]
    fn a_failure_line_is_one_bounded_line_with_the_end_of_stderr() {
        let stderr = format!("{}\nsecond\r\nthe last words\n", "x".repeat(5000));
        let line = failure_line(&"c".repeat(300), "exited with status 3", &stderr);
        assert!(!line.contains(['\n', '\r']), "{line}");
        assert!(line.chars().count() < 500, "{line}");
        assert!(
            line.contains("exited with status 3 (stderr: …")
                && line.contains("x | second | the last words)"),
            "{line}"
        );
        let quiet = failure_line("notify-me", "timed out after 5 s", "");
        assert_eq!(
            quiet,
            "the notify command `notify-me` timed out after 5 s; its later failures in this run are not reported"
        );
    }

    #[test]
    fn a_summary_is_one_bounded_line() {
        let mut event = finished(TaskStatus::Failed);
        if let EventKind::TaskFinished { title, .. } = &mut event.event {
            *title = format!("{}\nsecond line", "x".repeat(500));
        }
        let text = summary(&event);
        assert!(!text.contains('\n'));
        assert!(text.chars().count() < 300, "{text}");
    }
}

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
//! `sh -c`, unconfined, in the workspace root, stdout and stderr discarded) with the
//! event as one line of compact JSON on stdin (the typed `weft_core::event::Event`, its
//! `seq` included) and a one-line [`summary`] in `WEFT_NOTIFY_SUMMARY`; `notify-send`
//! shows it when `desktop` is set and the program is on PATH; the front end's `sink`
//! (the terminal bell of `weft run`) is called.
//!
//! Threads and bounds: the follower is one thread of its own, so the run loop never waits
//! for a notification; each command gets [`COMMAND_TIMEOUT`] and is then killed; the
//! follower reads at most [`PAGE`] events per poll. When the run ends the follower reads
//! once more (the run's end is stored last) and delivers what it found before the engine
//! returns, so `weft run` does not exit before its last notification ran (at most one
//! timeout per pending notification). A store the follower cannot read ends the follower,
//! never the run.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use weft_core::TaskStatus;
use weft_core::event::{Event, EventKind};
use weft_store::{OpenOptions, Store};

/// The longest a `notify` command (or `notify-send`) may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
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

/// Tells each transition of one plan's events as they are stored (see the module docs).
/// Dropping it reads the log a last time, delivers, and joins the thread.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Follower {
    /// Follow the plan's events stored from now on; `None` when nobody is to be told or
    /// the store cannot be read (then nothing is told: notifications never stop a run).
    pub fn start(
        config: &NotifyConfig,
        workspace: PathBuf,
        state_dir: &std::path::Path,
        plan_id: &str,
        busy_timeout: Duration,
    ) -> Option<Follower> {
        if config.is_empty() {
            return None;
        }
        let store = Store::open_existing(state_dir, OpenOptions { busy_timeout })
            .ok()
            .flatten()?;
        let after = store.last_event_seq().ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            let config = config.clone();
            let plan_id = plan_id.to_owned();
            std::thread::Builder::new()
                .name("weft-notify".into())
                .spawn(move || follow(&store, &plan_id, after, &config, &workspace, &stop))
                .ok()?
        };
        Some(Follower {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn follow(
    store: &Store,
    plan_id: &str,
    mut after: i64,
    config: &NotifyConfig,
    workspace: &std::path::Path,
    stop: &AtomicBool,
) {
    loop {
        // Read the stop flag before reading: a stop seen here still gets this last read.
        let last = stop.load(Ordering::SeqCst);
        loop {
            let Ok(page) = store.events(Some(plan_id), after, PAGE) else {
                return;
            };
            for event in &page {
                after = event.seq;
                if transition(event).is_some() {
                    deliver(event, config, workspace);
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

fn deliver(event: &Event, config: &NotifyConfig, workspace: &std::path::Path) {
    let text = summary(event);
    if let Some(command) = &config.command {
        let mut line = serde_json::to_string(event).unwrap_or_default();
        line.push('\n');
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(command)
            .current_dir(workspace)
            .env("WEFT_NOTIFY_SUMMARY", &text);
        run_bounded(sh, Some(line.as_bytes()));
    }
    if config.desktop && on_path("notify-send") {
        let mut send = Command::new("notify-send");
        send.arg("weft").arg(&text);
        run_bounded(send, None);
    }
    if let Some(sink) = &config.sink {
        sink(event, &text);
    }
}

/// Run a command with its output discarded, killed after [`COMMAND_TIMEOUT`].
fn run_bounded(mut command: Command, stdin: Option<&[u8]>) {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let Ok(mut child) = command.spawn() else {
        return;
    };
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A command that does not read its stdin closes the pipe: not an error.
        let _ = pipe.write_all(bytes);
    }
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
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

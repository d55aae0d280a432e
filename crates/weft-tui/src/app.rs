//! The running TUI: the terminal, the loop, and the effects carried out.
//!
//! Threads: the loop is the main thread; it polls the terminal for keys (100 ms), reads
//! the plan's new events from the store, and carries out the reducer's effects, each one
//! the engine operation the CLI command of the same name calls (`weft_engine::control`,
//! `weft_engine::handoff`, the store's approval answers). A run started with `R` is the
//! engine's `run` on one thread of its own with the configuration `weft run` would use;
//! the engine's claim on the plan's run (one engine per plan) is what keeps a second
//! engine, here or in another terminal, from running the same plan.
//!
//! The terminal is always given back: a guard leaves raw mode and the alternate screen
//! when the loop ends for any reason, a panic hook does the same before the panic is
//! printed, and SIGTERM, SIGHUP and SIGINT end the loop like `q` (a run this TUI started
//! is interrupted first, as Ctrl-C interrupts `weft run`).
//!
//! Bounds: at most [`OUTPUT_READ`] bytes of output and [`EVENT_PAGE`] events are read per
//! pass; the store is read again at most every [`RELOAD_EVERY`].

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{execute, terminal};
use weft_core::terminal::{Keep, Sanitizer};
use weft_engine::{EngineConfig, EngineError, Interrupt};
use weft_store::{OpenOptions, Store};

use crate::edit;
use crate::source;
use crate::state::{Action, Effect, Key, Msg, State, update};
use crate::view::{self, Theme};

/// Output bytes read per pass.
pub const OUTPUT_READ: usize = 64 * 1024;
/// The most bytes of a task's diff read.
pub const DIFF_BYTES: usize = 1024 * 1024;
/// Events read per pass.
pub const EVENT_PAGE: u32 = 500;
/// The shortest time between two readings of the whole plan.
pub const RELOAD_EVERY: Duration = Duration::from_millis(250);

/// Builds the engine configuration `weft run` would use (the bin resolves settings).
pub type EngineFactory = Box<dyn Fn() -> Result<EngineConfig, String>>;

/// What the bin resolves for the TUI.
pub struct Options {
    pub workspace: PathBuf,
    pub state_dir: PathBuf,
    pub plan_id: String,
    pub repos: Vec<String>,
    pub busy_timeout: Duration,
    pub secrets: Vec<String>,
    /// The `bell` setting.
    pub bell: bool,
    /// Colour (a terminal, `NO_COLOR` unset).
    pub colour: bool,
    /// Runner names, for re-arm's validation.
    pub runner_names: std::collections::BTreeSet<String>,
    /// `$VISUAL` or `$EDITOR` (else `vi`).
    pub editor: String,
    /// The plan's budget (`budget_usd`, `budget_tokens`), shown against its spend.
    pub budget: weft_core::spend::Budget,
    pub engine: EngineFactory,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("workspace", &self.workspace)
            .field("plan_id", &self.plan_id)
            .finish_non_exhaustive()
    }
}

/// Why the TUI could not run.
#[derive(Debug)]
pub enum TuiError {
    Terminal(std::io::Error),
    Engine(EngineError),
}

impl std::fmt::Display for TuiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TuiError::Terminal(e) => write!(f, "the terminal failed: {e}"),
            TuiError::Engine(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TuiError {}

impl From<EngineError> for TuiError {
    fn from(e: EngineError) -> Self {
        TuiError::Engine(e)
    }
}

impl From<weft_store::StoreError> for TuiError {
    fn from(e: weft_store::StoreError) -> Self {
        TuiError::Engine(e.into())
    }
}

/// Raw mode and the alternate screen, given back on drop.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> std::io::Result<TerminalGuard> {
        terminal::enable_raw_mode()?;
        let guard = TerminalGuard;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            ratatui::crossterm::cursor::Hide
        )?;
        Ok(guard)
    }
}

/// Leave raw mode and the alternate screen (idempotent).
pub fn restore_terminal() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        terminal::LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// The run this TUI started.
struct OwnRun {
    thread: JoinHandle<Result<weft_engine::RunSummary, EngineError>>,
    interrupt: Interrupt,
}

struct App {
    options: Options,
    store: Store,
    state: State,
    own: Option<OwnRun>,
    last_reload: Option<Instant>,
    reload_due: bool,
    /// The attempt being read and its stream sanitizer (escape sequences may be split).
    sanitizer: Option<(String, Sanitizer)>,
    bell_due: bool,
}

/// Run the TUI until `q` (or a signal). A run it started is interrupted on the way out.
pub fn run(options: Options) -> Result<(), TuiError> {
    let mut store = Store::open_or_create(
        &options.state_dir,
        OpenOptions {
            busy_timeout: options.busy_timeout,
        },
    )?;
    store.set_secrets(options.secrets.clone());
    let mut app = App {
        state: State::new(options.bell),
        options,
        store,
        own: None,
        last_reload: None,
        reload_due: true,
        sanitizer: None,
        bell_due: false,
    };
    // The first reading before the terminal changes: a bad plan fails here, plainly.
    let snapshot = source::snapshot(&app.store, &app.options.plan_id, false, app.options.budget)?;
    app.apply(Msg::Snapshot(snapshot));

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
    ] {
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        previous(info);
    }));
    let result = {
        let _guard = TerminalGuard::enter().map_err(TuiError::Terminal)?;
        app.main_loop(&stop)
    };
    let _ = std::panic::take_hook();
    app.finish_own_run();
    result
}

fn key_of(code: KeyCode, modifiers: KeyModifiers) -> Option<Key> {
    if modifiers.contains(KeyModifiers::CONTROL) {
        // Ctrl-C quits, as everywhere.
        return matches!(code, KeyCode::Char('c')).then_some(Key::Char('q'));
    }
    Some(match code {
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Tab => Key::Tab,
        _ => return None,
    })
}

impl App {
    fn main_loop(&mut self, stop: &AtomicBool) -> Result<(), TuiError> {
        let mut terminal =
            Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(TuiError::Terminal)?;
        let theme = Theme {
            colour: self.options.colour,
        };
        let mut last_size = None;
        while !self.state.quit && !stop.load(Ordering::SeqCst) {
            let size = terminal.size().map_err(TuiError::Terminal)?;
            if last_size != Some(size) {
                last_size = Some(size);
                let rect = ratatui::layout::Rect::new(0, 0, size.width, size.height);
                self.apply(Msg::Page(view::plan_rows(rect)));
                terminal.clear().map_err(TuiError::Terminal)?;
            }
            terminal
                .draw(|frame| view::render(&self.state, theme, frame))
                .map_err(TuiError::Terminal)?;
            if std::mem::take(&mut self.bell_due) {
                let mut out = std::io::stdout();
                let _ = out.write_all(b"\x07");
                let _ = out.flush();
            }
            if event::poll(Duration::from_millis(100)).map_err(TuiError::Terminal)? {
                match event::read().map_err(TuiError::Terminal)? {
                    TermEvent::Key(k) if k.kind != KeyEventKind::Release => {
                        if let Some(key) = key_of(k.code, k.modifiers) {
                            if key == Key::Char('e') && !self.state.filter.editing {
                                // The editor needs the terminal back.
                                drop(terminal);
                                let effects = update(&mut self.state, Msg::Key(key));
                                self.carry_out(effects);
                                terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))
                                    .map_err(TuiError::Terminal)?;
                                last_size = None;
                                continue;
                            }
                            self.apply(Msg::Key(key));
                        }
                    }
                    _ => {}
                }
            }
            self.follow();
        }
        Ok(())
    }

    fn apply(&mut self, msg: Msg) {
        let effects = update(&mut self.state, msg);
        self.carry_out(effects);
    }

    fn carry_out(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            self.effect(effect);
        }
    }

    /// One pass of following the store: new events, the own run's end, more output.
    fn follow(&mut self) {
        if let Some(own) = &self.own
            && own.thread.is_finished()
        {
            let own = self.own.take().expect("checked above");
            let msg = match own.thread.join() {
                Ok(Ok(summary)) => Msg::Done(Ok(vec![format!(
                    "run {} ended {}",
                    summary.run_id,
                    summary.status.as_str()
                )])),
                Ok(Err(error)) => Msg::Done(Err(error_line(&error))),
                Err(_) => Msg::Done(Err("the run's thread panicked".to_owned())),
            };
            self.reload_due = true;
            self.apply(msg);
        }
        match self
            .store
            .events(Some(&self.options.plan_id), self.state.last_seq, EVENT_PAGE)
        {
            Ok(events) if !events.is_empty() => self.apply(Msg::Events(events)),
            Ok(_) => {}
            Err(error) => self.state.message = Some(error_line(&error.into())),
        }
        if self.reload_due
            && self
                .last_reload
                .is_none_or(|at| at.elapsed() >= RELOAD_EVERY)
        {
            self.reload();
        }
        if let Some(effect) = self.state.output_wanted() {
            self.effect(effect);
        }
    }

    fn reload(&mut self) {
        self.reload_due = false;
        self.last_reload = Some(Instant::now());
        let own = self.own.is_some();
        match source::snapshot(&self.store, &self.options.plan_id, own, self.options.budget) {
            Ok(snapshot) => self.apply(Msg::Snapshot(snapshot)),
            Err(error) => self.state.message = Some(error_line(&error)),
        }
    }

    fn effect(&mut self, effect: Effect) {
        let plan = self.options.plan_id.clone();
        let result: Option<Result<Vec<String>, EngineError>> = match effect {
            Effect::Reload => {
                self.reload_due = true;
                None
            }
            Effect::Bell => {
                self.bell_due = true;
                None
            }
            Effect::Quit => None,
            Effect::LoadDetail { task } => {
                match source::detail(&self.store, &plan, &task) {
                    Ok(detail) => self.apply(Msg::Detail(detail)),
                    Err(error) => self.state.message = Some(error_line(&error)),
                }
                None
            }
            Effect::LoadOutput { attempt, offset } => {
                self.read_output(attempt, offset);
                None
            }
            Effect::LoadDiff { task } => {
                let text = self.task_diff(&task);
                self.apply(Msg::Diff(text));
                None
            }
            Effect::LoadHandoff => {
                let text = self
                    .handoff()
                    .and_then(|h| h.review(false))
                    .unwrap_or_else(|e| error_line(&e));
                self.apply(Msg::Handoff(text));
                None
            }
            Effect::Control { action, task } => Some(self.control(action, &task)),
            Effect::Rearm { task } => {
                restore_terminal();
                let outcome = edit::rearm(
                    &mut self.store,
                    &plan,
                    &task,
                    &self.options.editor,
                    &self.options.runner_names,
                );
                let _ = TerminalGuard::enter().map(std::mem::forget);
                Some(outcome)
            }
            Effect::StartRun => Some(self.start_run()),
            Effect::StopRun => {
                Some(weft_engine::control::stop(&mut self.store, &plan).map(|r| r.lines))
            }
            Effect::Answer { ask, allow, scope } => Some(self.answer(ask, allow, scope)),
            Effect::Merge => Some(
                self.handoff()
                    .and_then(|h| h.merge(&mut self.store, &plan, None))
                    .map(|report| report.lines()),
            ),
            Effect::Discard => Some(
                self.handoff()
                    .and_then(|h| h.discard(&mut self.store, &plan)),
            ),
        };
        if let Some(result) = result {
            let msg = Msg::Done(result.map_err(|e| error_line(&e)));
            self.apply(msg);
        }
    }

    fn control(&mut self, action: Action, task: &str) -> Result<Vec<String>, EngineError> {
        use weft_engine::control;
        let store = &mut self.store;
        let plan = self.options.plan_id.as_str();
        let report = match action {
            Action::Retry => control::retry(store, plan, task)?,
            Action::Cancel => control::cancel(store, plan, task)?,
            Action::ForceStart => control::force_start(store, plan, task)?,
            Action::Skip => control::skip(store, plan, task)?,
            Action::Complete => control::complete(store, plan, task)?,
            Action::Uncomplete => control::uncomplete(store, plan, task)?,
            Action::Repair => control::repair(store, plan, task)?,
            Action::Hold | Action::Release => {
                let edit = weft_core::Edit::SetHold {
                    task: task.to_owned(),
                    hold: action == Action::Hold,
                };
                let names = &self.options.runner_names;
                let (_, report) = store.apply_edit(plan, &edit, &|r| names.contains(r), now())?;
                return Ok(report.lines);
            }
        };
        Ok(report.lines)
    }

    fn start_run(&mut self) -> Result<Vec<String>, EngineError> {
        if self.own.is_some() {
            return Ok(vec!["the run is already running here".to_owned()]);
        }
        let mut config = (self.options.engine)().map_err(|detail| EngineError::Refused {
            detail,
            hint: "`weft run` says the same with more detail".to_owned(),
        })?;
        let interrupt = Interrupt::new();
        config.supervision.interrupt = Some(interrupt.clone());
        let thread = std::thread::Builder::new()
            .name("weft-tui-engine".into())
            .spawn(move || weft_engine::run(&config, &mut |_| {}))
            .map_err(|e| EngineError::Refused {
                detail: format!("cannot start the engine's thread: {e}"),
                hint: "try again; `weft run` in another terminal works too".to_owned(),
            })?;
        self.own = Some(OwnRun { thread, interrupt });
        Ok(vec!["run started".to_owned()])
    }

    /// A run this TUI started is interrupted (as Ctrl-C interrupts `weft run`) and waited
    /// for, so no attempt outlives the TUI.
    fn finish_own_run(&mut self) {
        if let Some(own) = self.own.take() {
            let _ = writeln!(
                std::io::stderr(),
                "weft tui: stopping the run it started (`weft run` continues it)…"
            );
            own.interrupt.raise();
            let _ = own.thread.join();
        }
    }

    fn answer(
        &mut self,
        ask: i64,
        allow: bool,
        scope: Option<String>,
    ) -> Result<Vec<String>, EngineError> {
        if let Some(scope) = &scope {
            weft_core::approval::Scope::parse(scope).map_err(|e| EngineError::Refused {
                detail: format!("scope {scope:?}: {e}"),
                hint: "answer with y or n instead".to_owned(),
            })?;
        }
        match self.store.answer_ask(ask, allow, scope.as_deref(), now())? {
            Ok(asked) => Ok(vec![format!(
                "approval {ask} {}: {} (scope {})",
                if allow { "allowed" } else { "denied" },
                asked.subject,
                scope.as_deref().unwrap_or(&asked.scope)
            )]),
            Err(refused) => Err(EngineError::Refused {
                detail: refused.to_string(),
                hint: "nothing was changed; `weft approvals` lists the open questions".to_owned(),
            }),
        }
    }

    fn handoff(&self) -> Result<weft_engine::handoff::Handoff, EngineError> {
        weft_engine::handoff::Handoff::open(
            &self.store,
            &self.options.plan_id,
            &self.options.workspace,
            &self.options.state_dir,
            &self.options.repos,
        )
    }

    /// The task's last attempt's work (`weft_engine::task_diff`, as the dashboard shows it).
    fn task_diff(&self, task: &str) -> String {
        let attempts = match self.store.attempts_of_task(&self.options.plan_id, task) {
            Ok(attempts) => attempts,
            Err(error) => return error_line(&error.into()),
        };
        let Some(attempt) = attempts.iter().max_by_key(|a| (a.started_at, a.number)) else {
            return format!("task {task} has not run yet: there is no diff");
        };
        match weft_engine::task_diff::of_attempt_limited(
            &self.options.workspace,
            attempt,
            DIFF_BYTES,
        ) {
            Ok(Some(diff)) => diff_text(attempt.number, &diff),
            Ok(None) => format!(
                "attempt {} has no diff of its own to show: it changed nothing, or it ran in \
                 the workspace itself (`git diff` in {})",
                attempt.number, attempt.cwd
            ),
            Err(e) => error_line(&e),
        }
    }

    fn read_output(&mut self, attempt: String, offset: u64) {
        let chunk = match self.store.read_output(&attempt, offset, OUTPUT_READ) {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return,
            Err(error) => {
                self.state.message = Some(error_line(&error.into()));
                return;
            }
        };
        if chunk.bytes.is_empty() && !chunk.finished && chunk.next == offset && offset > 0 {
            return;
        }
        let sanitizer = match &mut self.sanitizer {
            Some((id, sanitizer)) if *id == attempt && offset > 0 => sanitizer,
            slot => {
                *slot = Some((attempt.clone(), Sanitizer::new(Keep::Nothing)));
                &mut slot.as_mut().expect("just set").1
            }
        };
        let mut out = Vec::with_capacity(chunk.bytes.len());
        sanitizer.push(&chunk.bytes, &mut out);
        if chunk.finished {
            sanitizer.finish(&mut out);
        }
        let text = String::from_utf8_lossy(&out).into_owned();
        let ended = chunk.finished;
        self.apply(Msg::Output {
            attempt,
            text,
            next: chunk.next,
            running: !ended,
        });
        if ended {
            // The attempt's row changed (status, verdict): show it.
            self.reload_due = true;
        }
    }
}

fn error_line(error: &EngineError) -> String {
    let hint = weft_core::Hint::hint(error);
    match hint {
        Some(hint) => format!("error: {error} (hint: {hint})"),
        None => format!("error: {error}"),
    }
}

fn now() -> weft_core::Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The diff pane's text of an attempt's [`weft_engine::task_diff::TaskDiff`].
fn diff_text(number: u32, diff: &weft_engine::task_diff::TaskDiff) -> String {
    let mut text: String = diff.files.iter().map(|f| f.patch.as_str()).collect();
    if text.is_empty() {
        text = format!(
            "attempt {number} changed nothing ({}..{})\n",
            diff.base, diff.tip
        );
    }
    if diff.truncated {
        text.push_str(&format!("… cut at {DIFF_BYTES} bytes\n"));
    }
    text
}

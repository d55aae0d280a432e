//! The terminal side of a planning session: the planner's replies on stdout, research steps
//! and notices on stderr, the user's answers and approval decisions read line by line.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::Duration;

use weft_core::Timestamp;
use weft_engine::Interrupt;
use weft_engine::planning::{
    ApprovalAnswer, ApprovalPrompt, PlanFrontEnd, PlannerEvent, StepOutcome,
};

use crate::context::now;

/// How often a wait for the user looks at the interrupt flag.
const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// Longest line read from the user (a pasted essay is cut, not buffered without end).
const MAX_LINE_BYTES: usize = 64 * 1024;

#[derive(Debug)]
pub struct TerminalPlanner {
    /// The user's lines; `None` in a one-shot run (nobody answers).
    input: Option<Receiver<String>>,
    /// Streamed text is on screen and the reply needs no reprint.
    streamed: bool,
    shown_asks: HashSet<i64>,
    /// Print the planner's text as it streams (a conversation) or only notices (one-shot).
    show_text: bool,
    /// Ctrl-C: a wait for the user ends.
    interrupt: Option<Interrupt>,
    /// The planner's text goes to stderr (with `--json`, stdout carries only the result).
    text_on_stderr: bool,
}

impl TerminalPlanner {
    /// A conversation: lines come from stdin, read on their own thread so an approval
    /// question can also watch for an answer from another terminal.
    pub fn conversation(interrupt: Option<Interrupt>) -> TerminalPlanner {
        // One line in flight: a file piped in is read as fast as it is answered.
        let (sender, receiver) = sync_channel(1);
        std::thread::Builder::new()
            .name("weft-planner-input".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                let mut lock = stdin.lock();
                loop {
                    let mut line = Vec::new();
                    match std::io::Read::take(&mut lock, MAX_LINE_BYTES as u64)
                        .read_until(b'\n', &mut line)
                    {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if !line.ends_with(b"\n") {
                                // Cut at MAX_LINE_BYTES: the rest of the line is dropped,
                                // not taken for the next answer.
                                skip_rest_of_line(&mut lock);
                            }
                            let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                            if sender.send(text).is_err() {
                                break;
                            }
                        }
                    }
                }
            })
            .expect("a thread can be started");
        TerminalPlanner {
            input: Some(receiver),
            streamed: false,
            shown_asks: HashSet::new(),
            show_text: true,
            interrupt,
            text_on_stderr: false,
        }
    }

    /// A one-shot run: nothing is read.
    pub fn one_shot(interrupt: Option<Interrupt>) -> TerminalPlanner {
        TerminalPlanner {
            input: None,
            streamed: false,
            shown_asks: HashSet::new(),
            show_text: false,
            interrupt,
            text_on_stderr: false,
        }
    }

    /// Print the planner's text on stderr instead of stdout.
    pub fn text_on_stderr(mut self, yes: bool) -> TerminalPlanner {
        self.text_on_stderr = yes;
        self
    }

    /// Where the planner's text goes.
    fn text_out(&self) -> Box<dyn Write> {
        if self.text_on_stderr {
            Box::new(anstream::stderr().lock())
        } else {
            Box::new(anstream::stdout().lock())
        }
    }

    fn err(&self, text: &str) {
        let _ = writeln!(anstream::stderr().lock(), "{text}");
    }
}

/// Read and drop bytes up to the next newline (or the end of input).
fn skip_rest_of_line(input: &mut impl BufRead) {
    loop {
        let (used, done) = match input.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(buffer) => match buffer.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (buffer.len(), false),
            },
        };
        input.consume(used);
        if done {
            return;
        }
    }
}

/// A step as shown: the tool's own summary usually starts with its name already.
pub fn step_text(tool: &str, input: &str) -> String {
    if input.starts_with(tool) {
        input.to_owned()
    } else {
        format!("{tool} {input}")
    }
}

fn outcome_mark(outcome: StepOutcome) -> &'static str {
    match outcome {
        StepOutcome::Success => "ok",
        StepOutcome::Failure => "failed",
        StepOutcome::Refused => "refused",
        StepOutcome::Denied => "denied",
        StepOutcome::NotExecuted => "not run",
    }
}

impl PlanFrontEnd for TerminalPlanner {
    fn event(&mut self, event: &PlannerEvent) {
        match event {
            PlannerEvent::Text(text) if self.show_text => {
                let mut out = self.text_out();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                self.streamed = true;
            }
            PlannerEvent::Text(_) | PlannerEvent::Reasoning(_) => {}
            PlannerEvent::Step {
                tool,
                input,
                outcome,
            } => {
                if self.streamed {
                    let _ = writeln!(self.text_out());
                    self.streamed = false;
                }
                let dim = anstyle::Style::new().dimmed();
                self.err(&format!(
                    "{dim}  · {} — {}{dim:#}",
                    step_text(tool, input),
                    outcome_mark(*outcome)
                ));
            }
            PlannerEvent::Reply(text) => {
                if self.show_text && !self.streamed && !text.trim().is_empty() {
                    let _ = writeln!(self.text_out(), "{}", text.trim_end());
                } else if self.streamed {
                    let _ = writeln!(self.text_out());
                }
                self.streamed = false;
            }
            PlannerEvent::Correcting(text) => {
                let first = text.lines().next().unwrap_or_default();
                self.err(&format!("weft → planner: {first}"));
            }
            PlannerEvent::Notice(text) => self.err(&format!("note: {text}")),
        }
    }

    fn ask_user(&mut self, _reply: &str) -> Option<String> {
        let input = self.input.as_ref()?;
        loop {
            {
                let mut err = anstream::stderr().lock();
                let cyan = anstyle::AnsiColor::Cyan.on_default().bold();
                let _ = write!(err, "{cyan}you>{cyan:#} ");
                let _ = err.flush();
            }
            let line = loop {
                match input.recv_timeout(INTERRUPT_POLL) {
                    Ok(line) => break line,
                    Err(RecvTimeoutError::Timeout) => {
                        if weft_engine::interrupted(self.interrupt.as_ref()) {
                            let _ = writeln!(anstream::stderr().lock());
                            return None;
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return None,
                }
            };
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            if matches!(trimmed, "/quit" | "/exit" | "/done") {
                return None;
            }
            return Some(line);
        }
    }

    fn approval(&mut self, ask: &ApprovalPrompt, wait: Duration) -> Option<ApprovalAnswer> {
        if self.shown_asks.insert(ask.id) {
            if self.streamed {
                let _ = writeln!(self.text_out());
                self.streamed = false;
            }
            let yellow = anstyle::AnsiColor::Yellow.on_default().bold();
            let expiry = ask
                .expires_at
                .map(|at| format!(" (denied by itself in {}s)", ((at - now()).max(0)) / 1000))
                .unwrap_or_default();
            self.err(&format!(
                "{yellow}approval {}:{yellow:#} the planner wants to {} — scope {}{expiry}",
                ask.id, ask.subject, ask.scope
            ));
            if self.input.is_some() {
                self.err(&format!(
                    "  answer y (allow), n (deny) or `a SCOPE` (allow a wider scope); or from another terminal: weft approvals allow {}",
                    ask.id
                ));
            } else {
                self.err(&format!(
                    "  answer from another terminal: weft approvals allow {0} | weft approvals deny {0}",
                    ask.id
                ));
            }
        }
        let Some(input) = &self.input else {
            std::thread::sleep(wait);
            return None;
        };
        let line = match input.recv_timeout(wait) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => return None,
            Err(RecvTimeoutError::Disconnected) => {
                // Standard input closed: only another terminal can answer now.
                self.input = None;
                return None;
            }
        };
        let answer = line.trim();
        let (word, rest) = answer.split_once(' ').unwrap_or((answer, ""));
        match word.to_ascii_lowercase().as_str() {
            "y" | "yes" | "allow" if rest.trim().is_empty() => Some(ApprovalAnswer {
                allowed: true,
                scope: None,
            }),
            "a" | "allow" => match weft_core::approval::Scope::parse(rest) {
                Ok(scope) => Some(ApprovalAnswer {
                    allowed: true,
                    scope: Some(scope.to_string()),
                }),
                Err(error) => {
                    self.err(&format!("  {error}"));
                    None
                }
            },
            "n" | "no" | "deny" => Some(ApprovalAnswer {
                allowed: false,
                scope: None,
            }),
            _ => {
                self.err("  answer y, n or `a SCOPE` (e.g. a path:/etc/*)");
                None
            }
        }
    }

    fn approval_settled(&mut self, ask: &ApprovalPrompt, decision: &str) {
        self.err(&format!("  approval {}: {decision}", ask.id));
    }

    fn now(&self) -> Timestamp {
        now()
    }
}

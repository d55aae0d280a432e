//! What one turn gathers from the shared runtime's events (reply text, steps, session,
//! usage, how the CLI said the turn ended), and the bounded text helpers for explaining a
//! failure. The stream itself is read by weft-agents' parsers, inside its supervisor;
//! everything kept here has a cap: a CLI that prints without end cannot grow weft's memory.

use std::collections::HashMap;

use weft_agents::{AgentEvent, StreamKind, ToolOutcome};

use crate::chat::{AgentReply, AgentStep, StreamEvent, Usage};
use crate::log::StepOutcome;

/// Longest reply text kept, in bytes; the rest is cut and the reply marked truncated.
pub(super) const MAX_REPLY_BYTES: usize = 1024 * 1024;
/// Longest step detail (a tool's result or error), in characters.
pub(super) const MAX_DETAIL_CHARS: usize = weft_agents::stream::DETAIL_MAX;
/// Longest tool name or id, in characters.
pub(super) const MAX_NAME_CHARS: usize = 200;
/// Steps kept per turn; later ones are dropped.
pub(super) const MAX_STEPS: usize = 1_000;
/// Longest error text quoted from a CLI, in characters.
pub(super) const MAX_MESSAGE_CHARS: usize = 2_000;

/// The turn being read.
#[derive(Debug, Default)]
pub(super) struct Collector {
    text: String,
    /// The message (or item) the last text came from: parts of one message are joined by a
    /// newline, messages by a blank line.
    text_group: Option<String>,
    text_full: bool,
    steps: Vec<AgentStep>,
    /// Call id → index in `steps`, and whether that call has its result.
    ids: HashMap<String, usize>,
    answered: Vec<bool>,
    pub session_id: Option<String>,
    pub usage: Option<Usage>,
    /// The CLI said the output hit a length limit (or the text was cut here).
    pub truncated: bool,
    /// At least one JSON event arrived on stdout.
    pub saw_event: bool,
    /// The CLI's end-of-run record: `Ok(())`, or its failure text.
    end: Option<Result<(), String>>,
    /// The last error the stream reported along the way (a retry, a warning).
    last_error: Option<String>,
    /// The last non-JSON stdout lines, for error messages.
    pub junk: JunkTail,
}

/// How a turn's stream ended, as weft reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    Success,
    /// The CLI reported the failure itself; the text is its own.
    Failed(String),
    /// No end record: the exit status and stderr must explain.
    Undecided {
        note: Option<String>,
    },
}

impl Collector {
    /// One stdout line as the supervisor shows it: JSON lines are the parser's; anything
    /// else is kept (bounded) to explain a failure. weft's own notes are not the CLI's.
    pub(super) fn stdout_line(&mut self, line: &str) {
        let line = line.trim();
        if line.starts_with('{') {
            self.saw_event = true;
        } else if !line.is_empty() && !line.starts_with("[weft: ") {
            self.junk.push(line);
        }
    }

    /// One parsed event of the turn's stream. `product` names the CLI in step details
    /// ("refused by Claude Code's permission mode").
    pub(super) fn event(
        &mut self,
        event: AgentEvent,
        product: &str,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        match event {
            AgentEvent::Session { id } => self.note_session(Some(&id)),
            AgentEvent::AssistantText { text, message }
            | AgentEvent::PlanText { text, message } => {
                self.push_text(message.as_deref(), &text, on_event);
            }
            AgentEvent::Reasoning { text } => on_event(StreamEvent::Reasoning(text)),
            AgentEvent::ToolUse {
                id, name, summary, ..
            } => self.start_step(id.as_deref(), &name, summary, on_event),
            AgentEvent::ToolResult {
                id,
                outcome,
                detail,
            } => self.finish_step(id.as_deref(), step_outcome(outcome), &detail),
            AgentEvent::PermissionDenied { id, tool, detail } => {
                let why = format!("refused by {product}'s permission mode");
                match id.as_deref() {
                    Some(id) if self.has_step(id) => {
                        self.set_outcome(id, StepOutcome::Denied, &why);
                    }
                    id => {
                        self.start_step(id, &tool, detail, on_event);
                        self.finish_step(id, StepOutcome::Denied, &why);
                    }
                }
            }
            AgentEvent::Usage {
                input_tokens,
                output_tokens,
                cache_tokens,
                reasoning_tokens,
                ..
            } => {
                // Input counts what the model read, cached or not.
                let sum = |a: Option<u64>, b: Option<u64>| a.unwrap_or(0) + b.unwrap_or(0);
                self.usage = Some(Usage {
                    input_tokens: sum(input_tokens, cache_tokens),
                    output_tokens: sum(output_tokens, reasoning_tokens),
                });
            }
            AgentEvent::Truncated => self.truncated = true,
            // A planner turn's spend is not counted against a plan's budget.
            AgentEvent::Spend { .. } => {}
            AgentEvent::Final {
                text,
                is_error,
                detail,
            } => {
                if is_error {
                    let detail = detail.filter(|d| !d.trim().is_empty());
                    self.end = Some(Err(detail.unwrap_or_else(|| "the turn failed".into())));
                } else {
                    // Older streams may carry the answer only in the end record.
                    if !self.has_text()
                        && let Some(text) = text.filter(|t| !t.trim().is_empty())
                    {
                        self.push_text(None, &text, on_event);
                    }
                    self.end = Some(Ok(()));
                }
            }
            AgentEvent::Error { message } => self.last_error = Some(message),
        }
    }

    /// How the turn ended, once the process is gone. A CLI without an end record
    /// (OpenCode) succeeded when it exited 0 after some events and no error.
    pub(super) fn verdict(&mut self, stream: StreamKind, exit_ok: bool) -> Verdict {
        self.close_unanswered("no result was reported for this call");
        match self.end.clone() {
            Some(Ok(())) => Verdict::Success,
            Some(Err(message)) => Verdict::Failed(message),
            None if !stream.has_end_record()
                && exit_ok
                && self.saw_event
                && self.last_error.is_none() =>
            {
                Verdict::Success
            }
            None => Verdict::Undecided {
                note: self.last_error.clone(),
            },
        }
    }

    /// What the CLI last reported about a turn that never ended: its failure, else its last
    /// stream error.
    pub(super) fn last_words(&self) -> Option<String> {
        match &self.end {
            Some(Err(message)) => Some(message.clone()),
            Some(Ok(())) => None,
            None => self.last_error.clone(),
        }
    }

    /// Records the session id the first time the stream names one.
    fn note_session(&mut self, id: Option<&str>) {
        if self.session_id.is_none()
            && let Some(id) = id.map(str::trim).filter(|id| !id.is_empty())
        {
            self.session_id = Some(cap_chars(id, MAX_NAME_CHARS));
        }
    }

    fn has_text(&self) -> bool {
        !self.text.is_empty()
    }

    /// Appends assistant text and streams exactly what was appended (separator included),
    /// so the `Text` events concatenate to the reply text.
    fn push_text(
        &mut self,
        group: Option<&str>,
        text: &str,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        if text.is_empty() || self.text_full {
            return;
        }
        let mut chunk = String::new();
        if !self.text.is_empty() {
            let same = matches!((group, &self.text_group), (Some(g), Some(last)) if g == last);
            chunk.push_str(if same { "\n" } else { "\n\n" });
        }
        chunk.push_str(text);
        self.text_group = group.map(str::to_owned);
        let room = MAX_REPLY_BYTES.saturating_sub(self.text.len());
        if chunk.len() > room {
            let mut end = room;
            while !chunk.is_char_boundary(end) {
                end -= 1;
            }
            chunk.truncate(end);
            self.text_full = true;
            self.truncated = true;
        }
        if chunk.is_empty() {
            return;
        }
        self.text.push_str(&chunk);
        on_event(StreamEvent::Text(chunk));
    }

    /// A tool call began; its outcome stays `NotExecuted` until its result arrives.
    fn start_step(
        &mut self,
        id: Option<&str>,
        tool: &str,
        input: String,
        on_event: &mut dyn FnMut(StreamEvent),
    ) {
        if let Some(id) = id
            && self.ids.contains_key(id)
        {
            return;
        }
        if self.steps.len() >= MAX_STEPS {
            return;
        }
        let tool = one_line(tool, MAX_NAME_CHARS);
        on_event(StreamEvent::ToolCallStarted { name: tool.clone() });
        if let Some(id) = id {
            self.ids
                .insert(cap_chars(id, MAX_NAME_CHARS), self.steps.len());
        }
        self.steps.push(AgentStep {
            tool,
            input,
            outcome: StepOutcome::NotExecuted,
            detail: String::new(),
        });
        self.answered.push(false);
    }

    /// The result of a started call (`None`: the call just started, if unanswered);
    /// unknown ids are ignored.
    fn finish_step(&mut self, id: Option<&str>, outcome: StepOutcome, detail: &str) {
        let index = match id {
            Some(id) => self.ids.get(id).copied(),
            None => self
                .answered
                .last()
                .is_some_and(|done| !done)
                .then(|| self.steps.len() - 1),
        };
        if let Some(index) = index {
            let step = &mut self.steps[index];
            step.outcome = outcome;
            step.detail = cap_chars(detail, MAX_DETAIL_CHARS);
            self.answered[index] = true;
        }
    }

    fn has_step(&self, id: &str) -> bool {
        self.ids.contains_key(id)
    }

    /// Overrides a call's outcome (e.g. Claude lists it in `permission_denials`).
    fn set_outcome(&mut self, id: &str, outcome: StepOutcome, detail_if_empty: &str) {
        if let Some(&index) = self.ids.get(id) {
            let step = &mut self.steps[index];
            step.outcome = outcome;
            if step.detail.is_empty() {
                step.detail = cap_chars(detail_if_empty, MAX_DETAIL_CHARS);
            }
            self.answered[index] = true;
        }
    }

    /// Calls that never got a result keep `NotExecuted`, with a word on why.
    fn close_unanswered(&mut self, detail: &str) {
        for (step, done) in self.steps.iter_mut().zip(&self.answered) {
            if !done && step.detail.is_empty() {
                step.detail = detail.to_owned();
            }
        }
    }

    pub(super) fn into_reply(self) -> AgentReply {
        AgentReply {
            text: self.text,
            steps: self.steps,
            session_id: self.session_id,
            truncated: self.truncated,
            usage: self.usage,
        }
    }
}

/// The last non-JSON stdout lines, for error messages.
#[derive(Debug, Default)]
pub(super) struct JunkTail {
    lines: std::collections::VecDeque<String>,
    bytes: usize,
}

impl JunkTail {
    const MAX_BYTES: usize = 16 * 1024;

    pub(super) fn push(&mut self, line: &str) {
        let line = cap_chars(line, MAX_MESSAGE_CHARS);
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.bytes > Self::MAX_BYTES
            && let Some(old) = self.lines.pop_front()
        {
            self.bytes -= old.len();
        }
    }

    pub(super) fn text(&self) -> String {
        self.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `s` cut to at most `max` characters; a cut string ends with `…`.
pub(super) fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some(_) => {
            let end = s
                .char_indices()
                .nth(max.saturating_sub(1))
                .map_or(s.len(), |(i, _)| i);
            format!("{}…", &s[..end])
        }
    }
}

use weft_agents::stream::one_line;

/// The planner's word for how a CLI said a tool call ended.
fn step_outcome(outcome: ToolOutcome) -> StepOutcome {
    match outcome {
        ToolOutcome::Success => StepOutcome::Success,
        ToolOutcome::Failure => StepOutcome::Failure,
        ToolOutcome::Denied => StepOutcome::Denied,
        ToolOutcome::Refused => StepOutcome::Refused,
    }
}

/// The last lines of a CLI's stderr (ANSI colours removed), at most
/// [`MAX_MESSAGE_CHARS`]. An `Error: …` line that scrolled out of that window (e.g. above a
/// Rust backtrace) is put first, since it is the line that says what went wrong.
pub(super) fn excerpt(raw: &str) -> String {
    let clean = weft_agents::stream::strip_ansi(raw);
    let lines: Vec<&str> = clean
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0usize;
    let mut first_kept = lines.len();
    for (index, line) in lines.iter().enumerate().rev() {
        let len = line.chars().count() + 1;
        if used + len > MAX_MESSAGE_CHARS {
            if kept.is_empty() {
                // One huge line: keep its end.
                let chars: Vec<char> = line.chars().collect();
                let tail: String = chars[chars.len().saturating_sub(MAX_MESSAGE_CHARS - 1)..]
                    .iter()
                    .collect();
                kept.push(format!("…{tail}"));
                first_kept = index;
            }
            break;
        }
        used += len;
        kept.push((*line).to_owned());
        first_kept = index;
    }
    kept.reverse();
    if let Some(error_line) = lines[..first_kept]
        .iter()
        .rev()
        .find(|l| l.trim_start().starts_with("Error"))
    {
        kept.insert(0, cap_chars(error_line.trim(), MAX_MESSAGE_CHARS / 2));
        kept.insert(1, "…".to_owned());
    }
    kept.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_events_concatenate_to_the_reply_text() {
        let mut turn = Collector::default();
        let mut streamed = String::new();
        let mut on_event = |e: StreamEvent| {
            if let StreamEvent::Text(t) = e {
                streamed.push_str(&t);
            }
        };
        turn.push_text(Some("m1"), "one", &mut on_event);
        turn.push_text(Some("m1"), "two", &mut on_event);
        turn.push_text(Some("m2"), "three", &mut on_event);
        turn.push_text(None, "four", &mut on_event);
        let reply = turn.into_reply();
        assert_eq!(reply.text, "one\ntwo\n\nthree\n\nfour");
        assert_eq!(streamed, reply.text);
    }

    #[test]
    fn reply_text_is_capped_on_a_char_boundary() {
        let mut turn = Collector::default();
        let big = "é".repeat(MAX_REPLY_BYTES);
        turn.push_text(None, &big, &mut |_| {});
        turn.push_text(None, "more", &mut |_| {});
        assert!(turn.truncated);
        let reply = turn.into_reply();
        assert!(reply.text.len() <= MAX_REPLY_BYTES);
        assert!(reply.text.ends_with('é'));
    }

    #[test]
    fn excerpt_keeps_the_last_lines_and_the_error_line() {
        let mut raw = String::from("\x1b[91mError: \x1b[0mSession not found\n");
        for i in 0..500 {
            raw.push_str(&format!("  {i}: backtrace frame\n"));
        }
        let text = excerpt(&raw);
        assert!(text.starts_with("Error: Session not found\n…\n"), "{text}");
        assert!(text.ends_with("499: backtrace frame"));
        assert!(text.chars().count() <= MAX_MESSAGE_CHARS + MAX_MESSAGE_CHARS / 2 + 4);
        assert_eq!(excerpt("fatal: broke\n"), "fatal: broke");
        assert_eq!(excerpt(""), "");
    }
}

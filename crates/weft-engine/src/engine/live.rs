//! A running attempt as the loop tracks it, and what its progress messages do.

use std::time::Instant;

use weft_agents::AgentEvent;
use weft_agents::supervise::{Canceller, OutputStream, SupervisorEvent};
use weft_core::prompt::tail_chars;
use weft_core::{Attempt, Denial, Task};

use super::runloop::RunLoop;
use crate::RunProgress;
use crate::isolation::Cut;

/// How much assistant text an attempt keeps for the tasks after it.
const ASSISTANT_TAIL_BYTES: usize = 8 * 1024;

/// At most this many refused tool calls are kept per attempt.
pub(super) const MAX_DENIALS: usize = 100;

/// A running attempt.
pub(crate) struct Live {
    pub attempt: Attempt,
    pub order: u32,
    pub title: String,
    pub receives_marker: bool,
    pub canceller: Canceller,
    pub started: Instant,
    /// Set when the user cancelled it (vs. stop, which interrupts).
    pub cancelled_by_user: bool,
    pub denials: Vec<Denial>,
    pub agent_session: Option<String>,
    /// The last of what the assistant wrote (structured streams), for dependents.
    pub assistant_tail: String,
    /// Its worktree and branch (isolated AI attempts).
    pub cut: Option<Cut>,
    /// For a repair attempt: the files that held conflict markers.
    pub repair_files: Option<Vec<String>>,
    pub task: Task,
}

fn push_bounded(tail: &mut String, text: &str, max: usize) {
    tail.push_str(text);
    tail.push('\n');
    if tail.len() > max {
        let mut cut = tail.len() - max;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail.drain(..cut);
    }
}

impl RunLoop<'_> {
    /// A live attempt's progress: kept (session, assistant text, refusals) and shown (not
    /// stored: the output is in the attempt's log).
    pub(super) fn progress(&mut self, attempt: &str, event: SupervisorEvent) {
        let Some(running) = self.live.get_mut(attempt) else {
            return;
        };
        let task = running.attempt.task_id.clone();
        let activity = |text: &str| RunProgress::Activity {
            task: task.clone(),
            text: tail_chars(text, 200),
        };
        let shown = match event {
            SupervisorEvent::Line { stream, text } => (!running.receives_marker
                || stream == OutputStream::Stderr
                || running.attempt.runner == "exec")
                .then(|| activity(&text)),
            SupervisorEvent::Agent(agent) => match agent {
                AgentEvent::Session { id } => {
                    running.agent_session = Some(id);
                    None
                }
                AgentEvent::AssistantText { text, .. } => {
                    push_bounded(&mut running.assistant_tail, &text, ASSISTANT_TAIL_BYTES);
                    Some(activity(text.lines().last().unwrap_or("")))
                }
                // A sub-agent's tool calls are not the task's own activity.
                AgentEvent::ToolUse {
                    name,
                    summary,
                    subagent: false,
                    ..
                } => {
                    // One line, as before the planner's longer summaries; cut at 200.
                    let summary =
                        weft_agents::stream::one_line(&summary, weft_agents::stream::SUMMARY_MAX);
                    Some(activity(&format!("{name}: {summary}")))
                }
                AgentEvent::PermissionDenied { tool, detail, .. }
                    if running.denials.len() < MAX_DENIALS =>
                {
                    running.denials.push(Denial { tool, detail });
                    None
                }
                _ => None,
            },
            SupervisorEvent::Idle { silent_for } => Some(RunProgress::Idle {
                task: task.clone(),
                silent_secs: silent_for.as_secs(),
            }),
            SupervisorEvent::Started { .. } | SupervisorEvent::MarkerSeen { .. } => None,
        };
        if let Some(progress) = shown {
            self.show(progress);
        }
    }
}

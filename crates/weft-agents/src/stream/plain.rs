//! Plain runners: unstructured output, all of it the agent's own.
//!
//! Every line becomes `AssistantText{line}` (a trailing `\r` removed); blank lines yield
//! nothing. Plain output is not evidence by itself: the engine scans the raw bytes with
//! [`crate::evidence::MarkerScanner`], which also sees ANSI-split and cursor-painted
//! markers that a line view cannot.

use super::StreamParser;
use crate::event::AgentEvent;

/// Parser for unstructured output.
#[derive(Debug, Default)]
pub struct PlainParser;

impl StreamParser for PlainParser {
    fn line(&mut self, line: &str) -> Vec<AgentEvent> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            return Vec::new();
        }
        vec![AgentEvent::AssistantText {
            text: line.to_owned(),
            message: None,
        }]
    }
}

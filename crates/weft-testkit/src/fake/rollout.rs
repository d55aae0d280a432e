//! The Codex persona's rollout file, written as Codex 0.171 writes it while it runs:
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<thread id>.jsonl`
//! (`$CODEX_HOME`, else `~/.codex`), one record a line, each flushed as it happens. The
//! shapes are the recorded `cx0.171.0-rollout-*.jsonl` samples', cut to the fields weft
//! reads: `session_meta` (id, cwd, originator, cli version), `turn_context` (cwd, model),
//! an assistant `response_item` message per text, an `event_msg` `token_count` (the
//! thread's running total and the last response's usage) per `spend` and at the end when
//! the total changed, and `task_complete`.
//!
//! Written only when that folder already exists (real Codex refuses a `CODEX_HOME` that
//! does not exist; tests that want no rollout create none), and not on `exec resume`
//! (Codex appends to the thread's rollout then; the fake writes none). The date folders and
//! the file's stamp are UTC, which is local time in the hermetic environment (`TZ=UTC`).

use std::io::Write;
use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::emit::iso_timestamp;

/// A rollout being written.
#[derive(Debug)]
pub struct Rollout {
    file: fs_err::File,
    ordinal: u64,
    /// The last total written, so the end writes one only when it changed.
    last_total: (u64, u64),
}

impl Rollout {
    /// Creates the thread's rollout, with its `session_meta` and `turn_context`, when the
    /// Codex home exists; `None` otherwise (or on any I/O error: the fake's stream is
    /// what tests rely on).
    pub fn create(thread_id: &str, cwd: &str, model: &str) -> Option<Rollout> {
        let root = match std::env::var_os("CODEX_HOME") {
            Some(home) => PathBuf::from(home),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".codex"),
        };
        if !root.is_dir() {
            return None;
        }
        let stamp = iso_timestamp(SystemTime::now());
        let (date, time) = (&stamp[..10], &stamp[11..19]);
        let dir = root.join("sessions").join(date.replace('-', "/"));
        fs_err::create_dir_all(&dir).ok()?;
        let name = format!(
            "rollout-{date}T{}-{thread_id}.jsonl",
            time.replace(':', "-")
        );
        let file = fs_err::File::create(dir.join(name)).ok()?;
        let mut rollout = Rollout {
            file,
            ordinal: 0,
            last_total: (0, 0),
        };
        rollout.record(
            "session_meta",
            json!({
                "session_id": thread_id, "id": thread_id, "timestamp": stamp, "cwd": cwd,
                "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec",
                "thread_source": "user", "model_provider": "openai",
                "base_instructions": {"text": "You are Codex, a coding agent."},
            }),
        );
        rollout.record(
            "turn_context",
            json!({"cwd": cwd, "approval_policy": "never", "model": model, "effort": "medium"}),
        );
        Some(rollout)
    }

    /// One record, `{"timestamp","ordinal","type","payload"}`, written and flushed.
    fn record(&mut self, kind: &str, payload: Value) {
        let line = json!({
            "timestamp": iso_timestamp(SystemTime::now()),
            "ordinal": self.ordinal,
            "type": kind,
            "payload": payload,
        });
        self.ordinal += 1;
        let _ = writeln!(self.file, "{line}");
        let _ = self.file.flush();
    }

    /// An assistant message.
    pub fn text(&mut self, text: &str) {
        self.record(
            "response_item",
            json!({"type": "message", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": text}]}),
        );
    }

    /// A `token_count`: the thread's total so far and the last response's usage.
    pub fn token_count(&mut self, total: (u64, u64), last: (u64, u64)) {
        let usage = |(input, output): (u64, u64)| {
            json!({"input_tokens": input, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
                   "output_tokens": output, "reasoning_output_tokens": 0,
                   "total_tokens": input + output})
        };
        self.last_total = total;
        self.record(
            "event_msg",
            json!({"type": "token_count",
                   "info": {"total_token_usage": usage(total), "last_token_usage": usage(last),
                            "last_usage_includes_reasoning": false, "model_context_window": 258_400},
                   "rate_limits": {"limit_id": "codex", "primary": null, "secondary": null}}),
        );
    }

    /// The turn's end: a last `token_count` when the total changed, then `task_complete`.
    pub fn complete(&mut self, total: (u64, u64), last_message: Option<&str>) {
        if total != self.last_total {
            let last = (
                total.0.saturating_sub(self.last_total.0),
                total.1.saturating_sub(self.last_total.1),
            );
            self.token_count(total, last);
        }
        self.record(
            "event_msg",
            json!({"type": "task_complete", "last_agent_message": last_message}),
        );
    }
}

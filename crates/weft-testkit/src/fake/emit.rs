//! The fake agent's output, in each persona's stream format. The shapes (record types,
//! field names, key order) are copied from the real samples in
//! `data/agent-output/{claude,codex,opencode}/`; the values are the fake agent's own.

use std::io::{self, Write};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::args::{Invocation, Persona};
use super::control::{self, Answer};
use super::rollout::Rollout;

/// Token and cost figures reported in the final record (`usage IN OUT COST`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cost: f64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input: 120,
            output: 20,
            cost: 0.00132,
        }
    }
}

/// One tool call, as every persona can show it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// A shell command that ran (`run`).
    Shell {
        command: String,
        output: String,
        exit_code: i32,
    },
    /// A file written (`write`) or appended to (`append`).
    File {
        path: String,
        content: String,
        created: bool,
        append: bool,
    },
    /// `tool NAME DETAIL`.
    Generic { name: String, detail: String },
    /// `tool-output TEXT`: a tool whose result is TEXT.
    Output { text: String },
    /// `deny TOOL DETAIL`: a refused permission.
    Denied { tool: String, detail: String },
}

/// How Claude Code was asked to print (`--output-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaudeFormat {
    StreamJson,
    Json,
    Text,
}

#[derive(Debug)]
struct Step {
    message_id: String,
    has_tool: bool,
}

/// Writes one persona's stream.
#[derive(Debug)]
pub struct Emitter<W: Write> {
    out: W,
    persona: Persona,
    claude_format: ClaudeFormat,
    plain_text: bool,
    session_id: String,
    model: String,
    permission_mode: String,
    cwd: String,
    started: Instant,
    usage: Usage,
    /// What `spend` directives added to `usage`: messages of their own, so the fake's
    /// other messages report only the turn's own figures, as a real CLI's messages each
    /// report their own API call.
    spent_input: u64,
    message_id: Option<String>,
    turns: u32,
    items: u32,
    last_text: Option<String>,
    errors: Vec<String>,
    denials: Vec<Value>,
    step: Option<Step>,
    id_counter: u64,
    /// `ask` requests sent so far.
    asks: u32,
    /// The Codex persona's rollout file, when its home exists.
    rollout: Option<Rollout>,
    /// `codex exec resume`: no new rollout.
    resumed: bool,
}

impl<W: Write> Emitter<W> {
    pub fn new(invocation: &Invocation, cwd: &str, out: W) -> Emitter<W> {
        let persona = invocation.persona;
        let claude_format = match invocation.flag(&["--output-format"]) {
            Some("json") => ClaudeFormat::Json,
            Some("text") => ClaudeFormat::Text,
            _ => ClaudeFormat::StreamJson,
        };
        let mut id_counter = 0;
        let session_id = match persona {
            Persona::Claude => invocation
                .flag(&["--session-id", "--resume", "-r"])
                .map(str::to_owned)
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            Persona::Codex => invocation
                .resume_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            Persona::OpenCode => invocation
                .flag(&["--session", "-s"])
                .map(str::to_owned)
                .unwrap_or_else(|| opencode_id("ses", &mut id_counter)),
            Persona::Plain => String::new(),
        };
        let model = invocation
            .flag(&["--model", "-m"])
            .map(str::to_owned)
            .unwrap_or_else(|| match persona {
                Persona::Claude => "claude-sonnet-4-5-20250929".to_owned(),
                Persona::Codex => "gpt-5-codex".to_owned(),
                Persona::OpenCode => "mock/mock-model".to_owned(),
                Persona::Plain => "plain".to_owned(),
            });
        Emitter {
            out,
            persona,
            claude_format,
            plain_text: persona == Persona::OpenCode
                && invocation.flag(&["--format"]) == Some("default"),
            session_id,
            model,
            permission_mode: invocation
                .flag(&["--permission-mode"])
                .unwrap_or("default")
                .to_owned(),
            cwd: cwd.to_owned(),
            started: Instant::now(),
            usage: Usage::default(),
            spent_input: 0,
            message_id: None,
            turns: 0,
            items: 0,
            last_text: None,
            errors: Vec::new(),
            denials: Vec::new(),
            step: None,
            id_counter,
            asks: 0,
            rollout: None,
            resumed: invocation.resume_id.is_some(),
        }
    }

    /// The session id the stream reports (`session_id`, `thread_id`, `sessionID`).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The raw output, for noise that ignores the stream format.
    pub fn raw(&mut self) -> &mut W {
        &mut self.out
    }

    pub fn set_usage(&mut self, usage: Usage) {
        self.usage = usage;
    }

    /// Whether an `error` was reported.
    pub fn failed(&self) -> bool {
        !self.errors.is_empty()
    }

    fn text_mode(&self) -> bool {
        self.persona == Persona::Plain || self.plain_text
    }

    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }

    fn json(&mut self, value: &Value) -> io::Result<()> {
        let line = value.to_string();
        self.write_line(&line)
    }

    /// A Claude stream line, printed only in `stream-json`.
    fn claude_line(&mut self, value: &Value) -> io::Result<()> {
        if self.claude_format == ClaudeFormat::StreamJson {
            self.json(value)
        } else {
            Ok(())
        }
    }

    fn next_id(&mut self, prefix: &str) -> String {
        opencode_id(prefix, &mut self.id_counter)
    }

    /// The first records of the stream.
    pub fn start(&mut self) -> io::Result<()> {
        match self.persona {
            Persona::Claude => {
                let memory = format!(
                    "{}/.claude/projects/{}/memory/",
                    std::env::var("HOME").unwrap_or_default(),
                    munge_path(&self.cwd)
                );
                let init = json!({
                    "type": "system",
                    "subtype": "init",
                    "cwd": self.cwd,
                    "session_id": self.session_id,
                    "tools": ["Task", "Bash", "Edit", "Read", "Write", "WebFetch", "WebSearch"],
                    "mcp_servers": [],
                    "model": self.model,
                    "permissionMode": self.permission_mode,
                    "slash_commands": ["clear", "compact", "config", "init", "review"],
                    "apiKeySource": "none",
                    "claude_code_version": "2.1.197",
                    "output_style": "default",
                    "agents": ["claude", "general-purpose"],
                    "skills": [],
                    "plugins": [],
                    "analytics_disabled": true,
                    "product_feedback_disabled": true,
                    "uuid": uuid::Uuid::new_v4().to_string(),
                    "memory_paths": {"auto": memory},
                    "fast_mode_state": "off",
                });
                self.claude_line(&init)
            }
            Persona::Codex => {
                if !self.resumed {
                    self.rollout = Rollout::create(&self.session_id, &self.cwd, &self.model);
                }
                self.json(&json!({"type": "thread.started", "thread_id": self.session_id}))?;
                self.json(&json!({"type": "turn.started"}))
            }
            Persona::OpenCode | Persona::Plain => Ok(()),
        }
    }

    /// One model message's usage, reported now in the persona's form (`spend`).
    pub fn spend(&mut self, input: u64, output: u64, cost: f64) -> io::Result<()> {
        if self.persona != Persona::OpenCode {
            // Claude's `result` and Codex's `turn.completed` are totals; OpenCode's last
            // step is only that step.
            self.usage.input += input;
            self.usage.output += output;
            self.usage.cost += cost;
            self.spent_input += input;
        }
        if self.text_mode() {
            return Ok(());
        }
        match self.persona {
            Persona::Claude => {
                self.message_id = None;
                let block = json!({"type": "thinking", "thinking": "Counting.", "signature": ""});
                let mut line = self.claude_assistant(block);
                line["message"]["usage"] = json!({
                    "input_tokens": input,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": output,
                });
                self.message_id = None;
                self.claude_line(&line)
            }
            Persona::OpenCode => {
                if self.step.as_ref().is_some_and(|step| step.has_tool) {
                    self.opencode_finish_step("tool-calls", false)?;
                }
                self.opencode_ensure_step()?;
                self.opencode_step_figures("tool-calls", (input, output, cost))
            }
            Persona::Codex => {
                let total = (self.usage.input, self.usage.output);
                if let Some(rollout) = &mut self.rollout {
                    rollout.token_count(total, (input, output));
                }
                Ok(())
            }
            Persona::Plain => Ok(()),
        }
    }

    /// Assistant-authored text.
    pub fn text(&mut self, text: &str) -> io::Result<()> {
        self.last_text = Some(text.to_owned());
        if self.text_mode() {
            return self.write_line(text);
        }
        match self.persona {
            Persona::Claude => {
                let block = json!({"type": "text", "text": text});
                let line = self.claude_assistant(block);
                self.claude_line(&line)
            }
            Persona::Codex => {
                if let Some(rollout) = &mut self.rollout {
                    rollout.text(text);
                }
                let id = self.codex_item_id();
                self.json(&json!({
                    "type": "item.completed",
                    "item": {"id": id, "type": "agent_message", "text": text},
                }))
            }
            Persona::OpenCode => {
                if self.step.as_ref().is_some_and(|step| step.has_tool) {
                    self.opencode_finish_step("tool-calls", false)?;
                }
                let message_id = self.opencode_ensure_step()?;
                let now = now_ms();
                let part = json!({
                    "id": self.next_id("prt"),
                    "messageID": message_id,
                    "sessionID": self.session_id,
                    "type": "text",
                    "text": text,
                    "time": {"start": now.saturating_sub(5), "end": now},
                });
                self.opencode_event("text", part)
            }
            Persona::Plain => unreachable!("plain text is handled above"),
        }
    }

    /// A tool call and its result.
    pub fn tool(&mut self, call: &ToolCall) -> io::Result<()> {
        match self.persona {
            Persona::Claude => self.claude_tool(call),
            Persona::Codex => self.codex_tool(call),
            Persona::OpenCode if !self.plain_text => self.opencode_tool(call),
            Persona::OpenCode | Persona::Plain => self.plain_tool(call),
        }
    }

    /// A stream-level error: the run fails (exit 1 unless `exit` says otherwise).
    pub fn error(&mut self, message: &str) -> io::Result<()> {
        self.errors.push(message.to_owned());
        match self.persona {
            Persona::Claude => {
                let line = json!({
                    "type": "assistant",
                    "message": {
                        "id": uuid::Uuid::new_v4().to_string(),
                        "container": null,
                        "model": "<synthetic>",
                        "role": "assistant",
                        "stop_details": null,
                        "stop_reason": "stop_sequence",
                        "stop_sequence": "",
                        "type": "message",
                        "usage": {
                            "input_tokens": 0,
                            "output_tokens": 0,
                            "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0,
                            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                            "service_tier": null,
                            "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
                            "inference_geo": null,
                            "iterations": null,
                            "speed": null,
                        },
                        "content": [{"type": "text", "text": message}],
                        "context_management": null,
                    },
                    "parent_tool_use_id": null,
                    "session_id": self.session_id,
                    "uuid": uuid::Uuid::new_v4().to_string(),
                    "error": "unknown",
                });
                self.message_id = None;
                self.claude_line(&line)
            }
            Persona::Codex => self.json(&json!({"type": "error", "message": message})),
            Persona::OpenCode if !self.plain_text => {
                let line = json!({
                    "type": "error",
                    "timestamp": now_ms(),
                    "sessionID": self.session_id,
                    "error": {"name": "UnknownError", "data": {"message": message, "ref": "err_fake"}},
                });
                self.json(&line)
            }
            Persona::OpenCode | Persona::Plain => {
                let mut stderr = io::stderr().lock();
                writeln!(stderr, "error: {message}")
            }
        }
    }

    /// The final record; returns the exit code the real CLI would use (1 after an error).
    pub fn finish(&mut self) -> io::Result<i32> {
        let code = if self.failed() { 1 } else { 0 };
        match self.persona {
            Persona::Claude => self.claude_result()?,
            Persona::Codex => {
                let total = (self.usage.input, self.usage.output);
                let failed = self.failed();
                let last = self.last_text.clone();
                if let Some(rollout) = &mut self.rollout {
                    rollout.complete(total, last.as_deref().filter(|_| !failed));
                }
                let line = match self.errors.last() {
                    Some(message) => {
                        json!({"type": "turn.failed", "error": {"message": message}})
                    }
                    None => json!({
                        "type": "turn.completed",
                        "usage": {
                            "input_tokens": self.usage.input,
                            "cached_input_tokens": 0,
                            "cache_write_input_tokens": 0,
                            "output_tokens": self.usage.output,
                            "reasoning_output_tokens": 0,
                        },
                    }),
                };
                self.json(&line)?;
            }
            Persona::OpenCode if !self.plain_text && !self.failed() => {
                if self.step.as_ref().is_some_and(|step| step.has_tool) {
                    self.opencode_finish_step("tool-calls", false)?;
                }
                self.opencode_ensure_step()?;
                self.opencode_finish_step("stop", true)?;
            }
            Persona::OpenCode | Persona::Plain => {}
        }
        self.out.flush()?;
        Ok(code)
    }

    /// `ask` where nobody can be asked: Claude shows the call with `input` refused as
    /// "requires approval" and lists it in `permission_denials` (as `deny` does); the other
    /// personas show `deny TOOL <input summary>`.
    pub fn ask_refused(&mut self, tool: &str, input: &Value) -> io::Result<()> {
        if self.persona != Persona::Claude {
            return self.tool(&ToolCall::Denied {
                tool: tool.to_owned(),
                detail: input_summary(input),
            });
        }
        let tool_use_id = format!("toolu_fake{}", random_alnum(20));
        self.claude_denial(tool, &tool_use_id, input);
        self.claude_tool_use(&tool_use_id, tool, input)?;
        self.claude_tool_result(
            &tool_use_id,
            "This command requires approval",
            true,
            json!("Error: This command requires approval"),
        )
    }

    /// Claude `ask` over stdio, first half: the assistant `tool_use` line, then the
    /// `can_use_tool` control request (always printed: it is the protocol, whatever the
    /// output format). Returns the tool use id (`toolu_fake_<n>`, `n` counting asks).
    pub fn ask_request(
        &mut self,
        request_id: &str,
        tool: &str,
        input: &Value,
    ) -> io::Result<String> {
        self.asks += 1;
        let tool_use_id = format!("toolu_fake_{}", self.asks);
        self.claude_tool_use(&tool_use_id, tool, input)?;
        let request = control::can_use_tool_request(request_id, tool, input, &tool_use_id);
        self.json(&request)?;
        Ok(tool_use_id)
    }

    /// Claude `ask` over stdio, second half: the `tool_result` the answer leads to (content
    /// `allowed`, or an error holding the deny message, the call then listed in
    /// `permission_denials`).
    pub fn ask_answered(
        &mut self,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
        answer: &Answer,
    ) -> io::Result<()> {
        match answer {
            Answer::Allow { .. } => {
                self.claude_tool_result(tool_use_id, "allowed", false, json!("allowed"))
            }
            Answer::Deny { message } => {
                self.claude_denial(tool, tool_use_id, input);
                self.claude_tool_result(
                    tool_use_id,
                    message,
                    true,
                    json!(format!("Error: {message}")),
                )
            }
        }
    }

    // ----- Claude Code -----

    fn claude_denial(&mut self, tool: &str, tool_use_id: &str, input: &Value) {
        self.denials.push(json!({
            "tool_name": tool,
            "tool_use_id": tool_use_id,
            "tool_input": input,
        }));
    }

    fn claude_assistant(&mut self, block: Value) -> Value {
        let message_id = self
            .message_id
            .get_or_insert_with(|| format!("msg_fake{}", random_alnum(20)))
            .clone();
        json!({
            "type": "assistant",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": self.usage.input.saturating_sub(self.spent_input),
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 1,
                },
                "context_management": null,
            },
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid::Uuid::new_v4().to_string(),
        })
    }

    fn claude_tool(&mut self, call: &ToolCall) -> io::Result<()> {
        let tool_use_id = format!("toolu_fake{}", random_alnum(20));
        let (name, input, content, is_error, tool_use_result) = match call {
            ToolCall::Shell {
                command,
                output,
                exit_code,
            } => {
                let content = if *exit_code == 0 {
                    output.clone()
                } else {
                    format!("Exit code {exit_code}\n{output}")
                };
                (
                    "Bash".to_owned(),
                    json!({"command": command, "description": "Run a shell command"}),
                    content,
                    *exit_code != 0,
                    json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}),
                )
            }
            ToolCall::File {
                path,
                content,
                created,
                append,
            } => {
                if *append {
                    (
                        "Edit".to_owned(),
                        json!({"file_path": path, "old_string": "", "new_string": content, "replace_all": false}),
                        format!("The file {path} has been updated successfully."),
                        false,
                        json!({"filePath": path, "oldString": "", "newString": content, "originalFile": null, "structuredPatch": [], "userModified": false, "replaceAll": false}),
                    )
                } else {
                    let (kind, message) = if *created {
                        ("create", format!("File created successfully at: {path}"))
                    } else {
                        (
                            "update",
                            format!("The file {path} has been updated successfully."),
                        )
                    };
                    (
                        "Write".to_owned(),
                        json!({"file_path": path, "content": content}),
                        message,
                        false,
                        json!({"type": kind, "filePath": path, "content": content, "structuredPatch": [], "originalFile": null, "userModified": false}),
                    )
                }
            }
            ToolCall::Generic { name, detail } => (
                name.clone(),
                tool_input(name, detail),
                format!("{name} finished"),
                false,
                json!(format!("{name} finished")),
            ),
            ToolCall::Output { text } => (
                "Bash".to_owned(),
                json!({"command": "cat tool-output.txt", "description": "Show the tool output"}),
                text.clone(),
                false,
                json!({"stdout": text, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}),
            ),
            ToolCall::Denied { tool, detail } => {
                let input = tool_input(tool, detail);
                self.claude_denial(tool, &tool_use_id, &input);
                (
                    tool.clone(),
                    input,
                    "This command requires approval".to_owned(),
                    true,
                    json!("Error: This command requires approval"),
                )
            }
        };
        self.claude_tool_use(&tool_use_id, &name, &input)?;
        self.claude_tool_result(&tool_use_id, &content, is_error, tool_use_result)
    }

    /// The assistant line holding one `tool_use` block.
    fn claude_tool_use(&mut self, tool_use_id: &str, name: &str, input: &Value) -> io::Result<()> {
        let block = json!({"type": "tool_use", "id": tool_use_id, "name": name, "input": input});
        let line = self.claude_assistant(block);
        self.claude_line(&line)
    }

    /// The user line holding the `tool_result` of `tool_use_id`; ends the turn.
    fn claude_tool_result(
        &mut self,
        tool_use_id: &str,
        content: &str,
        is_error: bool,
        tool_use_result: Value,
    ) -> io::Result<()> {
        let result = json!({
            "type": "user",
            "message": {
                "role": "user",
                "content": [{
                    "tool_use_id": tool_use_id,
                    "type": "tool_result",
                    "content": content,
                    "is_error": is_error,
                }],
            },
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid::Uuid::new_v4().to_string(),
            "timestamp": iso_timestamp(SystemTime::now()),
            "tool_use_result": tool_use_result,
        });
        self.claude_line(&result)?;
        self.message_id = None;
        self.turns += 1;
        Ok(())
    }

    fn claude_result(&mut self) -> io::Result<()> {
        let failed = self.failed();
        let result_text = match self.errors.last() {
            Some(message) => message.clone(),
            None => self.last_text.clone().unwrap_or_default(),
        };
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (input, output, cost) = (self.usage.input, self.usage.output, self.usage.cost);
        let result = json!({
            "type": "result",
            "subtype": "success",
            "is_error": failed,
            "api_error_status": null,
            "duration_ms": elapsed,
            "duration_api_ms": elapsed / 2,
            "num_turns": self.turns + 1,
            "result": result_text,
            "stop_reason": if failed { "stop_sequence" } else { "end_turn" },
            "session_id": self.session_id,
            "total_cost_usd": cost,
            "usage": {
                "input_tokens": input,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": output,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
                "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
                "inference_geo": "",
                "iterations": [],
                "speed": "standard",
            },
            "modelUsage": {
                self.model.clone(): {
                    "inputTokens": input,
                    "outputTokens": output,
                    "cacheReadInputTokens": 0,
                    "cacheCreationInputTokens": 0,
                    "webSearchRequests": 0,
                    "costUSD": cost,
                    "contextWindow": 200000,
                    "maxOutputTokens": 32000,
                },
            },
            "permission_denials": self.denials,
            "terminal_reason": "completed",
            "fast_mode_state": "off",
            "uuid": uuid::Uuid::new_v4().to_string(),
        });
        match self.claude_format {
            ClaudeFormat::StreamJson | ClaudeFormat::Json => self.json(&result),
            ClaudeFormat::Text => self.write_line(&result_text),
        }
    }

    // ----- Codex -----

    fn codex_item_id(&mut self) -> String {
        let id = format!("item_{}", self.items);
        self.items += 1;
        id
    }

    fn codex_command(&mut self, command: &str, output: &str, exit_code: i32) -> io::Result<()> {
        let id = self.codex_item_id();
        self.json(&json!({
            "type": "item.started",
            "item": {
                "id": id,
                "type": "command_execution",
                "command": command,
                "aggregated_output": "",
                "exit_code": null,
                "status": "in_progress",
            },
        }))?;
        self.json(&json!({
            "type": "item.completed",
            "item": {
                "id": id,
                "type": "command_execution",
                "command": command,
                "aggregated_output": output,
                "exit_code": exit_code,
                "status": if exit_code == 0 { "completed" } else { "failed" },
            },
        }))
    }

    fn codex_tool(&mut self, call: &ToolCall) -> io::Result<()> {
        match call {
            ToolCall::Shell {
                command,
                output,
                exit_code,
            } => {
                let command = format!("/bin/sh -c {}", shell_quote(command));
                self.codex_command(&command, output, *exit_code)
            }
            ToolCall::File { path, created, .. } => {
                let id = self.codex_item_id();
                let kind = if *created { "add" } else { "update" };
                let changes = json!([{"path": path, "kind": kind}]);
                self.json(&json!({
                    "type": "item.started",
                    "item": {"id": id, "type": "file_change", "changes": changes, "status": "in_progress"},
                }))?;
                self.json(&json!({
                    "type": "item.completed",
                    "item": {"id": id, "type": "file_change", "changes": changes, "status": "completed"},
                }))
            }
            ToolCall::Generic { name, detail } if is_shell_tool(name) => {
                self.codex_command(detail, "", 0)
            }
            ToolCall::Generic { name, detail } => {
                let id = self.codex_item_id();
                self.json(&json!({
                    "type": "item.started",
                    "item": {
                        "id": id, "type": "mcp_tool_call", "server": "fake", "tool": name,
                        "arguments": {"detail": detail}, "result": null, "error": null,
                        "status": "in_progress",
                    },
                }))?;
                self.json(&json!({
                    "type": "item.completed",
                    "item": {
                        "id": id, "type": "mcp_tool_call", "server": "fake", "tool": name,
                        "arguments": {"detail": detail},
                        "result": {"content": [{"type": "text", "text": format!("{name} finished")}], "structured_content": null},
                        "error": null,
                        "status": "completed",
                    },
                }))
            }
            ToolCall::Output { text } => {
                self.codex_command("/bin/sh -c 'cat tool-output.txt'", text, 0)
            }
            ToolCall::Denied { tool, detail } => {
                let id = self.codex_item_id();
                let command = if detail.is_empty() { tool } else { detail };
                self.json(&json!({
                    "type": "item.completed",
                    "item": {
                        "id": id,
                        "type": "command_execution",
                        "command": command,
                        "aggregated_output": "",
                        "exit_code": null,
                        "status": "declined",
                    },
                }))
            }
        }
    }

    // ----- OpenCode -----

    fn opencode_event(&mut self, kind: &str, part: Value) -> io::Result<()> {
        let line = json!({
            "type": kind,
            "timestamp": now_ms(),
            "sessionID": self.session_id,
            "part": part,
        });
        self.json(&line)
    }

    fn opencode_ensure_step(&mut self) -> io::Result<String> {
        if let Some(step) = &self.step {
            return Ok(step.message_id.clone());
        }
        let message_id = self.next_id("msg");
        let part = json!({
            "id": self.next_id("prt"),
            "messageID": message_id,
            "sessionID": self.session_id,
            "type": "step-start",
        });
        self.opencode_event("step_start", part)?;
        self.step = Some(Step {
            message_id: message_id.clone(),
            has_tool: false,
        });
        Ok(message_id)
    }

    fn opencode_finish_step(&mut self, reason: &str, last: bool) -> io::Result<()> {
        let figures = if last {
            (self.usage.input, self.usage.output, self.usage.cost)
        } else {
            (0, 0, 0.0)
        };
        self.opencode_step_figures(reason, figures)
    }

    fn opencode_step_figures(&mut self, reason: &str, figures: (u64, u64, f64)) -> io::Result<()> {
        let (input, output, cost) = figures;
        let Some(step) = self.step.take() else {
            return Ok(());
        };
        let part = json!({
            "id": self.next_id("prt"),
            "reason": reason,
            "messageID": step.message_id,
            "sessionID": self.session_id,
            "type": "step-finish",
            "tokens": {
                "total": input + output,
                "input": input,
                "output": output,
                "reasoning": 0,
                "cache": {"write": 0, "read": 0},
            },
            "cost": cost,
        });
        self.opencode_event("step_finish", part)
    }

    fn opencode_tool(&mut self, call: &ToolCall) -> io::Result<()> {
        let now = now_ms();
        let time = json!({"start": now.saturating_sub(20), "end": now});
        let (tool, state) = match call {
            ToolCall::Shell {
                command,
                output,
                exit_code,
            } => (
                "bash".to_owned(),
                json!({
                    "status": "completed",
                    "input": {"command": command, "description": "Run a shell command"},
                    "output": output,
                    "metadata": {"output": output, "exit": exit_code, "truncated": false},
                    "title": command,
                    "time": time,
                }),
            ),
            ToolCall::File {
                path,
                content,
                created,
                append,
            } => {
                if *append {
                    (
                        "edit".to_owned(),
                        json!({
                            "status": "completed",
                            "input": {"filePath": path, "oldString": "", "newString": content},
                            "output": "Edit applied successfully.",
                            "metadata": {"diagnostics": {}, "filepath": path, "truncated": false},
                            "title": path,
                            "time": time,
                        }),
                    )
                } else {
                    (
                        "write".to_owned(),
                        json!({
                            "status": "completed",
                            "input": {"filePath": path, "content": content},
                            "output": "Wrote file successfully.",
                            "metadata": {"diagnostics": {}, "filepath": path, "exists": !created, "truncated": false},
                            "title": path,
                            "time": time,
                        }),
                    )
                }
            }
            ToolCall::Generic { name, detail } => {
                let tool = name.to_lowercase();
                let state = json!({
                    "status": "completed",
                    "input": opencode_input(&tool, detail),
                    "output": format!("{name} finished"),
                    "metadata": {"truncated": false},
                    "title": detail,
                    "time": time,
                });
                (tool, state)
            }
            ToolCall::Output { text } => (
                "bash".to_owned(),
                json!({
                    "status": "completed",
                    "input": {"command": "cat tool-output.txt", "description": "Show the tool output"},
                    "output": text,
                    "metadata": {"output": text, "exit": 0, "truncated": false},
                    "title": "cat tool-output.txt",
                    "time": time,
                }),
            ),
            ToolCall::Denied { tool, detail } => {
                let tool = tool.to_lowercase();
                let mut stderr = io::stderr().lock();
                writeln!(
                    stderr,
                    "\u{1b}[93m\u{1b}[1m! \u{1b}[0mpermission requested: {tool} ({detail}); auto-rejecting"
                )?;
                let state = json!({
                    "status": "error",
                    "input": opencode_input(&tool, detail),
                    "error": "The user rejected permission to use this specific tool call.",
                    "time": time,
                });
                (tool, state)
            }
        };
        let message_id = self.opencode_ensure_step()?;
        let call_id = format!("call_fake{}", random_alnum(12));
        let part = json!({
            "type": "tool",
            "tool": tool,
            "callID": call_id,
            "state": state,
            "id": self.next_id("prt"),
            "sessionID": self.session_id,
            "messageID": message_id,
        });
        self.opencode_event("tool_use", part)?;
        if let Some(step) = &mut self.step {
            step.has_tool = true;
        }
        Ok(())
    }

    // ----- plain text -----

    fn plain_tool(&mut self, call: &ToolCall) -> io::Result<()> {
        match call {
            ToolCall::Shell { output, .. } => {
                self.out.write_all(output.as_bytes())?;
                if !output.is_empty() && !output.ends_with('\n') {
                    self.out.write_all(b"\n")?;
                }
                self.out.flush()
            }
            ToolCall::File { .. } => Ok(()),
            ToolCall::Generic { name, detail } => self.write_line(&format!("[{name}] {detail}")),
            ToolCall::Output { text } => self.write_line(text),
            ToolCall::Denied { tool, detail } => {
                let mut stderr = io::stderr().lock();
                writeln!(stderr, "permission denied: {tool} {detail}")
            }
        }
    }
}

fn is_shell_tool(name: &str) -> bool {
    matches!(
        name.to_lowercase().as_str(),
        "bash" | "shell" | "sh" | "exec" | "command"
    )
}

/// Claude Code's tool input for a named tool and a one-line detail.
fn tool_input(name: &str, detail: &str) -> Value {
    match name.to_lowercase().as_str() {
        "bash" | "shell" => json!({"command": detail, "description": "Run a shell command"}),
        "read" | "write" | "edit" | "notebookedit" => json!({"file_path": detail}),
        "glob" | "grep" => json!({"pattern": detail}),
        "webfetch" => json!({"url": detail}),
        _ => json!({"input": detail}),
    }
}

/// A one-line summary of a tool input, the DETAIL `deny` would carry: its `command`,
/// `file_path`/`filePath`/`path`, `pattern`, `url` or `query` string, else the compact JSON.
pub fn input_summary(input: &Value) -> String {
    [
        "command",
        "file_path",
        "filePath",
        "path",
        "pattern",
        "url",
        "query",
    ]
    .iter()
    .find_map(|key| input[*key].as_str())
    .map_or_else(|| input.to_string(), str::to_owned)
}

/// OpenCode's tool input for a (lowercase) tool and a one-line detail.
fn opencode_input(tool: &str, detail: &str) -> Value {
    match tool {
        "bash" => json!({"command": detail, "description": "Run a shell command"}),
        "read" | "write" | "edit" | "list" => json!({"filePath": detail}),
        "glob" | "grep" => json!({"pattern": detail}),
        "webfetch" => json!({"url": detail}),
        _ => json!({"input": detail}),
    }
}

/// Single-quote `text` for `sh`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Claude Code's project directory name for a cwd (every non-alphanumeric byte → `-`).
fn munge_path(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// `2026-11-29T21:51:05.969Z`.
pub fn iso_timestamp(time: SystemTime) -> String {
    let elapsed = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = elapsed.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or_default();
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        elapsed.subsec_millis()
    )
}

const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn random_alnum(len: usize) -> String {
    let mut text = String::with_capacity(len);
    while text.len() < len {
        for byte in uuid::Uuid::new_v4().as_bytes() {
            if text.len() == len {
                break;
            }
            text.push(char::from(ALNUM[usize::from(*byte) % ALNUM.len()]));
        }
    }
    text
}

/// An OpenCode-style id: `ses_`/`msg_`/`prt_` + 12 hex (time-ordered) + 14 alphanumerics.
fn opencode_id(prefix: &str, counter: &mut u64) -> String {
    *counter += 1;
    let stamp = (now_ms() << 12 | (*counter & 0xfff)) & 0xffff_ffff_ffff;
    format!("{prefix}_{stamp:012x}{}", random_alnum(14))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn iso_timestamps_match_the_claude_shape() {
        let time = UNIX_EPOCH + Duration::from_millis(1_795_989_342_021);
        assert_eq!(iso_timestamp(time), "2026-11-29T21:55:42.021Z");
        assert_eq!(iso_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("echo 'hi'"), r"'echo '\''hi'\'''");
    }
}

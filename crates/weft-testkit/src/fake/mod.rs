//! `weft-fake-agent`: a real program weft starts exactly like a real agent CLI, for tests.
//!
//! **Persona**: `--fake-as claude|codex|opencode|plain`, else the program's file name
//! (`claude`, `codex`, `opencode`; anything else is plain). Every flag of the real CLIs is
//! accepted and ignored (a few are honoured: claude `--session-id`/`--resume`,
//! `--output-format json|text`, `--model`, `--permission-mode`, `--input-format stream-json`,
//! `--permission-prompt-tool stdio`; codex `exec resume <id>`,
//! `-C/--cd`, `-m`; opencode `-s/--session`, `--dir`, `-m`, `--format default`); an unknown
//! `--flag` takes the next argument as its value unless that is the last argument.
//! `--version` prints the real CLI's version line.
//!
//! **OpenCode's first start**: with `WEFT_FAKE_OPENCODE_SETUP_MS=<ms>` the OpenCode persona
//! sets up its database (`$XDG_DATA_HOME/opencode/opencode.db`) before any output, taking
//! that long, and a second one started meanwhile fails as OpenCode does (`Failed query:
//! CREATE TABLE workspace`, exit 1).
//!
//! **Prompt**: stdin read to EOF when it is not a terminal; if that is empty, the last
//! positional argument (`-` means stdin); if that is empty too, `WEFT_PROMPT`.
//!
//! **Claude `--input-format stream-json`**: stdin is not read to EOF. Exactly one line is
//! read, a `{"type":"user","message":{"role":"user","content":…},…}` message whose content
//! (a string, or `text` blocks joined by newlines) is the prompt; a first line that is not
//! such a message exits 64 before any output; end of input before it means an empty stdin
//! prompt (then the fallbacks above). The rest of stdin is left unread; the agent exits
//! after its final `result` line without waiting for stdin to close.
//! With **`--permission-prompt-tool stdio`** as well, `ask` speaks Claude Code's stdio
//! permission protocol ([`control`]): the assistant `tool_use` line, then
//! `{"type":"control_request","request_id":"<uuid v4>","request":{"subtype":"can_use_tool","tool_name":T,"display_name":T,"input":{…},"description":<input.description or T>,"permission_suggestions":[],"decision_reason":"This command requires approval","decision_reason_type":"other","tool_use_id":"toolu_fake_<n>"}}`,
//! then stdin lines are read (other JSON lines skipped) until
//! `{"type":"control_response","response":{"subtype":"success","request_id":<same>,"response":{"behavior":"allow","updatedInput":{…}}}}`
//! or `…{"behavior":"deny","message":"…"}`; end of input or a line that is not JSON counts
//! as a deny with the message `no answer`. Any other `--permission-prompt-tool` value, or
//! `stdio` without stream-json input, is headless: `ask` is refused without a request.
//!
//! **Script**: `WEFT_FAKE_SCRIPT` (inline, or `@path`), then every prompt line starting with
//! `@fake `; when both are empty, `say Done.` + `marker`. Blank lines and `#` comments are
//! skipped; a bad line exits 64 before any output.
//!
//! | directive | effect |
//! |---|---|
//! | `say TEXT` | assistant text (escapes decoded) |
//! | `marker` | follow the prompt's marker instruction: print `WEFT_DONE_<id>` as its own assistant text |
//! | `copy-markers` | print every marker-looking string of the prompt, never assembling the real token |
//! | `write PATH TEXT` / `append PATH TEXT` | write / append TEXT (escapes decoded) under the working directory, creating parents; shown as a file tool call |
//! | `run COMMAND...` | `sh -c`, stdout+stderr captured, shown as a tool call and its result |
//! | `tool NAME DETAIL` / `tool-output TEXT` | a tool call and its result / a tool result holding TEXT |
//! | `deny TOOL DETAIL` | a refused permission in the persona's form |
//! | `ask TOOL JSON` | a tool call needing approval, JSON (an object, not escape-decoded; bad JSON is a script error) its input. Claude with `--permission-prompt-tool stdio` and stream-json input asks on stdout and waits for the answer on stdin: allowed → `tool_result` `allowed`, then text `ASK-ALLOWED TOOL`; denied → an `is_error` `tool_result` holding the message, the call in `permission_denials`, then text `ASK-DENIED TOOL: MESSAGE`. Claude otherwise (headless) → refused like `deny` (with the JSON as the tool input), then text `ASK-DENIED TOOL: headless`. Other personas → `deny TOOL <input's command/path/pattern/url, else the JSON>` |
//! | `error MESSAGE` | a stream error; the run ends failed (exit 1) |
//! | `usage IN OUT COST` | figures for the final record |
//! | `spend IN OUT [COST]` | one model message's usage, reported now as the real CLI reports it mid-run (Claude: an `assistant` line of a new message with that `message.usage`; OpenCode: a step whose `step_finish` has those tokens and `cost`; Codex: nothing on stdout until the end, a `token_count` record in its rollout file now; plain: nothing); Claude's and Codex's final totals include it |
//! | `sleep SECONDS`, `hang`, `exit CODE`, `crash`, `kill-self` | timing and endings |
//! | `require PATH` | stop here (exit 0, no marker) unless PATH exists: a task that fails until a file appears |
//! | `hang-unless PATH` | wait until PATH exists: a task that hangs until a file appears |
//! | `marker-raw` | the assembled marker written raw to stdout, with no newline |
//! | `transcript-marker` | a Claude Code transcript (`$CLAUDE_CONFIG_DIR/projects/<cwd with non-alphanumerics as ->/<session>.jsonl`) whose last assistant turn holds the marker, which is not printed |
//! | `flood BYTES`, `garbage BYTES`, `no-newline TEXT` | raw stdout noise (`k`/`m` suffixes) |
//! | `spawn-hang` | background grandchild `sleep 600`; `child-pid N` on stderr |
//! | `record FILE` | append a `start` JSON line now and an `end` line at exit |
//!
//! **Codex's rollout file**: when `$CODEX_HOME` (else `~/.codex`) exists, the Codex persona
//! writes its thread's rollout there as it runs ([`rollout`]).
//!
//! Escapes: `\n`, `\t`, `\r`, `\e` (ESC), `\\`. A closed stdout ends the agent with
//! exit 141 (after the `end` records).

pub mod args;
pub mod control;
pub mod emit;
pub mod markers;
pub mod rollout;
pub mod script;

use std::collections::BTreeMap;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use fs_err as fs;
use serde_json::{Value, json};

use args::{Invocation, Persona};
use control::Answer;
use emit::{Emitter, ToolCall, Usage};
use script::Directive;

/// Exit code for a bad command line or script (`EX_USAGE`).
pub const EXIT_USAGE: i32 = 64;
/// Exit code when the reader closed stdout (128 + SIGPIPE, as a shell reports it).
pub const EXIT_BROKEN_PIPE: i32 = 141;
/// Exit code for any other I/O failure (`EX_IOERR`).
pub const EXIT_IO: i32 = 74;

/// The environment variable holding the script (inline, or `@path`).
pub const SCRIPT_ENV: &str = "WEFT_FAKE_SCRIPT";

/// OpenCode's first start on a data folder without a database, when
/// `WEFT_FAKE_OPENCODE_SETUP_MS` asks for it: the fake creates
/// `$XDG_DATA_HOME/opencode/opencode.db` (else under `~/.local/share`) taking that many
/// milliseconds, before any output, as OpenCode does. A second fake starting while
/// another one is in that setup fails as OpenCode does: `Failed query: CREATE TABLE
/// workspace` on stderr, exit 1.
fn opencode_first_start() -> Result<(), String> {
    let Some(ms) = std::env::var("WEFT_FAKE_OPENCODE_SETUP_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return Ok(());
    };
    let data = match std::env::var_os("XDG_DATA_HOME").map(PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => xdg.join("opencode"),
        _ => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".local/share/opencode"),
            None => return Ok(()),
        },
    };
    let database = data.join("opencode.db");
    if database.exists() {
        return Ok(());
    }
    fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let setup = data.join("opencode.db-setup");
    let claimed = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&setup);
    if claimed.is_err() {
        return Err(
            "Error: Failed query: CREATE TABLE workspace (id text PRIMARY KEY NOT NULL)\nSQLiteError: table workspace already exists"
                .to_owned(),
        );
    }
    std::thread::sleep(Duration::from_millis(ms));
    fs::write(&database, b"").map_err(|e| e.to_string())?;
    let _ = fs::remove_file(&setup);
    Ok(())
}

/// Run the fake agent with the process's own argv, stdin and environment; returns the exit
/// code.
pub fn main() -> i32 {
    let argv: Vec<String> = std::env::args_os()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let mut stderr = io::stderr();

    let invocation = match Invocation::parse(&argv) {
        Ok(invocation) => invocation,
        Err(error) => {
            let _ = writeln!(stderr, "weft-fake-agent: {}", error.0);
            return EXIT_USAGE;
        }
    };
    if invocation.version {
        let mut stdout = io::stdout();
        let _ = writeln!(stdout, "{}", invocation.persona.version_line());
        return 0;
    }

    let stdin = io::stdin();
    let mut answers: Option<Box<dyn BufRead>> = None;
    let stdin_text = if invocation.stream_json_input() {
        // One line only: stdin stays open for the answers to permission requests.
        let mut lock = stdin.lock();
        let mut line = String::new();
        let text = match lock.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => match control::user_message_text(&line) {
                Ok(text) => Some(text),
                Err(message) => {
                    let _ = writeln!(
                        stderr,
                        "weft-fake-agent: --input-format stream-json: {message}"
                    );
                    return EXIT_USAGE;
                }
            },
            Err(error) if error.kind() == io::ErrorKind::InvalidData => {
                let _ = writeln!(
                    stderr,
                    "weft-fake-agent: --input-format stream-json: the first stdin line is not UTF-8"
                );
                return EXIT_USAGE;
            }
            Err(error) => {
                let _ = writeln!(stderr, "weft-fake-agent: reading stdin: {error}");
                return EXIT_IO;
            }
        };
        if invocation.prompts_on_stdio() {
            answers = Some(Box::new(lock));
        }
        text
    } else if stdin.is_terminal() {
        None
    } else {
        if invocation.persona == Persona::Codex {
            let _ = writeln!(stderr, "Reading additional input from stdin...");
        }
        let mut bytes = Vec::new();
        match stdin.lock().read_to_end(&mut bytes) {
            Ok(_) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(_) => None,
        }
    };
    let env_prompt = std::env::var("WEFT_PROMPT").ok();
    let (prompt, stdin_was_prompt) = args::choose_prompt(
        stdin_text.as_deref(),
        invocation.prompt_arg(),
        env_prompt.as_deref(),
    );

    let directives = match load_script(&prompt) {
        Ok(directives) => directives,
        Err(message) => {
            let _ = writeln!(stderr, "weft-fake-agent: {message}");
            return EXIT_USAGE;
        }
    };

    if invocation.persona == Persona::OpenCode
        && let Err(message) = opencode_first_start()
    {
        let _ = writeln!(stderr, "{message}");
        return 1;
    }

    let process_cwd = std::env::current_dir().unwrap_or_default();
    let cwd = match invocation.workdir() {
        Some(dir) => process_cwd.join(dir),
        None => process_cwd.clone(),
    };
    let emitter = Emitter::new(&invocation, &cwd.to_string_lossy(), io::stdout().lock());
    let mut agent = Agent {
        emitter,
        invocation,
        prompt,
        stdin_was_prompt,
        cwd,
        process_cwd,
        usage: Usage::default(),
        records: Vec::new(),
        answers,
    };
    agent.run(&directives)
}

/// The path of a built `weft-fake-agent`, for the tests of other crates (only this
/// crate's own tests get `CARGO_BIN_EXE_weft-fake-agent`).
///
/// `WEFT_FAKE_AGENT`, when set, names the binary. Otherwise this runs
/// `cargo build -p weft-testkit --bin weft-fake-agent` once per test process (a few tens of
/// milliseconds when it is up to date; cargo may wait for the build lock) and returns the
/// executable cargo reports. Panics with cargo's output when the build fails.
pub fn binary() -> PathBuf {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(build_binary).clone()
}

fn build_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WEFT_FAKE_AGENT") {
        return PathBuf::from(path);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = Command::new(cargo)
        .args(["build", "--manifest-path", manifest])
        .args(["-p", "weft-testkit", "--bin", "weft-fake-agent"])
        .arg("--message-format=json-render-diagnostics")
        .stdin(Stdio::null())
        .output()
        .expect("cargo can be started to build weft-fake-agent");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let executable = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact"
                && message["target"]["name"] == "weft-fake-agent"
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from));
    match executable {
        Some(path) if output.status.success() => path,
        _ => panic!(
            "building weft-fake-agent failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

/// The directives to follow: `WEFT_FAKE_SCRIPT` first, then the prompt's `@fake ` lines;
/// the default script when both are empty.
pub fn load_script(prompt: &str) -> Result<Vec<Directive>, String> {
    let mut directives = Vec::new();
    if let Ok(text) = std::env::var(SCRIPT_ENV) {
        let (text, origin) = match text.strip_prefix('@') {
            Some(path) => (
                fs::read_to_string(path).map_err(|error| format!("{SCRIPT_ENV}: {error}"))?,
                path.to_owned(),
            ),
            None => (text, SCRIPT_ENV.to_owned()),
        };
        directives.extend(script::parse_script(&text, &origin).map_err(|e| e.to_string())?);
    }
    let from_prompt = script::prompt_script(prompt);
    directives
        .extend(script::parse_script(&from_prompt, "prompt `@fake`").map_err(|e| e.to_string())?);
    if directives.is_empty() {
        directives = script::parse_script(script::DEFAULT_SCRIPT, "default script")
            .map_err(|e| e.to_string())?;
    }
    Ok(directives)
}

struct Agent<W: Write> {
    emitter: Emitter<W>,
    invocation: Invocation,
    prompt: String,
    stdin_was_prompt: bool,
    /// Where files are written and commands run: the process cwd, or `-C`/`--dir`.
    cwd: PathBuf,
    /// The OS working directory, as recorded.
    process_cwd: PathBuf,
    usage: Usage,
    records: Vec<PathBuf>,
    /// The rest of stdin, where answers to `ask` arrive (`--permission-prompt-tool stdio`).
    answers: Option<Box<dyn BufRead>>,
}

impl<W: Write> std::fmt::Debug for Agent<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("persona", &self.invocation.persona)
            .field("asks_on_stdio", &self.answers.is_some())
            .finish_non_exhaustive()
    }
}

impl<W: Write> Agent<W> {
    fn run(&mut self, directives: &[Directive]) -> i32 {
        let outcome = self.emitter.start().and_then(|()| {
            let mut exit = None;
            for directive in directives {
                if let Some(code) = self.step(directive)? {
                    exit = Some(code);
                    break;
                }
            }
            let natural = self.emitter.finish()?;
            Ok(exit.unwrap_or(natural))
        });
        let code = match outcome {
            Ok(code) => code,
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                let _ = writeln!(
                    io::stderr(),
                    "weft-fake-agent: stdout was closed by the reader"
                );
                EXIT_BROKEN_PIPE
            }
            Err(error) => {
                let _ = writeln!(io::stderr(), "weft-fake-agent: {error}");
                EXIT_IO
            }
        };
        self.end_records();
        code
    }

    /// Follow one directive; `Some(code)` stops the script.
    fn step(&mut self, directive: &Directive) -> io::Result<Option<i32>> {
        match directive {
            Directive::Say(text) => self.emitter.text(text)?,
            Directive::Marker => match markers::follow_instruction(&self.prompt) {
                Some(token) => self.emitter.text(&token)?,
                None => {
                    let _ = writeln!(io::stderr(), "no marker instruction found");
                }
            },
            Directive::CopyMarkers => {
                for copied in markers::copy_markers(&self.prompt) {
                    self.emitter.text(&copied)?;
                }
            }
            Directive::Write { path, text } => self.file(path, text, false)?,
            Directive::Append { path, text } => self.file(path, text, true)?,
            Directive::Run(command) => {
                let (output, exit_code) = run_shell(command, &self.cwd);
                self.emitter.tool(&ToolCall::Shell {
                    command: command.clone(),
                    output,
                    exit_code,
                })?;
            }
            Directive::Tool { name, detail } => self.emitter.tool(&ToolCall::Generic {
                name: name.clone(),
                detail: detail.clone(),
            })?,
            Directive::ToolOutput(text) => {
                self.emitter
                    .tool(&ToolCall::Output { text: text.clone() })?;
            }
            Directive::Deny { tool, detail } => self.emitter.tool(&ToolCall::Denied {
                tool: tool.clone(),
                detail: detail.clone(),
            })?,
            Directive::Ask { tool, input } => self.ask(tool, input)?,
            Directive::Error(message) => self.emitter.error(message)?,
            Directive::Usage {
                input,
                output,
                cost,
            } => {
                self.usage = Usage {
                    input: *input,
                    output: *output,
                    cost: *cost,
                };
                self.emitter.set_usage(self.usage);
            }
            Directive::Spend {
                input,
                output,
                cost,
            } => self.emitter.spend(*input, *output, *cost)?,
            Directive::Sleep(duration) => std::thread::sleep(*duration),
            Directive::Hang => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            Directive::Exit(code) => return Ok(Some(*code)),
            Directive::HangUnless(path) => {
                while !Path::new(path).exists() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Directive::MarkerRaw => {
                if let Some(token) = markers::follow_instruction(&self.prompt) {
                    let out = self.emitter.raw();
                    out.write_all(token.as_bytes())?;
                    out.flush()?;
                }
            }
            Directive::TranscriptMarker => {
                if let Some(token) = markers::follow_instruction(&self.prompt) {
                    write_claude_transcript(
                        self.emitter.session_id(),
                        &self.prompt,
                        &format!("All done; the work is in place.\n{token}"),
                    )?;
                }
            }
            Directive::Require(path) => {
                if !Path::new(path).exists() {
                    return Ok(Some(0));
                }
            }
            Directive::Crash => {
                let _ = self.emitter.raw().flush();
                std::process::abort();
            }
            Directive::KillSelf => {
                let _ = self.emitter.raw().flush();
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::this(),
                    nix::sys::signal::Signal::SIGKILL,
                );
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            Directive::Flood(bytes) => flood(self.emitter.raw(), *bytes)?,
            Directive::Garbage(bytes) => garbage(self.emitter.raw(), *bytes)?,
            Directive::NoNewline(text) => {
                let out = self.emitter.raw();
                out.write_all(text.as_bytes())?;
                out.flush()?;
            }
            Directive::SpawnHang => {
                let mut stderr = io::stderr();
                match Command::new("sleep")
                    .arg("600")
                    .stdin(Stdio::null())
                    .spawn()
                {
                    Ok(child) => writeln!(stderr, "child-pid {}", child.id())?,
                    Err(error) => writeln!(stderr, "weft-fake-agent: spawn-hang: {error}")?,
                }
            }
            Directive::Record(file) => self.start_record(file),
        }
        Ok(None)
    }

    /// `ask TOOL JSON`: over stdio when Claude may ask (tool use, control request, answer,
    /// tool result, then `ASK-ALLOWED TOOL` or `ASK-DENIED TOOL: MESSAGE`); else refused
    /// like `deny` (Claude adds `ASK-DENIED TOOL: headless`).
    fn ask(&mut self, tool: &str, input: &Value) -> io::Result<()> {
        let Some(answers) = self.answers.as_mut() else {
            self.emitter.ask_refused(tool, input)?;
            if self.invocation.persona == Persona::Claude {
                self.emitter.text(&format!("ASK-DENIED {tool}: headless"))?;
            }
            return Ok(());
        };
        let request_id = uuid::Uuid::new_v4().to_string();
        let tool_use_id = self.emitter.ask_request(&request_id, tool, input)?;
        let answer = control::read_answer(answers.as_mut(), &request_id);
        self.emitter
            .ask_answered(tool, input, &tool_use_id, &answer)?;
        match answer {
            Answer::Allow { .. } => self.emitter.text(&format!("ASK-ALLOWED {tool}")),
            Answer::Deny { message } => self.emitter.text(&format!("ASK-DENIED {tool}: {message}")),
        }
    }

    fn file(&mut self, path: &str, text: &str, append: bool) -> io::Result<()> {
        let full = self.cwd.join(path);
        let created = !full.exists();
        let written = (|| -> io::Result<()> {
            if let Some(parent) = full.parent() {
                fs::create_dir_all(parent)?;
            }
            if append {
                let mut file = fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&full)?;
                file.write_all(text.as_bytes())
            } else {
                fs::write(&full, text)
            }
        })();
        if let Err(error) = written {
            // A real agent reports a failed tool and goes on; so does the fake one.
            let _ = writeln!(io::stderr(), "weft-fake-agent: {error}");
        }
        self.emitter.tool(&ToolCall::File {
            path: full.to_string_lossy().into_owned(),
            content: text.to_owned(),
            created,
            append,
        })
    }

    fn start_record(&mut self, file: &str) {
        let path = self.process_cwd.join(file);
        let env: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(name, value)| {
                let name = name.into_string().ok()?;
                let wanted = name.starts_with("WEFT_") || name == "IS_SANDBOX" || name == "PWD";
                wanted.then(|| (name, value.to_string_lossy().into_owned()))
            })
            .collect();
        let line = json!({
            "event": "start",
            "pid": std::process::id(),
            "persona": persona_name(self.invocation.persona),
            "argv": self.invocation.argv,
            "cwd": self.process_cwd.to_string_lossy(),
            "workdir": self.cwd.to_string_lossy(),
            "env": env,
            "stdin_was_prompt": self.stdin_was_prompt,
            "prompt": self.prompt,
            "session_id": self.emitter.session_id(),
            "ts_ms": emit::now_ms(),
        });
        append_line(&path, &line);
        self.records.push(path);
    }

    fn end_records(&mut self) {
        for path in std::mem::take(&mut self.records) {
            let line = json!({
                "event": "end",
                "pid": std::process::id(),
                "ts_ms": emit::now_ms(),
            });
            append_line(&path, &line);
        }
    }
}

fn persona_name(persona: Persona) -> &'static str {
    match persona {
        Persona::Claude => "claude",
        Persona::Codex => "codex",
        Persona::OpenCode => "opencode",
        Persona::Plain => "plain",
    }
}

/// Append one JSON line with a single write, so concurrent agents never interleave.
fn append_line(path: &Path, value: &Value) {
    let mut line = value.to_string();
    line.push('\n');
    let appended = (|| -> io::Result<()> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        file.write_all(line.as_bytes())
    })();
    if let Err(error) = appended {
        let _ = writeln!(io::stderr(), "weft-fake-agent: record: {error}");
    }
}

/// `sh -c COMMAND` in `cwd` with stdin from /dev/null; stdout and stderr captured together.
fn run_shell(command: &str, cwd: &Path) -> (String, i32) {
    let ran = (|| -> io::Result<(Vec<u8>, std::process::ExitStatus)> {
        let (mut reader, writer) = io::pipe()?;
        let mut child = {
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(command)
                .current_dir(cwd)
                .stdin(Stdio::null())
                .stdout(writer.try_clone()?)
                .stderr(writer);
            sh.spawn()?
            // `sh` (holding the write ends) is dropped here, so the read below ends.
        };
        let mut output = Vec::new();
        reader.read_to_end(&mut output)?;
        Ok((output, child.wait()?))
    })();
    match ran {
        Ok((output, status)) => {
            use std::os::unix::process::ExitStatusExt;
            let code = status
                .code()
                .or_else(|| status.signal().map(|signal| 128 + signal))
                .unwrap_or(1);
            (String::from_utf8_lossy(&output).into_owned(), code)
        }
        Err(error) => (format!("weft-fake-agent: cannot run sh: {error}\n"), 127),
    }
}

/// A small fixed-seed generator: noise is the same on every run.
#[derive(Debug)]
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// Characters of flood noise: printable, lowercase, no backticks, so never marker-like.
const NOISE: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 .,:;=+/";
const NOISE_LINE: usize = 100;

/// Exactly `bytes` bytes of printable lines (99 characters and a newline; the last line
/// may be shorter and always ends with a newline).
fn flood(out: &mut impl Write, bytes: u64) -> io::Result<()> {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let block: Vec<u8> = (0..NOISE_LINE * 64)
        .map(|_| NOISE[usize::try_from(rng.next() % NOISE.len() as u64).unwrap_or(0)])
        .collect();
    let mut writer = io::BufWriter::with_capacity(1 << 16, out);
    let mut remaining = bytes;
    let mut line = 0;
    while remaining > 0 {
        let take = usize::try_from(remaining.min(NOISE_LINE as u64)).unwrap_or(NOISE_LINE);
        let start = line * NOISE_LINE;
        writer.write_all(&block[start..start + take - 1])?;
        writer.write_all(b"\n")?;
        remaining -= take as u64;
        line = (line + 1) % 64;
    }
    writer.flush()
}

/// Exactly `bytes` raw pseudo-random bytes (NULs, invalid UTF-8, escapes, newlines).
fn garbage(out: &mut impl Write, bytes: u64) -> io::Result<()> {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut remaining = bytes;
    let mut chunk = vec![0u8; 1 << 16];
    while remaining > 0 {
        let take = usize::try_from(remaining.min(chunk.len() as u64)).unwrap_or(chunk.len());
        for byte in &mut chunk[..take] {
            *byte = rng.next().to_le_bytes()[0];
        }
        out.write_all(&chunk[..take])?;
        remaining -= take as u64;
    }
    out.flush()
}

/// Write a minimal Claude Code transcript in the real record shapes: the user's prompt,
/// then one assistant turn holding `answer`.
fn write_claude_transcript(session_id: &str, prompt: &str, answer: &str) -> io::Result<()> {
    let root = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
        .unwrap_or_else(|| PathBuf::from(".claude"));
    let cwd = std::env::current_dir()?;
    let munged: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = root.join("projects").join(munged);
    fs_err::create_dir_all(&dir)?;
    let cwd = cwd.to_string_lossy().into_owned();
    let user = serde_json::json!({
        "parentUuid": null, "isSidechain": false, "type": "user",
        "message": { "role": "user", "content": prompt },
        "uuid": "00000000-0000-4000-8000-000000000001", "timestamp": "2026-11-29T22:30:03.019Z",
        "userType": "external", "entrypoint": "sdk-cli", "cwd": cwd, "sessionId": session_id,
        "version": "2.1.197",
    });
    let assistant = serde_json::json!({
        "parentUuid": "00000000-0000-4000-8000-000000000001", "isSidechain": false,
        "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{ "type": "text", "text": answer }],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": { "input_tokens": 100, "output_tokens": 10 },
        },
        "requestId": "req_fake", "type": "assistant", "uuid": "00000000-0000-4000-8000-000000000002",
        "timestamp": "2026-11-29T22:30:03.193Z", "userType": "external", "entrypoint": "sdk-cli",
        "cwd": cwd, "sessionId": session_id, "version": "2.1.197",
    });
    let mut text = String::new();
    for record in [user, assistant] {
        text.push_str(&record.to_string());
        text.push('\n');
    }
    fs_err::write(dir.join(format!("{session_id}.jsonl")), text)
}

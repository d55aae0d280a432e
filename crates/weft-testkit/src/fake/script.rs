//! The fake agent's script: one directive per line.

use std::time::Duration;

/// One step of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    /// `say TEXT`: assistant text.
    Say(String),
    /// `marker`: follow the marker instruction in the prompt.
    Marker,
    /// `copy-markers`: copy every marker-looking string of the prompt without following
    /// the instruction.
    CopyMarkers,
    /// `write PATH TEXT`.
    Write { path: String, text: String },
    /// `append PATH TEXT`.
    Append { path: String, text: String },
    /// `run SHELL COMMAND...`.
    Run(String),
    /// `tool NAME DETAIL`.
    Tool { name: String, detail: String },
    /// `tool-output TEXT`.
    ToolOutput(String),
    /// `deny TOOL DETAIL`.
    Deny { tool: String, detail: String },
    /// `ask TOOL JSON`: a tool call that needs approval, JSON (an object) being its input.
    /// Claude with `--permission-prompt-tool stdio` asks on stdout and waits for the answer
    /// on stdin; otherwise it is refused like `deny`.
    Ask {
        tool: String,
        input: serde_json::Value,
    },
    /// `error MESSAGE`.
    Error(String),
    /// `usage IN OUT COST`.
    Usage { input: u64, output: u64, cost: f64 },
    /// `spend IN OUT [COST]`: one model message's usage, reported now.
    Spend { input: u64, output: u64, cost: f64 },
    /// `sleep SECONDS`.
    Sleep(Duration),
    /// `hang`.
    Hang,
    /// `exit CODE`.
    Exit(i32),
    /// `require PATH`: stop here (exit 0, final record, no marker) unless PATH exists.
    Require(String),
    /// `hang-unless PATH`: wait (like `hang`) until PATH exists.
    HangUnless(String),
    /// `marker-raw`: the assembled marker written raw to stdout with no newline.
    MarkerRaw,
    /// `transcript-marker`: write a Claude Code transcript whose final assistant turn holds
    /// the assembled marker, without printing the marker on stdout.
    TranscriptMarker,
    /// `crash`: abort, no final record.
    Crash,
    /// `kill-self`: SIGKILL.
    KillSelf,
    /// `flood BYTES`: printable noise lines.
    Flood(u64),
    /// `garbage BYTES`: raw binary bytes.
    Garbage(u64),
    /// `no-newline TEXT`.
    NoNewline(String),
    /// `spawn-hang`: a background grandchild `sleep 600`.
    SpawnHang,
    /// `record FILE`.
    Record(String),
}

/// The script used when none is given: a well-behaved agent.
pub const DEFAULT_SCRIPT: &str = "say Done.\nmarker";

/// The prefix of a script line inside the prompt.
pub const PROMPT_PREFIX: &str = "@fake ";

/// Why a script line was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// Where the line came from, e.g. `WEFT_FAKE_SCRIPT line 3`.
    pub origin: String,
    pub message: String,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// Parse one line. Blank lines and `#` comments give `None`.
pub fn parse_line(line: &str) -> Result<Option<Directive>, String> {
    let line = line.trim_end_matches(['\r', '\n']).trim_start();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim_start()),
        None => (line, ""),
    };
    let (first, tail) = match rest.split_once(char::is_whitespace) {
        Some((first, tail)) => (first, tail.trim_start()),
        None => (rest, ""),
    };
    let need = |what: &str| -> Result<(), String> {
        if rest.is_empty() {
            Err(format!("`{word}` needs {what}"))
        } else {
            Ok(())
        }
    };
    let directive = match word {
        "say" => Directive::Say(decode_escapes(rest)),
        "marker" => Directive::Marker,
        "copy-markers" => Directive::CopyMarkers,
        "write" | "append" => {
            need("a path")?;
            let path = first.to_owned();
            let text = decode_escapes(tail);
            if word == "write" {
                Directive::Write { path, text }
            } else {
                Directive::Append { path, text }
            }
        }
        "run" => {
            need("a shell command")?;
            Directive::Run(rest.to_owned())
        }
        "tool" => {
            need("a tool name")?;
            Directive::Tool {
                name: first.to_owned(),
                detail: tail.to_owned(),
            }
        }
        "tool-output" => Directive::ToolOutput(decode_escapes(rest)),
        "deny" => {
            need("a tool name")?;
            Directive::Deny {
                tool: first.to_owned(),
                detail: tail.to_owned(),
            }
        }
        "ask" => {
            need("a tool name")?;
            if tail.is_empty() {
                return Err(format!(
                    "`ask {first}` needs the tool input as a JSON object"
                ));
            }
            let input: serde_json::Value = serde_json::from_str(tail)
                .map_err(|error| format!("`ask {first}`: `{tail}` is not JSON: {error}"))?;
            if !input.is_object() {
                return Err(format!(
                    "`ask {first}`: the tool input must be a JSON object, got `{tail}`"
                ));
            }
            Directive::Ask {
                tool: first.to_owned(),
                input,
            }
        }
        "error" => Directive::Error(if rest.is_empty() {
            "fake agent error".to_owned()
        } else {
            decode_escapes(rest)
        }),
        "usage" => {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            let [input, output, cost] = parts.as_slice() else {
                return Err(format!("`usage` needs IN OUT COST, got `{rest}`"));
            };
            let number = |text: &str| {
                text.parse::<u64>()
                    .map_err(|_| format!("`usage`: `{text}` is not a token count"))
            };
            let cost = cost
                .parse::<f64>()
                .ok()
                .filter(|cost| cost.is_finite() && *cost >= 0.0)
                .ok_or_else(|| format!("`usage`: `{cost}` is not a cost"))?;
            Directive::Usage {
                input: number(input)?,
                output: number(output)?,
                cost,
            }
        }
        "spend" => {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            let (input, output, cost) = match parts.as_slice() {
                [input, output] => (*input, *output, "0"),
                [input, output, cost] => (*input, *output, *cost),
                _ => return Err(format!("`spend` needs IN OUT [COST], got `{rest}`")),
            };
            let number = |text: &str| {
                text.parse::<u64>()
                    .map_err(|_| format!("`spend`: `{text}` is not a token count"))
            };
            let cost = cost
                .parse::<f64>()
                .ok()
                .filter(|cost| cost.is_finite() && *cost >= 0.0)
                .ok_or_else(|| format!("`spend`: `{cost}` is not a cost"))?;
            Directive::Spend {
                input: number(input)?,
                output: number(output)?,
                cost,
            }
        }
        "sleep" => {
            let seconds = rest
                .parse::<f64>()
                .ok()
                .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                .ok_or_else(|| format!("`sleep`: `{rest}` is not a number of seconds"))?;
            Directive::Sleep(Duration::from_secs_f64(seconds))
        }
        "hang" => Directive::Hang,
        "exit" => {
            let code = rest
                .parse::<i32>()
                .ok()
                .filter(|code| (0..=255).contains(code))
                .ok_or_else(|| format!("`exit`: `{rest}` is not an exit code (0-255)"))?;
            Directive::Exit(code)
        }
        "require" if !rest.is_empty() => Directive::Require(rest.to_owned()),
        "hang-unless" if !rest.is_empty() => Directive::HangUnless(rest.to_owned()),
        "marker-raw" => Directive::MarkerRaw,
        "transcript-marker" => Directive::TranscriptMarker,
        "crash" => Directive::Crash,
        "kill-self" => Directive::KillSelf,
        "flood" => Directive::Flood(parse_size(word, rest)?),
        "garbage" => Directive::Garbage(parse_size(word, rest)?),
        "no-newline" => Directive::NoNewline(decode_escapes(rest)),
        "spawn-hang" => Directive::SpawnHang,
        "record" => {
            need("a file")?;
            Directive::Record(rest.to_owned())
        }
        _ => return Err(format!("unknown directive `{word}`")),
    };
    Ok(Some(directive))
}

/// Parse a whole script; `origin` names it in errors.
pub fn parse_script(text: &str, origin: &str) -> Result<Vec<Directive>, ScriptError> {
    let mut directives = Vec::new();
    for (number, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(directive)) => directives.push(directive),
            Ok(None) => {}
            Err(message) => {
                return Err(ScriptError {
                    origin: format!("{origin} line {}", number + 1),
                    message,
                });
            }
        }
    }
    Ok(directives)
}

/// The script lines carried by the prompt: lines starting with `@fake ` (leading
/// whitespace allowed), without that prefix.
pub fn prompt_script(prompt: &str) -> String {
    let mut script = String::new();
    for line in prompt.lines() {
        if let Some(directive) = line.trim_start().strip_prefix(PROMPT_PREFIX) {
            script.push_str(directive);
            script.push('\n');
        }
    }
    script
}

/// Decode `\n`, `\t`, `\r`, `\\` and `\e` (ESC); any other backslash stays as it is.
pub fn decode_escapes(text: &str) -> String {
    let mut decoded = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            decoded.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => decoded.push('\n'),
            Some('t') => decoded.push('\t'),
            Some('r') => decoded.push('\r'),
            Some('e') => decoded.push('\u{1b}'),
            Some('\\') => decoded.push('\\'),
            Some(other) => {
                decoded.push('\\');
                decoded.push(other);
            }
            None => decoded.push('\\'),
        }
    }
    decoded
}

/// A byte count: digits with an optional `k`/`K` (KiB) or `m`/`M` (MiB) suffix.
fn parse_size(word: &str, text: &str) -> Result<u64, String> {
    let (digits, unit) = match text.char_indices().last() {
        Some((at, 'k' | 'K')) => (&text[..at], 1024),
        Some((at, 'm' | 'M')) => (&text[..at], 1024 * 1024),
        _ => (text, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|count| count.checked_mul(unit))
        .ok_or_else(|| format!("`{word}`: `{text}` is not a byte count"))
}

//! Command line of the fake agent: which persona it plays and what the real CLI's flags
//! would have carried. Every flag of the real CLIs is accepted and ignored; unknown flags
//! are accepted too.

use std::path::Path;

/// Which real CLI the fake agent imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persona {
    /// Claude Code: `claude -p --output-format stream-json --verbose`.
    Claude,
    /// Codex CLI: `codex exec --json`.
    Codex,
    /// OpenCode: `opencode run --format json`.
    OpenCode,
    /// Any other program: plain text lines.
    Plain,
}

impl Persona {
    /// `claude`, `codex`, `opencode` or `plain`.
    pub fn from_name(name: &str) -> Option<Persona> {
        match name {
            "claude" | "claude-code" => Some(Persona::Claude),
            "codex" => Some(Persona::Codex),
            "opencode" => Some(Persona::OpenCode),
            "plain" | "exec" => Some(Persona::Plain),
            _ => None,
        }
    }

    /// The persona named by the program's file name (`claude`, `codex`, `opencode`, or plain).
    pub fn from_argv0(argv0: &str) -> Persona {
        let stem = Path::new(argv0)
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_default();
        match stem {
            "claude" => Persona::Claude,
            "codex" => Persona::Codex,
            "opencode" => Persona::OpenCode,
            _ => Persona::Plain,
        }
    }

    /// What `--version` prints, as the real CLIs print it.
    pub fn version_line(self) -> &'static str {
        match self {
            Persona::Claude => "2.1.197 (Claude Code)",
            Persona::Codex => "codex-cli 0.171.0",
            Persona::OpenCode => "1.18.33",
            Persona::Plain => concat!("weft-fake-agent ", env!("CARGO_PKG_VERSION")),
        }
    }

    fn value_flags(self) -> &'static [&'static str] {
        match self {
            Persona::Claude => &[
                "--output-format",
                "--input-format",
                "--session-id",
                "--permission-mode",
                "--model",
                "--effort",
                "--fallback-model",
                "--allowedTools",
                "--allowed-tools",
                "--disallowedTools",
                "--disallowed-tools",
                "--tools",
                "--settings",
                "--setting-sources",
                "--add-dir",
                "-r",
                "--resume",
                "--resume-session-at",
                "--system-prompt",
                "--append-system-prompt",
                "--system-prompt-file",
                "--append-system-prompt-file",
                "--max-turns",
                "--max-budget-usd",
                "--permission-prompt-tool",
                "--json-schema",
                "--mcp-config",
                "--agents",
                "--agent",
                "--max-thinking-tokens",
            ],
            Persona::Codex => &[
                "-c",
                "--config",
                "-m",
                "--model",
                "-s",
                "--sandbox",
                "-C",
                "--cd",
                "--add-dir",
                "-o",
                "--output-last-message",
                "--output-schema",
                "-p",
                "--profile",
                "--enable",
                "--disable",
                "-i",
                "--image",
                "--color",
                "--local-provider",
            ],
            Persona::OpenCode => &[
                "--format",
                "--agent",
                "-m",
                "--model",
                "--variant",
                "--dir",
                "-s",
                "--session",
                "--title",
                "--attach",
                "--port",
                "-f",
                "--file",
                "--command",
                "--log-level",
            ],
            Persona::Plain => &[],
        }
    }

    fn bool_flags(self) -> &'static [&'static str] {
        match self {
            Persona::Claude => &[
                "-p",
                "--print",
                "--verbose",
                "-c",
                "--continue",
                "--fork-session",
                "--include-partial-messages",
                "--dangerously-skip-permissions",
                "--allow-dangerously-skip-permissions",
                "--no-session-persistence",
                "--bare",
                "--strict-mcp-config",
                "--ide",
                "-d",
                "--debug",
            ],
            Persona::Codex => &[
                "--json",
                "--experimental-json",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                "--yolo",
                "--full-auto",
                "--ephemeral",
                "--ignore-user-config",
                "--ignore-rules",
                "--strict-config",
                "--approve-for-me",
                "--oss",
                "--last",
                "--all",
            ],
            Persona::OpenCode => &[
                "--auto",
                "--yolo",
                "--dangerously-skip-permissions",
                "-c",
                "--continue",
                "--fork",
                "--thinking",
                "--share",
                "--pure",
                "--print-logs",
            ],
            Persona::Plain => &[],
        }
    }

    fn version_flags(self) -> &'static [&'static str] {
        match self {
            Persona::Claude | Persona::OpenCode => &["--version", "-v"],
            Persona::Codex => &["--version", "-V"],
            Persona::Plain => &["--version"],
        }
    }
}

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The whole argv, argv\[0\] included.
    pub argv: Vec<String>,
    pub persona: Persona,
    /// `--version` (or the persona's short form) was given.
    pub version: bool,
    /// Positional arguments, without the subcommand word (`exec`, `run`) and without a
    /// codex `resume <id>` pair.
    pub positionals: Vec<String>,
    /// Every flag seen, in order, with its value when it took one.
    pub flags: Vec<(String, Option<String>)>,
    /// `codex exec resume <id>`: the thread to continue.
    pub resume_id: Option<String>,
    /// Claude's `--permission-prompt-tool` value (`stdio`, or an MCP tool name): who is
    /// asked when a tool needs approval. `None` for the other personas.
    pub permission_prompt_tool: Option<String>,
}

/// A command line the fake agent refuses (only `--fake-as` with an unknown persona).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl Invocation {
    /// Parse `argv` (argv\[0\] first).
    pub fn parse(argv: &[String]) -> Result<Invocation, UsageError> {
        let argv0 = argv.first().map(String::as_str).unwrap_or_default();
        let rest = argv.get(1..).unwrap_or_default();

        // `--fake-as` first, since the persona decides which flags take values.
        let mut persona = Persona::from_argv0(argv0);
        let mut i = 0;
        while i < rest.len() {
            let arg = &rest[i];
            if arg == "--" {
                break;
            }
            let named = if let Some(value) = arg.strip_prefix("--fake-as=") {
                Some(value.to_owned())
            } else if arg == "--fake-as" {
                i += 1;
                Some(rest.get(i).cloned().unwrap_or_default())
            } else {
                None
            };
            if let Some(name) = named {
                persona = Persona::from_name(&name).ok_or_else(|| {
                    UsageError(format!(
                        "--fake-as: unknown persona `{name}` (expected claude, codex, opencode or plain)"
                    ))
                })?;
            }
            i += 1;
        }

        let value_flags = persona.value_flags();
        let bool_flags = persona.bool_flags();
        let mut flags = Vec::new();
        let mut raw_positionals = Vec::new();
        let mut version = false;
        let mut i = 0;
        while i < rest.len() {
            let arg = &rest[i];
            i += 1;
            if arg == "--" {
                raw_positionals.extend(rest[i..].iter().cloned());
                break;
            }
            if arg == "-" || !arg.starts_with('-') {
                raw_positionals.push(arg.clone());
                continue;
            }
            if persona.version_flags().contains(&arg.as_str()) {
                version = true;
                flags.push((arg.clone(), None));
                continue;
            }
            if let Some((name, value)) = arg.split_once('=').filter(|_| arg.starts_with("--")) {
                flags.push((name.to_owned(), Some(value.to_owned())));
                continue;
            }
            let takes_value = if arg == "--fake-as" || value_flags.contains(&arg.as_str()) {
                true
            } else if bool_flags.contains(&arg.as_str()) || !arg.starts_with("--") {
                false
            } else {
                // An unknown `--flag`: it takes the next argument as its value when that
                // does not look like a flag and is not the last argument (the prompt).
                rest.get(i)
                    .is_some_and(|next| !next.starts_with('-') && i + 1 < rest.len())
            };
            if takes_value && i < rest.len() {
                flags.push((arg.clone(), Some(rest[i].clone())));
                i += 1;
            } else {
                flags.push((arg.clone(), None));
            }
        }

        let mut positionals = raw_positionals.into_iter().peekable();
        let subcommands: &[&str] = match persona {
            Persona::Codex => &["exec", "e"],
            Persona::OpenCode => &["run"],
            Persona::Claude | Persona::Plain => &[],
        };
        if positionals
            .peek()
            .is_some_and(|first| subcommands.contains(&first.as_str()))
        {
            positionals.next();
        }
        let mut resume_id = None;
        if persona == Persona::Codex && positionals.peek().is_some_and(|word| word == "resume") {
            positionals.next();
            resume_id = positionals.next();
        }

        let mut invocation = Invocation {
            argv: argv.to_vec(),
            persona,
            version,
            positionals: positionals.collect(),
            flags,
            resume_id,
            permission_prompt_tool: None,
        };
        if persona == Persona::Claude {
            invocation.permission_prompt_tool = invocation
                .flag(&["--permission-prompt-tool"])
                .map(str::to_owned);
        }
        Ok(invocation)
    }

    /// Claude's `--input-format stream-json`: the prompt is the first stdin line, a JSON
    /// `user` message, and stdin stays open for control responses.
    pub fn stream_json_input(&self) -> bool {
        self.persona == Persona::Claude && self.flag(&["--input-format"]) == Some("stream-json")
    }

    /// Whether permission requests go out on stdout as `control_request` lines and come
    /// back on stdin (`--permission-prompt-tool stdio` with `--input-format stream-json`).
    pub fn prompts_on_stdio(&self) -> bool {
        self.stream_json_input() && self.permission_prompt_tool.as_deref() == Some("stdio")
    }

    /// The value of the last occurrence of any of `names`.
    pub fn flag(&self, names: &[&str]) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(name, value)| value.is_some() && names.contains(&name.as_str()))
            .and_then(|(_, value)| value.as_deref())
    }

    /// Whether any of `names` was given.
    pub fn has(&self, names: &[&str]) -> bool {
        self.flags
            .iter()
            .any(|(name, _)| names.contains(&name.as_str()))
    }

    /// The working directory the CLI was told to use (`codex -C/--cd`, `opencode --dir`).
    pub fn workdir(&self) -> Option<&str> {
        match self.persona {
            Persona::Codex => self.flag(&["-C", "--cd"]),
            Persona::OpenCode => self.flag(&["--dir"]),
            Persona::Claude | Persona::Plain => None,
        }
    }

    /// The prompt given as an argument: the last positional, unless it is `-` (stdin).
    pub fn prompt_arg(&self) -> Option<&str> {
        self.positionals
            .last()
            .map(String::as_str)
            .filter(|arg| *arg != "-")
    }
}

/// Where the prompt came from, by the fake agent's rule: stdin when it was read and is not
/// empty, else the last positional argument, else `WEFT_PROMPT`. The flag is true when the
/// prompt came from stdin.
pub fn choose_prompt(
    stdin: Option<&str>,
    argument: Option<&str>,
    env: Option<&str>,
) -> (String, bool) {
    if let Some(text) = stdin.filter(|text| !text.is_empty()) {
        return (text.to_owned(), true);
    }
    let fallback = argument
        .filter(|text| !text.is_empty())
        .or(env)
        .unwrap_or_default();
    (fallback.to_owned(), false)
}

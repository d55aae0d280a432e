//! The approval policy (DESIGN §11): who may read outside the workspace or run a command the
//! research envelope does not cover, decided per *scope*, with every decision labelled by
//! where it came from.
//!
//! This is a state machine that front ends drive. Nothing here waits, reads a clock or
//! talks to a person: [`ApprovalPolicy::request`] either decides at once or parks the
//! request on an ask, and the front end later calls [`ApprovalPolicy::answer`],
//! [`ApprovalPolicy::expire`], [`ApprovalPolicy::attempt_ended`] or
//! [`ApprovalPolicy::reset`], each of which returns one [`Settlement`] per waiter it settled.
//!
//! # Scopes
//!
//! A decision is keyed on a [`Scope`], never on the exact request:
//!
//! * a **path** grants its directory: reading `/etc/hosts` asks about `path:/etc/*`, listing
//!   `/etc` asks about `path:/etc/*` too. Paths are normalised lexically (`.`, `..`, repeated
//!   `/`); `~` and symlinks are the caller's business (pass absolute, resolved paths). A path
//!   scope covers its directory **and everything below it**.
//! * a **command** grants its family: `git log --oneline` → `git log`, `az group list` →
//!   `az group`, `ls -la` → `ls`. Only known multiplexers (git, az, cargo, kubectl, …) get a
//!   subcommand; any other program is its own family, so `cat hosts` is `cat`. The line is
//!   split quote-aware; leading `NAME=value` assignments and transparent wrappers (`env`,
//!   `command`, `exec`, `nohup`, `time`, `nice`, `timeout`, `xargs`) are stripped, since they
//!   run the inner command as it is; `sudo`/`doas` are kept as a prefix (`sudo apt list` →
//!   `sudo apt`), because they change what the inner command may do. `sh -c '…'` is the
//!   script's families. A program is kept as written (`/usr/bin/git log` is not `git log`),
//!   so a workspace script named `git` is never covered by a grant for the real one.
//!   Pipelines, lists (`&&`, `;`, …) and command substitutions (`$(…)`, backticks) give one
//!   family per command, joined as one combined scope: `git log | head` →
//!   `command:git log + head`. Redirections are ignored.
//!
//! A derived command family matches only itself. A scope a person or operator typed (the
//! pre-approved list, or `--scope` on an answer) is taken as a word prefix: `command:git`
//! covers `git log` and `git push`.
//!
//! # Decision order
//!
//! 1. Pre-approved (every family of the scope is covered by the list) → allow,
//!    [`Source::PreApproved`]. Honoured in every mode, deny included.
//! 2. Remembered answer → that answer, [`Source::Remembered`]. Both yes and no are kept for
//!    the session. The most specific remembered scope wins (`path:/a/b/*` over `path:/a/*`);
//!    a combined command scope is allowed when each family is remembered as allowed and
//!    denied when any family is remembered as denied.
//! 3. Mode `allow`/`deny` → that, [`Source::Mode`]. Not remembered: a mode is a standing
//!    rule, so changing it with [`ApprovalPolicy::set_mode`] takes effect at once.
//! 4. No channel (nobody can be asked) → deny, [`Source::NoChannel`], not remembered.
//! 5. Otherwise ask: join the open ask for the same scope (one question per scope), or open
//!    a new one. The answer settles every waiter ([`Source::Asked`]) and is remembered.
//!
//! Planner waiters expire as denied [`PLANNER_ASK_TTL`] after their request
//! ([`Source::Expired`], not remembered: nobody said no); a runner's waiter waits for a
//! person. Expiry is per waiter, so a runner that joined a planner's ask keeps waiting.
//! Waiters whose attempt ended, or that were withdrawn, are denied with
//! [`Source::Withdrawn`]; a reset denies every waiter with [`Source::Reset`].
//!
//! # Ask ids
//!
//! Ask ids are a counter that never restarts, shown as a plain number (`3`). A reset records
//! the next id as its floor, so an answer to an id from before the reset is recognised and
//! refused with [`ApprovalError::Reset`], changing nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::Timestamp;

/// How long a planner waits on an ask before it is denied: five minutes, in ms.
pub const PLANNER_ASK_TTL: Timestamp = 5 * 60 * 1000;

/// What happens to a request that is neither pre-approved nor remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Ask a person; deny when nobody can be asked.
    #[default]
    Ask,
    /// Allow everything.
    Allow,
    /// Deny everything.
    Deny,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Ask, Mode::Allow, Mode::Deny];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Allow => "allow",
            Mode::Deny => "deny",
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text.trim())
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------------------

/// What a decision covers. Shown and stored as `path:DIR/*` or `command:FAMILY[ + FAMILY…]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Scope {
    /// A directory and everything below it. `dir` is normalised, without a trailing `/`
    /// (the root is `/`).
    Path { dir: String },
    /// One or more command families, in the order they appear, without duplicates.
    Command { families: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{text:?} is not a scope: expected path:DIR/* or command:FAMILY (e.g. path:/etc/*, command:git log)"
)]
pub struct ScopeParseError {
    pub text: String,
}

impl Scope {
    /// The scope of reading a file: its directory.
    pub fn for_read(path: &str) -> Scope {
        let mut parts = normalise(path);
        if parts.parts.last().is_some_and(|p| p != "..") {
            parts.parts.pop();
        } else if !parts.absolute {
            parts.parts.push("..".to_owned());
        }
        Scope::Path {
            dir: parts.render(),
        }
    }

    /// The scope of listing a directory: the directory itself.
    pub fn for_list(path: &str) -> Scope {
        Scope::Path {
            dir: normalise(path).render(),
        }
    }

    /// The scope of running a shell command line: its families.
    pub fn for_command(line: &str) -> Scope {
        let mut families = Vec::new();
        command_families(line, 0, &mut families);
        if families.is_empty() {
            families.push(collapse_spaces(line));
        }
        Scope::Command { families }
    }

    /// Parses `path:DIR/*` (the `/*` may be left off) or `command:FAMILY[ + FAMILY…]`.
    pub fn parse(text: &str) -> Result<Scope, ScopeParseError> {
        let error = || ScopeParseError {
            text: text.to_owned(),
        };
        let trimmed = text.trim();
        if let Some(rest) = trimmed.strip_prefix("path:") {
            let dir = rest.strip_suffix("/*").unwrap_or(rest);
            let dir = if dir.is_empty() && rest.starts_with('/') {
                "/"
            } else {
                dir
            };
            if dir.trim().is_empty() {
                return Err(error());
            }
            return Ok(Scope::for_list(dir));
        }
        if let Some(rest) = trimmed.strip_prefix("command:") {
            let mut families: Vec<String> = Vec::new();
            for part in rest.split(" + ") {
                let family = collapse_spaces(part);
                if family.is_empty() {
                    return Err(error());
                }
                if !families.contains(&family) {
                    families.push(family);
                }
            }
            return Ok(Scope::Command { families });
        }
        Err(error())
    }

    /// The parts a decision can be made about one by one: the directory, or each family.
    fn units(&self) -> Vec<Scope> {
        match self {
            Scope::Path { .. } => vec![self.clone()],
            Scope::Command { families } => families
                .iter()
                .map(|family| Scope::Command {
                    families: vec![family.clone()],
                })
                .collect(),
        }
    }

    /// Whether this single-unit scope covers `unit`, and how specifically (higher is more
    /// specific). `wide` makes a command family a word prefix.
    fn covers(&self, unit: &Scope, wide: bool) -> Option<usize> {
        match (self, unit) {
            (Scope::Path { dir }, Scope::Path { dir: other }) => {
                let inside = other == dir
                    || (dir == "/" && other.starts_with('/'))
                    || other
                        .strip_prefix(dir.as_str())
                        .is_some_and(|rest| rest.starts_with('/'));
                inside.then_some(dir.len())
            }
            (Scope::Command { families }, Scope::Command { families: other }) => {
                let [other] = other.as_slice() else {
                    return None;
                };
                families
                    .iter()
                    .filter_map(|family| {
                        if family == other {
                            // An exact match beats any prefix.
                            Some(usize::MAX)
                        } else if wide
                            && other
                                .strip_prefix(family.as_str())
                                .is_some_and(|rest| rest.starts_with(' '))
                        {
                            Some(family.len())
                        } else {
                            None
                        }
                    })
                    .max()
            }
            _ => None,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Path { dir } if dir == "/" => f.write_str("path:/*"),
            Scope::Path { dir } => write!(f, "path:{dir}/*"),
            Scope::Command { families } => write!(f, "command:{}", families.join(" + ")),
        }
    }
}

impl FromStr for Scope {
    type Err = ScopeParseError;

    fn from_str(text: &str) -> Result<Scope, ScopeParseError> {
        Scope::parse(text)
    }
}

impl TryFrom<String> for Scope {
    type Error = ScopeParseError;

    fn try_from(text: String) -> Result<Scope, ScopeParseError> {
        Scope::parse(&text)
    }
}

impl From<Scope> for String {
    fn from(scope: Scope) -> String {
        scope.to_string()
    }
}

struct NormalPath {
    absolute: bool,
    parts: Vec<String>,
}

impl NormalPath {
    fn render(&self) -> String {
        match (self.absolute, self.parts.is_empty()) {
            (true, _) => format!("/{}", self.parts.join("/")),
            (false, true) => ".".to_owned(),
            (false, false) => self.parts.join("/"),
        }
    }
}

fn normalise(path: &str) -> NormalPath {
    let path = path.trim();
    let absolute = path.starts_with('/');
    let mut parts: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..".to_owned());
                }
            }
            other => parts.push(other.to_owned()),
        }
    }
    NormalPath { absolute, parts }
}

fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ---------------------------------------------------------------------------------------
// Command families
// ---------------------------------------------------------------------------------------

/// How deep `sh -c` and `$(…)` nesting is followed; beyond it the rest is one family.
const MAX_NESTING: usize = 8;

/// Programs whose first non-option argument names what they do.
const MULTIPLEXERS: &[&str] = &[
    "git",
    "gh",
    "glab",
    "az",
    "aws",
    "gcloud",
    "gsutil",
    "kubectl",
    "oc",
    "helm",
    "docker",
    "podman",
    "cargo",
    "rustup",
    "npm",
    "pnpm",
    "yarn",
    "npx",
    "bun",
    "bunx",
    "deno",
    "go",
    "pip",
    "pip3",
    "pipx",
    "uv",
    "uvx",
    "poetry",
    "conda",
    "brew",
    "apt",
    "apt-get",
    "dnf",
    "yum",
    "pacman",
    "systemctl",
    "terraform",
    "make",
    "just",
    "nix",
    "dotnet",
    "mvn",
    "gradle",
    "bundle",
    "gem",
    "composer",
    "jj",
    "hg",
    "svn",
    "tmux",
    "heroku",
    "vercel",
    "fly",
    "flyctl",
    "doctl",
    "firebase",
];

/// Wrappers that run the rest of the line as it is, with the options that take a value.
const TRANSPARENT: &[(&str, &[&str])] = &[
    ("env", &["-u", "-C", "--unset", "--chdir"]),
    ("command", &[]),
    ("builtin", &[]),
    ("exec", &["-a"]),
    ("nohup", &[]),
    ("time", &["-f", "-o", "--format", "--output"]),
    ("nice", &["-n", "--adjustment"]),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"]),
    (
        "xargs",
        &[
            "-I",
            "-n",
            "-P",
            "-d",
            "-a",
            "-L",
            "-s",
            "-E",
            "--max-args",
            "--max-procs",
        ],
    ),
];

/// Wrappers that change what the inner command may do: kept as a prefix.
const PRIVILEGED: &[(&str, &[&str])] = &[
    (
        "sudo",
        &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
        ],
    ),
    ("doas", &["-u", "-C"]),
];

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh"];

/// Shell words that start a segment without being a command.
const LEADING_KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "done", "fi", "esac",
];

/// Shell words that start a segment holding no command at all.
const HEADER_KEYWORDS: &[&str] = &["for", "case", "select", "function"];

/// Global options that take a value, per multiplexer.
fn value_options(program: &str) -> &'static [&'static str] {
    match program {
        "git" => &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--config-env",
        ],
        "kubectl" | "oc" | "helm" => &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "--cluster",
            "--user",
            "-s",
            "--server",
        ],
        "docker" | "podman" => &["-H", "--host", "-c", "--context", "--config", "-l"],
        "npm" | "pnpm" | "yarn" => &["--prefix", "-C", "--dir", "--filter", "-F", "--cwd"],
        "aws" => &["--profile", "--region", "--endpoint-url", "--output"],
        "gcloud" => &["--project", "--account", "--configuration"],
        "cargo" => &["-Z", "--config", "--color", "-C"],
        "go" => &["-C"],
        "make" => &["-C", "-f", "-I", "-o", "-W", "--directory", "--file"],
        "tmux" => &["-L", "-S", "-f", "-c"],
        _ => &[],
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// `|`, `&`, `;`, `(`, `)` or a newline: the end of one command.
    Separator,
    /// A redirection whose target is the next word.
    Redirect,
}

/// Adds the families of `line` to `out`, in order, skipping duplicates.
fn command_families(line: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_NESTING {
        push_unique(out, collapse_spaces(line));
        return;
    }
    let mut substitutions = Vec::new();
    let tokens = lex(line, &mut substitutions);
    let mut segment: Vec<String> = Vec::new();
    let mut skip_target = false;
    for token in tokens.into_iter().chain([Token::Separator]) {
        match token {
            Token::Word(_) if skip_target => skip_target = false,
            Token::Word(word) => segment.push(word),
            Token::Redirect => skip_target = true,
            Token::Separator => {
                skip_target = false;
                segment_families(&segment, depth, out);
                segment.clear();
            }
        }
    }
    for inner in substitutions {
        command_families(&inner, depth + 1, out);
    }
}

fn push_unique(out: &mut Vec<String>, family: String) {
    if !family.is_empty() && !out.contains(&family) {
        out.push(family);
    }
}

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_subcommand(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Index of the first word after the options of a wrapper, given the options that take a
/// value. `--opt=value` and clustered short flags are one word.
fn skip_options(words: &[String], mut index: usize, with_value: &[&str]) -> usize {
    while let Some(word) = words.get(index) {
        if word == "--" {
            return index + 1;
        }
        if !word.starts_with('-') || word == "-" {
            break;
        }
        index += if with_value.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    index
}

fn segment_families(words: &[String], depth: usize, out: &mut Vec<String>) {
    let mut index = 0;
    while let Some(word) = words.get(index) {
        if is_assignment(word) || LEADING_KEYWORDS.contains(&word.as_str()) {
            index += 1;
        } else {
            break;
        }
    }
    let Some(program) = words.get(index) else {
        return;
    };
    if HEADER_KEYWORDS.contains(&program.as_str()) {
        return;
    }
    let rest = &words[index..];
    if let Some((_, options)) = TRANSPARENT.iter().find(|(name, _)| name == program) {
        let mut inner = skip_options(rest, 1, options);
        if program == "env" {
            while rest.get(inner).is_some_and(|w| is_assignment(w)) {
                inner += 1;
            }
        }
        if program == "timeout" && inner < rest.len() {
            inner += 1; // the duration
        }
        if inner < rest.len() {
            segment_families(&rest[inner..], depth, out);
        } else {
            push_unique(out, program.clone());
        }
        return;
    }
    if let Some((_, options)) = PRIVILEGED.iter().find(|(name, _)| name == program) {
        let inner = skip_options(rest, 1, options);
        let mut families = Vec::new();
        if inner < rest.len() {
            segment_families(&rest[inner..], depth, &mut families);
        }
        if families.is_empty() {
            push_unique(out, program.clone());
        }
        for family in families {
            push_unique(out, format!("{program} {family}"));
        }
        return;
    }
    if SHELLS.contains(&program.as_str()) {
        let mut at = 1;
        let mut script = false;
        while let Some(word) = rest.get(at) {
            if word.starts_with('-') && !word.starts_with("--") {
                script |= word.contains('c');
                at += 1;
            } else if word.starts_with("--") {
                at += 1;
            } else {
                break;
            }
        }
        match rest.get(at) {
            Some(body) if script => command_families(body, depth + 1, out),
            _ => push_unique(out, program.clone()),
        }
        return;
    }
    if MULTIPLEXERS.contains(&program.as_str()) {
        let options = value_options(program);
        let mut at = 1;
        while let Some(word) = rest.get(at) {
            if word.starts_with('-') || word.starts_with('+') {
                at += if options.contains(&word.as_str()) {
                    2
                } else {
                    1
                };
            } else {
                break;
            }
        }
        match rest.get(at) {
            Some(sub) if is_subcommand(sub) => push_unique(out, format!("{program} {sub}")),
            _ => push_unique(out, program.clone()),
        }
        return;
    }
    push_unique(out, program.clone());
}

/// Splits a shell line into words, separators and redirections. Quotes and backslashes are
/// honoured; the bodies of `$(…)` and backticks are kept in the word (so a program made by a
/// substitution shows as such) and also returned in `substitutions`.
fn lex(line: &str, substitutions: &mut Vec<String>) -> Vec<Token> {
    let chars: Vec<char> = line.chars().collect();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => {
                flush(&mut word, &mut in_word, &mut tokens);
                i += 1;
            }
            '\n' | ';' | '|' | '(' | ')' => {
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Separator);
                i += 1;
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                flush(&mut word, &mut in_word, &mut tokens);
                i = redirection(&chars, i + 1, &mut tokens);
            }
            '&' => {
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Separator);
                i += 1;
            }
            '<' | '>' => {
                if in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                flush(&mut word, &mut in_word, &mut tokens);
                i = redirection(&chars, i, &mut tokens);
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    match chars[i] {
                        '\\' if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                            word.push(chars[i + 1]);
                            i += 2;
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            i = substitution(&chars, i, &mut word, substitutions);
                        }
                        '`' => i = backtick(&chars, i, &mut word, substitutions),
                        other => {
                            word.push(other);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            '\\' => {
                in_word = true;
                if let Some(&next) = chars.get(i + 1)
                    && next != '\n'
                {
                    word.push(next);
                }
                i += 2;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                in_word = true;
                i = substitution(&chars, i, &mut word, substitutions);
            }
            '`' => {
                in_word = true;
                i = backtick(&chars, i, &mut word, substitutions);
            }
            other => {
                in_word = true;
                word.push(other);
                i += 1;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut tokens);
    tokens
}

/// Reads a redirection operator starting at `start` (a `<` or `>`); returns the next index.
fn redirection(chars: &[char], start: usize, tokens: &mut Vec<Token>) -> usize {
    let mut i = start;
    while i < chars.len() && matches!(chars[i], '<' | '>' | '|') {
        i += 1;
    }
    if chars.get(i) == Some(&'&') {
        i += 1;
        if i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '-') {
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '-') {
                i += 1;
            }
            return i;
        }
    }
    tokens.push(Token::Redirect);
    i
}

/// Reads `$(…)` starting at the `$`; returns the index after the closing `)`.
fn substitution(
    chars: &[char],
    start: usize,
    word: &mut String,
    substitutions: &mut Vec<String>,
) -> usize {
    let mut i = start + 2;
    let mut depth = 1;
    let mut body = String::new();
    let mut quote: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        body.push(c);
        i += 1;
    }
    word.push_str("$(");
    word.push_str(&body);
    word.push(')');
    substitutions.push(body);
    i + 1
}

/// Reads a backtick substitution starting at the opening backtick.
fn backtick(
    chars: &[char],
    start: usize,
    word: &mut String,
    substitutions: &mut Vec<String>,
) -> usize {
    let mut i = start + 1;
    let mut body = String::new();
    while i < chars.len() && chars[i] != '`' {
        if chars[i] == '\\' && i + 1 < chars.len() {
            body.push(chars[i + 1]);
            i += 2;
        } else {
            body.push(chars[i]);
            i += 1;
        }
    }
    word.push('`');
    word.push_str(&body);
    word.push('`');
    substitutions.push(body);
    i + 1
}

// ---------------------------------------------------------------------------------------
// Requests, decisions, asks
// ---------------------------------------------------------------------------------------

/// What is being asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Subject {
    /// Reading a file outside the workspace, or a `.env*` file inside it.
    Read { path: String },
    /// Listing a directory outside the workspace.
    List { path: String },
    /// Running a command line.
    Command { line: String },
}

impl Subject {
    pub fn scope(&self) -> Scope {
        match self {
            Subject::Read { path } => Scope::for_read(path),
            Subject::List { path } => Scope::for_list(path),
            Subject::Command { line } => Scope::for_command(line),
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Read { path } => write!(f, "read {path}"),
            Subject::List { path } => write!(f, "list {path}"),
            Subject::Command { line } => write!(f, "run {line}"),
        }
    }
}

/// Who is waiting on the answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Asker {
    /// The planner's research loop: its waits expire after [`PLANNER_ASK_TTL`].
    Planner,
    /// A task runner's permission request: waits for a person until its attempt ends.
    Runner { attempt: String },
}

/// One request for approval.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Request {
    pub subject: Subject,
    pub asker: Asker,
}

impl Request {
    pub fn new(subject: Subject, asker: Asker) -> Request {
        Request { subject, asker }
    }

    pub fn scope(&self) -> Scope {
        self.subject.scope()
    }
}

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The pre-approved list (honoured in every mode).
    PreApproved,
    /// An earlier answer for this scope, in this session.
    Remembered,
    /// The `allow` or `deny` mode.
    Mode,
    /// A person answered this ask.
    Asked,
    /// Nobody could be asked.
    NoChannel,
    /// A planner's wait ran past [`PLANNER_ASK_TTL`]; denied, not remembered.
    Expired,
    /// The waiter went away (its attempt ended, or it was withdrawn); denied, not remembered.
    Withdrawn,
    /// The approvals were reset while it waited; denied, not remembered.
    Reset,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::PreApproved => "pre-approved",
            Source::Remembered => "remembered",
            Source::Mode => "mode",
            Source::Asked => "asked",
            Source::NoChannel => "no-channel",
            Source::Expired => "expired",
            Source::Withdrawn => "withdrawn",
            Source::Reset => "reset",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A settled request: allowed or not, about which scope, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub scope: Scope,
    pub allowed: bool,
    pub source: Source,
    pub decided_at: Timestamp,
}

impl Decision {
    /// How logs and lists show it: `allowed (asked)`, `denied (no-channel)`.
    pub fn label(&self) -> String {
        format!(
            "{} ({})",
            if self.allowed { "allowed" } else { "denied" },
            self.source
        )
    }
}

/// An open question, shown as a plain number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AskId(pub u64);

impl fmt::Display for AskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for AskId {
    type Err = std::num::ParseIntError;

    /// Accepts `3` or `#3`.
    fn from_str(text: &str) -> Result<AskId, Self::Err> {
        let text = text.trim();
        text.strip_prefix('#').unwrap_or(text).parse().map(AskId)
    }
}

/// One request waiting on an ask; the front end maps it to whoever is blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WaiterId(pub u64);

impl fmt::Display for WaiterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}", self.0)
    }
}

/// What [`ApprovalPolicy::request`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Decided(Decision),
    /// Parked on `ask` (new or joined); settled later as `waiter`.
    Pending {
        ask: AskId,
        waiter: WaiterId,
    },
}

/// A waiter's request, settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlement {
    pub ask: AskId,
    pub waiter: WaiterId,
    pub request: Request,
    pub decision: Decision,
}

/// One waiter on an open ask, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaiterView {
    pub waiter: WaiterId,
    pub request: Request,
    pub requested_at: Timestamp,
    /// When a planner waiter is denied; `None` for a runner.
    pub expires_at: Option<Timestamp>,
}

/// An open ask, for `weft approvals [--json]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskView {
    pub id: AskId,
    pub scope: Scope,
    /// The request that opened the ask.
    pub subject: Subject,
    pub created_at: Timestamp,
    /// When the ask closes by itself (every waiter is a planner); `None` if a runner waits.
    pub expires_at: Option<Timestamp>,
    pub waiters: Vec<WaiterView>,
}

/// A remembered answer, for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedView {
    pub scope: Scope,
    pub allowed: bool,
    /// Taken as a prefix (a person typed the scope) rather than matched exactly.
    pub wide: bool,
    pub decided_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ApprovalError {
    #[error(
        "ask {ask} was opened before the approvals were reset (reset {resets}); the answer was not recorded"
    )]
    Reset { ask: AskId, resets: u32 },
    #[error("ask {ask} is already settled")]
    Settled { ask: AskId },
    #[error("there is no ask {ask}")]
    Unknown { ask: AskId },
    #[error("scope {scope} does not cover {asked}, the scope ask {ask} is about")]
    ScopeTooNarrow {
        ask: AskId,
        scope: Scope,
        asked: Scope,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Waiter {
    id: WaiterId,
    request: Request,
    requested_at: Timestamp,
    expires_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ask {
    scope: Scope,
    subject: Subject,
    created_at: Timestamp,
    waiters: Vec<Waiter>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Answer {
    allowed: bool,
    wide: bool,
    decided_at: Timestamp,
}

/// The session's approval state. See the module docs for the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPolicy {
    mode: Mode,
    pre_approved: Vec<Scope>,
    channel: bool,
    remembered: BTreeMap<Scope, Answer>,
    asks: BTreeMap<AskId, Ask>,
    next_ask: u64,
    next_waiter: u64,
    /// Ask ids below this were opened before the last reset.
    reset_floor: u64,
    resets: u32,
}

impl ApprovalPolicy {
    /// A policy with no channel: call [`ApprovalPolicy::set_channel`] once a person can be
    /// asked, so a front end that forgets denies rather than waits.
    pub fn new(mode: Mode, pre_approved: Vec<Scope>) -> ApprovalPolicy {
        ApprovalPolicy {
            mode,
            pre_approved,
            channel: false,
            remembered: BTreeMap::new(),
            asks: BTreeMap::new(),
            next_ask: 1,
            next_waiter: 1,
            reset_floor: 1,
            resets: 0,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Takes effect for the next request; open asks are left as they are.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    pub fn pre_approved(&self) -> &[Scope] {
        &self.pre_approved
    }

    pub fn channel(&self) -> bool {
        self.channel
    }

    /// Whether a person can be asked. Affects new requests only: open asks can still be
    /// answered (from another terminal), and planner waits still expire.
    pub fn set_channel(&mut self, available: bool) {
        self.channel = available;
    }

    /// How many times the policy has been reset.
    pub fn resets(&self) -> u32 {
        self.resets
    }

    /// Decides `request` now, or parks it on an ask.
    pub fn request(&mut self, request: Request, now: Timestamp) -> Outcome {
        let scope = request.scope();
        let decided = |allowed, source| {
            Outcome::Decided(Decision {
                scope: scope.clone(),
                allowed,
                source,
                decided_at: now,
            })
        };
        if self.is_pre_approved(&scope) {
            return decided(true, Source::PreApproved);
        }
        if let Some(allowed) = self.recall(&scope) {
            return decided(allowed, Source::Remembered);
        }
        match self.mode {
            Mode::Allow => return decided(true, Source::Mode),
            Mode::Deny => return decided(false, Source::Mode),
            Mode::Ask => {}
        }
        if !self.channel {
            return decided(false, Source::NoChannel);
        }
        let waiter = Waiter {
            id: WaiterId(self.next_waiter),
            expires_at: match request.asker {
                Asker::Planner => Some(now.saturating_add(PLANNER_ASK_TTL)),
                Asker::Runner { .. } => None,
            },
            request,
            requested_at: now,
        };
        self.next_waiter += 1;
        let waiter_id = waiter.id;
        if let Some((&id, ask)) = self.asks.iter_mut().find(|(_, ask)| ask.scope == scope) {
            ask.waiters.push(waiter);
            return Outcome::Pending {
                ask: id,
                waiter: waiter_id,
            };
        }
        let id = AskId(self.next_ask);
        self.next_ask += 1;
        self.asks.insert(
            id,
            Ask {
                scope,
                subject: waiter.request.subject.clone(),
                created_at: now,
                waiters: vec![waiter],
            },
        );
        Outcome::Pending {
            ask: id,
            waiter: waiter_id,
        }
    }

    /// A person's answer to `ask`. It is remembered for the ask's scope, or for `scope` when
    /// given (which must cover the ask's scope, and is then taken as a prefix), and settles
    /// every waiter on the ask, plus any other open ask the remembered answer now decides.
    /// An id from before a reset, an id already settled or an unknown id is refused and
    /// changes nothing.
    pub fn answer(
        &mut self,
        ask: AskId,
        allow: bool,
        scope: Option<Scope>,
        now: Timestamp,
    ) -> Result<Vec<Settlement>, ApprovalError> {
        let Some(open) = self.asks.get(&ask) else {
            return Err(if ask.0 == 0 || ask.0 >= self.next_ask {
                ApprovalError::Unknown { ask }
            } else if ask.0 < self.reset_floor {
                ApprovalError::Reset {
                    ask,
                    resets: self.resets,
                }
            } else {
                ApprovalError::Settled { ask }
            });
        };
        let (remember, wide) = match scope {
            None => (open.scope.clone(), false),
            Some(scope) => {
                let covered = open
                    .scope
                    .units()
                    .iter()
                    .all(|unit| scope.units().iter().any(|s| s.covers(unit, true).is_some()));
                if !covered {
                    return Err(ApprovalError::ScopeTooNarrow {
                        ask,
                        scope,
                        asked: open.scope.clone(),
                    });
                }
                (scope, true)
            }
        };
        let answered = self.asks.remove(&ask).into_iter().flat_map(|open| {
            let scope = open.scope;
            open.waiters
                .into_iter()
                .map(move |waiter| (scope.clone(), waiter))
        });
        let mut settled: Vec<Settlement> = answered
            .map(|(scope, waiter)| settle(ask, waiter, scope, allow, Source::Asked, now))
            .collect();
        self.remembered.insert(
            remember,
            Answer {
                allowed: allow,
                wide,
                decided_at: now,
            },
        );
        // Other open asks the remembered answer now decides.
        let decided: Vec<(AskId, bool)> = self
            .asks
            .iter()
            .filter_map(|(&id, open)| self.recall(&open.scope).map(|allowed| (id, allowed)))
            .collect();
        for (id, allowed) in decided {
            if let Some(open) = self.asks.remove(&id) {
                for waiter in open.waiters {
                    settled.push(settle(
                        id,
                        waiter,
                        open.scope.clone(),
                        allowed,
                        Source::Remembered,
                        now,
                    ));
                }
            }
        }
        Ok(settled)
    }

    /// Denies every planner waiter whose time is up (`expires_at <= now`). An ask left with
    /// no waiters closes.
    pub fn expire(&mut self, now: Timestamp) -> Vec<Settlement> {
        self.drop_waiters(now, Source::Expired, |waiter| {
            waiter.expires_at.is_some_and(|at| at <= now)
        })
    }

    /// The earliest time [`ApprovalPolicy::expire`] has something to do, for a timer.
    pub fn next_expiry(&self) -> Option<Timestamp> {
        self.asks
            .values()
            .flat_map(|ask| ask.waiters.iter().filter_map(|w| w.expires_at))
            .min()
    }

    /// Denies the open requests of a task attempt that ended.
    pub fn attempt_ended(&mut self, attempt: &str, now: Timestamp) -> Vec<Settlement> {
        self.drop_waiters(
            now,
            Source::Withdrawn,
            |waiter| matches!(&waiter.request.asker, Asker::Runner { attempt: a } if a == attempt),
        )
    }

    /// Denies the planner's open requests (its turn was aborted).
    pub fn planner_stopped(&mut self, now: Timestamp) -> Vec<Settlement> {
        self.drop_waiters(now, Source::Withdrawn, |waiter| {
            waiter.request.asker == Asker::Planner
        })
    }

    /// Denies one waiter whose requester withdrew it; `None` if it is not waiting.
    pub fn withdraw(&mut self, waiter: WaiterId, now: Timestamp) -> Option<Settlement> {
        self.drop_waiters(now, Source::Withdrawn, |w| w.id == waiter)
            .pop()
    }

    /// Drops every remembered answer and every open ask (its waiters are denied with
    /// [`Source::Reset`]); answers to asks opened before now are refused from here on.
    pub fn reset(&mut self, now: Timestamp) -> Vec<Settlement> {
        self.remembered.clear();
        self.resets += 1;
        self.reset_floor = self.next_ask;
        std::mem::take(&mut self.asks)
            .into_iter()
            .flat_map(|(id, ask)| {
                let scope = ask.scope;
                ask.waiters
                    .into_iter()
                    .map(move |waiter| settle(id, waiter, scope.clone(), false, Source::Reset, now))
            })
            .collect()
    }

    /// The open asks, oldest first.
    pub fn open_asks(&self) -> Vec<AskView> {
        self.asks
            .iter()
            .map(|(&id, ask)| {
                let expires_at = ask
                    .waiters
                    .iter()
                    .map(|w| w.expires_at)
                    .collect::<Option<Vec<_>>>()
                    .and_then(|all| all.into_iter().max());
                AskView {
                    id,
                    scope: ask.scope.clone(),
                    subject: ask.subject.clone(),
                    created_at: ask.created_at,
                    expires_at,
                    waiters: ask
                        .waiters
                        .iter()
                        .map(|w| WaiterView {
                            waiter: w.id,
                            request: w.request.clone(),
                            requested_at: w.requested_at,
                            expires_at: w.expires_at,
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// The answers remembered this session.
    pub fn remembered(&self) -> Vec<RememberedView> {
        self.remembered
            .iter()
            .map(|(scope, answer)| RememberedView {
                scope: scope.clone(),
                allowed: answer.allowed,
                wide: answer.wide,
                decided_at: answer.decided_at,
            })
            .collect()
    }

    /// Whether every part of `scope` is covered by the pre-approved list.
    pub fn is_pre_approved(&self, scope: &Scope) -> bool {
        scope.units().iter().all(|unit| {
            self.pre_approved
                .iter()
                .flat_map(Scope::units)
                .any(|entry| entry.covers(unit, true).is_some())
        })
    }

    /// The remembered answer that decides `scope`, if any.
    fn recall(&self, scope: &Scope) -> Option<bool> {
        if let Some(answer) = self.remembered.get(scope) {
            return Some(answer.allowed);
        }
        let mut all_allowed = true;
        for unit in scope.units() {
            let best = self
                .remembered
                .iter()
                // A combined scope was one answer about all of it together: it decides only
                // that exact scope, never one of its parts.
                .filter(|(entry, _)| !matches!(entry, Scope::Command { families } if families.len() > 1))
                .filter_map(|(entry, answer)| {
                    entry
                        .covers(&unit, answer.wide)
                        .map(|specificity| (specificity, answer.allowed))
                })
                // Equally specific: a no wins.
                .max_by_key(|&(specificity, allowed)| (specificity, !allowed));
            match best {
                Some((_, false)) => return Some(false),
                Some((_, true)) => {}
                None => all_allowed = false,
            }
        }
        all_allowed.then_some(true)
    }

    fn drop_waiters(
        &mut self,
        now: Timestamp,
        source: Source,
        mut matches: impl FnMut(&Waiter) -> bool,
    ) -> Vec<Settlement> {
        let mut settled = Vec::new();
        for (&id, ask) in &mut self.asks {
            let (gone, kept): (Vec<Waiter>, Vec<Waiter>) = std::mem::take(&mut ask.waiters)
                .into_iter()
                .partition(&mut matches);
            ask.waiters = kept;
            for waiter in gone {
                settled.push(settle(id, waiter, ask.scope.clone(), false, source, now));
            }
        }
        self.asks.retain(|_, ask| !ask.waiters.is_empty());
        settled
    }
}

fn settle(
    ask: AskId,
    waiter: Waiter,
    scope: Scope,
    allowed: bool,
    source: Source,
    now: Timestamp,
) -> Settlement {
    Settlement {
        ask,
        waiter: waiter.id,
        request: waiter.request,
        decision: Decision {
            scope,
            allowed,
            source,
            decided_at: now,
        },
    }
}

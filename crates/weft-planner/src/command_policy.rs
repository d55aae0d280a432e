//! The command policy of the read-only research envelope (issue 6, item 3; DESIGN §10).
//!
//! [`classify`] decides, before anything runs, what happens to a `run_command` line the
//! planner model asked for:
//!
//! * [`Classification::ReadOnly`]: it only reads inside the workspace; it runs.
//! * [`Classification::Refused`]: it could write, delete, run arbitrary code, reach the
//!   network, or do something the policy cannot fully analyse. It never runs and never
//!   prompts; the reason is handed back to the model as the tool result, phrased so the model
//!   can choose a different command.
//! * [`Classification::NeedsApproval`]: it only reads, but it names paths outside the
//!   workspace (absolute paths, `..` escapes, `~`) or `.env*` files inside it. The caller
//!   sends each [`PathAccess`] through the approval policy (`weft_core::approval`), whose
//!   scope text [`PathAccess::scope`] produces (`path:DIR/*`).
//!
//! The classifier is pure: it spawns nothing and, unless [`Envelope::follow_symlinks`] is
//! set, reads nothing. It parses the line with its own quote-aware shell lexer and parser and
//! classifies **every** simple command in it (lists, pipelines, subshells, `sh -c` scripts,
//! `find -exec` and `xargs` commands). A line is refused as a whole when any part is refused,
//! needs approval when any part does, and is read-only only when every part is.
//!
//! # Decisions
//!
//! * **Allow-list, never deny-list.** A program runs only if it is on the read-only list
//!   below and every flag and argument passes its check. Unknown programs, programs named by
//!   path (`./x`, `/bin/cat`) and unknown subcommands are refused. (Ordewell's classifier was a
//!   deny-list in front of a real `sh`, §14 item 22.) Within an allowed program, the flags
//!   known to write, execute or follow symlinks are refused; GNU long-option abbreviations are
//!   caught by prefix (`sort --out=x` is `--output`).
//! * **Expansions are refused.** Command substitution (`$(…)`, backticks), process
//!   substitution (`<(…)`, `>(…)`), parameter and arithmetic expansion (`$HOME`, `${IFS}`,
//!   `$((…))`), `$'…'` quoting and brace expansion (`{a,b}`, `{1..3}`) all produce words the
//!   policy cannot see before they run, so it cannot check their paths. The model is told to
//!   run the inner command on its own or write the value literally. Inside single quotes, or
//!   escaped, `$` and backticks are plain text, and quoted operators (`echo ';rm x'`) are just
//!   text.
//! * **Redirections.** Any output redirection to a file is a write and is refused, even
//!   inside the workspace; `/dev/null`, `/dev/stdout`, `/dev/stderr` and descriptor
//!   duplication (`2>&1`, `>&2`) are fine. Input redirection (`< file`) is a read of that
//!   path. Here-documents are fine when their delimiter is quoted or their body expands
//!   nothing. `<>` is refused.
//! * **Shell syntax.** `;`, `&&`, `||`, `|`, `|&`, newlines, comments and `( … )` subshells
//!   are parsed and every part classified; `cd` is tracked so later relative paths resolve
//!   against both the old and the new directory. Background jobs (`&`) are refused (they
//!   outlive the tool call), as are control-flow keywords (`if`, `for`, `while`, `{ …; }`,
//!   `!`, …), functions, `eval`, `exec`, `source`, `.` and builtins that change later
//!   commands (`export`, `alias`, `set`, …). `sh -c`/`bash -c` scripts are parsed and
//!   classified recursively (depth-limited); a shell without `-c` (a script file, stdin) is
//!   refused.
//! * **Environment.** Assignments (`FOO=1 cmd`, `env FOO=1 cmd`) are allowed only for locale,
//!   timezone and colour variables; anything else (`PATH`, `IFS`, `GIT_*`, `LD_*`, `PAGER`, …)
//!   can change what a program runs and is refused. Bare `env`/`printenv` print secrets and
//!   are refused, as are `jq`/`yq`/`awk` programs that read the environment.
//! * **Builds write.** `cargo build/check/test/run/clippy/…`, `make`, compilers and package
//!   managers are refused: they write `target/`-like directories and lock files and run build
//!   scripts, proc macros and package scripts, which is arbitrary code. Read-only queries are
//!   allowed: `cargo metadata --no-deps` (without `--no-deps` it may resolve, write
//!   `Cargo.lock` and reach the network), `cargo locate-project`, `npm ls`,
//!   `pip list/show/freeze`, `go version`/`go env`, and `--version` of toolchains.
//! * **Network is refused**, not sent for approval: `curl`, `wget`, `ssh`, `nc`, … are an
//!   exfiltration channel a prompt-injected file could use and have writing flags of their
//!   own; web reads belong to a dedicated fetch tool with its own guard and approval scope.
//! * **Interactive programs** (editors, pagers, `top`, `man`, …) are refused.
//! * **`git`**: read-only subcommands (`log`, `show`, `diff`, `status`, `blame`, `grep`,
//!   `ls-files`, `rev-parse`, …) are allowed, with `--output`, `--ext-diff` and
//!   `--open-files-in-pager` refused; `branch`, `tag`, `stash`, `remote`, `worktree`, `reflog`
//!   and `config` only in their listing forms (`git config --get/--list` without `--local`
//!   also reads `~/.gitconfig` and `/etc/gitconfig`, so it asks); everything else (commit, push, reset,
//!   checkout, switch, merge, rebase, clean, fetch, …) is refused. `git -C DIR`,
//!   `--git-dir` and `--work-tree` are path-checked; `git -c`/`--config-env`/`--exec-path`
//!   are refused (they can set a pager, alias or hook that runs a program).
//! * **`find`**: every primary is known; `-delete`, `-fprint*`, `-fls` are refused; `-exec`,
//!   `-execdir`, `-ok`, `-okdir` classify the command they run (a `{}` inside a larger word is
//!   refused: a file name could inject shell syntax); `-L`/`-H`/`-follow` are refused
//!   (following symlinks can leave the workspace).
//! * **`xargs CMD`** classifies `CMD` (default `echo`); the extra arguments come from stdin,
//!   so `xargs` is read-only only when its input is known to be workspace paths: the output
//!   of `find`, `fd`, `git ls-files`, `rg --files`/`-l` or `grep -l`, possibly through
//!   line filters (`sort`, `uniq`, `head`, `tail`, `grep PATTERN`), or nothing at all (the
//!   research tool runs commands with empty stdin). Anything else (`cat list | xargs cat`,
//!   `xargs cat < list`) is refused.
//! * **`sed`** is allowed without `-i`/`--in-place`/`-f`; its script is parsed and `w`, `W`,
//!   `e` and the `s///w`/`s///e` flags are refused; `r`/`R` files are path-checked.
//!   **`awk`** programs are scanned: `system`, `getline`, `ENVIRON`, pipes (`| "cmd"`) and
//!   output redirection inside `print`/`printf` are refused, as are `-f`, `-i`, `-l`, `-E`.
//!
//! # Paths
//!
//! Every argument that may be a path is resolved lexically against the current directory
//! (the workspace, or where `cd`/`git -C`/`env -C` moved to). A path outside the workspace
//! needs approval: reading a file asks about its directory, listing a directory (`ls`, `cd`,
//! `find`, `tree`, `du`, `git -C`) asks about the directory itself (the same rules as
//! `weft_core::approval::Scope::for_read`/`for_list`). A glob component that could match
//! `..` (`.*`) counts as `..`. `~` is expanded with [`Envelope::home`] when set, and is
//! otherwise kept literally in the path (always outside). Reading a `.env*` file inside the
//! workspace (named literally or by a glob that could match one, e.g. `.e*`) also needs
//! approval; listing or stat-ing one does not.
//!
//! # Limits
//!
//! * The check is lexical: a symlink inside the workspace that points outward is invisible
//!   unless [`Envelope::follow_symlinks`] is set, in which case every named path is resolved
//!   through the filesystem (the longest existing prefix is canonicalised). Recursive tools do
//!   not follow symlinks by default, and the flags that make them do so are refused.
//! * Recursive reads (`grep -r`, `rg -uu`, `find . -exec cat {} +`) can read `.env` files the
//!   line never names. Only named paths are checked; the research log's secret masking is the
//!   second line of defence.
//! * The executor must run commands with empty stdin, without a terminal (no pagers) and with
//!   a scrubbed environment (`RIPGREP_CONFIG_PATH`, `GIT_*`, `PAGER`, `BASH_ENV`): the policy
//!   classifies the line, not the environment it runs in. Repository configuration
//!   (`.git/config`, `.gitattributes` diff drivers, `core.fsmonitor`, `.cargo/config.toml`) is trusted as part of the
//!   user's workspace.
//! * File names produced by `find` and read by `xargs` are assumed not to contain newlines or
//!   start with `-`; `find -print0 | xargs -0` is the robust form.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How deep `sh -c`, subshells, `find -exec` and `xargs` nesting is followed before the line
/// is refused.
const MAX_DEPTH: usize = 8;

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

/// The verdict on one command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum Classification {
    /// Only reads inside the workspace: run it.
    ReadOnly,
    /// Could write, destroy, run arbitrary code or reach the network, or cannot be fully
    /// analysed. Never runs, never prompts; `reason` is the tool result the model receives.
    Refused { reason: String },
    /// Only reads, but touches paths the approval policy must decide on: each access is one
    /// request (its [`PathAccess::scope`] is the approval scope). `reason` explains why.
    NeedsApproval {
        accesses: Vec<PathAccess>,
        reason: String,
    },
}

impl Classification {
    /// The coarse class: read, refuse or approve.
    pub fn class(&self) -> Class {
        match self {
            Classification::ReadOnly => Class::Read,
            Classification::Refused { .. } => Class::Refuse,
            Classification::NeedsApproval { .. } => Class::Approve,
        }
    }

    /// The reason, for refusals and approvals.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Classification::ReadOnly => None,
            Classification::Refused { reason } | Classification::NeedsApproval { reason, .. } => {
                Some(reason)
            }
        }
    }

    /// The approval scopes (`path:DIR/*`), sorted and without duplicates; empty unless
    /// [`Classification::NeedsApproval`].
    pub fn scopes(&self) -> Vec<String> {
        match self {
            Classification::NeedsApproval { accesses, .. } => {
                let mut scopes: Vec<String> = accesses.iter().map(PathAccess::scope).collect();
                scopes.sort();
                scopes.dedup();
                scopes
            }
            _ => Vec::new(),
        }
    }
}

/// The coarse class of a [`Classification`], as written in the corpus (`read`, `refuse`,
/// `approve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Read,
    Refuse,
    Approve,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Refuse => "refuse",
            Class::Approve => "approve",
        }
    }

    pub fn parse(text: &str) -> Option<Class> {
        match text {
            "read" => Some(Class::Read),
            "refuse" => Some(Class::Refuse),
            "approve" => Some(Class::Approve),
            _ => None,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an access reads a file's contents or lists/stat-s a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// Reads a file (or its metadata): the scope is its directory.
    Read,
    /// Lists or enters a directory: the scope is the directory itself.
    List,
}

/// One path the approval policy must decide on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PathAccess {
    pub kind: AccessKind,
    /// The normalised path (absolute, or starting with `~` when no home was given).
    pub path: String,
}

impl PathAccess {
    /// The approval scope, `path:DIR/*`: a read grants the file's directory, a listing the
    /// directory itself (as `weft_core::approval::Scope::for_read`/`for_list`).
    pub fn scope(&self) -> String {
        let dir = match self.kind {
            AccessKind::List => self.path.clone(),
            AccessKind::Read => match self.path.rfind('/') {
                Some(0) => "/".to_owned(),
                Some(i) => self.path[..i].to_owned(),
                None => self.path.clone(),
            },
        };
        if dir == "/" {
            "path:/*".to_owned()
        } else {
            format!("path:{dir}/*")
        }
    }
}

/// Where commands run and how paths are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The workspace root; pass an absolute path.
    pub workspace: PathBuf,
    /// The home directory `~` expands to; when `None`, `~` paths are kept literally (and are
    /// always outside the workspace).
    pub home: Option<PathBuf>,
    /// Resolve named paths through the filesystem so that symlinks inside the workspace that
    /// point outward are caught. Reads the filesystem (never writes); off keeps
    /// classification purely lexical.
    pub follow_symlinks: bool,
}

impl Envelope {
    pub fn new(workspace: impl Into<PathBuf>) -> Envelope {
        Envelope {
            workspace: workspace.into(),
            home: None,
            follow_symlinks: false,
        }
    }
}

/// Classifies `command` for a workspace, lexically (no home, no symlink resolution).
pub fn classify(command: &str, workspace: &Path) -> Classification {
    classify_with(command, &Envelope::new(workspace))
}

/// Classifies `command` in an [`Envelope`].
pub fn classify_with(command: &str, envelope: &Envelope) -> Classification {
    let mut c = Classifier::new(envelope);
    c.line(command);
    c.finish()
}

// ---------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------

/// A shell word: its characters after quote removal, each marked quoted or not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Word {
    chars: Vec<(char, bool)>,
}

impl Word {
    fn plain(text: &str) -> Word {
        Word {
            chars: text.chars().map(|c| (c, false)).collect(),
        }
    }

    fn text(&self) -> String {
        self.chars.iter().map(|c| c.0).collect()
    }

    /// Has an unquoted glob character.
    fn has_glob(&self) -> bool {
        self.chars
            .iter()
            .any(|&(c, q)| !q && matches!(c, '*' | '?' | '['))
    }

    /// Starts with an unquoted `~` (tilde expansion).
    fn tilde(&self) -> bool {
        matches!(self.chars.first(), Some(&('~', false)))
    }

    /// Has an unquoted `{…}` containing an unquoted `,` or `..` (brace expansion).
    fn brace_expansion(&self) -> bool {
        let cs = &self.chars;
        for (i, &(c, q)) in cs.iter().enumerate() {
            if c != '{' || q {
                continue;
            }
            let mut depth = 0usize;
            for j in i + 1..cs.len() {
                let (d, dq) = cs[j];
                if dq {
                    continue;
                }
                match d {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' => return true,
                    '.' if cs.get(j + 1) == Some(&('.', false)) => return true,
                    _ => {}
                }
            }
        }
        false
    }

    /// `NAME=value` with an unquoted valid name.
    fn assignment(&self) -> Option<(String, Word)> {
        let mut name = String::new();
        for (i, &(c, q)) in self.chars.iter().enumerate() {
            if q {
                return None;
            }
            if c == '=' {
                if name.is_empty() {
                    return None;
                }
                return Some((
                    name,
                    Word {
                        chars: self.chars[i + 1..].to_vec(),
                    },
                ));
            }
            let ok =
                c == '_' || c.is_ascii_alphabetic() || (c.is_ascii_digit() && !name.is_empty());
            if !ok {
                return None;
            }
            name.push(c);
        }
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Semi,
    And,
    Or,
    Pipe,
    Background,
    LParen,
    RParen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RedirKind {
    /// `>`, `>|`
    Out,
    /// `>>`
    Append,
    /// `&>`, `&>>`
    OutErr,
    /// `>&`
    DupOut,
    /// `<`
    In,
    /// `<&`
    DupIn,
    /// `<>`
    ReadWrite,
    /// `<<<`
    HereString,
    /// `<<`, `<<-` (the body was checked by the lexer)
    Heredoc,
}

#[derive(Debug, Clone)]
enum Tok {
    Word(Word),
    Op(Op),
    Redir(Option<u32>, RedirKind),
}

const SUBSTITUTION: &str = "command substitution (`$(…)` or backticks) is not allowed: its output \
     can't be checked before it runs; run the inner command on its own first";
const EXPANSION: &str = "variable and arithmetic expansion (`$NAME`, `${…}`, `$((…))`) is not \
     allowed: the policy can't see the value; write it literally";
const PROCESS_SUBSTITUTION: &str =
    "process substitution (`<(…)`, `>(…)`) is not allowed: it runs a hidden command";

fn expansion_follows(s: &[char], j: usize) -> bool {
    s.get(j).is_some_and(|&c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '_' | '{' | '(' | '[' | '@' | '*' | '#' | '?' | '$' | '!' | '-'
            )
    })
}

fn expansion_reason(s: &[char], j: usize) -> &'static str {
    if s.get(j) == Some(&'(') && s.get(j + 1) != Some(&'(') {
        SUBSTITUTION
    } else {
        EXPANSION
    }
}

struct Lexer {
    s: Vec<char>,
    i: usize,
    toks: Vec<Tok>,
    cur: Option<Word>,
    /// After `<<`/`<<-`: the next word is a delimiter (`true`: strip leading tabs).
    want_delim: Option<bool>,
    /// Heredocs whose bodies start at the next newline: (delimiter, quoted, strip tabs).
    pending: Vec<(String, bool, bool)>,
}

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let mut lx = Lexer {
        s: src.chars().collect(),
        i: 0,
        toks: Vec::new(),
        cur: None,
        want_delim: None,
        pending: Vec::new(),
    };
    lx.run()?;
    Ok(lx.toks)
}

impl Lexer {
    fn push(&mut self, c: char, quoted: bool) {
        self.cur
            .get_or_insert_with(Word::default)
            .chars
            .push((c, quoted));
    }

    fn start_word(&mut self) {
        self.cur.get_or_insert_with(Word::default);
    }

    fn finish(&mut self) {
        if let Some(w) = self.cur.take() {
            if let Some(strip) = self.want_delim.take() {
                let quoted = w.chars.iter().any(|c| c.1);
                self.pending.push((w.text(), quoted, strip));
            } else {
                self.toks.push(Tok::Word(w));
            }
        }
    }

    fn op(&mut self, tok: Tok) -> Result<(), String> {
        self.finish();
        if self.want_delim.is_some() {
            return Err("a here-document (`<<`) needs a delimiter word".to_owned());
        }
        self.toks.push(tok);
        Ok(())
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => {
                    self.finish();
                    self.i += 1;
                }
                '\n' => {
                    self.op(Tok::Op(Op::Semi))?;
                    self.i += 1;
                    self.heredoc_bodies()?;
                }
                '#' if self.cur.is_none() => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\\' => match self.peek(1) {
                    Some('\n') => self.i += 2,
                    Some(n) => {
                        self.push(n, true);
                        self.i += 2;
                    }
                    None => {
                        self.push('\\', true);
                        self.i += 1;
                    }
                },
                '\'' => {
                    self.start_word();
                    self.i += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err("unbalanced single quote".to_owned()),
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(ch) => {
                                self.push(ch, true);
                                self.i += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.start_word();
                    self.i += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err("unbalanced double quote".to_owned()),
                            Some('"') => {
                                self.i += 1;
                                break;
                            }
                            Some('\\') => match self.peek(1) {
                                Some(n @ ('$' | '`' | '"' | '\\')) => {
                                    self.push(n, true);
                                    self.i += 2;
                                }
                                Some('\n') => self.i += 2,
                                _ => {
                                    self.push('\\', true);
                                    self.i += 1;
                                }
                            },
                            Some('`') => return Err(SUBSTITUTION.to_owned()),
                            Some('$') => {
                                if expansion_follows(&self.s, self.i + 1) {
                                    return Err(expansion_reason(&self.s, self.i + 1).to_owned());
                                }
                                self.push('$', true);
                                self.i += 1;
                            }
                            Some(ch) => {
                                self.push(ch, true);
                                self.i += 1;
                            }
                        }
                    }
                }
                '$' => {
                    if matches!(self.peek(1), Some('\'' | '"')) {
                        return Err("`$'…'` and `$\"…\"` quoting is not supported; use plain \
                                    quotes"
                            .to_owned());
                    }
                    if expansion_follows(&self.s, self.i + 1) {
                        return Err(expansion_reason(&self.s, self.i + 1).to_owned());
                    }
                    self.push('$', false);
                    self.i += 1;
                }
                '`' => return Err(SUBSTITUTION.to_owned()),
                '|' => {
                    let (op, n) = match self.peek(1) {
                        Some('|') => (Op::Or, 2),
                        Some('&') => (Op::Pipe, 2),
                        _ => (Op::Pipe, 1),
                    };
                    self.op(Tok::Op(op))?;
                    self.i += n;
                }
                '&' => {
                    let (tok, n) = match (self.peek(1), self.peek(2)) {
                        (Some('&'), _) => (Tok::Op(Op::And), 2),
                        (Some('>'), Some('>')) => (Tok::Redir(None, RedirKind::OutErr), 3),
                        (Some('>'), _) => (Tok::Redir(None, RedirKind::OutErr), 2),
                        _ => (Tok::Op(Op::Background), 1),
                    };
                    self.op(tok)?;
                    self.i += n;
                }
                ';' => {
                    if matches!(self.peek(1), Some(';' | '&')) {
                        return Err("`;;`/`;&` (case syntax) is not supported".to_owned());
                    }
                    self.op(Tok::Op(Op::Semi))?;
                    self.i += 1;
                }
                '(' => {
                    self.op(Tok::Op(Op::LParen))?;
                    self.i += 1;
                }
                ')' => {
                    self.op(Tok::Op(Op::RParen))?;
                    self.i += 1;
                }
                '<' | '>' => self.redirection(c)?,
                _ => {
                    self.push(c, false);
                    self.i += 1;
                }
            }
        }
        self.finish();
        if self.want_delim.is_some() {
            return Err("a here-document (`<<`) needs a delimiter word".to_owned());
        }
        if !self.pending.is_empty() {
            return Err("a here-document has no body (unterminated `<<`)".to_owned());
        }
        Ok(())
    }

    fn redirection(&mut self, c: char) -> Result<(), String> {
        // A word made only of unquoted digits right before the operator is its descriptor.
        let fd = match &self.cur {
            Some(w)
                if !w.chars.is_empty()
                    && self.want_delim.is_none()
                    && w.chars.iter().all(|&(d, q)| !q && d.is_ascii_digit()) =>
            {
                let fd = w.text().parse().ok();
                self.cur = None;
                fd
            }
            _ => None,
        };
        let (kind, n) = if c == '>' {
            match self.peek(1) {
                Some('>') => (RedirKind::Append, 2),
                Some('|') => (RedirKind::Out, 2),
                Some('&') => (RedirKind::DupOut, 2),
                Some('(') => return Err(PROCESS_SUBSTITUTION.to_owned()),
                _ => (RedirKind::Out, 1),
            }
        } else {
            match (self.peek(1), self.peek(2)) {
                (Some('<'), Some('<')) => (RedirKind::HereString, 3),
                (Some('<'), Some('-')) => {
                    self.op(Tok::Redir(fd, RedirKind::Heredoc))?;
                    self.want_delim = Some(true);
                    self.i += 3;
                    return Ok(());
                }
                (Some('<'), _) => {
                    self.op(Tok::Redir(fd, RedirKind::Heredoc))?;
                    self.want_delim = Some(false);
                    self.i += 2;
                    return Ok(());
                }
                (Some('&'), _) => (RedirKind::DupIn, 2),
                (Some('>'), _) => (RedirKind::ReadWrite, 2),
                (Some('('), _) => return Err(PROCESS_SUBSTITUTION.to_owned()),
                _ => (RedirKind::In, 1),
            }
        };
        self.op(Tok::Redir(fd, kind))?;
        self.i += n;
        Ok(())
    }

    fn heredoc_bodies(&mut self) -> Result<(), String> {
        for (delim, quoted, strip) in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            loop {
                if self.i >= self.s.len() {
                    return Err(format!("the here-document is not terminated by `{delim}`"));
                }
                let end = self.s[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.s.len(), |p| self.i + p);
                let line: String = self.s[self.i..end].iter().collect();
                self.i = (end + 1).min(self.s.len());
                let cmp = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if cmp == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if !quoted {
                let chars: Vec<char> = body.chars().collect();
                for (k, &c) in chars.iter().enumerate() {
                    if c == '`' {
                        return Err(SUBSTITUTION.to_owned());
                    }
                    if c == '$' && expansion_follows(&chars, k + 1) {
                        return Err(format!(
                            "{} (in a here-document with an unquoted delimiter; quote it: \
                             <<'{delim}')",
                            expansion_reason(&chars, k + 1)
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------

type Redirs = Vec<(RedirKind, Option<u32>, Option<Word>)>;

#[derive(Debug)]
struct Simple {
    assigns: Vec<(String, Word)>,
    words: Vec<Word>,
    redirs: Redirs,
}

#[derive(Debug)]
enum Cmd {
    Simple(Simple),
    Subshell(Vec<Pipeline>, Redirs),
}

type Pipeline = Vec<Cmd>;

struct Parser {
    toks: Vec<Tok>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn peek_op(&self) -> Option<Op> {
        match self.peek() {
            Some(Tok::Op(op)) => Some(*op),
            _ => None,
        }
    }

    fn skip_newlines(&mut self) {
        while self.peek_op() == Some(Op::Semi) {
            self.i += 1;
        }
    }

    fn list(&mut self, nested: bool) -> Result<Vec<Pipeline>, String> {
        let mut out = Vec::new();
        loop {
            self.skip_newlines();
            match self.peek_op() {
                _ if self.peek().is_none() => {
                    if nested {
                        return Err("unbalanced `(`".to_owned());
                    }
                    break;
                }
                Some(Op::RParen) => {
                    if nested {
                        break;
                    }
                    return Err("unbalanced `)`".to_owned());
                }
                _ => {}
            }
            out.push(self.pipeline()?);
            match self.peek_op() {
                None if self.peek().is_none() => {}
                Some(Op::Semi | Op::RParen) => {}
                Some(Op::And | Op::Or) => {
                    self.i += 1;
                    self.skip_newlines();
                    if self.peek().is_none() || self.peek_op().is_some_and(|o| o != Op::LParen) {
                        return Err("`&&`/`||` must be followed by a command".to_owned());
                    }
                }
                Some(Op::Background) => {
                    return Err(
                        "background jobs (`&`) are not allowed: they outlive the tool \
                                call; run the command in the foreground"
                            .to_owned(),
                    );
                }
                _ => return Err("unexpected token after a command".to_owned()),
            }
        }
        Ok(out)
    }

    fn pipeline(&mut self) -> Result<Pipeline, String> {
        let mut cmds = vec![self.cmd()?];
        while self.peek_op() == Some(Op::Pipe) {
            self.i += 1;
            self.skip_newlines();
            cmds.push(self.cmd()?);
        }
        Ok(cmds)
    }

    fn redirs(&mut self, out: &mut Redirs) -> Result<bool, String> {
        if let Some(Tok::Redir(fd, kind)) = self.peek().cloned() {
            self.i += 1;
            if kind == RedirKind::Heredoc {
                out.push((kind, fd, None));
            } else {
                match self.peek().cloned() {
                    Some(Tok::Word(w)) => {
                        self.i += 1;
                        out.push((kind, fd, Some(w)));
                    }
                    _ => return Err("a redirection needs a target word".to_owned()),
                }
            }
            return Ok(true);
        }
        Ok(false)
    }

    fn cmd(&mut self) -> Result<Cmd, String> {
        if self.peek_op() == Some(Op::LParen) {
            self.i += 1;
            let inner = self.list(true)?;
            if self.peek_op() != Some(Op::RParen) {
                return Err("unbalanced `(`".to_owned());
            }
            self.i += 1;
            if inner.is_empty() {
                return Err("empty subshell".to_owned());
            }
            let mut redirs = Vec::new();
            while self.redirs(&mut redirs)? {}
            return Ok(Cmd::Subshell(inner, redirs));
        }
        let mut simple = Simple {
            assigns: Vec::new(),
            words: Vec::new(),
            redirs: Vec::new(),
        };
        loop {
            if self.redirs(&mut simple.redirs)? {
                continue;
            }
            match self.peek().cloned() {
                Some(Tok::Word(w)) => {
                    self.i += 1;
                    match w.assignment() {
                        Some(a) if simple.words.is_empty() => simple.assigns.push(a),
                        _ => simple.words.push(w),
                    }
                }
                Some(Tok::Op(Op::LParen)) => {
                    return Err(
                        "unexpected `(` (functions and arrays are not supported)".to_owned()
                    );
                }
                _ => break,
            }
        }
        if simple.words.is_empty() && simple.assigns.is_empty() && simple.redirs.is_empty() {
            return Err("empty command (a stray operator?)".to_owned());
        }
        Ok(Cmd::Simple(simple))
    }
}

fn parse(src: &str) -> Result<Vec<Pipeline>, String> {
    let toks = lex(src)?;
    let mut p = Parser { toks, i: 0 };
    p.list(false)
}

// ---------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------

/// How an argument path is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Contents are read (`cat`, `grep`): `.env*` files need approval.
    Read,
    /// Only names or metadata (`stat`, `ls FILE`, `test -f`).
    Meta,
    /// A directory that is listed or entered (`ls`, `cd`, `find`): scoped to itself.
    Dir,
    /// A file or a directory to search (`rg`, `grep`, git pathspecs): contents are read;
    /// scoped as a directory unless the last component looks like a file name (`x.ext`).
    Search,
}

fn glob_match(pat: &str, s: &str) -> bool {
    if s.starts_with('.') && !pat.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pat.chars().collect();
    let s: Vec<char> = s.chars().collect();
    glob_chars(&p, &s)
}

fn glob_chars(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') => (0..=s.len()).any(|k| glob_chars(&p[1..], &s[k..])),
        Some('?') => !s.is_empty() && glob_chars(&p[1..], &s[1..]),
        Some('[') => {
            let Some(&c) = s.first() else {
                return false;
            };
            match glob_class(&p[1..], c) {
                Some((matched, rest)) => matched && glob_chars(rest, &s[1..]),
                None => c == '[' && glob_chars(&p[1..], &s[1..]),
            }
        }
        Some(&c) => s.first() == Some(&c) && glob_chars(&p[1..], &s[1..]),
    }
}

fn glob_class(p: &[char], c: char) -> Option<(bool, &[char])> {
    let neg = matches!(p.first(), Some('!' | '^'));
    let mut i = usize::from(neg);
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != neg, &p[i + 1..]));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

/// Lexical normalisation; with `glob`, a component that could match `..` counts as `..`.
fn normalize(p: &Path, glob: bool) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Prefix(_) => {}
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => {
                let s = s.to_string_lossy();
                if glob && glob_match(&s, "..") {
                    out.pop();
                } else {
                    out.push(&*s);
                }
            }
        }
    }
    out
}

/// Whether a path's last component is (or, as a glob, could be) a `.env*` file.
fn is_env_name(text: &str, glob: bool) -> bool {
    let base = text.rsplit('/').next().unwrap_or(text);
    let base = base.rsplit(':').next().unwrap_or(base);
    if glob {
        [".env", ".env.local", ".envrc"]
            .iter()
            .any(|c| glob_match(base, c))
    } else {
        base.starts_with(".env")
    }
}

/// A flag value that is probably a path worth checking.
fn looks_pathy(v: &str) -> bool {
    v.starts_with('/')
        || v.starts_with('~')
        || v == ".."
        || v.starts_with("../")
        || v.contains("/../")
        || v.ends_with("/..")
        || is_env_name(v, false)
}

fn resolve_existing(p: &Path) -> Option<PathBuf> {
    let mut cur = p.to_path_buf();
    let mut tail = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&cur) {
            let mut r = real;
            for t in tail.iter().rev() {
                r.push(t);
            }
            return Some(r);
        }
        match (cur.file_name(), cur.parent()) {
            (Some(n), Some(parent)) => {
                tail.push(n.to_owned());
                cur = parent.to_path_buf();
            }
            _ => return None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Classifier
// ---------------------------------------------------------------------------------------

/// Whether a command's stdin is known to carry only workspace paths (or nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Confined,
    Unknown,
}

#[derive(Debug, Clone)]
struct Ctx {
    /// The directories the command may be running in (after `cd`, old and new).
    cwds: Vec<PathBuf>,
    depth: usize,
    stdin: Input,
}

struct Classifier<'e> {
    env: &'e Envelope,
    ws: PathBuf,
    canon_ws: Option<PathBuf>,
    refusal: Option<String>,
    accesses: BTreeMap<PathAccess, String>,
}

/// Flags of an allowed program that write, execute or escape, and flags that take a value.
#[derive(Debug, Clone, Copy)]
struct Spec {
    deny_short: &'static str,
    deny_long: &'static [&'static str],
    value_short: &'static str,
    value_long: &'static [&'static str],
    why: &'static str,
}

const PLAIN: Spec = Spec {
    deny_short: "",
    deny_long: &[],
    value_short: "",
    value_long: &[],
    why: "",
};

#[derive(Debug, Default)]
struct Scanned {
    pos: Vec<Word>,
    short: Vec<char>,
    long: Vec<String>,
}

impl Scanned {
    fn has(&self, short: &str, long: &[&str]) -> bool {
        self.short.iter().any(|c| short.contains(*c))
            || self.long.iter().any(|l| long.contains(&l.as_str()))
    }
}

const SINKS: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/1",
    "/dev/fd/2",
];

const ENV_OK: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "TERM",
    "COLUMNS",
    "LINES",
];

fn env_name_ok(name: &str) -> bool {
    ENV_OK.contains(&name) || name.starts_with("LC_")
}

const WRITERS: &[&str] = &[
    "rm",
    "rmdir",
    "unlink",
    "shred",
    "cp",
    "mv",
    "mkdir",
    "touch",
    "chmod",
    "chown",
    "chgrp",
    "ln",
    "dd",
    "truncate",
    "install",
    "rsync",
    "tee",
    "mkfifo",
    "mknod",
    "patch",
    "split",
    "csplit",
    "mktemp",
    "chattr",
    "setfacl",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "bzip2",
    "xz",
    "zstd",
    "7z",
    "sponge",
    "fallocate",
    "wipefs",
    "mkfs",
];
const NETWORK: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "ftp", "telnet", "http", "https",
    "xh", "aria2c", "socat", "ping", "dig", "nslookup", "host", "whois",
];
const INTERACTIVE: &[&str] = &[
    "vi", "vim", "nvim", "view", "nano", "emacs", "ed", "ex", "pico", "micro", "less", "more",
    "most", "man", "info", "top", "htop", "btop", "watch", "tmux", "screen", "fzf",
];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "Rscript",
    "julia",
    "osascript",
    "pwsh",
    "powershell",
    "tclsh",
    "irb",
    "java",
    "rustc",
    "go",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "pip",
    "pip3",
    "pipx",
    "uv",
    "poetry",
    "gem",
    "bundle",
    "composer",
    "conda",
    "make",
    "cmake",
    "ninja",
    "gradle",
    "mvn",
    "bazel",
    "meson",
    "just",
    "gcc",
    "cc",
    "clang",
    "g++",
    "c++",
    "javac",
    "tsc",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "terraform",
];
const BUILDERS: &[&str] = &[
    "make", "cmake", "ninja", "gradle", "mvn", "bazel", "meson", "just", "gcc", "cc", "clang",
    "g++", "c++", "javac", "tsc", "rustc",
];
const PACKAGERS: &[&str] = &[
    "npm", "npx", "yarn", "pnpm", "pip", "pip3", "pipx", "uv", "poetry", "gem", "bundle",
    "composer", "conda", "apt", "apt-get", "yum", "dnf", "brew", "apk", "go",
];
const SYSTEM: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "kill",
    "killall",
    "pkill",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "systemctl",
    "service",
    "crontab",
    "at",
    "mount",
    "umount",
    "launchctl",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "terraform",
    "nohup",
    "setsid",
    "disown",
    "chroot",
    "passwd",
    "useradd",
    "userdel",
];
const SHELL_STATE: &[&str] = &[
    "eval",
    "exec",
    "source",
    ".",
    "builtin",
    "trap",
    "alias",
    "unalias",
    "set",
    "export",
    "unset",
    "declare",
    "typeset",
    "readonly",
    "local",
    "shopt",
    "enable",
    "hash",
    "pushd",
    "popd",
    "ulimit",
    "umask",
    "read",
    "mapfile",
    "readarray",
    "history",
    "fc",
    "jobs",
    "fg",
    "bg",
    "wait",
    "exit",
    "return",
    "logout",
];
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "coproc", "{", "}", "[[", "]]", "!",
];
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"];

impl<'e> Classifier<'e> {
    fn new(env: &'e Envelope) -> Classifier<'e> {
        let ws = normalize(&env.workspace, false);
        let canon_ws = if env.follow_symlinks {
            std::fs::canonicalize(&ws).ok()
        } else {
            None
        };
        Classifier {
            env,
            ws,
            canon_ws,
            refusal: None,
            accesses: BTreeMap::new(),
        }
    }

    fn refuse(&mut self, reason: impl Into<String>) {
        if self.refusal.is_none() {
            self.refusal = Some(reason.into());
        }
    }

    fn approve(&mut self, access: PathAccess, reason: String) {
        self.accesses.entry(access).or_insert(reason);
    }

    fn finish(self) -> Classification {
        if let Some(reason) = self.refusal {
            return Classification::Refused { reason };
        }
        if self.accesses.is_empty() {
            return Classification::ReadOnly;
        }
        let mut reasons: Vec<String> = Vec::new();
        for r in self.accesses.values() {
            if !reasons.contains(r) {
                reasons.push(r.clone());
            }
        }
        Classification::NeedsApproval {
            accesses: self.accesses.into_keys().collect(),
            reason: format!("{}; this needs approval", reasons.join("; ")),
        }
    }

    fn line(&mut self, command: &str) {
        if command.trim().is_empty() {
            self.refuse("the command is empty");
            return;
        }
        let list = match parse(command) {
            Ok(list) => list,
            Err(e) => {
                self.refuse(e);
                return;
            }
        };
        if list.is_empty() {
            self.refuse("the command is empty");
            return;
        }
        let mut ctx = Ctx {
            cwds: vec![self.ws.clone()],
            depth: 0,
            stdin: Input::Confined,
        };
        self.list(&list, &mut ctx);
    }

    fn nested(&mut self, ctx: &Ctx) -> Option<Ctx> {
        if ctx.depth >= MAX_DEPTH {
            self.refuse("the command nests too deeply to analyse");
            return None;
        }
        let mut inner = ctx.clone();
        inner.depth += 1;
        Some(inner)
    }

    fn list(&mut self, list: &[Pipeline], ctx: &mut Ctx) {
        for p in list {
            self.pipeline(p, ctx);
        }
    }

    fn pipeline(&mut self, p: &Pipeline, ctx: &mut Ctx) {
        if let [only] = p.as_slice() {
            self.cmd(only, ctx);
            return;
        }
        let mut input = ctx.stdin;
        for c in p {
            let mut stage = ctx.clone();
            stage.stdin = input;
            input = self.cmd(c, &mut stage);
        }
    }

    /// Classifies one command; returns what its stdout carries for a following `xargs`.
    fn cmd(&mut self, c: &Cmd, ctx: &mut Ctx) -> Input {
        match c {
            Cmd::Subshell(list, redirs) => {
                let redirected = self.redirs(redirs, ctx);
                if let Some(mut inner) = self.nested(ctx) {
                    if redirected {
                        inner.stdin = Input::Unknown;
                    }
                    self.list(list, &mut inner);
                }
                Input::Unknown
            }
            Cmd::Simple(s) => {
                for (name, _) in &s.assigns {
                    if !env_name_ok(name) {
                        self.refuse(format!(
                            "setting `{name}` can change what programs do (PATH, IFS, GIT_*, \
                             LD_*, PAGER, …); only locale, timezone and colour variables may be \
                             set"
                        ));
                    }
                }
                let redirected = self.redirs(&s.redirs, ctx);
                if s.words.is_empty() {
                    return Input::Unknown;
                }
                if s.words.iter().any(Word::brace_expansion) {
                    self.refuse(
                        "brace expansion (`{a,b}`, `{1..3}`) is not allowed: list the words \
                         explicitly",
                    );
                    return Input::Unknown;
                }
                let input = if redirected {
                    Input::Unknown
                } else {
                    ctx.stdin
                };
                self.command(ctx, &s.words, input);
                flow(&s.words, input)
            }
        }
    }

    /// Checks redirections; returns whether stdin is redirected.
    fn redirs(&mut self, redirs: &Redirs, ctx: &Ctx) -> bool {
        let mut stdin = false;
        for (kind, fd, target) in redirs {
            let text = target.as_ref().map(Word::text).unwrap_or_default();
            let is_dup =
                text == "-" || (!text.is_empty() && text.chars().all(|c| c.is_ascii_digit()));
            match kind {
                RedirKind::Out | RedirKind::Append | RedirKind::OutErr => {
                    if !SINKS.contains(&text.as_str()) {
                        self.refuse(format!(
                            "the redirection to `{text}` writes a file; only /dev/null may be a \
                             redirection target (2>&1 is fine)"
                        ));
                    }
                }
                RedirKind::DupOut => {
                    if !is_dup && !SINKS.contains(&text.as_str()) {
                        self.refuse(format!(
                            "the redirection `>&{text}` writes a file; only /dev/null may be a \
                             redirection target (2>&1 is fine)"
                        ));
                    }
                }
                RedirKind::DupIn => {
                    if !is_dup {
                        self.refuse(format!("the redirection `<&{text}` is not supported"));
                    }
                }
                RedirKind::ReadWrite => {
                    self.refuse(format!("`<>` opens `{text}` for writing"));
                }
                RedirKind::In => {
                    if fd.unwrap_or(0) == 0 {
                        stdin = true;
                    }
                    if let Some(w) = target {
                        self.path_word(ctx, w, Use::Read);
                    }
                }
                RedirKind::HereString | RedirKind::Heredoc => {
                    if fd.unwrap_or(0) == 0 {
                        stdin = true;
                    }
                }
            }
        }
        stdin
    }

    // -- paths ----------------------------------------------------------------------------

    fn path_word(&mut self, ctx: &Ctx, w: &Word, use_: Use) {
        self.path(ctx, &w.text(), w.tilde(), w.has_glob(), use_);
    }

    fn path(&mut self, ctx: &Ctx, text: &str, tilde: bool, glob: bool, use_: Use) {
        if text.is_empty() || text == "-" || SINKS.contains(&text) || text == "/dev/stdin" {
            return;
        }
        let kind = match use_ {
            Use::Dir => AccessKind::List,
            Use::Search => {
                let last = text.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                if text.ends_with('/') || !last.contains('.') || last == ".." {
                    AccessKind::List
                } else {
                    AccessKind::Read
                }
            }
            Use::Read | Use::Meta => AccessKind::Read,
        };
        if tilde {
            let (head, rest) = text.split_once('/').unwrap_or((text, ""));
            match (&self.env.home, head) {
                (Some(home), "~") => {
                    let full = home.join(rest);
                    let full = full.to_string_lossy().into_owned();
                    self.path(ctx, &full, false, glob, use_);
                }
                _ => {
                    let virt = normalize(&Path::new("/").join(rest), glob);
                    let shown = format!("{head}{}", virt.display());
                    let shown = shown.strip_suffix('/').unwrap_or(&shown).to_owned();
                    self.approve(
                        PathAccess { kind, path: shown },
                        format!("`{text}` is in a home directory, outside the workspace"),
                    );
                }
            }
            return;
        }
        for cwd in ctx.cwds.clone() {
            let joined = if text.starts_with('/') {
                PathBuf::from(text)
            } else {
                cwd.join(text)
            };
            let p = normalize(&joined, glob);
            if !p.starts_with(&self.ws) {
                self.approve(
                    PathAccess {
                        kind,
                        path: p.display().to_string(),
                    },
                    format!("`{text}` is outside the workspace"),
                );
                continue;
            }
            if let Some(canon_ws) = &self.canon_ws
                && let Some(real) = resolve_existing(&p)
                && !real.starts_with(canon_ws)
            {
                let access = PathAccess {
                    kind,
                    path: real.display().to_string(),
                };
                self.approve(
                    access,
                    format!(
                        "`{text}` resolves through a symlink to `{}`, outside the workspace",
                        real.display()
                    ),
                );
                continue;
            }
            if matches!(use_, Use::Read | Use::Search) && is_env_name(text, glob) {
                self.approve(
                    PathAccess {
                        kind: AccessKind::Read,
                        path: p.display().to_string(),
                    },
                    format!("`{text}` may be a .env file, which usually holds secrets"),
                );
            }
        }
    }

    fn value(&mut self, ctx: &Ctx, v: &str) {
        if looks_pathy(v) {
            self.path(ctx, v, v.starts_with('~'), false, Use::Read);
        }
    }

    fn paths(&mut self, ctx: &Ctx, words: &[Word], use_: Use) {
        for w in words {
            self.path_word(ctx, w, use_);
        }
    }

    // -- flags ----------------------------------------------------------------------------

    /// Walks a program's arguments: refuses denied flags, checks flag values that look like
    /// paths, and returns the positional arguments.
    fn scan(&mut self, ctx: &Ctx, prog: &str, args: &[Word], spec: &Spec) -> Option<Scanned> {
        let mut out = Scanned::default();
        let mut i = 0;
        let mut ended = false;
        while i < args.len() {
            let w = &args[i];
            let t = w.text();
            i += 1;
            if ended || t == "-" || !t.starts_with('-') {
                out.pos.push(w.clone());
                continue;
            }
            if t == "--" {
                ended = true;
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                let flag = format!("--{name}");
                if spec.deny_long.iter().any(|d| d.starts_with(&flag)) {
                    self.refuse(format!("`{prog} {flag}` {}", spec.why));
                    return None;
                }
                if let Some(v) = value {
                    self.value(ctx, v);
                } else if spec.value_long.contains(&flag.as_str())
                    && let Some(v) = args.get(i)
                {
                    self.value(ctx, &v.text());
                    i += 1;
                }
                out.long.push(flag);
            } else {
                let chars: Vec<char> = t[1..].chars().collect();
                for (k, &c) in chars.iter().enumerate() {
                    if spec.deny_short.contains(c) {
                        self.refuse(format!("`{prog} -{c}` {}", spec.why));
                        return None;
                    }
                    out.short.push(c);
                    if spec.value_short.contains(c) {
                        let rest: String = chars[k + 1..].iter().collect();
                        if rest.is_empty() {
                            if let Some(v) = args.get(i) {
                                self.value(ctx, &v.text());
                                i += 1;
                            }
                        } else {
                            self.value(ctx, &rest);
                        }
                        break;
                    }
                }
                if let Some(idx) = t.find('/') {
                    self.value(ctx, &t[idx..]);
                }
            }
        }
        Some(out)
    }

    /// A program whose positionals are all paths used as `use_`.
    fn reader(&mut self, ctx: &Ctx, prog: &str, args: &[Word], spec: &Spec, use_: Use) {
        if let Some(s) = self.scan(ctx, prog, args, spec) {
            self.paths(ctx, &s.pos, use_);
        }
    }

    // -- programs -------------------------------------------------------------------------

    fn command(&mut self, ctx: &mut Ctx, words: &[Word], input: Input) {
        let Some(first) = words.first() else {
            return;
        };
        let prog = first.text();
        let args = &words[1..];
        if (first.has_glob() && prog != "[") || first.tilde() || prog.is_empty() {
            self.refuse("the program name must be a literal word");
            return;
        }
        if prog.contains('/') {
            self.refuse(format!(
                "`{prog}` runs a program by path; only known read-only tools (rg, grep, find, \
                 ls, cat, git log, …) may run"
            ));
            return;
        }
        let p = prog.as_str();
        match p {
            // Shell syntax and state.
            _ if KEYWORDS.contains(&p) => self.refuse(format!(
                "shell control flow (`{p}`) is not analysed; run the commands one at a time"
            )),
            _ if SHELL_STATE.contains(&p) => self.refuse(format!(
                "`{p}` runs code or changes how later commands run, which can't be checked"
            )),
            "cd" => self.cd(ctx, args),

            // Wrappers.
            "env" => self.env_cmd(ctx, args, input),
            "timeout" | "nice" | "stdbuf" | "ionice" | "time" | "command" => {
                self.wrapper(ctx, p, args, input)
            }
            _ if SHELLS.contains(&p) => self.shell(ctx, p, args),
            "xargs" => self.xargs(ctx, args, input),

            // Structured tools.
            "find" => self.find(ctx, args),
            "git" => self.git(ctx, args),
            "sed" | "gsed" => self.sed(ctx, p, args),
            "awk" | "gawk" | "mawk" | "nawk" => self.awk(ctx, p, args),
            "cargo" => self.cargo(ctx, args),
            "jq" => self.jq(ctx, args),
            "yq" => self.yq(ctx, args),
            "grep" | "egrep" | "fgrep" => self.grep(ctx, p, args),
            "rg" => self.rg(ctx, args),
            "fd" | "fdfind" => self.fd(ctx, p, args),

            // Plain readers.
            "cat" | "tac" | "nl" | "rev" | "paste" | "fold" | "expand" | "unexpand" | "strings"
            | "od" | "hexdump" | "base64" | "base32" | "md5sum" | "sha1sum" | "sha224sum"
            | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" | "cksum" | "sum" | "cmp"
            | "comm" | "diff" | "column" | "fmt" | "join" | "numfmt" => {
                self.reader(ctx, p, args, &PLAIN, Use::Read)
            }
            "head" => self.reader(ctx, p, args, &HEAD, Use::Read),
            "tail" => self.reader(ctx, p, args, &TAIL, Use::Read),
            "wc" => self.reader(ctx, p, args, &WC, Use::Read),
            "cut" => self.reader(ctx, p, args, &CUT, Use::Read),
            "sort" => self.reader(ctx, p, args, &SORT, Use::Read),
            "file" => self.reader(ctx, p, args, &FILE, Use::Read),
            "uniq" | "xxd" => {
                let spec = if p == "uniq" { &UNIQ } else { &XXD };
                if let Some(s) = self.scan(ctx, p, args, spec) {
                    if s.pos.len() > 1 {
                        self.refuse(format!(
                            "`{p}` writes its second file argument (an output file)"
                        ));
                    } else {
                        self.paths(ctx, &s.pos, Use::Read);
                    }
                }
            }
            "ls" | "dir" | "vdir" | "du" => self.reader(ctx, p, args, &LS, Use::Dir),
            "tree" => self.reader(ctx, p, args, &TREE, Use::Dir),
            "stat" | "realpath" | "readlink" | "test" => {
                self.reader(ctx, p, args, &PLAIN, Use::Meta)
            }
            "[" => {
                let inner = match args.split_last() {
                    Some((last, rest)) if last.text() == "]" => rest,
                    _ => args,
                };
                self.reader(ctx, p, inner, &PLAIN, Use::Meta);
            }
            "df" => self.reader(ctx, p, args, &PLAIN, Use::Meta),
            "printf" if args.iter().any(|a| a.text().starts_with("-v")) => {
                self.refuse("`printf -v` sets a shell variable, which can change later commands")
            }
            "echo" | "printf" | "true" | "false" | ":" | "basename" | "dirname" | "pwd"
            | "uname" | "whoami" | "id" | "groups" | "nproc" | "arch" | "seq" | "sleep"
            | "which" | "type" | "tr" | "expr" | "locale" | "tty" | "getconf" | "logname" => {}
            "date" => {
                let _ = self.scan(ctx, p, args, &DATE);
            }
            "hostname" => {
                if let Some(s) = self.scan(ctx, p, args, &PLAIN)
                    && !s.pos.is_empty()
                {
                    self.refuse("`hostname NAME` sets the host name");
                }
            }
            "printenv" => self.refuse("`printenv` prints the environment, which holds secrets"),

            // Families with a specific reason.
            _ if WRITERS.contains(&p) => {
                self.refuse(format!("`{p}` writes, moves or deletes files"))
            }
            _ if NETWORK.contains(&p) => self.refuse(format!(
                "`{p}` reaches the network, which run_command does not allow (it could send \
                 workspace data out); research the local repository instead"
            )),
            _ if INTERACTIVE.contains(&p) => self.refuse(format!(
                "`{p}` is interactive; use cat, head, sed -n or rg to read files"
            )),
            _ if INTERPRETERS.contains(&p) || PACKAGERS.contains(&p) => self.toolchain(p, args),
            _ if SYSTEM.contains(&p) => self.refuse(format!(
                "`{p}` changes system state or runs with other privileges"
            )),
            _ => self.refuse(format!(
                "`{p}` is not on the read-only allow-list, so it does not run; use rg, grep, \
                 find, ls, cat, head, tail, wc, sed -n, awk, jq, or git log/show/diff/grep"
            )),
        }
    }

    fn cd(&mut self, ctx: &mut Ctx, args: &[Word]) {
        let targets: Vec<&Word> = args
            .iter()
            .filter(|w| !matches!(w.text().as_str(), "-P" | "-L" | "-e" | "--"))
            .collect();
        let target = match targets.as_slice() {
            [] => {
                self.refuse(
                    "`cd` to the home directory makes later paths uncheckable; use \
                             explicit paths",
                );
                return;
            }
            [one] => *one,
            _ => {
                self.refuse("`cd` takes one directory");
                return;
            }
        };
        let text = target.text();
        if text == "-" || text.starts_with('-') {
            self.refuse("`cd -` and `cd` options make later paths uncheckable");
            return;
        }
        if target.tilde() && self.env.home.is_none() {
            self.refuse("`cd ~…` makes later relative paths uncheckable; use explicit paths");
            return;
        }
        let text = match (&self.env.home, target.tilde()) {
            (Some(home), true) => home
                .join(text.trim_start_matches('~').trim_start_matches('/'))
                .to_string_lossy()
                .into_owned(),
            _ => text,
        };
        self.path(ctx, &text, false, target.has_glob(), Use::Dir);
        let mut next = ctx.cwds.clone();
        for cwd in &ctx.cwds {
            let moved = normalize(&cwd.join(&text), target.has_glob());
            if !next.contains(&moved) {
                next.push(moved);
            }
        }
        ctx.cwds = next;
    }

    fn env_cmd(&mut self, ctx: &Ctx, args: &[Word], input: Input) {
        let mut inner = ctx.clone();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text();
            if let Some((name, _)) = args[i].assignment() {
                if !env_name_ok(&name) {
                    self.refuse(format!(
                        "setting `{name}` can change what programs do (PATH, IFS, GIT_*, LD_*, \
                         PAGER, …); only locale, timezone and colour variables may be set"
                    ));
                    return;
                }
                i += 1;
                continue;
            }
            match t.as_str() {
                "-i" | "--ignore-environment" | "-0" | "--null" | "-" | "--" => i += 1,
                "-u" | "--unset" => i += 2,
                "-C" | "--chdir" => {
                    let Some(dir) = args.get(i + 1) else {
                        self.refuse("`env -C` needs a directory");
                        return;
                    };
                    self.path_word(ctx, dir, Use::Dir);
                    inner.cwds = inner
                        .cwds
                        .iter()
                        .map(|c| normalize(&c.join(dir.text()), dir.has_glob()))
                        .collect();
                    i += 2;
                }
                _ if t.starts_with("--unset=") => i += 1,
                _ if t.starts_with('-') => {
                    self.refuse(format!(
                        "`env {t}` is not allowed (`-S` splits a hidden command line)"
                    ));
                    return;
                }
                _ => break,
            }
        }
        if i >= args.len() {
            self.refuse("`env` without a command prints the environment, which holds secrets");
            return;
        }
        if let Some(mut inner) = self.nested(&inner) {
            self.command(&mut inner, &args[i..], input);
        }
    }

    fn wrapper(&mut self, ctx: &Ctx, prog: &str, args: &[Word], input: Input) {
        // (flags without a value, flags with a value, positional arguments before the command)
        let (plain, valued, positionals): (&[&str], &[&str], usize) = match prog {
            "timeout" => (
                &["--preserve-status", "--foreground", "-v", "--verbose"],
                &["-s", "--signal", "-k", "--kill-after"],
                1,
            ),
            "nice" => (&[], &["-n", "--adjustment"], 0),
            "stdbuf" => (
                &[],
                &["-i", "-o", "-e", "--input", "--output", "--error"],
                0,
            ),
            "ionice" => (&["-t"], &["-c", "-n", "--class", "--classdata"], 0),
            "time" => (&["-p"], &[], 0),
            _ => (&["-p"], &[], 0), // command
        };
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text();
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') || t == "-" {
                break;
            }
            let name = t.split_once('=').map_or(t.as_str(), |(n, _)| n);
            if prog == "command" && (t == "-v" || t == "-V") {
                return; // `command -v NAME` only looks a name up.
            }
            if plain.contains(&t.as_str()) {
                i += 1;
            } else if valued.contains(&name) {
                i += if t.contains('=') { 1 } else { 2 };
            } else if valued.iter().any(|v| v.len() == 2 && t.starts_with(v)) {
                i += 1; // -n10, -oL
            } else if prog == "nice" && t[1..].chars().all(|c| c.is_ascii_digit()) {
                i += 1; // nice -10
            } else {
                self.refuse(format!("`{prog} {t}` is not an option the policy knows"));
                return;
            }
        }
        i += positionals;
        if i >= args.len() {
            if prog == "nice" {
                return; // prints the niceness
            }
            self.refuse(format!("`{prog}` needs a command"));
            return;
        }
        if let Some(mut inner) = self.nested(ctx) {
            self.command(&mut inner, &args[i..], input);
        }
    }

    fn shell(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let mut script: Option<String> = None;
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text();
            i += 1;
            match t.as_str() {
                "--norc" | "--noprofile" | "--posix" | "--" => continue,
                "-o" | "+o" => {
                    let opt = args.get(i).map(Word::text).unwrap_or_default();
                    if !matches!(
                        opt.as_str(),
                        "pipefail" | "errexit" | "nounset" | "noglob" | "noclobber" | "xtrace"
                    ) {
                        self.refuse(format!(
                            "`{prog} -o {opt}` is not an option the policy knows"
                        ));
                        return;
                    }
                    i += 1;
                    continue;
                }
                _ => {}
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
                let flags = &t[1..];
                if !flags.chars().all(|c| "eufxvcC".contains(c)) {
                    self.refuse(format!(
                        "`{prog} {t}` is not allowed (login, interactive and script-file modes \
                         run code the policy can't see)"
                    ));
                    return;
                }
                if flags.contains('c') {
                    match args.get(i) {
                        Some(w) => script = Some(w.text()),
                        None => {
                            self.refuse(format!("`{prog} -c` needs a script"));
                            return;
                        }
                    }
                    break;
                }
                continue;
            }
            break;
        }
        let Some(script) = script else {
            self.refuse(format!(
                "`{prog}` without `-c` runs a script file or stdin that the policy can't see"
            ));
            return;
        };
        let list = match parse(&script) {
            Ok(list) => list,
            Err(e) => {
                self.refuse(format!("in `{prog} -c`: {e}"));
                return;
            }
        };
        if let Some(mut inner) = self.nested(ctx) {
            self.list(&list, &mut inner);
        }
    }

    fn xargs(&mut self, ctx: &Ctx, args: &[Word], input: Input) {
        let plain = [
            "-0",
            "--null",
            "-r",
            "--no-run-if-empty",
            "-t",
            "--verbose",
            "-x",
            "--exit",
        ];
        let valued = ["-n", "-L", "-P", "-s", "-d", "-E", "-I"];
        let valued_long = [
            "--max-args",
            "--max-lines",
            "--max-procs",
            "--max-chars",
            "--delimiter",
            "--eof",
            "--process-slot-var",
        ];
        let mut replace: Option<String> = None;
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text();
            if t == "--" {
                i += 1;
                break;
            }
            if !t.starts_with('-') {
                break;
            }
            let name = t.split_once('=').map_or(t.as_str(), |(n, _)| n);
            if plain.contains(&t.as_str()) {
                i += 1;
            } else if valued.contains(&t.as_str()) {
                if t == "-I" {
                    replace = args.get(i + 1).map(Word::text);
                }
                i += 2;
            } else if valued.iter().any(|v| t.starts_with(v)) {
                if let Some(r) = t.strip_prefix("-I") {
                    replace = Some(r.to_owned());
                }
                i += 1;
            } else if t.starts_with("-i") || t.starts_with("--replace") {
                let r = t
                    .strip_prefix("-i")
                    .or_else(|| t.strip_prefix("--replace="))
                    .unwrap_or("");
                replace = Some(if r.is_empty() {
                    "{}".to_owned()
                } else {
                    r.to_owned()
                });
                i += 1;
            } else if t.starts_with("-l") || t.starts_with("-e") {
                i += 1;
            } else if valued_long.contains(&name) {
                i += if t.contains('=') { 1 } else { 2 };
            } else if name == "-a" || name == "--arg-file" {
                self.refuse("`xargs -a` reads arguments from a file the policy can't see");
                return;
            } else {
                self.refuse(format!(
                    "`xargs {t}` is not an option the policy knows (interactive and tty options \
                     are refused)"
                ));
                return;
            }
        }
        if input == Input::Unknown {
            self.refuse(
                "`xargs` takes its arguments from stdin, which here is not a list of workspace \
                 paths; feed it from find, fd, git ls-files, rg --files/-l or grep -l",
            );
            return;
        }
        let cmd: Vec<Word> = if i >= args.len() {
            vec![Word::plain("echo")]
        } else {
            args[i..].to_vec()
        };
        if let Some(r) = replace.filter(|r| !r.is_empty())
            && cmd.iter().any(|w| {
                let t = w.text();
                t != r && t.contains(&r)
            })
        {
            self.refuse(format!(
                "`xargs -I {r}` inside a larger word lets a file name inject shell syntax; \
                 pass `{r}` as its own argument"
            ));
            return;
        }
        if let Some(mut inner) = self.nested(ctx) {
            inner.stdin = Input::Unknown;
            self.command(&mut inner, &cmd, Input::Unknown);
        }
    }

    fn find(&mut self, ctx: &Ctx, args: &[Word]) {
        let mut i = 0;
        // Leading options.
        while i < args.len() {
            let t = args[i].text();
            match t.as_str() {
                "-P" => i += 1,
                "-L" | "-H" => {
                    self.refuse(format!(
                        "`find {t}` follows symlinks, which can leave the workspace"
                    ));
                    return;
                }
                "-D" => i += 2,
                _ if t.starts_with("-O") => i += 1,
                _ => break,
            }
        }
        // Start paths.
        while i < args.len() {
            let t = args[i].text();
            if t.starts_with('-') || matches!(t.as_str(), "(" | ")" | "!" | ",") {
                break;
            }
            self.path_word(ctx, &args[i], Use::Dir);
            i += 1;
        }
        // Expression.
        const NO_ARG: &[&str] = &[
            "-print",
            "-print0",
            "-ls",
            "-prune",
            "-quit",
            "-true",
            "-false",
            "-empty",
            "-readable",
            "-writable",
            "-executable",
            "-nouser",
            "-nogroup",
            "-depth",
            "-d",
            "-mount",
            "-xdev",
            "-noleaf",
            "-daystart",
            "-ignore_readdir_race",
            "-noignore_readdir_race",
            "-a",
            "-and",
            "-o",
            "-or",
            "-not",
            "!",
            "(",
            ")",
            ",",
            "-nowarn",
            "-warn",
        ];
        const ONE_ARG: &[&str] = &[
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-wholename",
            "-iwholename",
            "-regex",
            "-iregex",
            "-regextype",
            "-type",
            "-xtype",
            "-size",
            "-mtime",
            "-mmin",
            "-atime",
            "-amin",
            "-ctime",
            "-cmin",
            "-perm",
            "-user",
            "-group",
            "-uid",
            "-gid",
            "-links",
            "-inum",
            "-maxdepth",
            "-mindepth",
            "-lname",
            "-ilname",
            "-used",
            "-printf",
            "-fstype",
            "-context",
        ];
        const PATH_ARG: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];
        while i < args.len() {
            let t = args[i].text();
            let ts = t.as_str();
            i += 1;
            if NO_ARG.contains(&ts) {
                continue;
            }
            if ONE_ARG.contains(&ts) {
                if i >= args.len() {
                    self.refuse(format!("`find {t}` needs an argument"));
                    return;
                }
                i += 1;
                continue;
            }
            let newer_xy = ts.len() == 8
                && ts.starts_with("-newer")
                && ts[6..].chars().all(|c| "amcBt".contains(c));
            if PATH_ARG.contains(&ts) || newer_xy {
                let Some(w) = args.get(i) else {
                    self.refuse(format!("`find {t}` needs an argument"));
                    return;
                };
                if !(newer_xy && ts.ends_with('t')) {
                    self.path_word(ctx, w, Use::Meta);
                }
                i += 1;
                continue;
            }
            match ts {
                "-delete" => {
                    self.refuse("`find -delete` deletes files");
                    return;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    self.refuse(format!("`find {t}` writes a file"));
                    return;
                }
                "-follow" => {
                    self.refuse("`find -follow` follows symlinks, which can leave the workspace");
                    return;
                }
                "-files0-from" => {
                    self.refuse("`find -files0-from` reads start points the policy can't see");
                    return;
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let start = i;
                    let Some(end) =
                        (start..args.len()).find(|&k| matches!(args[k].text().as_str(), ";" | "+"))
                    else {
                        self.refuse(format!(
                            "`find {t}` needs a terminating `\\;` or `+` (an unquoted `;` ends \
                             the whole command)"
                        ));
                        return;
                    };
                    let inner_words = &args[start..end];
                    if inner_words.is_empty() {
                        self.refuse(format!("`find {t}` needs a command"));
                        return;
                    }
                    if inner_words.iter().any(|w| {
                        let x = w.text();
                        x != "{}" && x.contains("{}")
                    }) {
                        self.refuse(format!(
                            "`find {t}` with `{{}}` inside a larger word lets a file name inject \
                             shell syntax; pass `{{}}` as its own argument"
                        ));
                        return;
                    }
                    if let Some(mut inner) = self.nested(ctx) {
                        inner.stdin = Input::Unknown;
                        self.command(&mut inner, inner_words, Input::Unknown);
                    }
                    i = end + 1;
                }
                _ => {
                    self.refuse(format!(
                        "`find {t}` is not a find primary the policy knows; only tests, -print, \
                         -printf and -exec with read-only commands are allowed"
                    ));
                    return;
                }
            }
        }
    }

    fn git(&mut self, ctx: &Ctx, args: &[Word]) {
        let mut gctx = ctx.clone();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text();
            let name = t.split_once('=').map_or(t.as_str(), |(n, _)| n).to_owned();
            match name.as_str() {
                "-C" => {
                    let Some(dir) = args.get(i + 1) else {
                        self.refuse("`git -C` needs a directory");
                        return;
                    };
                    self.path_word(&gctx, dir, Use::Dir);
                    gctx.cwds = gctx
                        .cwds
                        .iter()
                        .map(|c| normalize(&c.join(dir.text()), dir.has_glob()))
                        .collect();
                    i += 2;
                }
                "--git-dir" | "--work-tree" => {
                    if let Some((_, v)) = t.split_once('=') {
                        self.path(&gctx, v, v.starts_with('~'), false, Use::Dir);
                        i += 1;
                    } else if let Some(dir) = args.get(i + 1) {
                        self.path_word(&gctx, dir, Use::Dir);
                        i += 2;
                    } else {
                        self.refuse(format!("`git {t}` needs a directory"));
                        return;
                    }
                }
                "--no-pager"
                | "-P"
                | "--no-replace-objects"
                | "--literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-optional-locks"
                | "--bare"
                | "--no-advice" => i += 1,
                "--version" => return,
                "-c" | "--config-env" | "--exec-path" => {
                    self.refuse(format!(
                        "`git {name}` can set a pager, alias, hook or helper that runs a program"
                    ));
                    return;
                }
                _ if t.starts_with('-') => {
                    self.refuse(format!("`git {t}` is not an option the policy knows"));
                    return;
                }
                _ => break,
            }
        }
        let Some(sub) = args.get(i).map(Word::text) else {
            return; // bare `git` prints usage
        };
        let rest = &args[i + 1..];
        const READ: &[&str] = &[
            "log",
            "show",
            "diff",
            "status",
            "blame",
            "annotate",
            "grep",
            "ls-files",
            "ls-tree",
            "rev-parse",
            "rev-list",
            "describe",
            "shortlog",
            "whatchanged",
            "cat-file",
            "show-ref",
            "for-each-ref",
            "merge-base",
            "name-rev",
            "count-objects",
            "show-branch",
            "cherry",
            "diff-tree",
            "diff-files",
            "diff-index",
            "check-ignore",
            "check-attr",
            "version",
            "range-diff",
            "var",
        ];
        let spec = Spec {
            deny_short: if sub == "grep" { "O" } else { "" },
            deny_long: &["--output", "--ext-diff", "--open-files-in-pager"],
            value_short: "",
            value_long: &[],
            why: "writes a file or runs an external program",
        };
        let s = sub.as_str();
        match s {
            _ if READ.contains(&s) => {
                let use_ = if matches!(
                    s,
                    "log"
                        | "show"
                        | "diff"
                        | "blame"
                        | "annotate"
                        | "grep"
                        | "cat-file"
                        | "whatchanged"
                        | "range-diff"
                        | "diff-tree"
                        | "diff-files"
                        | "diff-index"
                ) {
                    Use::Search
                } else {
                    Use::Meta
                };
                if let Some(sc) = self.scan(&gctx, &format!("git {sub}"), rest, &spec) {
                    self.paths(&gctx, &sc.pos, use_);
                }
            }
            "branch" | "tag" => self.git_branch_tag(s, rest),
            "stash" | "worktree" | "reflog" | "notes" | "remote" | "submodule" => {
                let words: Vec<String> = rest.iter().map(Word::text).collect();
                let first = words
                    .iter()
                    .find(|w| !w.starts_with('-') && !w.chars().all(|c| c.is_ascii_digit()))
                    .map(String::as_str);
                let ok = match s {
                    "stash" => matches!(first, Some("list" | "show")),
                    "worktree" => first == Some("list"),
                    "reflog" => matches!(first, None | Some("show" | "list" | "exists")),
                    "notes" => matches!(first, Some("list" | "show")),
                    "remote" => {
                        matches!(first, None | Some("get-url"))
                            && words.iter().all(|w| {
                                !w.starts_with('-')
                                    || matches!(w.as_str(), "-v" | "--verbose" | "--all" | "--push")
                            })
                    }
                    _ => first == Some("status"),
                };
                if ok {
                    if let Some(sc) = self.scan(&gctx, &format!("git {sub}"), rest, &spec) {
                        self.paths(&gctx, &sc.pos, Use::Meta);
                    }
                } else {
                    self.refuse(format!(
                        "`git {sub} {}` changes the repository or reaches the network; only \
                         its listing forms are read-only",
                        first.unwrap_or("")
                    ));
                }
            }
            "config" => {
                let words: Vec<String> = rest.iter().map(Word::text).collect();
                let reading = words.iter().any(|w| {
                    matches!(
                        w.as_str(),
                        "--get" | "--get-all" | "--get-regexp" | "--list" | "-l" | "get" | "list"
                    )
                });
                let bad = words.iter().any(|w| {
                    w.starts_with('-')
                        && !matches!(
                            w.as_str(),
                            "--get"
                                | "--get-all"
                                | "--get-regexp"
                                | "--list"
                                | "-l"
                                | "--local"
                                | "--show-origin"
                                | "--show-scope"
                                | "--name-only"
                                | "-z"
                                | "--null"
                                | "--includes"
                                | "--no-includes"
                        )
                        && !w.starts_with("--type=")
                        && !w.starts_with("--default=")
                });
                if !reading || bad {
                    self.refuse(
                        "`git config` can change settings (and read ones outside the \
                         workspace); only `git config --get/--list [--local]` is read-only",
                    );
                } else if !words.iter().any(|w| w == "--local") {
                    // Without --local, git also reads the user's and the system's config.
                    for file in ["~/.gitconfig", "/etc/gitconfig"] {
                        self.path(&gctx, file, file.starts_with('~'), false, Use::Read);
                    }
                }
            }
            _ => self.refuse(format!(
                "`git {sub}` can change the repository, the working tree or reach the network; \
                 only read-only git subcommands (log, show, diff, status, blame, grep, \
                 ls-files, rev-parse, branch --list, …) may run"
            )),
        }
    }

    fn git_branch_tag(&mut self, sub: &str, rest: &[Word]) {
        let (bad_short, bad_long, list_short, list_long): (&str, &[&str], &str, &[&str]) =
            if sub == "branch" {
                (
                    "dDmMcCufte",
                    &[
                        "--delete",
                        "--move",
                        "--copy",
                        "--set-upstream-to",
                        "--unset-upstream",
                        "--edit-description",
                        "--force",
                        "--track",
                        "--no-track",
                        "--create-reflog",
                        "--set-upstream",
                    ],
                    "lar",
                    &[
                        "--list",
                        "--all",
                        "--remotes",
                        "--contains",
                        "--no-contains",
                        "--merged",
                        "--no-merged",
                        "--points-at",
                        "--show-current",
                    ],
                )
            } else {
                (
                    "asumFfdev",
                    &[
                        "--annotate",
                        "--sign",
                        "--local-user",
                        "--message",
                        "--file",
                        "--force",
                        "--delete",
                        "--edit",
                        "--verify",
                        "--create-reflog",
                        "--trailer",
                    ],
                    "ln",
                    &[
                        "--list",
                        "--contains",
                        "--no-contains",
                        "--merged",
                        "--no-merged",
                        "--points-at",
                    ],
                )
            };
        let mut listing = false;
        let mut positional = Vec::new();
        let mut after_dd = false;
        let mut k = 0;
        while k < rest.len() {
            let t = rest[k].text();
            k += 1;
            if after_dd || !t.starts_with('-') || t == "-" {
                positional.push(rest[k - 1].clone());
                continue;
            }
            if t == "--" {
                after_dd = true;
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                let name = format!("--{}", long.split_once('=').map_or(long, |(n, _)| n));
                if bad_long.iter().any(|b| b.starts_with(&name)) {
                    self.refuse(format!("`git {sub} {name}` changes the repository"));
                    return;
                }
                if list_long.contains(&name.as_str()) {
                    listing = true;
                    // --contains/--merged/--points-at take a commit.
                    if !long.contains('=')
                        && matches!(
                            name.as_str(),
                            "--contains"
                                | "--no-contains"
                                | "--merged"
                                | "--no-merged"
                                | "--points-at"
                        )
                        && k < rest.len()
                        && !rest[k].text().starts_with('-')
                    {
                        k += 1;
                    }
                }
                if (name == "--sort" || name == "--format") && !long.contains('=') {
                    k += 1;
                }
                continue;
            }
            // Short cluster; `-n3` for tag is a listing flag with a count.
            for c in t[1..].chars() {
                if c.is_ascii_digit() {
                    break;
                }
                if bad_short.contains(c) {
                    self.refuse(format!("`git {sub} -{c}` changes the repository"));
                    return;
                }
                if list_short.contains(c) {
                    listing = true;
                }
            }
        }
        if !positional.is_empty() && !listing {
            self.refuse(format!(
                "`git {sub} NAME` creates a {sub}; use `git {sub} --list [PATTERN]` to list"
            ));
        }
    }

    fn sed(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let mut scripts: Vec<String> = Vec::new();
        let mut files: Vec<Word> = Vec::new();
        let mut i = 0;
        let mut ended = false;
        while i < args.len() {
            let t = args[i].text();
            i += 1;
            if ended || !t.starts_with('-') || t == "-" {
                files.push(args[i - 1].clone());
                continue;
            }
            if t == "--" {
                ended = true;
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (name, value) = long
                    .split_once('=')
                    .map_or((long, None), |(n, v)| (n, Some(v)));
                match name {
                    "quiet" | "silent" | "regexp-extended" | "separate" | "null-data"
                    | "unbuffered" | "posix" | "debug" | "sandbox" | "zero-terminated" => {}
                    "expression" => match value {
                        Some(v) => scripts.push(v.to_owned()),
                        None => {
                            scripts.push(args.get(i).map(Word::text).unwrap_or_default());
                            i += 1;
                        }
                    },
                    "line-length" => {
                        if value.is_none() {
                            i += 1;
                        }
                    }
                    _ if "in-place".starts_with(name) && name.len() >= 2 => {
                        self.refuse(format!(
                            "`{prog} --in-place` edits files; use `sed -n` to read"
                        ));
                        return;
                    }
                    _ => {
                        self.refuse(format!(
                            "`{prog} --{name}` is not allowed (`-f` reads a script the policy \
                             can't see)"
                        ));
                        return;
                    }
                }
                continue;
            }
            let chars: Vec<char> = t[1..].chars().collect();
            for (k, &c) in chars.iter().enumerate() {
                match c {
                    'n' | 'E' | 'r' | 's' | 'z' | 'u' => {}
                    'i' => {
                        self.refuse(format!(
                            "`{prog} -i` edits files in place; use `sed -n` to read"
                        ));
                        return;
                    }
                    'e' | 'l' => {
                        let rest: String = chars[k + 1..].iter().collect();
                        let v = if rest.is_empty() {
                            i += 1;
                            args.get(i - 1).map(Word::text).unwrap_or_default()
                        } else {
                            rest
                        };
                        if c == 'e' {
                            scripts.push(v);
                        }
                        break;
                    }
                    _ => {
                        self.refuse(format!(
                            "`{prog} -{c}` is not allowed (`-f` reads a script the policy can't \
                             see, `-i` edits files)"
                        ));
                        return;
                    }
                }
            }
        }
        if scripts.is_empty() {
            if files.is_empty() {
                self.refuse(format!("`{prog}` needs a script"));
                return;
            }
            scripts.push(files.remove(0).text());
        }
        for s in &scripts {
            match sed_script(s) {
                Ok(reads) => {
                    for r in reads {
                        self.path(ctx, &r, r.starts_with('~'), false, Use::Read);
                    }
                }
                Err(e) => {
                    self.refuse(format!("`{prog}` script: {e}"));
                    return;
                }
            }
        }
        self.paths(ctx, &files, Use::Read);
    }

    fn awk(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let mut program: Option<String> = None;
        let mut files = Vec::new();
        let mut i = 0;
        let mut ended = false;
        while i < args.len() {
            let t = args[i].text();
            i += 1;
            if program.is_some() || ended || !t.starts_with('-') || t == "-" {
                if program.is_none() {
                    program = Some(t);
                } else if args[i - 1].assignment().is_none() {
                    files.push(args[i - 1].clone());
                }
                continue;
            }
            if t == "--" {
                ended = true;
                continue;
            }
            if t == "-F" || t == "-v" {
                i += 1;
            } else if t.starts_with("-F")
                || t.starts_with("-v")
                || t.starts_with("--field-separator=")
                || t.starts_with("--assign=")
            {
                // attached value
            } else if t == "--field-separator" || t == "--assign" {
                i += 1;
            } else if t == "--sandbox" || t == "--posix" || t == "--characters-as-bytes" {
            } else {
                self.refuse(format!(
                    "`{prog} {t}` is not allowed (`-f`, `-i`, `-l`, `-E` and `-e` load code the \
                     policy can't check)"
                ));
                return;
            }
        }
        let Some(program) = program else {
            self.refuse(format!("`{prog}` needs a program"));
            return;
        };
        if let Err(e) = awk_program(&program) {
            self.refuse(format!("`{prog}` program: {e}"));
            return;
        }
        self.paths(ctx, &files, Use::Read);
    }

    fn cargo(&mut self, ctx: &Ctx, args: &[Word]) {
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text();
            match t.as_str() {
                "-q" | "--quiet" | "-v" | "-vv" | "--verbose" | "--offline" | "--frozen"
                | "--locked" => i += 1,
                "--color" => i += 2,
                _ if t.starts_with("--color=") => i += 1,
                "--version" | "-V" | "--list" => return,
                _ if t.starts_with('+') => {
                    self.refuse("`cargo +TOOLCHAIN` may install a toolchain");
                    return;
                }
                _ if t.starts_with('-') => {
                    self.refuse(format!(
                        "`cargo {t}` is not allowed (`--config` and `-Z` change what cargo runs)"
                    ));
                    return;
                }
                _ => break,
            }
        }
        let Some(sub) = args.get(i).map(Word::text) else {
            return;
        };
        let rest = &args[i + 1..];
        match sub.as_str() {
            "version" => {}
            "metadata" | "locate-project" | "read-manifest" | "verify-project" => {
                let spec = Spec {
                    deny_short: "Z",
                    deny_long: &["--config"],
                    value_short: "",
                    value_long: &[
                        "--manifest-path",
                        "--format-version",
                        "--features",
                        "--filter-platform",
                    ],
                    why: "changes what cargo runs",
                };
                let Some(sc) = self.scan(ctx, &format!("cargo {sub}"), rest, &spec) else {
                    return;
                };
                if sub == "metadata" && !sc.long.iter().any(|l| l == "--no-deps") {
                    self.refuse(
                        "`cargo metadata` without `--no-deps` resolves dependencies, which can \
                         write Cargo.lock and reach the network; add `--no-deps`",
                    );
                    return;
                }
                if !sc.pos.is_empty() {
                    self.refuse(format!("`cargo {sub}` takes no positional arguments"));
                }
            }
            "build" | "b" | "check" | "c" | "test" | "t" | "run" | "r" | "bench" | "clippy"
            | "doc" | "d" | "fix" | "rustc" | "rustdoc" | "miri" | "fmt" | "expand" => {
                self.refuse(format!(
                    "`cargo {sub}` builds: it writes target/ (or source files) and runs build \
                     scripts and proc macros; read Cargo.toml and the sources, or use \
                     `cargo metadata --no-deps`"
                ));
            }
            "tree" => self.refuse(
                "`cargo tree` resolves dependencies, which can write Cargo.lock and reach the \
                 network; read Cargo.lock instead",
            ),
            _ => self.refuse(format!(
                "`cargo {sub}` changes dependencies, files or a registry (or is unknown); only \
                 `cargo metadata --no-deps`, `cargo locate-project` and `cargo --version` run"
            )),
        }
    }

    fn toolchain(&mut self, p: &str, args: &[Word]) {
        let texts: Vec<String> = args.iter().map(Word::text).collect();
        let t: Vec<&str> = texts.iter().map(String::as_str).collect();
        let read = match (p, t.as_slice()) {
            (_, ["--version"]) => true,
            ("python" | "python3" | "rustc" | "cargo" | "pip" | "pip3", ["-V"]) => true,
            ("rustc", ["-vV"]) => true,
            ("node" | "npm" | "yarn" | "pnpm", ["-v"]) => true,
            ("go", ["version"]) => true,
            ("go", ["env", rest @ ..]) => rest.iter().all(|a| !a.starts_with('-') || *a == "-json"),
            ("npm" | "pnpm", ["ls" | "list", rest @ ..]) => {
                rest.iter().all(|a| !a.contains('/') && !a.contains(".."))
            }
            ("pip" | "pip3", ["list" | "show" | "freeze", ..]) => true,
            _ => false,
        };
        if read {
            return;
        }
        if BUILDERS.contains(&p) {
            self.refuse(format!(
                "`{p}` builds: compilers and build tools write outputs and run arbitrary \
                 recipes"
            ));
        } else if PACKAGERS.contains(&p) {
            self.refuse(format!(
                "`{p}` installs, fetches or runs package scripts; only listing forms (`npm ls`, \
                 `pip list`) and `--version` run"
            ));
        } else if SYSTEM.contains(&p) {
            self.refuse(format!("`{p}` changes system state"));
        } else {
            self.refuse(format!(
                "`{p}` runs arbitrary code; only `{p} --version` runs"
            ));
        }
    }

    fn jq(&mut self, ctx: &Ctx, args: &[Word]) {
        let mut filter: Option<String> = None;
        let mut files = Vec::new();
        let mut i = 0;
        let mut rest_args = false;
        let mut from_file = false;
        while i < args.len() {
            let t = args[i].text();
            i += 1;
            if rest_args {
                continue;
            }
            if !t.starts_with('-') || t == "-" {
                if filter.is_none() && !from_file {
                    filter = Some(t);
                } else {
                    files.push(args[i - 1].clone());
                }
                continue;
            }
            match t.as_str() {
                "--arg" | "--argjson" => i += 2,
                "--slurpfile" | "--rawfile" => {
                    if let Some(w) = args.get(i + 1) {
                        self.path_word(ctx, w, Use::Read);
                    }
                    i += 2;
                }
                "--indent" => i += 1,
                "-f" | "--from-file" => {
                    if let Some(w) = args.get(i) {
                        self.path_word(ctx, w, Use::Read);
                    }
                    from_file = true;
                    i += 1;
                }
                "-L" => {
                    if let Some(w) = args.get(i) {
                        self.path_word(ctx, w, Use::Dir);
                    }
                    i += 1;
                }
                "--args" | "--jsonargs" => rest_args = true,
                _ if t.starts_with("--") => {}
                _ => {
                    if t[1..].chars().any(|c| c == 'f' || c == 'L') {
                        self.refuse(format!("`jq {t}`: pass -f/-L on their own"));
                        return;
                    }
                }
            }
        }
        if let Some(f) = &filter
            && (contains_ident(f, "env")
                || f.contains("$ENV")
                || contains_ident(f, "import")
                || contains_ident(f, "include"))
        {
            self.refuse(
                "the jq filter reads the environment (`env`, `$ENV`, which holds secrets) or loads \
                 modules (`import`, `include`)",
            );
            return;
        }
        self.paths(ctx, &files, Use::Read);
    }

    fn yq(&mut self, ctx: &Ctx, args: &[Word]) {
        let spec = Spec {
            deny_short: "is",
            deny_long: &["--inplace", "--split-exp", "--from-file"],
            value_short: "poI",
            value_long: &["--output-format", "--input-format", "--indent"],
            why: "writes files or reads an expression the policy can't see",
        };
        let Some(mut sc) = self.scan(ctx, "yq", args, &spec) else {
            return;
        };
        if sc.pos.is_empty() {
            return;
        }
        if matches!(sc.pos[0].text().as_str(), "eval" | "e" | "eval-all" | "ea") {
            sc.pos.remove(0);
            if sc.pos.is_empty() {
                return;
            }
        }
        let expr = sc.pos.remove(0).text();
        if contains_ident(&expr, "load")
            || contains_ident(&expr, "load_str")
            || contains_ident(&expr, "env")
            || contains_ident(&expr, "strenv")
            || contains_ident(&expr, "envsubst")
        {
            self.refuse("the yq expression loads files or reads the environment");
            return;
        }
        self.paths(ctx, &sc.pos, Use::Read);
    }

    fn grep(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let Some(mut sc) = self.scan(ctx, prog, args, &GREP) else {
            return;
        };
        if !sc.has("ef", &["--regexp", "--file"]) && !sc.pos.is_empty() {
            sc.pos.remove(0);
        }
        self.paths(ctx, &sc.pos, Use::Search);
    }

    fn rg(&mut self, ctx: &Ctx, args: &[Word]) {
        let Some(mut sc) = self.scan(ctx, "rg", args, &RG) else {
            return;
        };
        if !sc.has("ef", &["--regexp", "--file", "--files", "--type-list"]) && !sc.pos.is_empty() {
            sc.pos.remove(0);
        }
        self.paths(ctx, &sc.pos, Use::Search);
    }

    fn fd(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let Some(mut sc) = self.scan(ctx, prog, args, &FD) else {
            return;
        };
        if !sc.pos.is_empty() {
            sc.pos.remove(0);
        }
        self.paths(ctx, &sc.pos, Use::Dir);
    }
}

/// What a pipeline stage's stdout carries, for a following `xargs`: `Confined` only for
/// listers of workspace paths whose every flag is on a short list (flags such as
/// `git diff --line-prefix`, `grep --label`, `fd --format` or `ls -l` could print arbitrary
/// text), and for line filters that pass their input through.
fn flow(words: &[Word], input: Input) -> Input {
    let texts: Vec<String> = words.iter().map(Word::text).collect();
    let Some(prog) = texts.first().map(String::as_str) else {
        return Input::Unknown;
    };
    let args = &texts[1..];
    let numeric = |a: &str| {
        a.trim_start_matches('+')
            .chars()
            .all(|c| c.is_ascii_digit())
    };
    let non_numeric = args
        .iter()
        .filter(|a| !a.starts_with('-') && !numeric(a))
        .count();
    let confined = |ok: bool| if ok { Input::Confined } else { Input::Unknown };
    match prog {
        "find" => confined(!args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-printf"
                    | "-ls"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
                    | "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
            )
        })),
        "fd" | "fdfind" => confined(flags_ok(
            args,
            "HIusiFga0p",
            "tedE",
            &[
                "--hidden",
                "--no-ignore",
                "--unrestricted",
                "--case-sensitive",
                "--ignore-case",
                "--fixed-strings",
                "--glob",
                "--absolute-path",
                "--print0",
                "--full-path",
                "--type",
                "--extension",
                "--max-depth",
                "--exclude",
            ],
        )),
        "git" => {
            let sub = args.first().map(String::as_str);
            let rest = args.get(1..).unwrap_or(&[]);
            match sub {
                Some("ls-files") => confined(flags_ok(
                    rest,
                    "cdmoikz",
                    "x",
                    &[
                        "--cached",
                        "--deleted",
                        "--modified",
                        "--others",
                        "--ignored",
                        "--killed",
                        "--exclude-standard",
                        "--full-name",
                        "--directory",
                        "--no-empty-directory",
                        "--error-unmatch",
                        "--exclude",
                        "--recurse-submodules",
                    ],
                )),
                Some("diff") if rest.iter().any(|a| a == "--name-only") => confined(flags_ok(
                    rest,
                    "z",
                    "",
                    &[
                        "--name-only",
                        "--cached",
                        "--staged",
                        "--relative",
                        "--no-renames",
                        "--diff-filter",
                        "--merge-base",
                    ],
                )),
                Some("ls-tree") if rest.iter().any(|a| a == "--name-only") => {
                    confined(flags_ok(rest, "rtdz", "", &["--name-only", "--full-tree"]))
                }
                _ => Input::Unknown,
            }
        }
        "rg" if args.iter().any(|a| {
            a == "--files"
                || a == "--files-with-matches"
                || a == "--files-without-match"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('l'))
        }) =>
        {
            confined(flags_ok(
                args,
                "luiIsSFwxUz0.",
                "egtTmd",
                &[
                    "--files",
                    "--files-with-matches",
                    "--files-without-match",
                    "--hidden",
                    "--no-ignore",
                    "--ignore-case",
                    "--smart-case",
                    "--case-sensitive",
                    "--fixed-strings",
                    "--word-regexp",
                    "--line-regexp",
                    "--glob",
                    "--iglob",
                    "--type",
                    "--type-not",
                    "--max-depth",
                    "--null",
                    "--sort",
                    "--sortr",
                    "--regexp",
                    "--multiline",
                    "--unrestricted",
                    "--no-messages",
                    "--max-count",
                ],
            ))
        }
        "grep" | "egrep" | "fgrep"
            if args.iter().any(|a| {
                a == "--files-with-matches"
                    || a == "--files-without-match"
                    || (a.starts_with('-')
                        && !a.starts_with("--")
                        && (a.contains('l') || a.contains('L')))
            }) =>
        {
            confined(flags_ok(
                args,
                "lLriIsFEGPwxZ",
                "efm",
                &[
                    "--files-with-matches",
                    "--files-without-match",
                    "--recursive",
                    "--ignore-case",
                    "--fixed-strings",
                    "--extended-regexp",
                    "--word-regexp",
                    "--line-regexp",
                    "--null",
                    "--include",
                    "--exclude",
                    "--exclude-dir",
                    "--regexp",
                    "--no-messages",
                    "--binary-files",
                ],
            ))
        }
        "grep" | "egrep" | "fgrep" => {
            // A line filter: selects whole lines of its input.
            let with_e = args.iter().any(|a| {
                a == "--regexp" || (a.starts_with('-') && !a.starts_with("--") && a.contains('e'))
            });
            let positional = args.iter().filter(|a| !a.starts_with('-')).count();
            let ok = flags_ok(
                args,
                "viEFGPwxs",
                "e",
                &[
                    "--invert-match",
                    "--ignore-case",
                    "--extended-regexp",
                    "--fixed-strings",
                    "--word-regexp",
                    "--line-regexp",
                    "--regexp",
                    "--perl-regexp",
                    "--basic-regexp",
                    "--no-messages",
                ],
            ) && positional == usize::from(!with_e);
            if ok { input } else { Input::Unknown }
        }
        "sort" | "uniq" if non_numeric == 0 => input,
        "head" | "tail"
            if non_numeric == 0
                && flags_ok(
                    args,
                    "nqv",
                    "n",
                    &["--lines", "--quiet", "--silent", "--verbose"],
                ) =>
        {
            input
        }
        "tac" if args.is_empty() => input,
        _ => Input::Unknown,
    }
}

/// Whether every flag in `args` is allowed: short clusters of `short` characters (a
/// character of `valued` takes the rest of the cluster or the next argument as its value),
/// and long flags named in `long` (with or without `=value`).
fn flags_ok(args: &[String], short: &str, valued: &str, long: &[&str]) -> bool {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            return true;
        }
        if let Some(l) = a.strip_prefix("--") {
            let name = format!("--{}", l.split_once('=').map_or(l, |(n, _)| n));
            if !long.contains(&name.as_str()) {
                return false;
            }
            continue;
        }
        if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (k, c) in cluster.char_indices() {
                if valued.contains(c) {
                    if k + c.len_utf8() == cluster.len() {
                        i += 1;
                    }
                    break;
                }
                if !short.contains(c) && !c.is_ascii_digit() {
                    return false;
                }
            }
        }
    }
    true
}

fn contains_ident(text: &str, ident: &str) -> bool {
    let bytes = text.as_bytes();
    let is_id = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut start = 0;
    while let Some(pos) = text[start..].find(ident) {
        let at = start + pos;
        let end = at + ident.len();
        let before = at == 0 || !is_id(bytes[at - 1]);
        let after = end >= bytes.len() || !is_id(bytes[end]);
        if before && after {
            return true;
        }
        start = at + 1;
    }
    false
}

/// Parses a sed script; returns the files it reads (`r`, `R`) or why it is refused.
fn sed_script(script: &str) -> Result<Vec<String>, String> {
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut reads = Vec::new();
    let n = s.len();
    let to_eol = |i: &mut usize| -> String {
        let start = *i;
        while *i < n && s[*i] != '\n' {
            *i += 1;
        }
        s[start..*i].iter().collect::<String>().trim().to_owned()
    };
    fn skip_regex(s: &[char], i: &mut usize, delim: char) -> Result<(), String> {
        while *i < s.len() {
            match s[*i] {
                '\\' => *i += 2,
                c if c == delim => {
                    *i += 1;
                    return Ok(());
                }
                '\n' => return Err("unterminated regular expression".to_owned()),
                _ => *i += 1,
            }
        }
        Err("unterminated regular expression".to_owned())
    }
    fn address(s: &[char], i: &mut usize) -> Result<(), String> {
        match s.get(*i) {
            Some(c) if c.is_ascii_digit() => {
                while s.get(*i).is_some_and(|c| c.is_ascii_digit() || *c == '~') {
                    *i += 1;
                }
            }
            Some('$') => *i += 1,
            Some('/') => {
                *i += 1;
                skip_regex(s, i, '/')?;
                while matches!(s.get(*i), Some('I' | 'M')) {
                    *i += 1;
                }
            }
            Some('\\') => {
                let Some(&d) = s.get(*i + 1) else {
                    return Err("bad address".to_owned());
                };
                *i += 2;
                skip_regex(s, i, d)?;
                while matches!(s.get(*i), Some('I' | 'M')) {
                    *i += 1;
                }
            }
            _ => {}
        }
        Ok(())
    }
    while i < n {
        while i < n && (s[i].is_whitespace() || s[i] == ';') {
            i += 1;
        }
        if i >= n {
            break;
        }
        if s[i] == '#' {
            to_eol(&mut i);
            continue;
        }
        address(&s, &mut i)?;
        if s.get(i) == Some(&',') {
            i += 1;
            if matches!(s.get(i), Some('+' | '~')) {
                i += 1;
            }
            address(&s, &mut i)?;
        }
        while i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '!') {
            i += 1;
        }
        let Some(&cmd) = s.get(i) else {
            return Err("missing command".to_owned());
        };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while i < n && (s[i] == ' ' || s[i].is_ascii_digit()) {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line, with backslash-newline continuations.
                while i < n && s[i] != '\n' {
                    if s[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < n && s[i] != '\n' && s[i] != ';' {
                    i += 1;
                }
            }
            'r' | 'R' => {
                let f = to_eol(&mut i);
                if f.is_empty() {
                    return Err("`r` needs a file".to_owned());
                }
                reads.push(f);
            }
            'w' | 'W' => return Err("the `w` command writes a file".to_owned()),
            'e' => return Err("the `e` command runs a shell command".to_owned()),
            's' | 'y' => {
                let Some(&d) = s.get(i) else {
                    return Err(format!("`{cmd}` needs a delimiter"));
                };
                if d == '\\' || d == '\n' {
                    return Err(format!("bad `{cmd}` delimiter"));
                }
                i += 1;
                skip_regex(&s, &mut i, d)?;
                skip_regex(&s, &mut i, d)?;
                if cmd == 's' {
                    while i < n && !matches!(s[i], ';' | '\n' | '}' | ' ' | '\t') {
                        match s[i] {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' => i += 1,
                            c if c.is_ascii_digit() => i += 1,
                            'w' | 'W' => {
                                return Err("the `s///w` flag writes a file".to_owned());
                            }
                            'e' => return Err("the `s///e` flag runs a shell command".to_owned()),
                            c => return Err(format!("unknown `s` flag `{c}`")),
                        }
                    }
                }
            }
            c => return Err(format!("unknown or unsupported command `{c}`")),
        }
    }
    Ok(reads)
}

/// Scans an awk program for what makes it more than a reader.
fn awk_program(prog: &str) -> Result<(), String> {
    let s: Vec<char> = prog.chars().collect();
    let n = s.len();
    let mut i = 0;
    let mut prev_operand = false;
    let mut depth: i32 = 0;
    let mut print_depth: Option<i32> = None;
    const OPERATOR_WORDS: &[&str] = &[
        "print", "printf", "return", "if", "while", "for", "do", "else", "in", "case",
    ];
    while i < n {
        let c = s[i];
        match c {
            '"' => {
                i += 1;
                while i < n && s[i] != '"' {
                    if s[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                prev_operand = true;
            }
            '/' if !prev_operand => {
                i += 1;
                let mut in_class = false;
                while i < n {
                    match s[i] {
                        '\\' => i += 1,
                        '[' => in_class = true,
                        ']' => in_class = false,
                        '/' if !in_class => break,
                        '\n' => return Err("unterminated regular expression".to_owned()),
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                prev_operand = true;
            }
            '#' => {
                while i < n && s[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => i += 2,
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < n && (s[i].is_ascii_alphanumeric() || s[i] == '_') {
                    i += 1;
                }
                let word: String = s[start..i].iter().collect();
                match word.as_str() {
                    "system" => return Err("`system()` runs a shell command".to_owned()),
                    "getline" => {
                        return Err(
                            "`getline` reads files or command output the policy can't see"
                                .to_owned(),
                        );
                    }
                    "ENVIRON" | "PROCINFO" => {
                        return Err(format!(
                            "`{word}` reads the environment, which holds secrets"
                        ));
                    }
                    "print" | "printf" => print_depth = Some(depth),
                    _ => {}
                }
                prev_operand = !OPERATOR_WORDS.contains(&word.as_str());
            }
            c if c.is_ascii_digit() => {
                while i < n && (s[i].is_ascii_alphanumeric() || s[i] == '.') {
                    i += 1;
                }
                prev_operand = true;
            }
            '(' | '[' => {
                depth += 1;
                i += 1;
                prev_operand = false;
            }
            ')' | ']' => {
                depth -= 1;
                i += 1;
                prev_operand = true;
            }
            '>' => {
                if print_depth == Some(depth) {
                    return Err("output redirection inside the program writes a file".to_owned());
                }
                i += 1;
                prev_operand = false;
            }
            '|' => {
                if s.get(i + 1) == Some(&'|') {
                    i += 2;
                    prev_operand = false;
                } else {
                    return Err("`|` in an awk program pipes to or from a command".to_owned());
                }
            }
            ';' | '\n' | '{' | '}' => {
                print_depth = None;
                i += 1;
                prev_operand = false;
            }
            ' ' | '\t' | '\r' => i += 1,
            '@' => {
                return Err(
                    "`@` (gawk indirect calls, @include, @load) runs code the policy can't see"
                        .to_owned(),
                );
            }
            '$' => {
                i += 1;
                prev_operand = false;
            }
            _ => {
                i += 1;
                prev_operand = false;
            }
        }
    }
    Ok(())
}

const HEAD: Spec = Spec {
    deny_short: "",
    deny_long: &[],
    value_short: "nc",
    value_long: &["--lines", "--bytes"],
    why: "",
};
const TAIL: Spec = Spec {
    deny_short: "fF",
    deny_long: &["--follow", "--retry"],
    value_short: "ncs",
    value_long: &[
        "--lines",
        "--bytes",
        "--sleep-interval",
        "--pid",
        "--max-unchanged-stats",
    ],
    why: "follows the file forever",
};
const WC: Spec = Spec {
    deny_short: "",
    deny_long: &["--files0-from"],
    value_short: "",
    value_long: &[],
    why: "reads file names the policy can't see",
};
const CUT: Spec = Spec {
    deny_short: "",
    deny_long: &[],
    value_short: "bcdf",
    value_long: &[],
    why: "",
};
const SORT: Spec = Spec {
    deny_short: "oT",
    deny_long: &[
        "--output",
        "--compress-program",
        "--temporary-directory",
        "--files0-from",
        "--random-source",
    ],
    value_short: "ktS",
    value_long: &[
        "--key",
        "--field-separator",
        "--buffer-size",
        "--parallel",
        "--batch-size",
    ],
    why: "writes files or runs a program (use sort without -o and read its output)",
};
const UNIQ: Spec = Spec {
    deny_short: "",
    deny_long: &[],
    value_short: "fsw",
    value_long: &[
        "--skip-fields",
        "--skip-chars",
        "--check-chars",
        "--group",
        "--all-repeated",
    ],
    why: "",
};
const XXD: Spec = Spec {
    deny_short: "r",
    deny_long: &["--revert"],
    value_short: "cglsnoC",
    value_long: &[],
    why: "writes binary output",
};
const FILE: Spec = Spec {
    deny_short: "Cf",
    deny_long: &["--compile", "--files-from"],
    value_short: "mFeP",
    value_long: &["--magic-file", "--separator", "--exclude", "--parameter"],
    why: "writes a compiled magic file or reads names the policy can't see",
};
const LS: Spec = Spec {
    deny_short: "",
    deny_long: &["--files0-from"],
    value_short: "ITwXB",
    value_long: &[
        "--ignore",
        "--hide",
        "--tabsize",
        "--width",
        "--exclude",
        "--exclude-from",
    ],
    why: "reads file names the policy can't see",
};
const TREE: Spec = Spec {
    deny_short: "oRl",
    deny_long: &["--fromfile", "--output"],
    value_short: "LPIHT",
    value_long: &["--charset", "--filelimit", "--timefmt", "--sort"],
    why: "writes an output file or follows symlinks out of the workspace",
};
const DATE: Spec = Spec {
    deny_short: "sf",
    deny_long: &["--set", "--file"],
    value_short: "dr",
    value_long: &["--date", "--reference"],
    why: "sets the clock or reads dates from a file",
};
const GREP: Spec = Spec {
    deny_short: "R",
    deny_long: &["--dereference-recursive"],
    value_short: "efABCmdD",
    value_long: &[
        "--regexp",
        "--file",
        "--after-context",
        "--before-context",
        "--context",
        "--max-count",
        "--directories",
        "--devices",
        "--include",
        "--exclude",
        "--exclude-dir",
        "--exclude-from",
        "--label",
        "--binary-files",
    ],
    why: "follows symlinks out of the workspace (use -r)",
};
const RG: Spec = Spec {
    deny_short: "L",
    deny_long: &["--pre", "--follow", "--hostname-bin"],
    value_short: "efgtTmABCMjErd",
    value_long: &[
        "--regexp",
        "--file",
        "--glob",
        "--iglob",
        "--type",
        "--type-not",
        "--max-count",
        "--after-context",
        "--before-context",
        "--context",
        "--max-columns",
        "--threads",
        "--encoding",
        "--replace",
        "--max-depth",
        "--type-add",
        "--sort",
        "--sortr",
        "--colors",
        "--ignore-file",
        "--max-filesize",
        "--context-separator",
        "--field-match-separator",
        "--path-separator",
        "--engine",
    ],
    why: "runs a preprocessor program or follows symlinks out of the workspace",
};
const FD: Spec = Spec {
    deny_short: "xXL",
    deny_long: &["--exec", "--exec-batch", "--follow"],
    value_short: "etEdScj",
    value_long: &[
        "--extension",
        "--type",
        "--exclude",
        "--max-depth",
        "--min-depth",
        "--size",
        "--changed-within",
        "--changed-before",
        "--threads",
        "--base-directory",
        "--search-path",
    ],
    why: "runs a command or follows symlinks out of the workspace",
};

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> &'static Path {
        Path::new("/work/ws")
    }

    #[test]
    fn lexer_keeps_quoted_operators_as_text() {
        let toks = lex("echo ';rm x' \"a|b\" c\\&d").unwrap();
        let words: Vec<String> = toks
            .iter()
            .filter_map(|t| match t {
                Tok::Word(w) => Some(w.text()),
                _ => None,
            })
            .collect();
        assert_eq!(words, ["echo", ";rm x", "a|b", "c&d"]);
        assert_eq!(toks.len(), 4);
    }

    #[test]
    fn scopes_follow_the_approval_policy() {
        let c = classify("cat /etc/passwd", ws());
        assert_eq!(c.scopes(), ["path:/etc/*"]);
        let c = classify("ls /etc", ws());
        assert_eq!(c.scopes(), ["path:/etc/*"]);
        let c = classify("cat ~/.ssh/id_rsa", ws());
        assert_eq!(c.scopes(), ["path:~/.ssh/*"]);
        let c = classify("cat config/.env.local", ws());
        assert_eq!(c.scopes(), ["path:/work/ws/config/*"]);
    }

    #[test]
    fn home_is_expanded_when_known() {
        let env = Envelope {
            workspace: "/home/u/ws".into(),
            home: Some("/home/u".into()),
            follow_symlinks: false,
        };
        let c = classify_with("cat ~/ws/src/main.rs", &env);
        assert_eq!(c, Classification::ReadOnly);
        let c = classify_with("cat ~/.ssh/id_rsa", &env);
        assert_eq!(c.scopes(), ["path:/home/u/.ssh/*"]);
    }

    #[test]
    fn cd_moves_relative_paths() {
        let c = classify("cd /etc && cat passwd", ws());
        assert_eq!(c.class(), Class::Approve);
        assert!(c.scopes().contains(&"path:/etc/*".to_owned()), "{c:?}");
        assert_eq!(
            classify("cd src && cat main.rs", ws()),
            Classification::ReadOnly
        );
    }

    #[test]
    fn symlinks_pointing_outward_are_caught_when_following() {
        let base =
            std::env::temp_dir().join(format!("weft-planner-symlink-{}", std::process::id()));
        let ws = base.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let outside = base.join("secret.txt");
        std::fs::write(&outside, "x").unwrap();
        let link = ws.join("link.txt");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let mut env = Envelope::new(&ws);
        assert_eq!(
            classify_with("cat link.txt", &env),
            Classification::ReadOnly
        );
        env.follow_symlinks = true;
        let c = classify_with("cat link.txt", &env);
        assert_eq!(c.class(), Class::Approve, "{c:?}");
        assert_eq!(
            classify_with("cat missing.txt", &env),
            Classification::ReadOnly
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn classification_serializes_with_a_tag() {
        let json = serde_json::to_string(&classify("rm x", ws())).unwrap();
        assert!(
            json.starts_with(r#"{"class":"refused","reason":"#),
            "{json}"
        );
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match(".*", ".."));
        assert!(!glob_match("*", ".env"));
        assert!(glob_match(".e*", ".env"));
        assert!(glob_match(".[e]nv", ".env"));
        assert!(!glob_match("*.rs", ".env"));
    }
}

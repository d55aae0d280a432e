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
//!
//! # Layout
//!
//! The public types and [`classify`] live here; the rest, one job a file: `lexer` (words,
//! operators, here-documents), `parser` (lists, pipelines, simple commands), `paths`
//! (normalisation, globs, the workspace check), `classifier` (the walk over a parsed line,
//! flag scanning and the dispatch), `tables` (the program lists and flag tables it decides
//! by), and the per-program rules:
//! `shell` (`cd`, `env`, wrappers, `sh -c`, `xargs`), `find`, `git`, `sed_awk`, and `tools`
//! (toolchains, `jq`, `yq`, `grep`, `rg`, `fd`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

mod classifier;
mod find;
mod git;
mod lexer;
mod parser;
mod paths;
mod sed_awk;
mod shell;
mod tables;
mod tools;

use classifier::*;
use lexer::*;
use parser::*;
use paths::*;
use shell::*;
use tables::*;
use tools::*;

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

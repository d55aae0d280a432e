//! The classifier: walks the parsed line, tracks `cd` and stdin, scans each program's
//! flags against its [`Spec`], and dispatches every program to its table.

use super::*;

/// Whether a command's stdin is known to carry only workspace paths (or nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Input {
    Confined,
    Unknown,
}

#[derive(Debug, Clone)]
pub(super) struct Ctx {
    /// The directories the command may be running in (after `cd`, old and new).
    pub(super) cwds: Vec<PathBuf>,
    pub(super) depth: usize,
    pub(super) stdin: Input,
}

pub(super) struct Classifier<'e> {
    pub(super) env: &'e Envelope,
    pub(super) ws: PathBuf,
    pub(super) canon_ws: Option<PathBuf>,
    pub(super) refusal: Option<String>,
    pub(super) accesses: BTreeMap<PathAccess, String>,
}

/// Flags of an allowed program that write, execute or escape, and flags that take a value.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    pub(super) deny_short: &'static str,
    pub(super) deny_long: &'static [&'static str],
    pub(super) value_short: &'static str,
    pub(super) value_long: &'static [&'static str],
    pub(super) why: &'static str,
}

pub(super) const PLAIN: Spec = Spec {
    deny_short: "",
    deny_long: &[],
    value_short: "",
    value_long: &[],
    why: "",
};

#[derive(Debug, Default)]
pub(super) struct Scanned {
    pub(super) pos: Vec<Word>,
    pub(super) short: Vec<char>,
    pub(super) long: Vec<String>,
}

impl Scanned {
    pub(super) fn has(&self, short: &str, long: &[&str]) -> bool {
        self.short.iter().any(|c| short.contains(*c))
            || self.long.iter().any(|l| long.contains(&l.as_str()))
    }
}

impl<'e> Classifier<'e> {
    pub(super) fn new(env: &'e Envelope) -> Classifier<'e> {
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

    pub(super) fn refuse(&mut self, reason: impl Into<String>) {
        if self.refusal.is_none() {
            self.refusal = Some(reason.into());
        }
    }

    pub(super) fn approve(&mut self, access: PathAccess, reason: String) {
        self.accesses.entry(access).or_insert(reason);
    }

    pub(super) fn finish(self) -> Classification {
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

    pub(super) fn line(&mut self, command: &str) {
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

    pub(super) fn nested(&mut self, ctx: &Ctx) -> Option<Ctx> {
        if ctx.depth >= MAX_DEPTH {
            self.refuse("the command nests too deeply to analyse");
            return None;
        }
        let mut inner = ctx.clone();
        inner.depth += 1;
        Some(inner)
    }

    pub(super) fn list(&mut self, list: &[Pipeline], ctx: &mut Ctx) {
        for p in list {
            self.pipeline(p, ctx);
        }
    }

    pub(super) fn pipeline(&mut self, p: &Pipeline, ctx: &mut Ctx) {
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
    pub(super) fn cmd(&mut self, c: &Cmd, ctx: &mut Ctx) -> Input {
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
    pub(super) fn redirs(&mut self, redirs: &Redirs, ctx: &Ctx) -> bool {
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

    // -- flags ----------------------------------------------------------------------------

    /// Walks a program's arguments: refuses denied flags, checks flag values that look like
    /// paths, and returns the positional arguments.
    pub(super) fn scan(
        &mut self,
        ctx: &Ctx,
        prog: &str,
        args: &[Word],
        spec: &Spec,
    ) -> Option<Scanned> {
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
    pub(super) fn reader(&mut self, ctx: &Ctx, prog: &str, args: &[Word], spec: &Spec, use_: Use) {
        if let Some(s) = self.scan(ctx, prog, args, spec) {
            self.paths(ctx, &s.pos, use_);
        }
    }

    // -- programs -------------------------------------------------------------------------

    pub(super) fn command(&mut self, ctx: &mut Ctx, words: &[Word], input: Input) {
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

            _ => self.simple_program(ctx, p, args),
        }
    }

    /// The programs [`Classifier::command`] leaves to plain rules: readers with a flag
    /// table, harmless builtins, and the refused families, in that order.
    fn simple_program(&mut self, ctx: &Ctx, p: &str, args: &[Word]) {
        match p {
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
}

//! Programs that run other commands or change where later ones run: `cd`, `env`, the
//! wrappers (`nice`, `timeout`, …), `sh -c` scripts and `xargs`, and what a pipeline
//! stage's stdout carries.

use super::*;

impl<'e> Classifier<'e> {
    pub(super) fn cd(&mut self, ctx: &mut Ctx, args: &[Word]) {
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

    pub(super) fn env_cmd(&mut self, ctx: &Ctx, args: &[Word], input: Input) {
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

    pub(super) fn wrapper(&mut self, ctx: &Ctx, prog: &str, args: &[Word], input: Input) {
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

    pub(super) fn shell(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
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

    pub(super) fn xargs(&mut self, ctx: &Ctx, args: &[Word], input: Input) {
        let Some((i, replace)) = self.xargs_options(args) else {
            return;
        };
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

    /// `xargs`'s options: where its command starts and its `-I`/`-i` replace string, or
    /// `None` when the line is refused.
    fn xargs_options(&mut self, args: &[Word]) -> Option<(usize, Option<String>)> {
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
                return None;
            } else {
                self.refuse(format!(
                    "`xargs {t}` is not an option the policy knows (interactive and tty options \
                     are refused)"
                ));
                return None;
            }
        }
        Some((i, replace))
    }
}

/// What a pipeline stage's stdout carries, for a following `xargs`: `Confined` only for
/// listers of workspace paths whose every flag is on a short list (flags such as
/// `git diff --line-prefix`, `grep --label`, `fd --format` or `ls -l` could print arbitrary
/// text), and for line filters that pass their input through.
pub(super) fn flow(words: &[Word], input: Input) -> Input {
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
    match prog {
        "find" => confined(!args.iter().any(|a| FIND_PRINTING.contains(&a.as_str()))),
        "fd" | "fdfind" => confined(flags_ok(args, "HIusiFga0p", "tedE", FD_LISTING)),
        "git" => git_flow(args),
        "rg" if rg_lists_files(args) => {
            confined(flags_ok(args, "luiIsSFwxUz0.", "egtTmd", RG_LISTING))
        }
        "grep" | "egrep" | "fgrep" if grep_lists_files(args) => {
            confined(flags_ok(args, "lLriIsFEGPwxZ", "efm", GREP_LISTING))
        }
        "grep" | "egrep" | "fgrep" => {
            // A line filter: selects whole lines of its input.
            let with_e = args.iter().any(|a| {
                a == "--regexp" || (a.starts_with('-') && !a.starts_with("--") && a.contains('e'))
            });
            let positional = args.iter().filter(|a| !a.starts_with('-')).count();
            let ok = flags_ok(args, "viEFGPwxs", "e", GREP_FILTERING)
                && positional == usize::from(!with_e);
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

fn confined(ok: bool) -> Input {
    if ok { Input::Confined } else { Input::Unknown }
}

/// [`flow`] of `git`: `ls-files`, and `diff`/`ls-tree` with `--name-only`, list paths.
fn git_flow(args: &[String]) -> Input {
    let sub = args.first().map(String::as_str);
    let rest = args.get(1..).unwrap_or(&[]);
    match sub {
        Some("ls-files") => confined(flags_ok(rest, "cdmoikz", "x", GIT_LS_FILES_LISTING)),
        Some("diff") if rest.iter().any(|a| a == "--name-only") => {
            confined(flags_ok(rest, "z", "", GIT_DIFF_LISTING))
        }
        Some("ls-tree") if rest.iter().any(|a| a == "--name-only") => {
            confined(flags_ok(rest, "rtdz", "", &["--name-only", "--full-tree"]))
        }
        _ => Input::Unknown,
    }
}

/// Whether an `rg` line lists file names rather than matching lines.
fn rg_lists_files(args: &[String]) -> bool {
    args.iter().any(|a| {
        a == "--files"
            || a == "--files-with-matches"
            || a == "--files-without-match"
            || (a.starts_with('-') && !a.starts_with("--") && a.contains('l'))
    })
}

/// Whether a `grep` line lists file names rather than matching lines.
fn grep_lists_files(args: &[String]) -> bool {
    args.iter().any(|a| {
        a == "--files-with-matches"
            || a == "--files-without-match"
            || (a.starts_with('-') && !a.starts_with("--") && (a.contains('l') || a.contains('L')))
    })
}

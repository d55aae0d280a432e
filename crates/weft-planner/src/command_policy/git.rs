//! `git`: read-only subcommands, and the listing forms of `branch`, `tag`, `stash`,
//! `remote`, `worktree`, `reflog` and `config`.

use super::*;

impl<'e> Classifier<'e> {
    pub(super) fn git(&mut self, ctx: &Ctx, args: &[Word]) {
        let Some((gctx, i)) = self.git_globals(ctx, args) else {
            return;
        };
        let Some(sub) = args.get(i).map(Word::text) else {
            return; // bare `git` prints usage
        };
        let rest = &args[i + 1..];
        let spec = Spec {
            deny_short: if sub == "grep" { "O" } else { "" },
            deny_long: &["--output", "--ext-diff", "--open-files-in-pager"],
            value_short: "",
            value_long: &[],
            why: "writes a file or runs an external program",
        };
        let s = sub.as_str();
        match s {
            _ if GIT_READ.contains(&s) => {
                let use_ = if GIT_SEARCH.contains(&s) {
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
                self.git_listing(&gctx, s, rest, &spec);
            }
            "config" => self.git_config(&gctx, rest),
            _ => self.refuse(format!(
                "`git {sub}` can change the repository, the working tree or reach the network; \
                 only read-only git subcommands (log, show, diff, status, blame, grep, \
                 ls-files, rev-parse, branch --list, …) may run"
            )),
        }
    }

    /// `git`'s own options before the subcommand: the context they leave (`-C` moves it)
    /// and where the subcommand is; `None` when the line is settled (refused, or
    /// `--version`).
    fn git_globals(&mut self, ctx: &Ctx, args: &[Word]) -> Option<(Ctx, usize)> {
        let mut gctx = ctx.clone();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text();
            let name = t.split_once('=').map_or(t.as_str(), |(n, _)| n).to_owned();
            match name.as_str() {
                "-C" => {
                    let Some(dir) = args.get(i + 1) else {
                        self.refuse("`git -C` needs a directory");
                        return None;
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
                        return None;
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
                "--version" => return None,
                "-c" | "--config-env" | "--exec-path" => {
                    self.refuse(format!(
                        "`git {name}` can set a pager, alias, hook or helper that runs a program"
                    ));
                    return None;
                }
                _ if t.starts_with('-') => {
                    self.refuse(format!("`git {t}` is not an option the policy knows"));
                    return None;
                }
                _ => break,
            }
        }
        Some((gctx, i))
    }

    /// `git stash`, `worktree`, `reflog`, `notes`, `remote` and `submodule`: only their
    /// listing forms.
    fn git_listing(&mut self, gctx: &Ctx, sub: &str, rest: &[Word], spec: &Spec) {
        let words: Vec<String> = rest.iter().map(Word::text).collect();
        let first = words
            .iter()
            .find(|w| !w.starts_with('-') && !w.chars().all(|c| c.is_ascii_digit()))
            .map(String::as_str);
        let ok = match sub {
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
            if let Some(sc) = self.scan(gctx, &format!("git {sub}"), rest, spec) {
                self.paths(gctx, &sc.pos, Use::Meta);
            }
        } else {
            self.refuse(format!(
                "`git {sub} {}` changes the repository or reaches the network; only \
                 its listing forms are read-only",
                first.unwrap_or("")
            ));
        }
    }

    /// `git config`: only reading, and outside `--local` it reads the user's and the
    /// system's files too.
    fn git_config(&mut self, gctx: &Ctx, rest: &[Word]) {
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
                self.path(gctx, file, file.starts_with('~'), false, Use::Read);
            }
        }
    }

    pub(super) fn git_branch_tag(&mut self, sub: &str, rest: &[Word]) {
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
}

//! Toolchains and search tools: `cargo`, `--version` queries, `jq`, `yq`, `grep`, `rg`,
//! `fd`, and the flag tables of the plain readers.

use super::*;

impl<'e> Classifier<'e> {
    pub(super) fn cargo(&mut self, ctx: &Ctx, args: &[Word]) {
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

    pub(super) fn toolchain(&mut self, p: &str, args: &[Word]) {
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

    pub(super) fn jq(&mut self, ctx: &Ctx, args: &[Word]) {
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

    pub(super) fn yq(&mut self, ctx: &Ctx, args: &[Word]) {
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

    pub(super) fn grep(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let Some(mut sc) = self.scan(ctx, prog, args, &GREP) else {
            return;
        };
        if !sc.has("ef", &["--regexp", "--file"]) && !sc.pos.is_empty() {
            sc.pos.remove(0);
        }
        self.paths(ctx, &sc.pos, Use::Search);
    }

    pub(super) fn rg(&mut self, ctx: &Ctx, args: &[Word]) {
        let Some(mut sc) = self.scan(ctx, "rg", args, &RG) else {
            return;
        };
        if !sc.has("ef", &["--regexp", "--file", "--files", "--type-list"]) && !sc.pos.is_empty() {
            sc.pos.remove(0);
        }
        self.paths(ctx, &sc.pos, Use::Search);
    }

    pub(super) fn fd(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let Some(mut sc) = self.scan(ctx, prog, args, &FD) else {
            return;
        };
        if !sc.pos.is_empty() {
            sc.pos.remove(0);
        }
        self.paths(ctx, &sc.pos, Use::Dir);
    }
}

/// Whether every flag in `args` is allowed: short clusters of `short` characters (a
/// character of `valued` takes the rest of the cluster or the next argument as its value),
/// and long flags named in `long` (with or without `=value`).
pub(super) fn flags_ok(args: &[String], short: &str, valued: &str, long: &[&str]) -> bool {
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

pub(super) fn contains_ident(text: &str, ident: &str) -> bool {
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

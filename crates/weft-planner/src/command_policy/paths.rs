//! Paths: lexical normalisation, globs that could match `..` or `.env*`, and how every
//! path a command names is checked against the workspace.

use super::*;

/// How an argument path is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
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

pub(super) fn glob_match(pat: &str, s: &str) -> bool {
    if s.starts_with('.') && !pat.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pat.chars().collect();
    let s: Vec<char> = s.chars().collect();
    glob_chars(&p, &s)
}

pub(super) fn glob_chars(p: &[char], s: &[char]) -> bool {
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

pub(super) fn glob_class(p: &[char], c: char) -> Option<(bool, &[char])> {
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
pub(super) fn normalize(p: &Path, glob: bool) -> PathBuf {
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
pub(super) fn is_env_name(text: &str, glob: bool) -> bool {
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
pub(super) fn looks_pathy(v: &str) -> bool {
    v.starts_with('/')
        || v.starts_with('~')
        || v == ".."
        || v.starts_with("../")
        || v.contains("/../")
        || v.ends_with("/..")
        || is_env_name(v, false)
}

pub(super) fn resolve_existing(p: &Path) -> Option<PathBuf> {
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

impl<'e> Classifier<'e> {
    // -- paths ----------------------------------------------------------------------------

    pub(super) fn path_word(&mut self, ctx: &Ctx, w: &Word, use_: Use) {
        self.path(ctx, &w.text(), w.tilde(), w.has_glob(), use_);
    }

    pub(super) fn path(&mut self, ctx: &Ctx, text: &str, tilde: bool, glob: bool, use_: Use) {
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

    pub(super) fn value(&mut self, ctx: &Ctx, v: &str) {
        if looks_pathy(v) {
            self.path(ctx, v, v.starts_with('~'), false, Use::Read);
        }
    }

    pub(super) fn paths(&mut self, ctx: &Ctx, words: &[Word], use_: Use) {
        for w in words {
            self.path_word(ctx, w, use_);
        }
    }
}

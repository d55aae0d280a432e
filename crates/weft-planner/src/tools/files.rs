//! `list_dir`, `read_file` and `search`: the file tools, which open only resolved paths and
//! never write.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Instant;

use ignore::{DirEntry, WalkBuilder};
use regex::{Regex, RegexBuilder};

use super::args::{ArgError, Args, Kind, Param};
use super::paths::{Access, Located, is_env_file};
use super::{Approver, Gate, Research, Step, clip_line, denied_text};

/// Most entries `list_dir` shows.
const MAX_ENTRIES: usize = 500;
/// Longest line `read_file` shows, in characters.
const READ_LINE_CHARS: usize = 2_000;
/// Longest line `search` shows, in characters.
const SEARCH_LINE_CHARS: usize = 300;
/// Most bytes of one line kept in memory (the rest of a longer line is skipped).
const LINE_BYTES: usize = 64 * 1024;
/// How much of a file's start is checked for NUL bytes.
const BINARY_PROBE: u64 = 8 * 1024;
const DEFAULT_LIMIT: u64 = 400;
const MAX_LIMIT: u64 = 2_000;
const DEFAULT_MAX_RESULTS: u64 = 100;
const MAX_RESULTS: u64 = 200;
/// Characters left for a closing note when a result fills up.
const NOTE_ROOM: usize = 300;

/// Hidden directories `search` enters (other hidden directories are usually caches,
/// virtualenvs or tool state).
const SEARCHED_HIDDEN_DIRS: &[&str] = &[
    ".github",
    ".gitlab",
    ".gitea",
    ".forgejo",
    ".circleci",
    ".buildkite",
    ".cargo",
    ".config",
    ".devcontainer",
    ".vscode",
    ".husky",
    ".changeset",
    ".storybook",
];

pub(crate) const LIST_DIR_DESCRIPTION: &str = "List a directory of the workspace (or, with approval, outside it). Entries are sorted, \
     directories end with `/`, symlinks show their target; .gitignore'd files, .git/ and \
     .weft/ are left out. Paths are relative to the workspace; `~` is the home directory.";

pub(crate) const LIST_DIR_PARAMS: &[Param] = &[
    Param {
        name: "path",
        kind: Kind::Str,
        required: false,
        description: "The directory to list; default \".\" (the workspace root).",
    },
    Param {
        name: "depth",
        kind: Kind::Int { min: 1, max: 3 },
        required: false,
        description: "How many levels to descend; default 1.",
    },
];

pub(crate) const READ_FILE_DESCRIPTION: &str = "Read a text file with line numbers, a window of lines at a time (default 400 lines). \
     Files over the size limit need an explicit offset/limit window, or use `search`. \
     Reading outside the workspace, or a .env file, asks the user first.";

pub(crate) const READ_FILE_PARAMS: &[Param] = &[
    Param {
        name: "path",
        kind: Kind::Str,
        required: true,
        description: "The file, relative to the workspace (or absolute; `~` is the home directory).",
    },
    Param {
        name: "offset",
        kind: Kind::Int {
            min: 1,
            max: u32::MAX as u64,
        },
        required: false,
        description: "The first line to show (1-based); default 1.",
    },
    Param {
        name: "limit",
        kind: Kind::Int {
            min: 1,
            max: MAX_LIMIT,
        },
        required: false,
        description: "How many lines to show; default 400, at most 2000.",
    },
];

pub(crate) const SEARCH_DESCRIPTION: &str = "Search file contents with a regular expression (Rust regex syntax), like `rg`. Prints \
     `path:line: text` for each matching line. Honours .gitignore; skips binary files, \
     files over the size limit and .env files. Narrow it with `path` and `glob`.";

pub(crate) const SEARCH_PARAMS: &[Param] = &[
    Param {
        name: "pattern",
        kind: Kind::Str,
        required: true,
        description: "The regular expression (Rust `regex` syntax; escape literal `(`, `.`, `{`).",
    },
    Param {
        name: "path",
        kind: Kind::Str,
        required: false,
        description: "A directory or a single file to search; default \".\".",
    },
    Param {
        name: "glob",
        kind: Kind::Str,
        required: false,
        description: "Only files matching this glob, e.g. \"*.rs\" or \"src/**/*.ts\"; a leading `!` excludes.",
    },
    Param {
        name: "case_insensitive",
        kind: Kind::Bool,
        required: false,
        description: "Match regardless of case; default false.",
    },
    Param {
        name: "max_results",
        kind: Kind::Int {
            min: 1,
            max: MAX_RESULTS,
        },
        required: false,
        description: "Stop after this many matching lines; default 100, at most 200.",
    },
];

/// Runs the approval gate; `Err` is the finished step (denied).
fn gate(
    research: &Research,
    located: &Located,
    access: Access,
    what: &str,
    approver: &mut dyn Approver,
    input: &str,
) -> Result<Option<weft_core::approval::Decision>, Step> {
    match research.gate(located, access, approver) {
        Gate::Open => Ok(None),
        Gate::Allowed(decision) => Ok(Some(decision)),
        Gate::Denied(decision) => {
            let text = denied_text(what, &decision);
            Err(Step::new(input, crate::log::StepOutcome::Denied, text)
                .with_decision(Some(decision)))
        }
    }
}

/// A walker with the rules every directory walk shares: ignore files honoured (also outside
/// a git repository), symlinks not followed, `.git` and `.weft` never entered, sorted.
fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

fn is_vcs_dir(name: &OsStr) -> bool {
    name == ".git" || name == ".weft"
}

/// `path` relative to `root`, with `/` separators.
fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

// ---------------------------------------------------------------------------------------
// list_dir
// ---------------------------------------------------------------------------------------

pub(crate) fn list_dir(
    research: &Research,
    args: &Args,
    approver: &mut dyn Approver,
) -> Result<Step, ArgError> {
    let path = args.string("path")?.unwrap_or_else(|| ".".to_owned());
    let depth = args.int("depth")?.unwrap_or(1);
    let mut input = format!("list_dir {path}");
    if depth > 1 {
        let _ = write!(input, " depth={depth}");
    }
    let located = match research.locate(&path) {
        Ok(located) => located,
        Err(refusal) => return Ok(Step::refused(input, refusal)),
    };
    let what = format!("listing {}", located.real.display());
    let decision = match gate(research, &located, Access::List, &what, approver, &input) {
        Ok(decision) => decision,
        Err(step) => return Ok(step),
    };
    let step = list(research, &located, depth, &input);
    Ok(step.with_decision(decision))
}

fn list(research: &Research, located: &Located, depth: u64, input: &str) -> Step {
    let root = &located.real;
    match fs_err::metadata(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Step::failure(input, format!("no such directory: {}", located.shown));
        }
        Err(e) => return Step::failure(input, format!("cannot list {}: {}", located.shown, e)),
        Ok(meta) if !meta.is_dir() => {
            return Step::failure(
                input,
                format!(
                    "{} is a file, not a directory; read it with read_file",
                    located.shown
                ),
            );
        }
        Ok(_) => {}
    }
    let max_depth = usize::try_from(depth).unwrap_or(1);
    let mut builder = walker(root);
    builder
        .max_depth(Some(max_depth))
        .filter_entry(|entry| !is_vcs_dir(entry.file_name()));
    let started = Instant::now();
    let mut lines = Vec::new();
    let mut more = 0usize;
    let mut unreadable = 0usize;
    let mut stopped = false;
    for entry in builder.build() {
        if started.elapsed() > research.config.command_timeout {
            stopped = true;
            break;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                unreadable += 1;
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        if lines.len() >= MAX_ENTRIES {
            more += 1;
            continue;
        }
        lines.push(entry_line(&entry, root));
    }
    let mut out = format!("{}/ (depth {depth})\n", located.shown.trim_end_matches('/'));
    if lines.is_empty() {
        out.push_str("(empty directory)\n");
    }
    for line in &lines {
        out.push_str(line);
        out.push('\n');
    }
    if more > 0 {
        let _ = writeln!(
            out,
            "… {more} more entries not shown; list a subdirectory or lower the depth"
        );
    }
    if unreadable > 0 {
        let _ = writeln!(out, "({unreadable} entries could not be read)");
    }
    if stopped {
        let _ = writeln!(
            out,
            "[listing stopped after {} s; list a smaller directory]",
            research.config.command_timeout.as_secs()
        );
    }
    Step::success(input, out)
}

fn entry_line(entry: &DirEntry, root: &Path) -> String {
    let rel = relative(entry.path(), root);
    let file_type = entry.file_type();
    if entry.path_is_symlink() {
        let target = fs_err::read_link(entry.path())
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "?".to_owned());
        format!("{rel} -> {target}")
    } else if file_type.is_some_and(|t| t.is_dir()) {
        format!("{rel}/")
    } else {
        rel
    }
}

// ---------------------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------------------

pub(crate) fn read_file(
    research: &Research,
    args: &Args,
    approver: &mut dyn Approver,
) -> Result<Step, ArgError> {
    let path = args.required_string("path")?;
    let offset = args.int("offset")?;
    let limit = args.int("limit")?;
    let windowed = offset.is_some() || limit.is_some();
    let first = offset.unwrap_or(1);
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    let input = format!("read_file {path}:{first}-{}", first + limit - 1);
    if path.trim().is_empty() {
        return Err(args.invalid("argument `path` is empty"));
    }
    let located = match research.locate(&path) {
        Ok(located) => located,
        Err(refusal) => return Ok(Step::refused(input, refusal)),
    };
    let what = format!("reading {}", located.real.display());
    let decision = match gate(research, &located, Access::Read, &what, approver, &input) {
        Ok(decision) => decision,
        Err(step) => return Ok(step),
    };
    let step = read_window(research, &located, first, limit, windowed, &input);
    Ok(step.with_decision(decision))
}

fn read_window(
    research: &Research,
    located: &Located,
    first: u64,
    limit: u64,
    windowed: bool,
    input: &str,
) -> Step {
    let shown = &located.shown;
    let meta = match fs_err::metadata(&located.real) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Step::failure(input, format!("no such file: {shown}"));
        }
        Err(e) => return Step::failure(input, format!("cannot read {shown}: {}", e.kind())),
    };
    if meta.is_dir() {
        return Step::failure(
            input,
            format!("{shown} is a directory; list it with list_dir"),
        );
    }
    if !meta.is_file() {
        return Step::refused(
            input,
            format!("{shown} is not a regular file (a device, socket or pipe); it is not read"),
        );
    }
    let size = meta.len();
    let max = research.config.max_file_bytes;
    if size > max && !windowed {
        return Step::refused(
            input,
            format!(
                "{shown} is {size} bytes, over the {max}-byte limit for reading a whole file. \
                 Find what you need with `search` (path: \"{shown}\"), or read a window with \
                 `offset` and `limit` (e.g. offset 1, limit 200)."
            ),
        );
    }
    let mut file = match fs_err::File::open(&located.real) {
        Ok(file) => file,
        Err(e) => return Step::failure(input, format!("cannot open {shown}: {}", e.kind())),
    };
    match is_binary(&mut file) {
        Ok(false) => {}
        Ok(true) => {
            return Step::refused(
                input,
                format!(
                    "{shown} looks binary (it has NUL bytes), so it is not shown; `git log` or \
                     `file` can say what it is"
                ),
            );
        }
        Err(e) => return Step::failure(input, format!("cannot read {shown}: {}", e.kind())),
    }
    let last = first + limit - 1;
    let budget = research
        .config
        .max_result_chars
        .saturating_sub(NOTE_ROOM)
        .max(1);
    // Count every line of a file under the limit; of a bigger one, stop after the window.
    let count_all = size <= max;
    let mut reader = BufReader::new(file);
    let mut body = String::new();
    let mut number = 0u64;
    let mut shown_last = 0u64;
    let mut cut_at = None;
    let mut more_after = false;
    let mut line = Vec::new();
    loop {
        let read = match read_line_capped(&mut reader, &mut line) {
            Ok(read) => read,
            Err(e) => return Step::failure(input, format!("cannot read {shown}: {}", e.kind())),
        };
        if !read {
            break;
        }
        number += 1;
        if number < first {
            continue;
        }
        if number > last || cut_at.is_some() {
            more_after = true;
            if count_all {
                continue;
            }
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = research.mask(text.trim_end_matches(['\n', '\r']));
        let entry = format!("{number:>6}\t{}\n", clip_line(&text, READ_LINE_CHARS));
        if body.len() + entry.len() > budget && shown_last >= first {
            cut_at = Some(number);
            more_after = true;
            if count_all {
                continue;
            }
            break;
        }
        body.push_str(&entry);
        shown_last = number;
    }
    if number == 0 {
        // Not `size == 0`: files under /proc report 0 bytes and still have lines.
        return Step::success(input, format!("{shown} is empty"));
    }
    if number < first {
        return Step::failure(
            input,
            format!("offset {first} is past the end of {shown}, which has {number} lines"),
        );
    }
    let total = if count_all {
        format!(" of {number}")
    } else {
        String::new()
    };
    let mut out = format!("{shown} (lines {first}-{shown_last}{total})\n{body}");
    if let Some(cut) = cut_at {
        let _ = writeln!(
            out,
            "[output is full at line {}; continue with offset {cut}]",
            shown_last
        );
    } else if more_after {
        let rest = if count_all {
            format!("lines {}-{number}", shown_last + 1)
        } else {
            "more lines".to_owned()
        };
        let _ = writeln!(
            out,
            "[{rest} not shown; continue with offset {}]",
            shown_last + 1
        );
    }
    Step::success(input, out)
}

/// Whether the file has a NUL byte in its first 8 KiB; leaves the file at its start.
fn is_binary(file: &mut fs_err::File) -> std::io::Result<bool> {
    let mut probe = Vec::new();
    Read::by_ref(file)
        .take(BINARY_PROBE)
        .read_to_end(&mut probe)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(probe.contains(&0))
}

/// Reads one line (with its `\n`) into `line`, keeping at most [`LINE_BYTES`] of it and
/// skipping the rest, so a huge single-line file is never held whole. `false` at the end.
fn read_line_capped(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    let mut any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        reader.consume(used);
        if done {
            return Ok(true);
        }
    }
}

// ---------------------------------------------------------------------------------------
// search
// ---------------------------------------------------------------------------------------

pub(crate) fn search(
    research: &Research,
    args: &Args,
    approver: &mut dyn Approver,
) -> Result<Step, ArgError> {
    let pattern = args.required_string("pattern")?;
    let path = args.string("path")?.unwrap_or_else(|| ".".to_owned());
    let glob = args.string("glob")?.filter(|g| !g.trim().is_empty());
    let case_insensitive = args.boolean("case_insensitive")?.unwrap_or(false);
    let max_results = args.int("max_results")?.unwrap_or(DEFAULT_MAX_RESULTS);
    let mut input = format!("search /{pattern}/ in {path}");
    if let Some(glob) = &glob {
        let _ = write!(input, " glob={glob}");
    }
    if case_insensitive {
        input.push_str(" -i");
    }
    if pattern.is_empty() {
        return Err(args.invalid("argument `pattern` is empty"));
    }
    let regex = match RegexBuilder::new(&pattern)
        .case_insensitive(case_insensitive)
        .size_limit(16 * 1024 * 1024)
        .build()
    {
        Ok(regex) => regex,
        Err(e) => {
            return Ok(Step::failure(
                input,
                format!("invalid regex /{pattern}/ (Rust regex syntax): {e}"),
            ));
        }
    };
    let located = match research.locate(&path) {
        Ok(located) => located,
        Err(refusal) => return Ok(Step::refused(input, refusal)),
    };
    let meta = fs_err::metadata(&located.real).ok();
    let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
    let (access, what) = if is_dir {
        (
            Access::List,
            format!("searching {}", located.real.display()),
        )
    } else {
        (Access::Read, format!("reading {}", located.real.display()))
    };
    let decision = match gate(research, &located, access, &what, approver, &input) {
        Ok(decision) => decision,
        Err(step) => return Ok(step),
    };
    let Some(meta) = meta else {
        return Ok(Step::failure(
            &input,
            format!("no such file or directory: {}", located.shown),
        )
        .with_decision(decision));
    };
    let filter = match glob.as_deref().map(|g| glob_filter(&located.real, g)) {
        Some(Err(e)) => {
            return Err(args.invalid(format!("argument `glob` is not a valid glob: {e}")));
        }
        Some(Ok(filter)) => Some(filter),
        None => None,
    };
    let mut searcher = Searcher {
        research,
        regex: &regex,
        max_results: usize::try_from(max_results).unwrap_or(100),
        matches: Vec::new(),
        files: 0,
        files_matched: 0,
        skipped_binary: 0,
        skipped_big: 0,
        skipped_env: 0,
        unreadable: 0,
        full: false,
        chars: 0,
        stopped: false,
    };
    if meta.is_dir() {
        searcher.walk(&located.real, filter.as_ref());
    } else if !meta.is_file() {
        return Ok(Step::refused(
            &input,
            format!("{} is not a regular file; it is not read", located.shown),
        )
        .with_decision(decision));
    } else {
        searcher.file(&located.real, true);
    }
    Ok(Step::success(&input, searcher.report(&pattern, &located.shown)).with_decision(decision))
}

fn glob_filter(root: &Path, glob: &str) -> Result<ignore::overrides::Override, ignore::Error> {
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    builder.add(glob)?;
    builder.build()
}

struct Searcher<'a> {
    research: &'a Research,
    regex: &'a Regex,
    max_results: usize,
    matches: Vec<String>,
    files: usize,
    files_matched: usize,
    skipped_binary: usize,
    skipped_big: usize,
    skipped_env: usize,
    unreadable: usize,
    /// `max_results` reached, or the result filled up.
    full: bool,
    chars: usize,
    /// The deadline passed.
    stopped: bool,
}

impl Searcher<'_> {
    fn walk(&mut self, root: &Path, filter: Option<&ignore::overrides::Override>) {
        let mut builder = walker(root);
        builder.filter_entry(|entry| {
            let name = entry.file_name();
            if is_vcs_dir(name) {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let hidden = name.to_string_lossy().starts_with('.');
            !(is_dir && hidden && !SEARCHED_HIDDEN_DIRS.iter().any(|d| name == *d))
        });
        let started = Instant::now();
        for entry in builder.build() {
            if self.full {
                break;
            }
            if started.elapsed() > self.research.config.command_timeout {
                self.stopped = true;
                break;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(_) => {
                    self.unreadable += 1;
                    continue;
                }
            };
            // Symlinks are not followed: their targets may be outside the workspace.
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            // Unmatched files are ignored when the glob selects (`*.rs`); matched ones when
            // it excludes (`!*.md`).
            if filter.is_some_and(|f| f.matched(entry.path(), false).is_ignore()) {
                continue;
            }
            if is_env_file(entry.file_name()) {
                self.skipped_env += 1;
                continue;
            }
            self.file(entry.path(), false);
        }
    }

    /// Searches one file; `named` when the caller named it (no size limit then).
    fn file(&mut self, path: &Path, named: bool) {
        let Ok(mut file) = fs_err::File::open(path) else {
            self.unreadable += 1;
            return;
        };
        if !named {
            match file.metadata() {
                Ok(meta) if meta.len() > self.research.config.max_file_bytes => {
                    self.skipped_big += 1;
                    return;
                }
                Ok(_) => {}
                Err(_) => {
                    self.unreadable += 1;
                    return;
                }
            }
        }
        match is_binary(&mut file) {
            Ok(false) => {}
            Ok(true) => {
                self.skipped_binary += 1;
                return;
            }
            Err(_) => {
                self.unreadable += 1;
                return;
            }
        }
        self.files += 1;
        let shown = self.shown(path);
        let budget = self
            .research
            .config
            .max_result_chars
            .saturating_sub(NOTE_ROOM)
            .max(1);
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        let mut number = 0u64;
        let mut matched = false;
        while let Ok(true) = read_line_capped(&mut reader, &mut line) {
            number += 1;
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if !self.regex.is_match(text) {
                continue;
            }
            let masked = self.research.mask(text);
            let entry = format!(
                "{shown}:{number}: {}",
                clip_line(&masked, SEARCH_LINE_CHARS)
            );
            if self.chars + entry.len() + 1 > budget {
                self.full = true;
                break;
            }
            self.chars += entry.len() + 1;
            self.matches.push(entry);
            matched = true;
            if self.matches.len() >= self.max_results {
                self.full = true;
                break;
            }
        }
        if matched {
            self.files_matched += 1;
        }
    }

    /// How a found file is named: relative to the workspace when inside it, so it can be
    /// passed to `read_file` as is.
    fn shown(&self, path: &Path) -> String {
        let workspace = self.research.workspace();
        if path.starts_with(workspace) {
            relative(path, workspace)
        } else {
            path.to_string_lossy().into_owned()
        }
    }

    fn report(&self, pattern: &str, shown: &str) -> String {
        let mut out = String::new();
        if self.matches.is_empty() {
            let _ = writeln!(
                out,
                "no matches for /{pattern}/ in {shown} ({} files searched)",
                self.files
            );
        } else {
            for line in &self.matches {
                out.push_str(line);
                out.push('\n');
            }
            let _ = writeln!(
                out,
                "[{} matching lines in {} files]",
                self.matches.len(),
                self.files_matched
            );
        }
        if self.full {
            let _ = writeln!(
                out,
                "[stopped at {} matches; there may be more: narrow the pattern, path or glob]",
                self.matches.len()
            );
        }
        if self.stopped {
            let _ = writeln!(
                out,
                "[search stopped after {} s; narrow the path or glob]",
                self.research.config.command_timeout.as_secs()
            );
        }
        let mut skipped = Vec::new();
        if self.skipped_binary > 0 {
            skipped.push(format!("{} binary", self.skipped_binary));
        }
        if self.skipped_big > 0 {
            skipped.push(format!(
                "{} over {} bytes (search them by naming the file as `path`)",
                self.skipped_big, self.research.config.max_file_bytes
            ));
        }
        if self.skipped_env > 0 {
            skipped.push(format!(
                "{} .env files (read_file reads them after approval)",
                self.skipped_env
            ));
        }
        if self.unreadable > 0 {
            skipped.push(format!("{} unreadable", self.unreadable));
        }
        if !skipped.is_empty() {
            let _ = writeln!(out, "[skipped: {}]", skipped.join(", "));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_long_lines_without_holding_them() {
        let mut data = vec![b'a'; LINE_BYTES * 3];
        data.extend_from_slice(b"\nshort\nlast");
        let mut reader = BufReader::with_capacity(1024, &data[..]);
        let mut line = Vec::new();
        assert!(read_line_capped(&mut reader, &mut line).unwrap());
        assert_eq!(line.len(), LINE_BYTES);
        assert!(read_line_capped(&mut reader, &mut line).unwrap());
        assert_eq!(line, b"short\n");
        assert!(read_line_capped(&mut reader, &mut line).unwrap());
        assert_eq!(line, b"last");
        assert!(!read_line_capped(&mut reader, &mut line).unwrap());
    }
}

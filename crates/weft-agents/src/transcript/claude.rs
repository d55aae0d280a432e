//! Claude Code transcripts: `<config>/projects/<project folder>/<session-id>.jsonl`.
//!
//! `<config>` is `$CLAUDE_CONFIG_DIR`, else `~/.claude` ([`Locator`]). The project folder is
//! [`project_dir_name`] of the working directory (Claude Code 2.1.197's own rule, hash
//! suffix included). Discovery, in order:
//!
//! 1. with a session id (weft chose it with `--session-id`), the expected file
//!    `<folder>/<id>.jsonl`, else `projects/*/<id>.jsonl` (as the CLI itself looks it up);
//! 2. the `*.jsonl` files of the project folder (the folders, when the given directory and
//!    its physical path differ; for a long path also any folder `<first 200>-<any suffix>`),
//!    less those last modified before the start (with [`MTIME_SLACK`]);
//! 3. when those folders give no candidate, the files of every sibling folder whose records
//!    carry the attempt's `cwd`;
//! 4. candidates opened newest first, at most [`MAX_OPENED`]: the first whose assistant
//!    text holds the marker wins. Every candidate's records must carry the attempt's `cwd`
//!    (two directories can share a folder name: `/a_b` and `/a-b`).
//!
//! Without a marker match, the expected file (if any) is returned as is, else the newest
//! plausible candidate as a weak match.
//!
//! Reading ([`scan_file`]) is a stream over lines: sidechain (sub-agent) records and API
//! error messages (`isApiErrorMessage`, model `<synthetic>`) are ignored, only assistant
//! `text` blocks are searched for the marker, and the final answer is the text blocks of
//! the last assistant message (the records sharing the last `message.id`) after the last
//! real user prompt.

use std::borrow::Cow;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use memchr::memmem;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::{Found, Locator, Query, Store, clamp};
use crate::evidence::text_contains_marker;

/// Most candidate files opened for one attempt.
pub const MAX_OPENED: usize = 50;

/// Files modified up to this long before the start still count: the kernel stamps file
/// times with a coarse clock that can lag the precise one `SystemTime::now` reads.
pub const MTIME_SLACK: Duration = Duration::from_secs(1);

/// Longest line kept; a longer line is skipped (read through, never held).
pub const MAX_LINE: usize = 16 << 20;

/// Longest project folder name before Claude Code shortens it with a hash suffix.
const NAME_MAX: usize = 200;

/// Claude Code's project folder name for a working directory (2.1.197, function `$E`):
/// every UTF-16 code unit that is not an ASCII letter or digit becomes `-` (so a non-BMP
/// character gives two); a result longer than 200 is cut to 200 and suffixed with `-` and
/// the base-36 absolute value of Java's `String.hashCode` of the original path.
pub fn project_dir_name(cwd: &str) -> String {
    let sanitized = sanitize(cwd);
    if sanitized.len() <= NAME_MAX {
        return sanitized;
    }
    format!(
        "{}-{}",
        &sanitized[..NAME_MAX],
        base36(java_hash(cwd).unsigned_abs())
    )
}

/// The path with every non-alphanumeric UTF-16 code unit turned into `-` (ASCII only, so
/// its byte length is its UTF-16 length).
fn sanitize(cwd: &str) -> String {
    let mut out = String::with_capacity(cwd.len());
    for c in cwd.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('-');
            }
        }
    }
    out
}

/// Java's `String.hashCode` (the JS `(h << 5) - h + c | 0` loop) over UTF-16 code units.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".to_owned();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Find the attempt's Claude Code transcript. See the module documentation.
pub fn find(locator: &Locator, query: &Query<'_>) -> Option<Found> {
    let root = locator
        .claude_config_dir
        .clone()
        .or_else(|| locator.home.as_ref().map(|home| home.join(".claude")))?;
    let projects = root.join("projects");
    let mut how = vec![format!("projects root {}", projects.display())];
    if !projects.is_dir() {
        return None;
    }
    let cwds = cwd_forms(query.cwd);

    // The project folders for this directory.
    let mut folders: Vec<PathBuf> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for cwd in &cwds {
        let text = cwd.to_string_lossy();
        let name = project_dir_name(&text);
        if !names.contains(&name) {
            names.push(name);
        }
        let sanitized = sanitize(&text);
        if sanitized.len() > NAME_MAX {
            // Other builds may have computed another suffix: accept any.
            let prefix = format!("{}-", &sanitized[..NAME_MAX]);
            for dir in subdirs(&projects) {
                let matches = dir
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix));
                if matches && !folders.contains(&dir) {
                    folders.push(dir);
                }
            }
        }
    }
    for name in &names {
        let dir = projects.join(name);
        if dir.is_dir() && !folders.contains(&dir) {
            folders.insert(0, dir);
        }
    }
    if folders.is_empty() {
        how.push(format!("no project folder {}", names.join(" or ")));
    }

    // The expected file, when weft chose the session id.
    let mut expected = None;
    if let Some(id) = query.session_id.filter(|id| safe_id(id)) {
        let file = format!("{id}.jsonl");
        expected = folders
            .iter()
            .map(|dir| dir.join(&file))
            .find(|path| is_file(path));
        if expected.is_none() {
            expected = subdirs(&projects)
                .into_iter()
                .map(|dir| dir.join(&file))
                .find(|path| is_file(path));
            if let Some(path) = &expected {
                how.push(format!(
                    "expected file found by id in {}",
                    parent_name(path)
                ));
            }
        }
        if expected.is_none() {
            how.push(format!("no file {file} for session id {id}"));
        }
    }

    // Candidates: the folders' files modified after the start.
    let mut candidates = Vec::new();
    for dir in &folders {
        let (listed, kept) = list_files(dir, query.started_at, false, &mut candidates, |name| {
            name.ends_with(".jsonl")
        });
        how.push(format!(
            "{listed} files in {}, {kept} modified after the start",
            dir.display()
        ));
    }
    if candidates.is_empty() {
        let mut siblings = 0;
        let mut kept_total = 0;
        for dir in subdirs(&projects) {
            if folders.contains(&dir) {
                continue;
            }
            siblings += 1;
            let (_, kept) = list_files(&dir, query.started_at, true, &mut candidates, |name| {
                name.ends_with(".jsonl")
            });
            kept_total += kept;
        }
        how.push(format!(
            "fallback: {siblings} sibling folders, {kept_total} files modified after the start \
             (kept only if their records carry cwd {})",
            query.cwd.display()
        ));
    }

    choose(
        Store::ClaudeCode,
        query,
        how,
        expected,
        candidates,
        |path, expect| scan(path, query.marker, Some(expect)),
        &cwds,
    )
}

pub use super::Scan;

/// Streams one Claude Code transcript, line by line. `None` when it cannot be opened.
pub fn scan_file(path: &Path, marker: Option<&str>) -> Option<Scan> {
    scan(path, marker, None)
}

fn scan(path: &Path, marker: Option<&str>, expect_cwd: Option<&[PathBuf]>) -> Option<Scan> {
    let file = std::fs::File::open(path).ok()?;
    let mut st = ClaudeState {
        scan: Scan::default(),
        marker: marker.filter(|m| !m.is_empty()),
        expect_cwd,
        texts: Vec::new(),
        msg_id: None,
        usage: None,
        input: 0,
        output: 0,
        any_usage: false,
    };
    let stats = for_each_line(file, |line| st.line(line));
    st.commit_usage();
    let mut scan = st.scan;
    scan.lines = stats.lines;
    scan.skipped_lines += stats.overlong;
    let text = st.texts.join("\n");
    scan.final_answer = (!text.trim().is_empty()).then_some(text);
    if st.any_usage {
        scan.input_tokens = Some(st.input);
        scan.output_tokens = Some(st.output);
    }
    Some(scan)
}

struct ClaudeState<'m> {
    scan: Scan,
    marker: Option<&'m str>,
    expect_cwd: Option<&'m [PathBuf]>,
    /// Text blocks of the current last assistant message.
    texts: Vec<String>,
    msg_id: Option<String>,
    /// Usage of the current message (its latest record).
    usage: Option<(u64, u64)>,
    input: u64,
    output: u64,
    any_usage: bool,
}

const NEEDLE_ASSISTANT: &[u8] = b"\"assistant\"";
const NEEDLE_USER: &[u8] = b"\"user\"";

impl ClaudeState<'_> {
    fn line(&mut self, line: &[u8]) -> ControlFlow<()> {
        // Only user and assistant records matter; an unescaped `"assistant"` / `"user"`
        // string is in every one of them and in no tool output (which is escaped).
        if memmem::find(line, NEEDLE_ASSISTANT).is_none()
            && memmem::find(line, NEEDLE_USER).is_none()
        {
            return ControlFlow::Continue(());
        }
        let Ok(rec) = serde_json::from_slice::<Record<'_>>(line) else {
            self.scan.skipped_lines += 1;
            return ControlFlow::Continue(());
        };
        let kind = rec.kind.as_ref().map(|k| k.0.as_ref());
        if !matches!(kind, Some("user" | "assistant")) || rec.is_sidechain == Some(true) {
            return ControlFlow::Continue(());
        }
        if self.scan.cwd.is_none()
            && let Some(cwd) = &rec.cwd
        {
            let cwd = PathBuf::from(cwd.0.as_ref());
            if let Some(expect) = self.expect_cwd
                && !expect.iter().any(|e| e == &cwd)
            {
                self.scan.cwd = Some(cwd);
                self.scan.cwd_mismatch = true;
                return ControlFlow::Break(());
            }
            self.scan.cwd = Some(cwd);
        }
        if self.scan.session_id.is_none()
            && let Some(id) = &rec.session_id
        {
            self.scan.session_id = Some(id.0.clone().into_owned());
        }
        let Some(message) = rec.message else {
            return ControlFlow::Continue(());
        };
        if kind == Some("user") {
            let prompt = match &message.content {
                Some(Content::Text(_)) => true,
                Some(Content::Blocks(blocks)) => blocks.iter().any(|b| b.is("text")),
                _ => false,
            };
            if prompt {
                // A new prompt: the answer is what comes after it.
                self.commit_usage();
                self.texts.clear();
                self.msg_id = None;
            }
            return ControlFlow::Continue(());
        }
        if rec.api_error == Some(true)
            || message.model.as_ref().is_some_and(|m| m.0 == "<synthetic>")
        {
            return ControlFlow::Continue(());
        }
        let id = message.id.as_ref().map(|i| i.0.as_ref());
        if id.is_none() || id != self.msg_id.as_deref() {
            self.commit_usage();
            self.texts.clear();
            self.msg_id = id.map(str::to_owned);
        }
        if let Some(usage) = &message.usage {
            let input = usage.input_tokens.unwrap_or(0)
                + usage.cache_creation_input_tokens.unwrap_or(0)
                + usage.cache_read_input_tokens.unwrap_or(0);
            self.usage = Some((input, usage.output_tokens.unwrap_or(0)));
        }
        if let Some(Content::Blocks(blocks)) = message.content {
            for block in blocks {
                if !block.is("text") {
                    continue;
                }
                let Some(text) = block.text else { continue };
                if !self.scan.marker_found
                    && let Some(marker) = self.marker
                    && text_contains_marker(&text.0, marker).is_some()
                {
                    self.scan.marker_found = true;
                }
                if !text.0.trim().is_empty() {
                    self.texts.push(text.0.into_owned());
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn commit_usage(&mut self) {
        if let Some((input, output)) = self.usage.take() {
            self.input = self.input.saturating_add(input);
            self.output = self.output.saturating_add(output);
            self.any_usage = true;
        }
    }
}

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Str<'a>>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    #[serde(rename = "isApiErrorMessage")]
    api_error: Option<bool>,
    #[serde(borrow)]
    cwd: Option<Str<'a>>,
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<Str<'a>>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    model: Option<Str<'a>>,
    #[serde(borrow)]
    content: Option<Content<'a>>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

// ---------------------------------------------------------------------------------------
// Shared with the Codex reader: lenient pieces, the line reader, discovery.

/// A string, borrowed from the line when it has no escapes.
pub(super) struct Str<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// `message.content`: a string (a typed prompt), an array of blocks, or anything else.
pub(super) enum Content<'a> {
    Text(Str<'a>),
    Blocks(Vec<Block<'a>>),
    Other,
}

/// One content block: its `type` and `text` (other fields skipped).
#[derive(Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) text: Option<Str<'a>>,
}

impl Block<'_> {
    pub(super) fn is(&self, kind: &str) -> bool {
        self.kind.as_ref().is_some_and(|k| k.0 == kind)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'de>, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element::<Lenient<Block<'de>>>()? {
                    if let Lenient(Some(block)) = block {
                        blocks.push(block);
                    }
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Content<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content<'de>, E> {
                Ok(Content::Other)
            }
            fn visit_none<E: de::Error>(self) -> Result<Content<'de>, E> {
                Ok(Content::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Content<'de>, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Content<'de>, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Content<'de>, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Content<'de>, E> {
                Ok(Content::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// An array element that must be an object to be kept (a block that is a bare string or
/// number is skipped, not an error). Objects of an unexpected shape still fail the line.
struct Lenient<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Buffer-free: only objects are handed to `T`.
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Lenient<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("anything")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Lenient<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Lenient(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lenient<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
        }
        deserializer.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Counts from [`for_each_line`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Lines handed to the callback (a last line without a newline included).
    pub lines: u64,
    /// Lines longer than [`MAX_LINE`], skipped.
    pub overlong: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// Streams `input` line by line (without the `\n`) to `f` until the end, a read error or
/// `f` breaking. Memory stays bounded by the buffer and [`MAX_LINE`]: a longer line is read
/// through and skipped. A last line without a newline (half-written) is handed over too;
/// a JSON parser will reject it if it is truncated.
pub fn for_each_line<R: Read>(input: R, mut f: impl FnMut(&[u8]) -> ControlFlow<()>) -> LineStats {
    let mut reader = BufReader::with_capacity(256 * 1024, input);
    let mut stats = LineStats::default();
    let mut line: Vec<u8> = Vec::new();
    let mut overlong = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if buf.is_empty() {
            break;
        }
        let (take, flow) = match memchr::memchr(b'\n', buf) {
            Some(i) => {
                let mut flow = ControlFlow::Continue(());
                if overlong || line.len() + i > MAX_LINE {
                    stats.overlong += 1;
                } else {
                    stats.lines += 1;
                    if line.is_empty() {
                        flow = f(&buf[..i]);
                    } else {
                        line.extend_from_slice(&buf[..i]);
                        flow = f(&line);
                    }
                }
                line.clear();
                overlong = false;
                (i + 1, flow)
            }
            None => {
                if !overlong {
                    if line.len() + buf.len() > MAX_LINE {
                        overlong = true;
                        line = Vec::new();
                    } else {
                        line.extend_from_slice(buf);
                    }
                }
                (buf.len(), ControlFlow::Continue(()))
            }
        };
        reader.consume(take);
        stats.bytes += take as u64;
        if flow.is_break() {
            return stats;
        }
    }
    if overlong {
        stats.overlong += 1;
    } else if !line.is_empty() {
        stats.lines += 1;
        let _ = f(&line);
    }
    stats
}

/// The working directory as given and, when different, its physical path (symlinks
/// resolved: the CLIs record that one).
pub(super) fn cwd_forms(cwd: &Path) -> Vec<PathBuf> {
    let mut forms = vec![cwd.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(cwd)
        && real != cwd
    {
        forms.insert(0, real);
    }
    forms
}

fn safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

pub(super) fn is_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

fn parent_name(path: &Path) -> String {
    path.parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The directories directly under `dir` (symlinks followed), sorted by name.
pub(super) fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// One file that may be the attempt's transcript.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) path: PathBuf,
    pub(super) modified: SystemTime,
    /// Found outside the attempt's own folder: its records must show the attempt's cwd.
    pub(super) needs_cwd: bool,
}

/// Whether a file modified at `modified` may belong to an attempt started at `started_at`.
pub(super) fn after_start(modified: SystemTime, started_at: SystemTime) -> bool {
    modified + MTIME_SLACK >= started_at
}

/// Adds the regular files directly under `dir` whose name passes `wanted` and that were
/// modified after the start to `out`. Returns (files listed, files kept).
pub(super) fn list_files(
    dir: &Path,
    started_at: SystemTime,
    needs_cwd: bool,
    out: &mut Vec<Candidate>,
    wanted: impl Fn(&str) -> bool,
) -> (usize, usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    let (mut listed, mut kept) = (0, 0);
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        if !wanted(&name.to_string_lossy()) {
            continue;
        }
        listed += 1;
        let path = entry.path();
        // Follows symlinks: a dangling one or a directory is not a candidate.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let Ok(modified) = meta.modified() else {
            continue;
        };
        if meta.is_file() && after_start(modified, started_at) {
            kept += 1;
            out.push(Candidate {
                path,
                modified,
                needs_cwd,
            });
        }
    }
    (listed, kept)
}

/// What a reader tells [`choose`] about one file.
pub(super) trait FileFacts {
    fn marker_found(&self) -> bool;
    /// `Some(true)` the records carry an expected cwd, `Some(false)` another one, `None`
    /// none at all.
    fn cwd_matches(&self) -> Option<bool>;
    fn into_found(
        self,
        store: Store,
        path: PathBuf,
        query: &Query<'_>,
        how: Vec<String>,
        weak: bool,
    ) -> Found;
}

impl FileFacts for Scan {
    fn marker_found(&self) -> bool {
        self.marker_found
    }

    fn cwd_matches(&self) -> Option<bool> {
        if self.cwd_mismatch {
            Some(false)
        } else {
            self.cwd.as_ref().map(|_| true)
        }
    }

    fn into_found(
        self,
        store: Store,
        path: PathBuf,
        query: &Query<'_>,
        how: Vec<String>,
        weak: bool,
    ) -> Found {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let session_id = match store {
            // Claude names the file after the session.
            Store::ClaudeCode => stem.or(self.session_id),
            // A rollout's name ends with the thread id (36 characters).
            _ => self.session_id.or_else(|| {
                let stem = stem?;
                let start = stem.len().checked_sub(36)?;
                stem.get(start..).map(str::to_owned)
            }),
        };
        Found {
            store,
            session_id,
            marker_found: self.marker_found,
            weak,
            how,
            final_answer: self
                .final_answer
                .map(|a| clamp(&a, query.answer_chars))
                .filter(|a| !a.is_empty()),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            path,
        }
    }
}

/// The discovery order shared by the readers: the expected file first, then the
/// candidates newest first (at most [`MAX_OPENED`] opened); the first with the marker wins;
/// else the expected file as is, else the newest plausible candidate as a weak match.
pub(super) fn choose<S: FileFacts>(
    store: Store,
    query: &Query<'_>,
    mut how: Vec<String>,
    expected: Option<PathBuf>,
    mut candidates: Vec<Candidate>,
    read: impl Fn(&Path, &[PathBuf]) -> Option<S>,
    cwds: &[PathBuf],
) -> Option<Found> {
    let marker = query.marker.filter(|m| !m.is_empty());
    let mut kept_expected = None;
    if let Some(path) = expected {
        match read(&path, cwds) {
            None => how.push(format!("expected file {} unreadable", path.display())),
            Some(facts) if facts.cwd_matches() == Some(false) => how.push(format!(
                "expected file {} records another cwd: ignored",
                path.display()
            )),
            Some(facts) if facts.marker_found() => {
                how.push(format!("expected file {}", path.display()));
                how.push("marker found".to_owned());
                return Some(facts.into_found(store, path, query, how, false));
            }
            Some(facts) => {
                how.push(format!(
                    "expected file {}: {}",
                    path.display(),
                    if marker.is_some() {
                        "no marker in it"
                    } else {
                        "no marker to look for"
                    }
                ));
                kept_expected = Some((path, facts));
            }
        }
    }
    if let Some((path, _)) = &kept_expected {
        candidates.retain(|c| &c.path != path);
    }
    candidates.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
    let total = candidates.len();
    let mut newest: Option<(PathBuf, S)> = None;
    let (mut opened, mut unreadable, mut other_cwd) = (0usize, 0usize, 0usize);
    let mut winner = None;
    // Without a marker only the newest plausible file is wanted.
    for candidate in candidates {
        if opened == MAX_OPENED {
            break;
        }
        if marker.is_none() && (newest.is_some() || kept_expected.is_some()) {
            break;
        }
        opened += 1;
        let Some(facts) = read(&candidate.path, cwds) else {
            unreadable += 1;
            continue;
        };
        match facts.cwd_matches() {
            Some(false) => {
                other_cwd += 1;
                continue;
            }
            None if candidate.needs_cwd => {
                other_cwd += 1;
                continue;
            }
            _ => {}
        }
        if facts.marker_found() {
            winner = Some((candidate.path, facts));
            break;
        }
        if newest.is_none() {
            newest = Some((candidate.path, facts));
        }
    }
    if total > 0 {
        how.push(format!(
            "{opened} of {total} candidates opened, newest first"
        ));
    }
    if opened == MAX_OPENED && total > MAX_OPENED && winner.is_none() {
        how.push(format!(
            "bound: only the newest {MAX_OPENED} candidates opened, {} left unopened",
            total - MAX_OPENED
        ));
    }
    if other_cwd > 0 {
        how.push(format!("{other_cwd} skipped: records for another cwd"));
    }
    if unreadable > 0 {
        how.push(format!("{unreadable} unreadable"));
    }
    if let Some((path, facts)) = winner {
        how.push(format!("marker found in {}", path.display()));
        return Some(facts.into_found(store, path, query, how, false));
    }
    if let Some((path, facts)) = kept_expected {
        how.push("no marker match: the expected file, chosen by session id".to_owned());
        return Some(facts.into_found(store, path, query, how, false));
    }
    let (path, facts) = newest?;
    how.push(format!(
        "no marker match: newest candidate {} taken as a weak match",
        path.display()
    ));
    Some(facts.into_found(store, path, query, how, true))
}

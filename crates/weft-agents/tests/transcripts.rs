//! Transcript capture (Claude Code and Codex) against the samples in weft-testkit's
//! `data/agent-output/` (the real CLIs' recordings, and hand-written transcripts in the
//! shapes of interactive sessions) and mutated copies, laid out like the real stores in
//! temporary directories.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use tempfile::TempDir;
use weft_agents::transcript::{
    DEFAULT_ANSWER_CHARS, Found, Locator, Query, Store, claude, codex, find,
};
use weft_testkit::samples::{agent_output, agent_output_file};

const MARKER: &str = "WEFT_DONE_0123456789abcdef";
const OTHER_MARKER: &str = "WEFT_DONE_fedcba9876543210";
const FINAL: &str = "All done: hello.txt has been written. WEFT_DONE_0123456789abcdef";
const SESSION: &str = "652df806-db08-4cef-ab6f-8029a23637db";
const THREAD: &str = "01a2296d-ffc6-7543-a3f9-8ae476b88e7c";

fn read(rel: &str) -> String {
    let path = agent_output_file(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Sets a file's modification time to `age` ago.
fn age(path: &Path, age: Duration) {
    let file = File::options()
        .write(true)
        .open(path)
        .expect("open for mtime");
    file.set_modified(SystemTime::now() - age)
        .expect("set mtime");
}

/// A fake store: a config/home dir and the attempt's working directory.
struct Fake {
    _tmp: TempDir,
    root: PathBuf,
    cwd: PathBuf,
    started_at: SystemTime,
}

impl Fake {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().join("store");
        let cwd = tmp.path().join("work").join("wd_attempt.1");
        fs::create_dir_all(&root).expect("mkdir");
        fs::create_dir_all(&cwd).expect("mkdir");
        let cwd = fs::canonicalize(&cwd).expect("canonical");
        Fake {
            _tmp: tmp,
            root,
            cwd,
            started_at: SystemTime::now() - Duration::from_secs(60),
        }
    }

    fn cwd_str(&self) -> String {
        self.cwd.to_str().expect("utf-8 temp path").to_owned()
    }

    fn claude_locator(&self) -> Locator {
        Locator {
            claude_config_dir: Some(self.root.clone()),
            ..Locator::default()
        }
    }

    fn codex_locator(&self) -> Locator {
        Locator {
            codex_home: Some(self.root.clone()),
            ..Locator::default()
        }
    }

    fn query<'a>(&'a self, marker: Option<&'a str>, session_id: Option<&'a str>) -> Query<'a> {
        Query {
            cwd: &self.cwd,
            started_at: self.started_at,
            marker,
            session_id,
            answer_chars: DEFAULT_ANSWER_CHARS,
        }
    }

    /// `projects/<folder of cwd>`.
    fn claude_folder(&self) -> PathBuf {
        self.root
            .join("projects")
            .join(claude::project_dir_name(&self.cwd_str()))
    }

    /// Writes `text` to `dir/name`, modified `ago` ago.
    fn put(&self, dir: &Path, name: &str, text: &str, ago: Duration) -> PathBuf {
        fs::create_dir_all(dir).expect("mkdir");
        let path = dir.join(name);
        fs::write(&path, text).expect("write");
        age(&path, ago);
        path
    }

    /// The write-file transcript moved to `cwd`, its marker replaced.
    fn claude_sample(&self, cwd: &str, marker: &str) -> String {
        read("claude/cc2.1.197-transcript-write-file-success.jsonl")
            .replace("/tmp/weft-sample/wd-claude", cwd)
            .replace(MARKER, marker)
    }

    /// The write-file rollout moved to `cwd`, with thread id `id` and marker `marker`.
    fn codex_sample(&self, cwd: &str, id: &str, marker: &str) -> String {
        read("codex/cx0.171.0-rollout-write-file-success.jsonl")
            .replace("/tmp/weft-sample/wd-codex", cwd)
            .replace(THREAD, id)
            .replace(MARKER, marker)
    }

    fn codex_day(&self) -> PathBuf {
        self.root.join("sessions/2026/11/29")
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn assert_strong(found: &Found, path: &Path) {
    assert_eq!(found.path, path, "how: {:#?}", found.how);
    assert!(found.marker_found, "how: {:#?}", found.how);
    assert!(!found.weak);
}

// ---------------------------------------------------------------------------------------
// Claude Code: the folder name rule

#[test]
fn project_dir_names_match_every_observed_vector() {
    let tsv = read("claude/cc2.1.197-project-dir-names.tsv");
    let mut count = 0;
    for line in tsv.lines().skip(1).filter(|l| !l.is_empty()) {
        let (cwd, name) = line.split_once('\t').expect("two columns");
        assert_eq!(claude::project_dir_name(cwd), name, "cwd {cwd}");
        count += 1;
    }
    assert_eq!(count, 10);
}

#[test]
fn long_path_folder_with_another_suffix_is_found_by_prefix() {
    let s = Fake::new();
    let long = s.cwd.join("x".repeat(220));
    fs::create_dir_all(&long).expect("mkdir");
    let long_str = long.to_str().expect("utf-8").to_owned();
    let name = claude::project_dir_name(&long_str);
    assert!(name.len() > 200);
    // Another build's suffix.
    let folder = s
        .root
        .join("projects")
        .join(format!("{}-zzzzzz", &name[..200]));
    let path = s.put(
        &folder,
        "a.jsonl",
        &s.claude_sample(&long_str, MARKER),
        secs(5),
    );
    let query = Query {
        cwd: &long,
        ..s.query(Some(MARKER), None)
    };
    let found = claude::find(&s.claude_locator(), &query).expect("found");
    assert_strong(&found, &path);
}

// ---------------------------------------------------------------------------------------
// Claude Code: discovery

#[test]
fn claude_expected_file_by_session_id() {
    let s = Fake::new();
    let folder = s.claude_folder();
    let cwd = s.cwd_str();
    let expected = s.put(
        &folder,
        &format!("{SESSION}.jsonl"),
        &s.claude_sample(&cwd, MARKER),
        secs(30),
    );
    // A newer session of the same directory with the same marker is not preferred.
    s.put(
        &folder,
        "newer.jsonl",
        &s.claude_sample(&cwd, MARKER),
        secs(1),
    );
    let found = find(
        Store::ClaudeCode,
        &s.claude_locator(),
        &s.query(Some(MARKER), Some(SESSION)),
    )
    .expect("found");
    assert_strong(&found, &expected);
    assert_eq!(found.store, Store::ClaudeCode);
    assert_eq!(found.session_id.as_deref(), Some(SESSION));
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    assert_eq!(found.input_tokens, Some(300));
    assert_eq!(found.output_tokens, Some(30));
    assert!(
        found.how.iter().any(|h| h.starts_with("expected file")),
        "{:#?}",
        found.how
    );

    // The expected file without the marker: another file of the folder holding it wins;
    // with no marker anywhere the expected file is kept, not as a weak match.
    let q = s.query(Some(OTHER_MARKER), Some(SESSION));
    let found = claude::find(&s.claude_locator(), &q).expect("found");
    assert_eq!(found.path, expected);
    assert!(!found.marker_found && !found.weak, "{:#?}", found.how);
}

#[test]
fn claude_discovery_by_folder_mtime_and_marker() {
    let s = Fake::new();
    let folder = s.claude_folder();
    let cwd = s.cwd_str();
    // Newest: another attempt's marker. Then ours. Then ours again but from before the start.
    s.put(
        &folder,
        "c.jsonl",
        &s.claude_sample(&cwd, OTHER_MARKER),
        secs(2),
    );
    let ours = s.put(&folder, "b.jsonl", &s.claude_sample(&cwd, MARKER), secs(10));
    s.put(
        &folder,
        "a.jsonl",
        &s.claude_sample(&cwd, MARKER),
        secs(3600),
    );
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &ours);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    let how = found.how.join("\n");
    assert!(how.contains("3 files in"), "{how}");
    assert!(how.contains("2 modified after the start"), "{how}");
    assert!(how.contains("2 of 2 candidates opened"), "{how}");
    assert!(how.contains("marker found in"), "{how}");
}

#[test]
fn claude_weak_match_is_the_newest_candidate() {
    let s = Fake::new();
    let folder = s.claude_folder();
    let cwd = s.cwd_str();
    let newest = s.put(
        &folder,
        "new.jsonl",
        &s.claude_sample(&cwd, OTHER_MARKER),
        secs(1),
    );
    s.put(
        &folder,
        "old.jsonl",
        &s.claude_sample(&cwd, OTHER_MARKER),
        secs(20),
    );
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_eq!(found.path, newest);
    assert!(found.weak && !found.marker_found);
    assert!(
        found.how.iter().any(|h| h.contains("weak match")),
        "{:#?}",
        found.how
    );
    // Without a marker at all, the newest is a weak match too.
    let found = claude::find(&s.claude_locator(), &s.query(None, None)).expect("found");
    assert_eq!(found.path, newest);
    assert!(found.weak);
}

#[test]
fn claude_marker_in_the_prompt_only_is_not_evidence() {
    let s = Fake::new();
    let text = s.claude_sample(&s.cwd_str(), OTHER_MARKER).replace(
        "then reply with a short",
        &format!("then say {MARKER} in a short"),
    );
    assert!(text.contains(MARKER));
    s.put(&s.claude_folder(), "p.jsonl", &text, secs(1));
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert!(found.weak && !found.marker_found);
}

#[test]
fn claude_transcript_for_another_cwd_is_ignored() {
    let s = Fake::new();
    let folder = s.claude_folder();
    // Same folder name (`_` and `.` also become `-`), another directory, our marker.
    let twin = s.cwd_str().replace("wd_attempt.1", "wd-attempt-1");
    assert_eq!(
        claude::project_dir_name(&twin),
        claude::project_dir_name(&s.cwd_str())
    );
    s.put(
        &folder,
        "twin.jsonl",
        &s.claude_sample(&twin, MARKER),
        secs(1),
    );
    // A sibling folder for another directory, our marker.
    let sibling = s.root.join("projects/-somewhere-else");
    s.put(
        &sibling,
        "x.jsonl",
        &s.claude_sample("/somewhere/else", MARKER),
        secs(1),
    );
    assert_eq!(
        claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)),
        None
    );
    // Ours, older, is found past the twin.
    let ours = s.put(
        &folder,
        "ours.jsonl",
        &s.claude_sample(&s.cwd_str(), MARKER),
        secs(9),
    );
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &ours);
    assert!(
        found.how.iter().any(|h| h.contains("another cwd")),
        "{:#?}",
        found.how
    );
}

#[test]
fn claude_sibling_folder_with_matching_cwd_is_a_fallback() {
    let s = Fake::new();
    // No folder under the expected name; a sibling (say, another build's munging) holds it.
    let sibling = s.root.join("projects/renamed-folder");
    s.put(
        &sibling,
        "x.jsonl",
        &s.claude_sample("/elsewhere", MARKER),
        secs(1),
    );
    let ours = s.put(
        &sibling,
        "y.jsonl",
        &s.claude_sample(&s.cwd_str(), MARKER),
        secs(5),
    );
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &ours);
    assert!(
        found.how.iter().any(|h| h.starts_with("fallback")),
        "{:#?}",
        found.how
    );
}

#[test]
fn claude_sidechain_and_api_error_records_are_ignored() {
    let s = Fake::new();
    let cwd = s.cwd_str();
    // Sub-agent records holding the marker, appended to a transcript without it.
    let sub = read("claude/handwritten-subagent-agent-a3f9c21.jsonl")
        .replace("/home/USER/projects/inkwell-worktrees/inkwell-7kq", &cwd)
        .replace(
            "Great, that covers all three.",
            &format!("{MARKER} Great, that covers all three."),
        );
    assert!(sub.contains(MARKER));
    assert!(sub.lines().all(|l| l.contains(r#""isSidechain":true"#)));
    let mut text = s.claude_sample(&cwd, OTHER_MARKER);
    text.push_str(&sub);
    // And an API-error synthetic message holding it.
    let error = read("claude/cc2.1.197-transcript-bad-model.jsonl")
        .replace("/tmp/mockproj-claude", &cwd)
        .replace("There's an issue", &format!("{MARKER} There's an issue"));
    text.push_str(&error);
    let path = s.put(&s.claude_folder(), "s.jsonl", &text, secs(1));
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_eq!(found.path, path);
    assert!(found.weak && !found.marker_found);
    // The bad-model run's user prompt ("Just answer.") starts a turn with no real answer.
    assert_eq!(found.final_answer, None);

    // Sub-agent records after the main answer do not replace it.
    let mut text = s.claude_sample(&cwd, MARKER);
    text.push_str(&sub);
    let scan = claude::scan_file(
        &s.put(&s.claude_folder(), "t.jsonl", &text, secs(1)),
        Some(MARKER),
    )
    .expect("scan");
    assert!(scan.marker_found);
    assert_eq!(scan.final_answer.as_deref(), Some(FINAL));
}

#[test]
fn claude_api_error_transcripts_have_no_answer() {
    for name in [
        "claude/cc2.1.197-transcript-bad-model.jsonl",
        "claude/cc2.1.197-transcript-not-logged-in.jsonl",
    ] {
        let scan = claude::scan_file(&agent_output_file(name), Some(MARKER)).expect("scan");
        assert_eq!(scan.final_answer, None, "{name}");
        assert!(!scan.marker_found);
    }
    let scan = claude::scan_file(
        &agent_output_file("claude/cc2.1.197-transcript-tool-read-then-resumed.jsonl"),
        Some("ORCH-DONE-MARKER-7f3a9c"),
    )
    .expect("scan");
    assert!(scan.marker_found);
    assert_eq!(
        scan.final_answer.as_deref(),
        Some("All done. ORCH-DONE-MARKER-7f3a9c")
    );
    assert_eq!(
        scan.session_id.as_deref(),
        Some("11111111-2222-4333-8444-555555555555")
    );
    // Interactive transcripts (file-history snapshots, hook progress, thinking blocks, queue
    // operations, local commands) parse; the last prompt was an interruption, so the
    // answers before it are not the final answer.
    let s = Fake::new();
    for (name, output_tokens, answer_before_interruption) in [
        (
            "claude/handwritten-transcript-interactive-short.jsonl",
            13,
            "Let me run the suite with a timeout and look at the harness to see where it stops.",
        ),
        (
            "claude/handwritten-transcript-interactive-tool-heavy.jsonl",
            27 + 1 + 11 + 25 + 173,
            "The server is starting in the background; let me check its log.",
        ),
    ] {
        let scan = claude::scan_file(&agent_output_file(name), None).expect("scan");
        assert_eq!(scan.skipped_lines, 0, "{name}");
        assert_eq!(scan.output_tokens, Some(output_tokens), "{name}");
        assert_eq!(scan.final_answer, None, "{name}");
        // Up to its first interruption, the transcript's answer is the text before it.
        let text = read(name);
        let at = text
            .find("[Request interrupted by user")
            .expect("an interruption");
        let start = text[..at].rfind('\n').expect("a record before it");
        let path = s.put(&s.claude_folder(), "cut.jsonl", &text[..=start], secs(1));
        let scan = claude::scan_file(&path, None).expect("scan");
        assert_eq!(
            scan.final_answer.as_deref(),
            Some(answer_before_interruption),
            "{name}"
        );
    }
}

#[test]
fn claude_truncated_last_line_is_tolerated() {
    let s = Fake::new();
    let folder = s.claude_folder();
    let full = s.claude_sample(&s.cwd_str(), MARKER);
    // A half-written record after a complete answer.
    let mut text = full.clone();
    text.push_str(r#"{"parentUuid":"x","isSidechain":false,"type":"assistant","message":{"id":"m"#);
    let path = s.put(&folder, "half.jsonl", &text, secs(1));
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &path);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));

    // The final answer itself cut in half: the answer before it, no marker.
    let cut = full.find(FINAL).expect("final in sample") + 10;
    let scan = claude::scan_file(
        &s.put(&folder, "cut.jsonl", &full[..cut], secs(1)),
        Some(MARKER),
    )
    .expect("scan");
    assert!(!scan.marker_found);
    assert_eq!(scan.final_answer.as_deref(), Some("Checking the file."));
}

#[test]
fn claude_garbage_lines_are_skipped() {
    let s = Fake::new();
    let mut text = String::new();
    for (i, line) in s.claude_sample(&s.cwd_str(), MARKER).lines().enumerate() {
        text.push_str("not json at all\n\n");
        text.push_str(r#"{"type":"assistant","message":"a string"}"#);
        text.push('\n');
        text.push_str(r#"{"type":"user","message":{"content":[1,"x",null]},"unknown":{"a":[1]}}"#);
        text.push('\n');
        text.push_str(r#"{"type":"brand-new-type","payload":{"assistant":"user"}}"#);
        text.push('\n');
        text.push_str("\u{0}\u{1}\u{fffd}{{{{\n");
        if i % 2 == 0 {
            text.push_str("[\"assistant\", \"user\"]\n");
        }
        text.push_str(line);
        text.push('\n');
    }
    let path = s.put(&s.claude_folder(), "g.jsonl", &text, secs(1));
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &path);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    // Raw bytes that are not UTF-8.
    let mut bytes = text.into_bytes();
    bytes.splice(0..0, [0xff, 0xfe, b'\n']);
    fs::write(&path, &bytes).expect("write");
    let scan = claude::scan_file(&path, Some(MARKER)).expect("scan");
    assert!(scan.marker_found);
}

#[test]
fn claude_unreadable_files_are_skipped() {
    let s = Fake::new();
    let folder = s.claude_folder();
    fs::create_dir_all(folder.join(format!("{SESSION}.jsonl"))).expect("dir as file");
    std::os::unix::fs::symlink(folder.join("nowhere.jsonl"), folder.join("dangling.jsonl"))
        .expect("symlink");
    // Only unreadable entries: nothing.
    assert_eq!(
        claude::find(&s.claude_locator(), &s.query(Some(MARKER), Some(SESSION))),
        None
    );
    assert_eq!(
        claude::scan_file(&folder.join("dangling.jsonl"), Some(MARKER)),
        None
    );
    // A directory opened as a file reads as empty.
    let scan = claude::scan_file(&folder.join(format!("{SESSION}.jsonl")), Some(MARKER));
    assert!(scan.is_none_or(|s| !s.marker_found && s.final_answer.is_none()));
    let ours = s.put(
        &folder,
        "ok.jsonl",
        &s.claude_sample(&s.cwd_str(), MARKER),
        secs(5),
    );
    let found =
        claude::find(&s.claude_locator(), &s.query(Some(MARKER), Some(SESSION))).expect("found");
    assert_strong(&found, &ours);
}

#[test]
fn missing_roots_give_nothing() {
    let s = Fake::new();
    let nowhere = s.root.join("does/not/exist");
    let locator = Locator {
        home: Some(nowhere.clone()),
        claude_config_dir: Some(nowhere.clone()),
        codex_home: Some(nowhere.clone()),
        xdg_data_home: Some(nowhere.clone()),
        opencode_db: Some(nowhere),
    };
    let q = s.query(Some(MARKER), Some(SESSION));
    assert_eq!(claude::find(&locator, &q), None);
    assert_eq!(codex::find(&locator, &q), None);
    assert_eq!(claude::find(&Locator::default(), &q), None);
    assert_eq!(codex::find(&Locator::default(), &q), None);
    // `~/.claude` from the home directory, projects folder missing.
    fs::create_dir_all(s.root.join(".claude")).expect("mkdir");
    let home = Locator {
        home: Some(s.root.clone()),
        ..Locator::default()
    };
    assert_eq!(claude::find(&home, &q), None);
    // Projects folder present, no folder for this directory.
    fs::create_dir_all(s.root.join(".claude/projects")).expect("mkdir");
    assert_eq!(claude::find(&home, &q), None);
}

#[test]
fn claude_file_older_than_the_start_is_filtered_out() {
    let s = Fake::new();
    let folder = s.claude_folder();
    let path = s.put(
        &folder,
        "old.jsonl",
        &s.claude_sample(&s.cwd_str(), MARKER),
        secs(3600),
    );
    assert_eq!(
        claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)),
        None
    );
    age(&path, secs(1));
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &path);
}

#[test]
fn claude_candidates_opened_are_bounded() {
    let s = Fake::new();
    let folder = s.claude_folder();
    let cwd = s.cwd_str();
    // 60 newer files without the marker, ours the oldest: beyond the bound.
    let other = s.claude_sample(&cwd, OTHER_MARKER);
    for i in 0..60 {
        s.put(&folder, &format!("n{i:02}.jsonl"), &other, secs(1 + i));
    }
    s.put(
        &folder,
        "ours.jsonl",
        &s.claude_sample(&cwd, MARKER),
        secs(50),
    );
    // mtimes 1..=60 s ago and ours at 50: make ours the oldest of all.
    age(&folder.join("ours.jsonl"), secs(59));
    let q = Query {
        started_at: SystemTime::now() - secs(120),
        ..s.query(Some(MARKER), None)
    };
    let found = claude::find(&s.claude_locator(), &q).expect("found");
    assert!(found.weak);
    assert!(
        found.how.iter().any(|h| h.starts_with("bound:")),
        "{:#?}",
        found.how
    );
}

#[test]
fn claude_answer_is_clamped() {
    let s = Fake::new();
    s.put(
        &s.claude_folder(),
        "x.jsonl",
        &s.claude_sample(&s.cwd_str(), MARKER),
        secs(1),
    );
    let q = Query {
        answer_chars: 10,
        ..s.query(Some(MARKER), None)
    };
    let found = claude::find(&s.claude_locator(), &q).expect("found");
    assert_eq!(
        found.final_answer.as_deref(),
        Some("0123456789abcdef"[6..].trim())
    );
}

#[test]
fn claude_50_mb_transcript_is_streamed() {
    let s = Fake::new();
    let path = s.claude_folder().join("big.jsonl");
    fs::create_dir_all(s.claude_folder()).expect("mkdir");
    let sample = s.claude_sample(&s.cwd_str(), MARKER);
    let head_end = sample[..sample.find(FINAL).expect("final")]
        .rfind('\n')
        .expect("newline")
        + 1;
    let mut out = std::io::BufWriter::new(File::create(&path).expect("create"));
    out.write_all(&sample.as_bytes()[..head_end])
        .expect("write");
    // Progress records with big payloads, a few assistant records, one 17 MB line.
    let filler = "x".repeat(4000);
    let progress = format!(
        r#"{{"type":"progress","isSidechain":false,"cwd":"{}","data":{{"output":"{filler}"}}}}"#,
        s.cwd_str()
    );
    let assistant = r#"{"type":"assistant","isSidechain":false,"message":{"id":"msg_fill","role":"assistant","content":[{"type":"text","text":"still working"}],"usage":{"input_tokens":1,"output_tokens":1}}}"#;
    let mut written = 0usize;
    let mut i = 0;
    while written < 34 << 20 {
        out.write_all(progress.as_bytes()).expect("write");
        out.write_all(b"\n").expect("write");
        written += progress.len() + 1;
        i += 1;
        if i % 1000 == 0 {
            out.write_all(assistant.as_bytes()).expect("write");
            out.write_all(b"\n").expect("write");
        }
    }
    let huge = format!(
        r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","content":"{}"}}]}}}}"#,
        "y".repeat(17 << 20)
    );
    out.write_all(huge.as_bytes()).expect("write");
    out.write_all(b"\n").expect("write");
    out.write_all(&sample.as_bytes()[head_end..])
        .expect("write");
    drop(out);
    let size = fs::metadata(&path).expect("meta").len();
    assert!(size >= 50 << 20, "{size}");
    let started = Instant::now();
    let found = claude::find(&s.claude_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &path);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    let scan = claude::scan_file(&path, Some(MARKER)).expect("scan");
    assert_eq!(scan.skipped_lines, 1, "the 17 MB line is skipped");
    assert!(started.elapsed() < Duration::from_secs(60));
}

// ---------------------------------------------------------------------------------------
// Codex

fn rollout_name(id: &str) -> String {
    format!("rollout-2026-11-29T22-30-04-{id}.jsonl")
}

#[test]
fn codex_discovery_answer_and_usage() {
    let s = Fake::new();
    let day = s.codex_day();
    let cwd = s.cwd_str();
    let a = "01a2296d-0000-7000-8000-00000000000a";
    let b = "01a2296d-0000-7000-8000-00000000000b";
    s.put(
        &day,
        &rollout_name(a),
        &s.codex_sample(&cwd, a, OTHER_MARKER),
        secs(1),
    );
    let ours = s.put(
        &day,
        &rollout_name(b),
        &s.codex_sample(&cwd, b, MARKER),
        secs(5),
    );
    let found = find(
        Store::Codex,
        &s.codex_locator(),
        &s.query(Some(MARKER), None),
    )
    .expect("found");
    assert_strong(&found, &ours);
    assert_eq!(found.store, Store::Codex);
    assert_eq!(found.session_id.as_deref(), Some(b));
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    assert_eq!(found.input_tokens, Some(3000));
    assert_eq!(found.output_tokens, Some(60));
    assert!(
        found
            .how
            .join("\n")
            .contains("2 rollout files, 2 modified after the start")
    );
}

#[test]
fn codex_meta_cwd_mismatch_is_ignored() {
    let s = Fake::new();
    let day = s.codex_day();
    let a = "01a2296d-0000-7000-8000-00000000000a";
    s.put(
        &day,
        &rollout_name(a),
        &s.codex_sample("/elsewhere", a, MARKER),
        secs(1),
    );
    assert_eq!(
        codex::find(&s.codex_locator(), &s.query(Some(MARKER), None)),
        None
    );
    // Even when named by the thread id.
    assert_eq!(
        codex::find(&s.codex_locator(), &s.query(Some(MARKER), Some(a))),
        None
    );
    // A flat (early layout) rollout with the right cwd is found.
    let b = "01a2296d-0000-7000-8000-00000000000b";
    let flat = s.put(
        &s.root.join("sessions"),
        &rollout_name(b),
        &s.codex_sample(&s.cwd_str(), b, MARKER),
        secs(9),
    );
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &flat);
    assert!(
        found.how.iter().any(|h| h.contains("another cwd")),
        "{:#?}",
        found.how
    );
}

#[test]
fn codex_session_id_is_preferred() {
    let s = Fake::new();
    let day = s.codex_day();
    let cwd = s.cwd_str();
    let a = "01a2296d-0000-7000-8000-00000000000a";
    let b = "01a2296d-0000-7000-8000-00000000000b";
    s.put(
        &day,
        &rollout_name(a),
        &s.codex_sample(&cwd, a, MARKER),
        secs(1),
    );
    // Older, even from before the start: the id names it.
    let ours = s.put(
        &day,
        &rollout_name(b),
        &s.codex_sample(&cwd, b, MARKER),
        secs(3600),
    );
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), Some(b))).expect("found");
    assert_strong(&found, &ours);
    assert!(
        found
            .how
            .iter()
            .any(|h| h.contains("named after thread id")),
        "{:#?}",
        found.how
    );
    // Without the marker anywhere, the id's rollout is kept (not weak).
    let found =
        codex::find(&s.codex_locator(), &s.query(Some(OTHER_MARKER), Some(b))).expect("found");
    assert_eq!(found.path, ours);
    assert!(!found.weak && !found.marker_found);
}

#[test]
fn codex_thread_index_names_the_rollout() {
    let s = Fake::new();
    let cwd = s.cwd_str();
    let id = "01a2296d-0000-7000-8000-00000000000c";
    // A file whose name does not carry the id, listed in state_5.sqlite.
    let path = s.put(
        &s.codex_day(),
        "rollout-renamed.jsonl",
        &s.codex_sample(&cwd, id, MARKER),
        secs(3),
    );
    let db = rusqlite::Connection::open(s.root.join("state_5.sqlite")).expect("db");
    db.execute_batch("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, cwd TEXT)")
        .expect("schema");
    db.execute(
        "INSERT INTO threads VALUES (?1, ?2, ?3)",
        [id, path.to_str().expect("utf-8"), cwd.as_str()],
    )
    .expect("row");
    drop(db);
    let found = codex::find(&s.codex_locator(), &s.query(None, Some(id))).expect("found");
    assert_eq!(found.path, path);
    assert!(!found.weak);
    assert!(
        found.how.iter().any(|h| h.contains("state_5.sqlite")),
        "{:#?}",
        found.how
    );
}

/// `archived_sessions/`, where `codex archive` moves a rollout (flat, name kept).
fn archived(s: &Fake) -> PathBuf {
    s.root.join("archived_sessions")
}

#[test]
fn codex_archived_rollout_found_by_thread_id() {
    let s = Fake::new();
    let cwd = s.cwd_str();
    let other = "01a2296d-0000-7000-8000-0000000000a0";
    let id = "01a2296d-0000-7000-8000-0000000000a1";
    // A live rollout of another thread, newer; ours was archived, and is older than the
    // start: the thread id names it all the same, as under `sessions/`.
    s.put(
        &s.codex_day(),
        &rollout_name(other),
        &s.codex_sample(&cwd, other, OTHER_MARKER),
        secs(1),
    );
    let ours = s.put(
        &archived(&s),
        &rollout_name(id),
        &s.codex_sample(&cwd, id, MARKER),
        secs(3600),
    );
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), Some(id))).expect("found");
    assert_strong(&found, &ours);
    assert_eq!(found.session_id.as_deref(), Some(id));
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
    let how = found.how.join("\n");
    assert!(
        how.contains("archived rollout named after thread id"),
        "{how}"
    );
    assert!(!how.contains("no rollout for thread id"), "{how}");

    // The thread index still naming the old place under `sessions/` does not matter.
    let db = rusqlite::Connection::open(s.root.join("state_5.sqlite")).expect("db");
    db.execute_batch("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, cwd TEXT)")
        .expect("schema");
    let stale = s.codex_day().join(rollout_name(id));
    db.execute(
        "INSERT INTO threads VALUES (?1, ?2, ?3)",
        [id, stale.to_str().expect("utf-8"), cwd.as_str()],
    )
    .expect("row");
    drop(db);
    let found = codex::find(&s.codex_locator(), &s.query(None, Some(id))).expect("found");
    assert_eq!(found.path, ours, "{:#?}", found.how);
    assert!(!found.weak);

    // Archived into dated folders, should a version keep them there.
    fs::remove_file(&ours).expect("rm");
    let dated = s.put(
        &archived(&s).join("2026/11/29"),
        &rollout_name(id),
        &s.codex_sample(&cwd, id, MARKER),
        secs(3600),
    );
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), Some(id))).expect("found");
    assert_strong(&found, &dated);
}

#[test]
fn codex_live_rollout_of_the_thread_skips_archived_sessions() {
    let s = Fake::new();
    let cwd = s.cwd_str();
    let id = "01a2296d-0000-7000-8000-0000000000a2";
    let live = s.put(
        &s.codex_day(),
        &rollout_name(id),
        &s.codex_sample(&cwd, id, MARKER),
        secs(2),
    );
    // A copy in `archived_sessions/` (say, archived and then restored by hand).
    s.put(
        &archived(&s),
        &rollout_name(id),
        &s.codex_sample(&cwd, id, MARKER),
        secs(1),
    );
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), Some(id))).expect("found");
    assert_strong(&found, &live);
    assert!(
        !found.how.iter().any(|h| h.contains("archived")),
        "{:#?}",
        found.how
    );
}

#[test]
fn codex_archived_rollout_found_by_cwd_and_marker() {
    let s = Fake::new();
    let cwd = s.cwd_str();
    let a = "01a2296d-0000-7000-8000-0000000000b0";
    let b = "01a2296d-0000-7000-8000-0000000000b1";
    let c = "01a2296d-0000-7000-8000-0000000000b2";
    // Newer live rollouts: one of this directory without the marker, one of another
    // directory with it. Ours is in `archived_sessions/`, with no thread id to name it.
    s.put(
        &s.codex_day(),
        &rollout_name(a),
        &s.codex_sample(&cwd, a, OTHER_MARKER),
        secs(1),
    );
    s.put(
        &s.codex_day(),
        &rollout_name(b),
        &s.codex_sample("/elsewhere", b, MARKER),
        secs(2),
    );
    let ours = s.put(
        &archived(&s),
        &rollout_name(c),
        &s.codex_sample(&cwd, c, MARKER),
        secs(5),
    );
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &ours);
    assert_eq!(found.session_id.as_deref(), Some(c));
    let how = found.how.join("\n");
    assert!(
        how.contains("archived_sessions: 1 rollout files, 1 modified after the start"),
        "{how}"
    );
    // An unknown thread id changes nothing: the same search follows.
    let unknown = "01a2296d-0000-7000-8000-0000000000ff";
    let found =
        codex::find(&s.codex_locator(), &s.query(Some(MARKER), Some(unknown))).expect("found");
    assert_strong(&found, &ours);
    assert!(
        found
            .how
            .iter()
            .any(|h| h.contains(&format!("no rollout for thread id {unknown}"))),
        "{:#?}",
        found.how
    );

    // Everything archived, `sessions/` gone: still found.
    fs::remove_dir_all(s.root.join("sessions")).expect("rm");
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert_strong(&found, &ours);
}

#[test]
fn codex_archived_rollouts_older_than_the_start_are_ignored() {
    let s = Fake::new();
    let cwd = s.cwd_str();
    let id = "01a2296d-0000-7000-8000-0000000000c0";
    // Right directory, right marker, but last modified an hour before the attempt began.
    s.put(
        &archived(&s),
        &rollout_name(id),
        &s.codex_sample(&cwd, id, MARKER),
        secs(3600),
    );
    fs::create_dir_all(s.root.join("sessions")).expect("mkdir");
    assert_eq!(
        codex::find(&s.codex_locator(), &s.query(Some(MARKER), None)),
        None
    );
    assert_eq!(codex::find(&s.codex_locator(), &s.query(None, None)), None);
    // A newer archived rollout of the directory, without the marker, is a weak match only.
    let other = "01a2296d-0000-7000-8000-0000000000c1";
    let newer = s.put(
        &archived(&s),
        &rollout_name(other),
        &s.codex_sample(&cwd, other, OTHER_MARKER),
        secs(1),
    );
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), None)).expect("weak");
    assert_eq!(found.path, newer);
    assert!(found.weak && !found.marker_found, "{:#?}", found.how);
    assert!(
        found
            .how
            .join("\n")
            .contains("archived_sessions: 2 rollout files, 1 modified after the start"),
        "{:#?}",
        found.how
    );
}

#[test]
fn codex_unreadable_archived_sessions_give_nothing() {
    let s = Fake::new();
    // `archived_sessions` a file, not a folder; and no `sessions/`.
    fs::write(archived(&s), "not a folder").expect("write");
    let q = s.query(Some(MARKER), Some(THREAD));
    assert_eq!(codex::find(&s.codex_locator(), &q), None);
    // With an empty `sessions/` beside it.
    fs::create_dir_all(s.root.join("sessions")).expect("mkdir");
    assert_eq!(codex::find(&s.codex_locator(), &q), None);
}

#[test]
fn codex_prompt_and_tool_output_are_not_evidence() {
    let s = Fake::new();
    let id = "01a2296d-0000-7000-8000-00000000000d";
    let text = s
        .codex_sample(&s.cwd_str(), id, OTHER_MARKER)
        .replace(
            "then reply with a short",
            &format!("then say {MARKER} in a short"),
        )
        .replace(
            "Success. Updated the following files",
            &format!("{MARKER} Updated"),
        );
    assert!(text.matches(MARKER).count() >= 3);
    s.put(&s.codex_day(), &rollout_name(id), &text, secs(1));
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), None)).expect("found");
    assert!(found.weak && !found.marker_found, "{:#?}", found.how);
}

#[test]
fn codex_real_rollouts_parse() {
    let dir = agent_output().join("codex");
    let scan = codex::scan_file(
        &dir.join("cx0.171.0-rollout-bad-model-01a2294c-e7f6-7fe3-afeb-4c244f9f5889.jsonl"),
        Some("ORCH-DONE-MARKER-7f3a9c"),
    )
    .expect("scan");
    assert!(!scan.marker_found);
    assert_eq!(scan.final_answer, None);
    assert_eq!(scan.cwd.as_deref(), Some(Path::new("/tmp/mockproj-codex")));
    let scan = codex::scan_file(
        &dir.join(
            "cx0.171.0-rollout-2026-11-29T21-53-48-01a2294c-cdab-7ec2-b19d-8fe47915ddcd.jsonl",
        ),
        Some("ORCH-DONE-MARKER-7f3a9c"),
    )
    .expect("scan");
    assert!(scan.marker_found);
    assert_eq!(
        scan.final_answer.as_deref(),
        Some("All done. ORCH-DONE-MARKER-7f3a9c")
    );
    assert_eq!(
        scan.session_id.as_deref(),
        Some("01a2294c-cdab-7ec2-b19d-8fe47915ddcd")
    );
    assert_eq!(
        (scan.input_tokens, scan.output_tokens),
        (Some(2400), Some(40))
    );

    // A Codex Desktop rollout (0.104 shapes: reasoning with encrypted content, MCP and
    // exec_command function calls and their outputs, commentary, then the final answer).
    let desktop = "codex/handwritten-desktop-rollout-final-answer.jsonl";
    let answer = "Drafted the 0.4.0 release notes in CHANGELOG.md (the scrollback fix from #41 \
                  and the --port flag from #44) and bumped the version to 0.4.0. The test \
                  suite passes.";
    let scan = codex::scan_file(&agent_output_file(desktop), None).expect("scan");
    assert_eq!(scan.final_answer.as_deref(), Some(answer));
    assert_eq!(scan.skipped_lines, 0);
    assert_eq!(
        scan.session_id.as_deref(),
        Some("019c8cd8-35c2-712e-869d-2a58387fca42")
    );
    assert_eq!(
        scan.cwd.as_deref(),
        Some(Path::new("/home/dev/projects/inkwell"))
    );
    assert_eq!(
        (scan.input_tokens, scan.output_tokens),
        (Some(225_410), Some(1036))
    );
    // The answer is the one `task_complete` reports.
    let s = Fake::new();
    let text = read(desktop);
    let (head, complete) = text.trim_end().rsplit_once('\n').expect("lines");
    assert!(complete.contains(r#""type":"task_complete""#));
    let edited = format!(
        "{head}\n{}\n",
        complete.replace(answer, "Reported by task_complete.")
    );
    let path = s.put(&s.codex_day(), "edited.jsonl", &edited, secs(1));
    let scan = codex::scan_file(&path, None).expect("scan");
    assert_eq!(
        scan.final_answer.as_deref(),
        Some("Reported by task_complete.")
    );

    // An unfinished turn (no task_complete): its last commentary.
    let scan = codex::scan_file(
        &agent_output_file("codex/handwritten-desktop-rollout-unfinished.jsonl"),
        None,
    )
    .expect("scan");
    assert_eq!(
        scan.final_answer.as_deref(),
        Some("I'll run the resize test in a loop to catch the failure, then read the test.")
    );
    assert_eq!(scan.skipped_lines, 0);
    assert_eq!(
        (scan.input_tokens, scan.output_tokens),
        (Some(34_470), Some(431))
    );
}

#[test]
fn codex_truncated_and_garbage_lines_are_tolerated() {
    let s = Fake::new();
    let id = "01a2296d-0000-7000-8000-00000000000e";
    let mut text = String::new();
    for line in s.codex_sample(&s.cwd_str(), id, MARKER).lines() {
        text.push_str("garbage \"assistant\" {\n");
        text.push_str(
            r#"{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":5}}"#,
        );
        text.push('\n');
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(
        r#"{"timestamp":"2026-11-29T22:30:05.000Z","type":"event_msg","payload":{"type":"task_sta"#,
    );
    let path = s.put(&s.codex_day(), &rollout_name(id), &text, secs(1));
    let found = codex::find(&s.codex_locator(), &s.query(Some(MARKER), Some(id))).expect("found");
    assert_strong(&found, &path);
    assert_eq!(found.final_answer.as_deref(), Some(FINAL));
}

/// A transcript the agent is still appending to while weft reads it: every read gives a
/// consistent answer or less, never a panic or an error, and the final read finds it.
#[test]
fn claude_file_appended_while_being_read_is_tolerated() {
    let s = Fake::new();
    let folder = s.claude_folder();
    let full = s.claude_sample(&s.cwd_str(), MARKER);
    let path = s.put(&folder, "growing.jsonl", "", secs(0));
    let writer_path = path.clone();
    let bytes = full.into_bytes();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&writer_path)
            .unwrap();
        // Small uneven chunks, so reads often stop inside a record.
        for chunk in bytes.chunks(7) {
            file.write_all(chunk).unwrap();
            file.flush().unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    let locator = s.claude_locator();
    let query = s.query(Some(MARKER), None);
    let mut reads = 0;
    while !writer.is_finished() {
        if let Some(found) = claude::find(&locator, &query) {
            assert_eq!(found.path, path);
            if found.marker_found {
                assert_eq!(found.final_answer.as_deref(), Some(FINAL));
            }
        }
        reads += 1;
    }
    writer.join().unwrap();
    assert!(reads > 0);
    let found = claude::find(&locator, &query).expect("found once complete");
    assert_strong(&found, &path);
}

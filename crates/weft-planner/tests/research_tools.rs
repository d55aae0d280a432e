//! The read-only research envelope against real files and real git repositories: every
//! tool's answers and failures, the approval gate, masking and caps.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs_err as fs;
use serde_json::json;
use weft_core::approval::{Decision, Scope, Source, Subject};
use weft_planner::ToolCall;
use weft_planner::log::StepOutcome;
use weft_planner::tools::{Approver, Research, ResearchConfig, ToolRun};
use weft_testkit::{Hermetic, TestRepo};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A scripted approver: answers from a queue (then `default`), records every subject.
#[derive(Debug)]
struct FakeApprover {
    answers: VecDeque<(bool, Source)>,
    default: (bool, Source),
    seen: Vec<Subject>,
}

impl FakeApprover {
    /// Denies everything, as when nobody can be asked.
    fn no_channel() -> Self {
        FakeApprover {
            answers: VecDeque::new(),
            default: (false, Source::NoChannel),
            seen: Vec::new(),
        }
    }

    fn allowing() -> Self {
        FakeApprover {
            answers: VecDeque::new(),
            default: (true, Source::Asked),
            seen: Vec::new(),
        }
    }

    fn then(mut self, allowed: bool, source: Source) -> Self {
        self.answers.push_back((allowed, source));
        self
    }
}

impl Approver for FakeApprover {
    fn decide(&mut self, subject: Subject) -> Decision {
        let (allowed, source) = self.answers.pop_front().unwrap_or(self.default);
        let scope = subject.scope();
        self.seen.push(subject);
        Decision {
            scope,
            allowed,
            source,
            decided_at: 0,
        }
    }
}

/// A hermetic root holding a git workspace (`work/`) and a folder outside it
/// (`outside/`).
struct Fixture {
    env: Hermetic,
    repo: TestRepo,
}

impl Fixture {
    fn new() -> Fixture {
        let env = Hermetic::new();
        let repo = TestRepo::init(&env.work(), &env);
        fs::create_dir_all(env.root().join("outside")).unwrap();
        Fixture { env, repo }
    }

    fn work(&self) -> PathBuf {
        canonical(&self.env.work())
    }

    fn outside(&self) -> PathBuf {
        canonical(&self.env.root().join("outside"))
    }

    fn write(&self, relative: &str, contents: &str) {
        self.repo.write(relative, contents);
    }

    fn write_outside(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.outside().join(name);
        fs::write(&path, contents).unwrap();
        path
    }

    fn commit(&self, message: &str) {
        self.repo.commit_all(&self.env, message);
    }

    fn config(&self) -> ResearchConfig {
        ResearchConfig::new(self.env.work())
    }

    fn research(&self) -> Research {
        Research::new(self.config())
    }
}

fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap()
}

fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

fn run(research: &Research, name: &str, arguments: serde_json::Value) -> ToolRun {
    research.run(&call(name, arguments), &mut FakeApprover::no_channel())
}

fn run_with(
    research: &Research,
    approver: &mut FakeApprover,
    name: &str,
    arguments: serde_json::Value,
) -> ToolRun {
    research.run(&call(name, arguments), approver)
}

#[track_caller]
fn assert_outcome(run: &ToolRun, outcome: StepOutcome) {
    assert_eq!(
        run.outcome, outcome,
        "input: {}\nresult:\n{}",
        run.input, run.result
    );
}

#[track_caller]
fn assert_has(run: &ToolRun, needle: &str) {
    assert!(
        run.result.contains(needle),
        "{needle:?} not in the result of {}:\n{}",
        run.input,
        run.result
    );
}

#[track_caller]
fn assert_lacks(run: &ToolRun, needle: &str) {
    assert!(
        !run.result.contains(needle),
        "{needle:?} is in the result of {}:\n{}",
        run.input,
        run.result
    );
}

/// Every file under `root` (but `.git/`) with its contents, to prove nothing changed.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                out.insert(path.clone(), Vec::new());
                stack.push(path);
            } else if kind.is_file() {
                out.insert(path.clone(), fs::read(&path).unwrap());
            } else {
                out.insert(path.clone(), b"<other>".to_vec());
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Specs and arguments
// ---------------------------------------------------------------------------------------

#[test]
fn offers_seven_tools_with_closed_schemas() {
    let fixture = Fixture::new();
    let specs = fixture.research().specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "list_dir",
            "read_file",
            "search",
            "git_log",
            "git_show",
            "git_diff",
            "run_command"
        ]
    );
    for spec in &specs {
        assert!(!spec.description.is_empty());
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert_eq!(
            spec.parameters["additionalProperties"], false,
            "{}",
            spec.name
        );
    }
    let read = specs.iter().find(|s| s.name == "read_file").unwrap();
    assert_eq!(read.parameters["required"], json!(["path"]));
    assert_eq!(read.parameters["properties"]["limit"]["maximum"], 2000);
}

#[test]
fn an_unknown_tool_is_refused_with_the_tool_names() {
    let fixture = Fixture::new();
    let run = run(&fixture.research(), "write_file", json!({"path": "x"}));
    assert_outcome(&run, StepOutcome::Refused);
    assert_has(&run, "no tool named `write_file`");
    assert_has(
        &run,
        "list_dir, read_file, search, git_log, git_show, git_diff, run_command",
    );
}

#[test]
fn malformed_arguments_are_refused_with_the_expected_shape() {
    let fixture = Fixture::new();
    let research = fixture.research();
    let mut approver = FakeApprover::no_channel();

    let broken = ToolCall {
        id: "c".into(),
        name: "read_file".into(),
        arguments: r#"{"path": "README.md""#.into(),
    };
    let run = research.run(&broken, &mut approver);
    assert_outcome(&run, StepOutcome::Refused);
    assert_has(&run, "not valid JSON");
    assert_has(
        &run,
        r#"`read_file` expects {"path": string, "offset"?: integer"#,
    );
    assert!(run.input.starts_with("read_file {"), "{}", run.input);

    let cases = [
        ("read_file", json!({}), "missing argument `path`"),
        (
            "read_file",
            json!({"path": 7}),
            "`path` must be a string, got 7",
        ),
        (
            "read_file",
            json!({"path": "a", "lines": 3}),
            "unknown argument `lines`",
        ),
        (
            "read_file",
            json!({"path": "a", "limit": 5000}),
            "`limit` must be an integer from 1 to 2000",
        ),
        (
            "list_dir",
            json!({"depth": 4}),
            "`depth` must be an integer from 1 to 3, got 4",
        ),
        (
            "list_dir",
            json!({"depth": "2"}),
            "`depth` must be an integer",
        ),
        (
            "search",
            json!({"pattern": "x", "case_insensitive": "yes"}),
            "`case_insensitive` must be true or false",
        ),
        (
            "search",
            json!({"pattern": "x", "max_results": 201}),
            "`max_results` must be an integer from 1 to 200",
        ),
        (
            "run_command",
            json!(["ls"]),
            "must be a JSON object, not an array",
        ),
        (
            "run_command",
            json!({"cmd": "ls"}),
            "unknown argument `cmd`",
        ),
        ("git_show", json!({}), "missing argument `rev`"),
    ];
    for (tool, arguments, message) in cases {
        let run = run_with(&research, &mut approver, tool, arguments);
        assert_outcome(&run, StepOutcome::Refused);
        assert_has(&run, message);
    }
    assert!(approver.seen.is_empty());
}

// ---------------------------------------------------------------------------------------
// list_dir
// ---------------------------------------------------------------------------------------

#[test]
fn list_dir_sorts_marks_directories_and_honours_gitignore() {
    let fixture = Fixture::new();
    fixture.write(".gitignore", "target/\n*.log\n");
    fixture.write("src/main.rs", "fn main() {}\n");
    fixture.write("src/lib/mod.rs", "\n");
    fixture.write("target/debug/out", "built\n");
    fixture.write("debug.log", "noise\n");
    fixture.write(".github/workflows/ci.yml", "on: push\n");
    fixture.write(".weft/state.json", "{}\n");
    fixture.write("b.txt", "b\n");
    let research = fixture.research();

    let run1 = run(&research, "list_dir", json!({}));
    assert_outcome(&run1, StepOutcome::Success);
    let lines: Vec<&str> = run1.result.lines().collect();
    assert_eq!(
        lines,
        [
            "./ (depth 1)",
            ".github/",
            ".gitignore",
            "README.md",
            "b.txt",
            "src/"
        ],
        "{}",
        run1.result
    );
    assert_eq!(run1.input, "list_dir .");
    assert_eq!(run1.decision, None);

    let run2 = run(&research, "list_dir", json!({"path": "src", "depth": 2}));
    assert_outcome(&run2, StepOutcome::Success);
    let lines: Vec<&str> = run2.result.lines().collect();
    assert_eq!(
        lines,
        ["src/ (depth 2)", "lib/", "lib/mod.rs", "main.rs"],
        "{}",
        run2.result
    );
    assert_eq!(run2.input, "list_dir src depth=2");

    let run3 = run(&research, "list_dir", json!({"depth": 3}));
    assert_has(&run3, ".github/workflows/ci.yml");
    assert_has(&run3, "src/lib/mod.rs");
    assert_lacks(&run3, "target");
    assert_lacks(&run3, "debug.log");
    assert_lacks(&run3, ".weft");
    assert_lacks(&run3, ".git/");
}

#[test]
fn list_dir_caps_the_entries() {
    let fixture = Fixture::new();
    for i in 0..520 {
        fixture.write(&format!("many/f{i:04}.txt"), "");
    }
    let run = run(&fixture.research(), "list_dir", json!({"path": "many"}));
    assert_outcome(&run, StepOutcome::Success);
    assert_has(&run, "\nf0499.txt\n");
    assert_lacks(&run, "f0500.txt");
    assert_has(&run, "… 20 more entries not shown");
    assert_eq!(run.result.lines().count(), 1 + 500 + 1);
}

#[test]
fn list_dir_of_a_file_or_a_missing_path_fails() {
    let fixture = Fixture::new();
    let research = fixture.research();
    let run1 = run(&research, "list_dir", json!({"path": "README.md"}));
    assert_outcome(&run1, StepOutcome::Failure);
    assert_has(&run1, "README.md is a file");
    let run2 = run(&research, "list_dir", json!({"path": "nope"}));
    assert_outcome(&run2, StepOutcome::Failure);
    assert_has(&run2, "no such directory: nope");
}

// ---------------------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------------------

fn numbered(count: usize) -> String {
    (1..=count).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn read_file_shows_a_numbered_window() {
    let fixture = Fixture::new();
    fixture.write("src/long.txt", &numbered(1000));
    let research = fixture.research();

    let run1 = run(
        &research,
        "read_file",
        json!({"path": "src/long.txt", "offset": 10, "limit": 3}),
    );
    assert_outcome(&run1, StepOutcome::Success);
    assert_eq!(
        run1.result,
        "src/long.txt (lines 10-12 of 1000)\n    10\tline 10\n    11\tline 11\n    12\tline 12\n\
         [lines 13-1000 not shown; continue with offset 13]\n"
    );
    assert_eq!(run1.input, "read_file src/long.txt:10-12");

    let run2 = run(&research, "read_file", json!({"path": "src/long.txt"}));
    assert_outcome(&run2, StepOutcome::Success);
    assert_has(&run2, "(lines 1-400 of 1000)");
    assert_has(&run2, "   400\tline 400\n");
    assert_lacks(&run2, "line 401\n");
    assert_has(&run2, "continue with offset 401");
    assert_eq!(run2.input, "read_file src/long.txt:1-400");

    let run3 = run(&research, "read_file", json!({"path": "README.md"}));
    assert_eq!(
        run3.result,
        "README.md (lines 1-1 of 1)\n     1\t# test repository\n"
    );

    let run4 = run(
        &research,
        "read_file",
        json!({"path": "src/long.txt", "offset": 2000}),
    );
    assert_outcome(&run4, StepOutcome::Failure);
    assert_has(
        &run4,
        "offset 2000 is past the end of src/long.txt, which has 1000 lines",
    );
}

#[test]
fn read_file_refuses_a_big_file_but_reads_a_window_of_it() {
    let fixture = Fixture::new();
    fixture.write("big.txt", &numbered(5000));
    let mut config = fixture.config();
    config.max_file_bytes = 10_000;
    let research = Research::new(config);

    let whole = run(&research, "read_file", json!({"path": "big.txt"}));
    assert_outcome(&whole, StepOutcome::Refused);
    assert_has(&whole, "over the 10000-byte limit");
    assert_has(&whole, "`search`");
    assert_has(&whole, "`offset` and `limit`");

    let window = run(
        &research,
        "read_file",
        json!({"path": "big.txt", "offset": 4000, "limit": 2}),
    );
    assert_outcome(&window, StepOutcome::Success);
    assert_eq!(
        window.result,
        "big.txt (lines 4000-4001)\n  4000\tline 4000\n  4001\tline 4001\n\
         [more lines not shown; continue with offset 4002]\n"
    );

    // A walk skips it and says so; `search` reads a big file it is pointed at.
    let walked = run(&research, "search", json!({"pattern": "^line 4321$"}));
    assert_has(&walked, "no matches");
    assert_has(&walked, "1 over 10000 bytes");
    let found = run(
        &research,
        "search",
        json!({"pattern": "^line 4321$", "path": "big.txt"}),
    );
    assert_outcome(&found, StepOutcome::Success);
    assert_has(&found, "big.txt:4321: line 4321");
}

#[test]
fn read_file_refuses_binary_and_fails_on_missing_files_and_directories() {
    let fixture = Fixture::new();
    fs::write(
        fixture.work().join("image.bin"),
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
    )
    .unwrap();
    let research = fixture.research();

    let binary = run(&research, "read_file", json!({"path": "image.bin"}));
    assert_outcome(&binary, StepOutcome::Refused);
    assert_has(&binary, "image.bin looks binary");

    fixture.write("empty.txt", "");
    let empty = run(&research, "read_file", json!({"path": "empty.txt"}));
    assert_outcome(&empty, StepOutcome::Success);
    assert_eq!(empty.result, "empty.txt is empty");

    let missing = run(&research, "read_file", json!({"path": "src/missing.rs"}));
    assert_outcome(&missing, StepOutcome::Failure);
    assert_has(&missing, "no such file: src/missing.rs");

    fixture.write("src/a.rs", "\n");
    let dir = run(&research, "read_file", json!({"path": "src"}));
    assert_outcome(&dir, StepOutcome::Failure);
    assert_has(&dir, "src is a directory");
}

#[test]
fn read_file_refuses_a_fifo_instead_of_hanging() {
    let fixture = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(fixture.work().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let run = run(&fixture.research(), "read_file", json!({"path": "pipe"}));
    assert_outcome(&run, StepOutcome::Refused);
    assert_has(&run, "not a regular file");
}

// ---------------------------------------------------------------------------------------
// search
// ---------------------------------------------------------------------------------------

#[test]
fn search_finds_lines_honours_globs_and_ignore_files() {
    let fixture = Fixture::new();
    fixture.write(".gitignore", "generated/\n");
    fixture.write("src/main.rs", "fn main() {\n    helper();\n}\n");
    fixture.write("src/util.rs", "pub fn helper() {}\n");
    fixture.write("docs/notes.md", "fn helper in prose\n");
    fixture.write("generated/out.rs", "fn helper_generated() {}\n");
    fixture.write(".env", "HELPER_TOKEN=abcdef\n");
    fixture.write(".github/workflows/ci.yml", "run: helper\n");
    fs::write(fixture.work().join("blob.bin"), b"helper\0\0").unwrap();
    let research = fixture.research();

    let all = run(&research, "search", json!({"pattern": "helper"}));
    assert_outcome(&all, StepOutcome::Success);
    assert_eq!(
        all.result.lines().take(4).collect::<Vec<_>>(),
        [
            ".github/workflows/ci.yml:1: run: helper",
            "docs/notes.md:1: fn helper in prose",
            "src/main.rs:2:     helper();",
            "src/util.rs:1: pub fn helper() {}",
        ],
        "{}",
        all.result
    );
    assert_has(&all, "[4 matching lines in 4 files]");
    assert_lacks(&all, "generated");
    assert_lacks(&all, "abcdef");
    assert_has(&all, "1 binary");
    assert_has(&all, "1 .env files");

    let rust = run(
        &research,
        "search",
        json!({"pattern": r"fn \w+\(", "glob": "*.rs"}),
    );
    assert_outcome(&rust, StepOutcome::Success);
    assert_eq!(
        rust.result.lines().take(2).collect::<Vec<_>>(),
        [
            "src/main.rs:1: fn main() {",
            "src/util.rs:1: pub fn helper() {}"
        ]
    );
    assert_lacks(&rust, "notes.md");
    assert_lacks(&rust, "generated");
    assert!(rust.input.contains("glob=*.rs"), "{}", rust.input);

    let scoped = run(
        &research,
        "search",
        json!({"pattern": "HELPER", "path": "src", "case_insensitive": true}),
    );
    assert_has(&scoped, "src/main.rs:2:");
    assert_lacks(&scoped, "docs/");

    let none = run(
        &research,
        "search",
        json!({"pattern": "HELPER", "path": "src"}),
    );
    assert_outcome(&none, StepOutcome::Success);
    assert_has(&none, "no matches for /HELPER/ in src (2 files searched)");

    let few = run(
        &research,
        "search",
        json!({"pattern": "helper", "max_results": 2}),
    );
    let found = few.result.lines().filter(|l| !l.starts_with('['));
    assert_eq!(found.count(), 2, "{}", few.result);
    assert_has(&few, "stopped at 2 matches");
}

#[test]
fn search_reports_an_invalid_regex() {
    let fixture = Fixture::new();
    let run = run(
        &fixture.research(),
        "search",
        json!({"pattern": "fn (main"}),
    );
    assert_outcome(&run, StepOutcome::Failure);
    assert_has(&run, "invalid regex /fn (main/");
    assert_has(&run, "unclosed group");
}

#[test]
fn search_cuts_long_lines() {
    let fixture = Fixture::new();
    fixture.write("wide.txt", &format!("needle {}\n", "x".repeat(1000)));
    let run = run(&fixture.research(), "search", json!({"pattern": "needle"}));
    let line = run.result.lines().next().unwrap();
    assert!(line.starts_with("wide.txt:1: needle xxx"), "{line}");
    assert!(line.ends_with("… [line cut]"), "{line}");
    assert!(line.chars().count() < 340, "{}", line.len());
}

// ---------------------------------------------------------------------------------------
// git tools
// ---------------------------------------------------------------------------------------

fn history(fixture: &Fixture) {
    fixture.write("src/lib.rs", "pub fn one() {}\n");
    fixture.commit("add lib");
    fixture.write("src/lib.rs", "pub fn one() {}\npub fn two() {}\n");
    fixture.write("docs/guide.md", "guide\n");
    fixture.commit("add two and a guide");
}

#[test]
fn git_log_lists_commits_by_path_and_count() {
    let fixture = Fixture::new();
    history(&fixture);
    let research = fixture.research();

    let all = run(&research, "git_log", json!({}));
    assert_outcome(&all, StepOutcome::Success);
    let subjects: Vec<&str> = all
        .result
        .lines()
        .map(|l| l.split(": ").nth(1).unwrap_or(l))
        .collect();
    assert_eq!(
        subjects,
        ["add two and a guide", "add lib", "initial commit"],
        "{}",
        all.result
    );
    assert!(all.result.contains("weft test: add lib"), "{}", all.result);
    assert_eq!(all.input, "git_log -n 20");

    let docs = run(&research, "git_log", json!({"path": "docs"}));
    assert_eq!(docs.result.lines().count(), 1, "{}", docs.result);
    assert_has(&docs, "add two and a guide");

    let one = run(
        &research,
        "git_log",
        json!({"max_count": 1, "rev": "HEAD~1"}),
    );
    assert_eq!(one.result.lines().count(), 1);
    assert_has(&one, "add lib");
    assert_eq!(one.input, "git_log HEAD~1 -n 1");

    let bad = run(&research, "git_log", json!({"rev": "no-such-branch"}));
    assert_outcome(&bad, StepOutcome::Failure);
    assert_has(&bad, "no-such-branch");
    assert_has(&bad, "[git exited with 128]");
}

#[test]
fn git_show_prints_a_commit_and_a_file_at_a_revision() {
    let fixture = Fixture::new();
    history(&fixture);
    let research = fixture.research();

    let commit = run(&research, "git_show", json!({"rev": "HEAD"}));
    assert_outcome(&commit, StepOutcome::Success);
    assert_has(&commit, "add two and a guide");
    assert_has(&commit, "+pub fn two() {}");
    assert_has(&commit, "docs/guide.md | 1 +");

    let limited = run(&research, "git_show", json!({"rev": "HEAD", "path": "src"}));
    assert_has(&limited, "+pub fn two() {}");
    assert_lacks(&limited, "guide.md");

    let blob = run(&research, "git_show", json!({"rev": "HEAD~1:src/lib.rs"}));
    assert_outcome(&blob, StepOutcome::Success);
    assert_eq!(blob.result, "pub fn one() {}\n");
}

#[test]
fn git_diff_shows_uncommitted_and_committed_changes() {
    let fixture = Fixture::new();
    history(&fixture);
    let research = fixture.research();

    let clean = run(&research, "git_diff", json!({}));
    assert_outcome(&clean, StepOutcome::Success);
    assert_eq!(clean.result, "(no differences)");

    fixture.write("README.md", "# changed\n");
    let dirty = run(&research, "git_diff", json!({}));
    assert_has(&dirty, "+# changed");
    assert_eq!(dirty.input, "git_diff HEAD");

    let range = run(
        &research,
        "git_diff",
        json!({"from": "HEAD~1", "to": "HEAD", "path": "src/lib.rs"}),
    );
    assert_outcome(&range, StepOutcome::Success);
    assert_has(&range, "+pub fn two() {}");
    assert_lacks(&range, "README");
    assert_eq!(range.input, "git_diff HEAD~1..HEAD -- src/lib.rs");

    let lonely = run(&research, "git_diff", json!({"to": "HEAD"}));
    assert_outcome(&lonely, StepOutcome::Refused);
    assert_has(&lonely, "`to` needs `from`");
}

#[test]
fn git_tools_refuse_options_disguised_as_revisions_or_paths() {
    let fixture = Fixture::new();
    let research = fixture.research();
    let before = snapshot(&fixture.work());
    let cases = [
        ("git_log", json!({"rev": "--output=pwned"})),
        ("git_show", json!({"rev": "-p"})),
        ("git_diff", json!({"from": "--output=pwned"})),
        ("git_diff", json!({"from": "HEAD", "to": "-R"})),
        ("git_log", json!({"path": "--output=pwned"})),
    ];
    for (tool, arguments) in cases {
        let run = run(&research, tool, arguments);
        assert_outcome(&run, StepOutcome::Refused);
        assert_has(&run, "cannot start with `-`");
    }
    let outside = run(&research, "git_log", json!({"path": "../elsewhere"}));
    assert_outcome(&outside, StepOutcome::Refused);
    assert_has(&outside, "outside the workspace");
    assert_eq!(snapshot(&fixture.work()), before);
}

// ---------------------------------------------------------------------------------------
// run_command
// ---------------------------------------------------------------------------------------

#[test]
fn run_command_runs_read_only_commands() {
    let fixture = Fixture::new();
    fixture.write("src/a.txt", "foo here\n");
    fixture.commit("add a");
    let research = fixture.research();

    let ls = run(&research, "run_command", json!({"command": "ls"}));
    assert_outcome(&ls, StepOutcome::Success);
    assert_has(&ls, "README.md\nsrc\n");
    assert!(ls.result.ends_with("exit code 0"), "{}", ls.result);
    assert_eq!(ls.input, "run_command ls");
    assert_eq!(ls.decision, None);

    let log = run(
        &research,
        "run_command",
        json!({"command": "git log --oneline | head -3"}),
    );
    assert_outcome(&log, StepOutcome::Success);
    assert_has(&log, "add a\n");
    assert_has(&log, "initial commit\n");

    let grep = run(
        &research,
        "run_command",
        json!({"command": "grep -rn foo ."}),
    );
    assert_outcome(&grep, StepOutcome::Success);
    assert_has(&grep, "./src/a.txt:1:foo here");

    let miss = run(
        &research,
        "run_command",
        json!({"command": "grep -rn absent src"}),
    );
    assert_outcome(&miss, StepOutcome::Failure);
    assert_has(&miss, "(no output)\nexit code 1");
}

#[test]
fn run_command_refuses_writes_and_changes_nothing() {
    let fixture = Fixture::new();
    fixture.write("x/keep.txt", "keep\n");
    fixture.write("f", "aaa\n");
    let research = fixture.research();
    let before = snapshot(&fixture.work());
    let lines = [
        "rm -rf x",
        "sed -i s/a/b/ f",
        "echo x > f",
        "find . -exec rm {} ;",
        "find . -exec rm {} \\;",
        "find . -name f | xargs rm",
        "xargs rm",
        "git push",
        "touch new",
        "cat f; rm f",
    ];
    let mut approver = FakeApprover::allowing();
    for line in lines {
        let run = run_with(
            &research,
            &mut approver,
            "run_command",
            json!({"command": line}),
        );
        assert_outcome(&run, StepOutcome::Refused);
        assert!(
            run.result.starts_with("refused: "),
            "{line}: {}",
            run.result
        );
        assert!(
            run.result.len() > "refused: . Nothing was run.".len(),
            "{line}: {}",
            run.result
        );
        assert_has(&run, "Nothing was run.");
    }
    assert!(approver.seen.is_empty(), "{:?}", approver.seen);
    assert_eq!(snapshot(&fixture.work()), before);
}

#[test]
fn run_command_outside_the_workspace_asks_and_honours_the_answer() {
    let fixture = Fixture::new();
    let secret = fixture.write_outside("notes.txt", "outside notes\n");
    let research = fixture.research();
    let line = format!("cat {}", secret.display());

    let mut approver = FakeApprover::no_channel();
    let denied = run_with(
        &research,
        &mut approver,
        "run_command",
        json!({"command": line}),
    );
    assert_outcome(&denied, StepOutcome::Denied);
    let scope = format!("path:{}/*", fixture.outside().display());
    assert!(
        denied.result.starts_with("denied (no-channel): "),
        "{}",
        denied.result
    );
    assert_has(&denied, &scope);
    assert_lacks(&denied, "outside notes");
    assert_eq!(
        approver.seen,
        [Subject::Read {
            path: secret.to_string_lossy().into_owned()
        }]
    );
    let decision = denied.decision.expect("the decision is reported");
    assert!(!decision.allowed);
    assert_eq!(decision.source, Source::NoChannel);

    let mut approver = FakeApprover::no_channel().then(true, Source::Asked);
    let allowed = run_with(
        &research,
        &mut approver,
        "run_command",
        json!({"command": line}),
    );
    assert_outcome(&allowed, StepOutcome::Success);
    assert_has(&allowed, "outside notes");
    assert!(allowed.decision.is_some_and(|d| d.allowed));
}

#[test]
fn run_command_times_out_and_kills_the_group() {
    let fixture = Fixture::new();
    let mut config = fixture.config();
    config.command_timeout = Duration::from_secs(1);
    let research = Research::new(config);
    let started = Instant::now();
    let run = run(
        &research,
        "run_command",
        json!({"command": "echo started && sleep 30"}),
    );
    assert_outcome(&run, StepOutcome::Failure);
    assert_has(&run, "started\n");
    assert_has(&run, "[timed out after 1 s;");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn run_command_caps_its_output() {
    let fixture = Fixture::new();
    let mut config = fixture.config();
    config.max_output_bytes = 1_000;
    let research = Research::new(config);
    let run = run(
        &research,
        "run_command",
        json!({"command": "seq 1 1000000"}),
    );
    assert_outcome(&run, StepOutcome::Success);
    assert_has(&run, "[output cut at 1000 bytes;");
    assert!(run.result.len() < 1_300, "{}", run.result.len());
}

#[test]
fn results_are_capped_at_max_result_chars() {
    let fixture = Fixture::new();
    let mut config = fixture.config();
    config.max_result_chars = 200;
    let research = Research::new(config);
    let run = run(&research, "run_command", json!({"command": "seq 1 1000"}));
    assert!(
        run.result.ends_with("\n[output cut at 200 characters]"),
        "{}",
        run.result
    );
    assert!(run.result.starts_with("1\n2\n3\n"), "{}", run.result);
    assert_eq!(
        run.result.chars().count(),
        200 + "\n[output cut at 200 characters]".len()
    );

    // read_file stops at a line and says where to continue.
    fixture.write("long.txt", &numbered(100));
    let read = research.run(
        &call("read_file", json!({"path": "long.txt"})),
        &mut FakeApprover::no_channel(),
    );
    assert!(read.result.chars().count() <= 200 + 40, "{}", read.result);
    assert!(
        read.result.contains("continue with offset"),
        "{}",
        read.result
    );
}

// ---------------------------------------------------------------------------------------
// Paths and approvals
// ---------------------------------------------------------------------------------------

#[test]
fn reading_outside_the_workspace_asks_with_the_absolute_path() {
    let fixture = Fixture::new();
    let file = fixture.write_outside("data.txt", "far away\n");
    let research = fixture.research();
    let scope = format!("path:{}/*", fixture.outside().display());

    // By absolute path, denied.
    let mut approver = FakeApprover::no_channel();
    let denied = run_with(&research, &mut approver, "read_file", json!({"path": file}));
    assert_outcome(&denied, StepOutcome::Denied);
    assert!(
        denied.result.starts_with("denied (no-channel): "),
        "{}",
        denied.result
    );
    assert_has(&denied, &scope);
    assert_lacks(&denied, "far away");
    assert_eq!(
        approver.seen,
        [Subject::Read {
            path: file.to_string_lossy().into_owned()
        }]
    );
    assert_eq!(
        denied.decision.as_ref().map(|d| d.scope.clone()),
        Some(Scope::for_read(&file.to_string_lossy()))
    );

    // By `..`, allowed.
    let mut approver = FakeApprover::allowing();
    let allowed = run_with(
        &research,
        &mut approver,
        "read_file",
        json!({"path": "../outside/data.txt"}),
    );
    assert_outcome(&allowed, StepOutcome::Success);
    assert_has(&allowed, "far away");
    assert_eq!(
        approver.seen,
        [Subject::Read {
            path: file.to_string_lossy().into_owned()
        }]
    );
    assert!(
        allowed
            .decision
            .is_some_and(|d| d.allowed && d.source == Source::Asked)
    );

    // Listing and searching a directory outside ask about the directory.
    let mut approver = FakeApprover::no_channel().then(false, Source::Remembered);
    let listed = run_with(
        &research,
        &mut approver,
        "list_dir",
        json!({"path": fixture.outside()}),
    );
    assert_outcome(&listed, StepOutcome::Denied);
    assert!(
        listed.result.starts_with("denied (remembered): "),
        "{}",
        listed.result
    );
    let searched = run_with(
        &research,
        &mut approver,
        "search",
        json!({"pattern": "far", "path": fixture.outside()}),
    );
    assert_outcome(&searched, StepOutcome::Denied);
    let dir = fixture.outside().to_string_lossy().into_owned();
    assert_eq!(
        approver.seen,
        [
            Subject::List { path: dir.clone() },
            Subject::List { path: dir }
        ]
    );

    let mut approver = FakeApprover::allowing();
    let searched = run_with(
        &research,
        &mut approver,
        "search",
        json!({"pattern": "far", "path": fixture.outside()}),
    );
    assert_outcome(&searched, StepOutcome::Success);
    assert_has(&searched, &format!("{}:1: far away", file.display()));
}

#[test]
fn a_symlink_pointing_outside_asks() {
    let fixture = Fixture::new();
    let target = fixture.write_outside("private.txt", "private\n");
    std::os::unix::fs::symlink(&target, fixture.work().join("innocent.txt")).unwrap();
    std::os::unix::fs::symlink(fixture.outside(), fixture.work().join("linked")).unwrap();
    let research = fixture.research();

    let mut approver = FakeApprover::no_channel();
    let read = run_with(
        &research,
        &mut approver,
        "read_file",
        json!({"path": "innocent.txt"}),
    );
    assert_outcome(&read, StepOutcome::Denied);
    assert_lacks(&read, "private\n");
    let through_dir = run_with(
        &research,
        &mut approver,
        "read_file",
        json!({"path": "linked/private.txt"}),
    );
    assert_outcome(&through_dir, StepOutcome::Denied);
    let listed = run_with(
        &research,
        &mut approver,
        "list_dir",
        json!({"path": "linked"}),
    );
    assert_outcome(&listed, StepOutcome::Denied);
    let cat = run_with(
        &research,
        &mut approver,
        "run_command",
        json!({"command": "cat innocent.txt"}),
    );
    assert_outcome(&cat, StepOutcome::Denied);
    let target_text = target.to_string_lossy().into_owned();
    assert_eq!(
        approver.seen[..3],
        [
            Subject::Read {
                path: target_text.clone()
            },
            Subject::Read { path: target_text },
            Subject::List {
                path: fixture.outside().to_string_lossy().into_owned()
            },
        ]
    );
    assert_eq!(approver.seen.len(), 4, "{:?}", approver.seen);

    // Walks do not follow symlinks: the workspace listing and search stay inside.
    let listing = run(&research, "list_dir", json!({}));
    assert_outcome(&listing, StepOutcome::Success);
    assert_has(&listing, &format!("innocent.txt -> {}", target.display()));
    let search = run(&research, "search", json!({"pattern": "private"}));
    assert_outcome(&search, StepOutcome::Success);
    assert_has(&search, "no matches");
}

#[test]
fn env_files_ask_but_their_examples_do_not() {
    let fixture = Fixture::new();
    fixture.write(".env", "API_KEY=sk-live-0123456789\nDEBUG=1\n");
    fixture.write(".env.example", "API_KEY=\nDEBUG=1\n");
    let research = fixture.research();

    let mut approver = FakeApprover::no_channel();
    let example = run_with(
        &research,
        &mut approver,
        "read_file",
        json!({"path": ".env.example"}),
    );
    assert_outcome(&example, StepOutcome::Success);
    assert!(approver.seen.is_empty());

    let denied = run_with(
        &research,
        &mut approver,
        "read_file",
        json!({"path": ".env"}),
    );
    assert_outcome(&denied, StepOutcome::Denied);
    let env_path = fixture.work().join(".env").to_string_lossy().into_owned();
    assert_eq!(
        approver.seen,
        [Subject::Read {
            path: env_path.clone()
        }]
    );
    assert_has(&denied, &format!("path:{}/*", fixture.work().display()));

    // Allowed: read, with the secret value masked and the name kept.
    let mut approver = FakeApprover::allowing();
    let allowed = run_with(
        &research,
        &mut approver,
        "read_file",
        json!({"path": ".env"}),
    );
    assert_outcome(&allowed, StepOutcome::Success);
    assert_has(&allowed, "API_KEY=****");
    assert_has(&allowed, "DEBUG=1");
    assert_lacks(&allowed, "sk-live-0123456789");

    assert!(allowed.decision.is_some_and(|d| d.allowed));

    let cat = run_with(
        &research,
        &mut approver,
        "run_command",
        json!({"command": "cat .env"}),
    );
    assert_outcome(&cat, StepOutcome::Success);
    assert_has(&cat, "API_KEY=****");
    assert_lacks(&cat, "sk-live-0123456789");
    assert_eq!(approver.seen.len(), 2, "{:?}", approver.seen);

    // Its committed content through git asks too.
    fixture.commit("commit the env file");
    let mut approver = FakeApprover::no_channel();
    let shown = run_with(
        &research,
        &mut approver,
        "git_show",
        json!({"rev": "HEAD:.env"}),
    );
    assert_outcome(&shown, StepOutcome::Denied);
    let diffed = run_with(
        &research,
        &mut approver,
        "git_show",
        json!({"rev": "HEAD", "path": ".env"}),
    );
    assert_outcome(&diffed, StepOutcome::Denied);
    assert_eq!(
        approver.seen,
        [
            Subject::Read {
                path: env_path.clone()
            },
            Subject::Read { path: env_path }
        ]
    );
    let mut approver = FakeApprover::allowing();
    let shown = run_with(
        &research,
        &mut approver,
        "git_show",
        json!({"rev": "HEAD:.env"}),
    );
    assert_outcome(&shown, StepOutcome::Success);
    assert_eq!(shown.result, "API_KEY=****\nDEBUG=1\n");
}

#[test]
fn research_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Research>();
}

#[test]
fn home_paths_expand_to_the_configured_home_and_ask() {
    let fixture = Fixture::new();
    // The hermetic home is beside the workspace, not inside it.
    let home = canonical(&fixture.env.home());
    let mut config = fixture.config();
    config.home = Some(home.clone());
    let mut approver = FakeApprover::no_channel();
    let run = run_with(
        &Research::new(config),
        &mut approver,
        "list_dir",
        json!({"path": "~"}),
    );
    assert_outcome(&run, StepOutcome::Denied);
    assert_eq!(
        approver.seen,
        [Subject::List {
            path: home.to_string_lossy().into_owned()
        }]
    );
    // With no home known, `~` is refused rather than guessed.
    let mut approver = FakeApprover::no_channel();
    let run = run_with(
        &fixture.research(),
        &mut approver,
        "list_dir",
        json!({"path": "~/x"}),
    );
    assert!(run.result.contains("HOME is not known"), "{}", run.result);
    assert!(approver.seen.is_empty());
}

// ---------------------------------------------------------------------------------------
// Secrets
// ---------------------------------------------------------------------------------------

#[test]
fn configured_secrets_never_reach_results_or_inputs() {
    const SECRET: &str = "sk-test-SECRET-123456";
    let fixture = Fixture::new();
    fixture.write(
        "config.txt",
        &format!("endpoint=x\nkey material {SECRET} here\n"),
    );
    fixture.write(&format!("{SECRET}.txt"), "named after it\n");
    let mut config = fixture.config();
    config.secrets = vec![SECRET.to_owned()];
    let research = Research::new(config);

    let runs = [
        run(&research, "read_file", json!({"path": "config.txt"})),
        run(&research, "search", json!({"pattern": SECRET})),
        run(&research, "list_dir", json!({})),
        run(
            &research,
            "read_file",
            json!({"path": format!("{SECRET}.txt")}),
        ),
        run(
            &research,
            "run_command",
            json!({"command": format!("grep -rn {SECRET} .")}),
        ),
        run(
            &research,
            "run_command",
            json!({"command": "cat config.txt"}),
        ),
        run(
            &research,
            "read_file",
            json!({"path": format!("missing-{SECRET}")}),
        ),
    ];
    for run in &runs {
        assert!(
            !run.result.contains(SECRET),
            "{}: {}",
            run.input,
            run.result
        );
        assert!(!run.input.contains(SECRET), "{}", run.input);
    }
    assert!(
        runs[0].result.contains("key material **** here"),
        "{}",
        runs[0].result
    );
    assert!(
        runs[1]
            .result
            .contains("config.txt:2: key material **** here"),
        "{}",
        runs[1].result
    );
    assert_eq!(runs[3].input, "read_file ****.txt:1-400");
    assert_eq!(runs[4].input, "run_command grep -rn **** .");
    assert!(
        runs[5].result.contains("key material **** here"),
        "{}",
        runs[5].result
    );
}

#[test]
fn secret_assignments_in_commands_are_masked_in_the_input() {
    let fixture = Fixture::new();
    let run = run(
        &fixture.research(),
        "run_command",
        json!({"command": "API_KEY=abc123secret curl https://example.com"}),
    );
    assert_outcome(&run, StepOutcome::Refused);
    assert_eq!(
        run.input,
        "run_command API_KEY=**** curl https://example.com"
    );
    assert_lacks(&run, "abc123secret");
}

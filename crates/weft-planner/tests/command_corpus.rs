//! The command-policy corpus: `tests/corpus/commands.tsv` holds `expected<TAB>command` lines
//! (expected is `read`, `refuse` or `approve`), classified against the workspace `/work/ws`.
//!
//! Format: `#` starts a comment line; a line that starts with a TAB continues the previous
//! command on a new line (for here-documents, newlines and backslash continuations).
//! Every mismatch is reported at once before the test fails.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use weft_planner::command_policy::{Class, Classification, classify};

const WORKSPACE: &str = "/work/ws";

struct Entry {
    line: usize,
    expected: Class,
    command: String,
}

fn corpus() -> Vec<Entry> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/commands.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut entries: Vec<Entry> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.starts_with('#') || raw.trim().is_empty() && !raw.contains('\t') {
            continue;
        }
        if let Some(rest) = raw.strip_prefix('\t') {
            let last = entries
                .last_mut()
                .unwrap_or_else(|| panic!("line {line}: continuation without a command"));
            last.command.push('\n');
            last.command.push_str(rest);
            continue;
        }
        let (expected, command) = raw
            .split_once('\t')
            .unwrap_or_else(|| panic!("line {line}: expected `class<TAB>command`: {raw:?}"));
        let expected = Class::parse(expected)
            .unwrap_or_else(|| panic!("line {line}: unknown class {expected:?}"));
        entries.push(Entry {
            line,
            expected,
            command: command.to_owned(),
        });
    }
    entries
}

#[test]
fn corpus_classifies_as_expected() {
    let entries = corpus();
    let mut counts: BTreeMap<Class, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for e in &entries {
        *counts.entry(e.expected).or_default() += 1;
        let got = classify(&e.command, Path::new(WORKSPACE));
        if got.class() != e.expected {
            failures.push(format!(
                "line {}: {:?}\n    expected {}, got {} ({})",
                e.line,
                e.command,
                e.expected,
                got.class(),
                got.reason().unwrap_or("no reason")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus commands misclassified:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
    assert!(
        entries.len() >= 300,
        "the corpus has {} commands; it needs at least 300",
        entries.len()
    );
    for class in [Class::Read, Class::Refuse, Class::Approve] {
        assert!(
            counts.get(&class).copied().unwrap_or(0) > 0,
            "no corpus command is expected to be {class}"
        );
    }
}

#[test]
fn every_refusal_and_approval_carries_a_reason() {
    for e in corpus() {
        let got = classify(&e.command, Path::new(WORKSPACE));
        match &got {
            Classification::ReadOnly => {}
            Classification::Refused { reason } => {
                assert!(!reason.trim().is_empty(), "line {}: empty reason", e.line)
            }
            Classification::NeedsApproval { accesses, reason } => {
                assert!(!reason.trim().is_empty(), "line {}: empty reason", e.line);
                assert!(!accesses.is_empty(), "line {}: no accesses", e.line);
                for scope in got.scopes() {
                    assert!(
                        scope.starts_with("path:") && scope.ends_with("/*"),
                        "line {}: scope {scope:?}",
                        e.line
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Property: one dangerous construct among safe ones is never read-only.
// ---------------------------------------------------------------------------------------

const SAFE: &[&str] = &[
    "ls -la",
    "cat README.md",
    "rg -n foo src",
    "grep -rn TODO src",
    "git log --oneline -n 5",
    "wc -l Cargo.toml",
    "head -n 3 src/lib.rs",
    "echo ';rm x'",
    "find . -name '*.rs'",
    "sort names.txt",
    "pwd",
    "sed -n 1p README.md",
    "ls 2>/dev/null",
    "git diff --stat",
];

const SEPARATORS: &[&str] = &[" ; ", " && ", " || ", " | ", "\n"];

const DANGEROUS: &[&str] = &[
    "rm -rf x",
    "rm x",
    "find . -name x -exec rm {} \\;",
    "find . -delete",
    "xargs rm",
    "sh -c 'rm x'",
    "tee out.txt",
    "cp a b",
    "git push",
    "sed -i s/a/b/ f",
    "$(rm x)",
    "`rm x`",
];

fn dangerous_line() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(
            (prop::sample::select(SAFE), prop::sample::select(SEPARATORS)),
            0..6,
        ),
        prop::collection::vec(
            (prop::sample::select(SAFE), prop::sample::select(SEPARATORS)),
            0..6,
        ),
        prop_oneof![
            prop::sample::select(DANGEROUS).prop_map(str::to_owned),
            // A safe command with its output redirected to a file.
            (
                prop::sample::select(SAFE),
                prop::sample::select(&[" > out.txt", " >> log", " 2> err.txt", " &> all.log"][..])
            )
                .prop_map(|(cmd, redir)| format!("{cmd}{redir}")),
        ],
        any::<bool>(),
    )
        .prop_map(|(before, after, danger, wrap)| {
            let mut line = String::new();
            for (cmd, sep) in before {
                line.push_str(cmd);
                line.push_str(sep);
            }
            if wrap {
                line.push_str(&format!("( {danger} )"));
            } else {
                line.push_str(&danger);
            }
            for (cmd, sep) in after {
                line.push_str(sep);
                line.push_str(cmd);
            }
            line
        })
}

fn safe_line() -> impl Strategy<Value = String> {
    (
        prop::sample::select(SAFE),
        prop::collection::vec(
            (prop::sample::select(SEPARATORS), prop::sample::select(SAFE)),
            0..8,
        ),
    )
        .prop_map(|(first, rest)| {
            let mut line = first.to_owned();
            for (sep, cmd) in rest {
                line.push_str(sep);
                line.push_str(cmd);
            }
            line
        })
}

proptest! {
    #[test]
    fn a_dangerous_construct_is_never_read_only(line in dangerous_line()) {
        let got = classify(&line, Path::new(WORKSPACE));
        prop_assert_ne!(got.class(), Class::Read, "{:?} was classified read-only", line);
    }

    #[test]
    fn safe_commands_stay_read_only(line in safe_line()) {
        let got = classify(&line, Path::new(WORKSPACE));
        prop_assert_eq!(got.class(), Class::Read, "{:?}: {:?}", line, got.reason());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary shell-ish text never panics the lexer, parser or classifier.
    #[test]
    fn arbitrary_lines_never_panic(line in "[a-z .~/\\-\\\\'\"$`|&;<>(){}\\[\\]*?#=!\n\t0-9]{0,40}") {
        let _ = classify(&line, Path::new(WORKSPACE));
    }
}

//! A large TOML workflow file parsed in two halves at once ([`WorkflowFile::parse_in_two`]).
//!
//! Why: parsing is most of what weft-core does to import a large plan (0.49 s of the
//! 0.7 s it spends on a 100,000-task file of 48 MB, on the 2-vCPU machine of 2026-12),
//! and `toml` parses one document on one thread. A workflow file is a preamble (goal,
//! runner, verify, budget) and then one `[[tasks]]` table after another, so it can be cut
//! before a `[[tasks]]` header near its middle: the head is a workflow file with the
//! first tasks, the tail a list of the others, and each is parsed on its own thread.
//!
//! The contract: the result is exactly what parsing the whole text gives, or the whole
//! text is parsed. A cut is used only when all of these hold, and every doubt (no cut, an
//! error in either half) falls back to [`WorkflowFile::parse`] of the whole text, so a
//! bad file is refused with the very message, line and column it always was.
//!
//! - **The cut is a header.** It is made before a line that reads exactly `[[tasks]]`.
//!   Such a line can also sit inside a multi-line string or array; then the head ends
//!   inside that string or array, which TOML refuses, and the file is parsed whole.
//! - **The head's tasks are an array of tables**, as the tail's header needs them to be:
//!   the first line that reads `[[tasks]]` is before the cut, and the text before that
//!   line is a TOML document on its own, so that line is a header too (by the argument
//!   above). A `tasks = [...]` array in the head would then be a second definition of
//!   `tasks`, which TOML refuses.
//! - **The tail holds only tasks.** It is read as a document whose only key is `tasks`,
//!   with every task's fields checked as in a whole file; a root table after the tasks
//!   (which a whole file would refuse or treat as a field) fails that read.
//!
//! A key of the head cannot be defined again in the tail: the tail's root holds `tasks`
//! only, and the tasks of the two halves are different tables of one array.
//!
//! **Each half is read in pieces** of about 64 KiB, each cut before a `[[tasks]]` line
//! like the halves: the head's first piece as a workflow file, every other piece as tasks
//! only, each piece's tasks appended in order. Why: `toml` (1.2) turns a whole document
//! into a list of tokens, then a list of parse events, then a tree of every table and
//! value, and only then builds the tasks, so one 24 MB half makes intermediate lists and
//! a tree several times its size, each touched once and freed. Read in pieces, they stay
//! small and their memory is reused: on the 100,000-task file (48 MB), page faults of
//! the parse 97,600 → 32,500, the peak memory 385 → 303 MB, the parse 270 → 212 ms. The
//! argument above holds piece by piece: a piece that parses on its own ends outside any
//! string or array, so the line after it, which reads `[[tasks]]`, is a header; by
//! induction every cut is one. A piece
//! after the first holds only tasks (as the tail does), and a table such as `[tasks.x]`
//! in a piece belongs to that piece's last task, as it does in the whole file. A piece
//! that does not parse is extended to the next `[[tasks]]` line, a few times (it may end
//! at such a line inside a prompt); one that still does not parse means the whole text
//! is parsed.
//!
//! The file's tasks are then made into a plan's in two halves too
//! ([`WorkflowFile::into_plan_in_two`], [`tasks_from`]): the ids first, in order, on one
//! thread (a derived id depends on every id before it), then each half's tasks built and
//! checked on its own thread (turning 100,000 specs into checked tasks: 144 → 112 ms).

use serde::Deserialize;

use super::{HashSet, TaskSpec, WorkflowError, WorkflowFile, bad_limit, resolve_file_dependency};
use crate::model::{Task, order_of};

/// Files smaller than this are parsed whole: a thread's start is not worth it (a file of
/// 256 KiB is ~550 tasks, parsed in ~3 ms).
pub(super) const SPLIT_FROM: usize = 256 * 1024;

/// The line a cut is made before.
const HEADER: &str = "[[tasks]]";

/// The tail of a cut file: tasks only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tail {
    tasks: Vec<TaskSpec>,
}

/// `text` parsed as a head and a tail, `join` running the tail's parse on another thread;
/// `None` when the text cannot be cut or either half does not parse (the caller then
/// parses it whole).
pub(super) fn parse(
    text: &str,
    join: impl FnOnce(&mut (dyn FnMut() + Send), &mut dyn FnMut()),
) -> Option<WorkflowFile> {
    parse_in_pieces(text, PIECE, join)
}

/// [`parse`], each half read `piece` bytes at a time (a parameter so that the tests cut
/// small files into many pieces).
fn parse_in_pieces(
    text: &str,
    piece: usize,
    join: impl FnOnce(&mut (dyn FnMut() + Send), &mut dyn FnMut()),
) -> Option<WorkflowFile> {
    let first = header_at_or_after(text, 0)?;
    let cut = header_at_or_after(text, text.len() / 2)?;
    if first >= cut {
        return None;
    }
    let (head, tail) = text.split_at(cut);
    let mut tail_tasks: Option<Vec<TaskSpec>> = None;
    let mut head_file: Option<WorkflowFile> = None;
    join(
        &mut || tail_tasks = tasks_in_pieces(tail, piece),
        &mut || {
            head_file = text[..first].parse::<toml::Table>().ok().and_then(|_| {
                let (mut file, end) = one_piece::<WorkflowFile>(head, 0, first + piece)?;
                file.tasks.extend(tasks_in_pieces(&head[end..], piece)?);
                Some(file)
            });
        },
    );
    let mut file = head_file?;
    file.tasks.extend(tail_tasks?);
    Some(file)
}

/// Each half is read a piece of at least this many bytes at a time, cut before the next
/// `[[tasks]]` line (see the module doc: 4 KiB to 256 KiB all did as well, within 5%).
const PIECE: usize = 64 * 1024;

/// How many more `[[tasks]]` lines a piece that does not parse is extended to before the
/// whole text is parsed instead: a piece can end at such a line inside a multi-line string
/// (a prompt quoting a workflow file), and the next one is then usually the real header.
/// A mistake in the file costs this many parses of a piece more, then the whole parse.
const EXTEND: usize = 8;

/// The tasks of `text`, a run of `[[tasks]]` tables, read `piece` bytes at a time; `None`
/// when a piece does not parse as tasks only.
fn tasks_in_pieces(text: &str, piece: usize) -> Option<Vec<TaskSpec>> {
    let mut tasks = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let (read, end) = one_piece::<Tail>(text, at, at + piece)?;
        tasks.extend(read.tasks);
        at = end;
    }
    Some(tasks)
}

/// `text` from `at` to the first `[[tasks]]` line at or after `least` (or the end) parsed
/// as a `T`, with that end; extended to the next such line up to [`EXTEND`] times while
/// it does not parse; `None` then. A piece is used only when it parses on its own, so it
/// ends outside any string or array (see the module docs).
fn one_piece<T: serde::de::DeserializeOwned>(
    text: &str,
    at: usize,
    least: usize,
) -> Option<(T, usize)> {
    let mut end = header_at_or_after(text, least).unwrap_or(text.len());
    for _ in 0..=EXTEND {
        if let Ok(read) = toml::from_str::<T>(&text[at..end]) {
            return Some((read, end));
        }
        if end == text.len() {
            return None;
        }
        end = header_at_or_after(text, end + 1).unwrap_or(text.len());
    }
    None
}

/// The offset of the first line at or after `from` that reads exactly `[[tasks]]` (with
/// a `\n` or `\r\n` after it, or at the end of the text).
fn header_at_or_after(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while at <= bytes.len() {
        let start = if at == 0 {
            0
        } else {
            at + memchr::memchr(b'\n', bytes.get(at - 1..)?)?
        };
        let line = &bytes[start..];
        let end = memchr::memchr(b'\n', line).unwrap_or(line.len());
        let line = line[..end].strip_suffix(b"\r").unwrap_or(&line[..end]);
        if line == HEADER.as_bytes() {
            return Some(start);
        }
        at = start + end + 1;
    }
    None
}

/// Plans smaller than this are made and checked on one thread.
pub(super) const SPLIT_TASKS_FROM: usize = 2_000;

/// The tasks of `specs`, the first of them at `offset` in the plan: ids from `ids`,
/// dependencies resolved, limits read (the first bad one refused).
pub(super) fn tasks_from(
    specs: Vec<TaskSpec>,
    offset: usize,
    ids: &[String],
    known: &HashSet<&str>,
    source_name: &str,
) -> Result<Vec<Task>, WorkflowError> {
    specs
        .into_iter()
        .zip(&ids[offset..])
        .enumerate()
        .map(|(at, (spec, id))| {
            let index = offset + at;
            let limits = spec.limits().map_err(|p| {
                bad_limit(source_name, Some(format!("#{} {id:?}", order_of(index))), p)
            })?;
            let mut task = Task::new(id.clone(), spec.title);
            task.order = order_of(index);
            task.description = spec.description.filter(|d| !d.is_empty());
            task.prompt = spec.prompt.unwrap_or_default();
            task.dependencies = spec
                .dependencies
                .iter()
                .map(|d| resolve_file_dependency(d, ids, known))
                .collect();
            task.runner = spec.runner.filter(|v| !v.is_empty());
            task.model = spec.model.filter(|v| !v.is_empty());
            task.effort = spec.effort.filter(|v| !v.is_empty());
            task.mode = spec.mode.filter(|v| !v.is_empty());
            task.kind = spec.kind.unwrap_or_default();
            task.command = spec.command;
            task.steps = spec.steps;
            task.checks = spec.checks;
            task.limits = limits;
            Ok(task)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::{WorkflowFormat, one_thread};

    fn threads(first: &mut (dyn FnMut() + Send), second: &mut dyn FnMut()) {
        std::thread::scope(|scope| {
            scope.spawn(first);
            second();
        });
    }

    fn whole(text: &str) -> WorkflowFile {
        WorkflowFile::parse(text, WorkflowFormat::Toml, "f").unwrap()
    }

    #[test]
    fn a_header_is_found_only_as_a_whole_line() {
        let text = "a = 1\n[[tasks]]\nb = \"[[tasks]]\"\n [[tasks]]\n[[tasks]] # c\n[[tasks]]\r\nx\n[[tasks]]";
        let found: Vec<usize> = std::iter::successors(header_at_or_after(text, 0), |&at| {
            header_at_or_after(text, at + 1)
        })
        .collect();
        let expected = [
            text.find("[[tasks]]\nb").unwrap(),
            text.find("[[tasks]]\r\n").unwrap(),
            text.rfind("[[tasks]]").unwrap(),
        ];
        assert_eq!(found, expected);
        assert_eq!(header_at_or_after("[[tasks]]\n", 0), Some(0));
        assert_eq!(header_at_or_after("x[[tasks]]\n", 0), None);
        assert_eq!(header_at_or_after("", 0), None);
    }

    #[test]
    fn a_file_cut_in_two_parses_to_what_the_whole_file_does() {
        let mut text = String::from("goal = \"g\"\nrunner = \"exec\"\nverify = [\"true\"]\n");
        for n in 1..=40 {
            text.push_str(&format!(
                "[[tasks]]\ntitle = \"t{n}\"\nprompt = \"\"\"\nline\n[[tasks]]\n\"\"\"\ndependencies = [{}]\n",
                if n > 1 { format!("{}", n - 1) } else { String::new() }
            ));
        }
        for join in [one_thread, threads] {
            assert_eq!(parse(&text, join), Some(whole(&text)));
        }
        // Each half in pieces: one task a piece, a few, and the whole half in one; every
        // prompt holds a `[[tasks]]` line, so a piece often ends inside one and is
        // extended past it.
        for piece in [1, 30, 200, 1 << 20] {
            assert_eq!(
                parse_in_pieces(&text, piece, threads),
                Some(whole(&text)),
                "{piece}"
            );
        }
    }

    /// A piece that would end inside a multi-line string (basic or literal) is extended
    /// past it; one that cannot be (more `[[tasks]]` lines in one string than a piece is
    /// extended by) is not used, and the file is parsed whole.
    #[test]
    fn a_piece_that_ends_inside_a_string_is_extended_or_not_used() {
        let tasks = |n: usize| "[[tasks]]\ntitle = \"t\"\nprompt = \"p\"\n".repeat(n);
        for quotes in ["\"\"\"", "'''"] {
            for (inside, used) in [(1, true), (EXTEND, true), (EXTEND + 1, false)] {
                let text = format!(
                    "goal = \"g\"\n{}[[tasks]]\ntitle = \"s\"\nprompt = {quotes}\n{}{quotes}\n{}",
                    tasks(3),
                    "[[tasks]]\n".repeat(inside),
                    tasks(12)
                );
                assert_eq!(parse(&text, one_thread), Some(whole(&text)), "{text}");
                let expected = used.then(|| whole(&text));
                assert_eq!(parse_in_pieces(&text, 1, one_thread), expected, "{text}");
            }
        }
    }

    /// Through [`WorkflowFile::parse_in_two`], a file past the threshold: a good one gives
    /// what the whole parse gives, and a bad one (a mistake in its second half, where the
    /// tail's own parse would count lines from the cut) the very error, line and column.
    #[test]
    fn a_large_file_parses_in_two_to_the_whole_parse_and_is_refused_alike() {
        let mut text = String::from("goal = \"g\"\n");
        let mut n = 0;
        while text.len() < SPLIT_FROM + 1024 {
            n += 1;
            text.push_str(&format!(
                "[[tasks]]\ntitle = \"t{n}\"\nprompt = \"do {n}\"\n"
            ));
        }
        let parse =
            |text: &str| WorkflowFile::parse_in_two(text, WorkflowFormat::Toml, "f.toml", threads);
        assert_eq!(parse(&text).unwrap(), whole(&text));
        for mistake in [
            "titel = \"typo\"\n",
            "title = \"again\"\n",
            "prompt = \"\"\"\n",
            "[budget]\nx = 1\n",
        ] {
            let mut bad = text.clone();
            let at = bad.len() - bad.len() / 4;
            let at = at + bad[at..].find("[[tasks]]").unwrap();
            bad.insert_str(at, mistake);
            let expected = WorkflowFile::parse(&bad, WorkflowFormat::Toml, "f.toml").unwrap_err();
            assert!(
                matches!(expected, WorkflowError::Syntax { line, .. } if line > 1000),
                "{expected}"
            );
            assert_eq!(parse(&bad).unwrap_err(), expected, "{mistake}");
        }
    }

    /// Each of these would parse in two halves where the whole file is refused, or parse
    /// to something else; each is parsed whole instead.
    #[test]
    fn a_cut_that_could_change_the_meaning_is_not_used() {
        let tasks = |from: usize, to: usize| -> String {
            (from..to)
                .map(|n| format!("[[tasks]]\ntitle = \"t{n}\"\nprompt = \"p\"\n"))
                .collect()
        };
        let cases = [
            // The head's tasks are a static array, the tail appends to it.
            format!(
                "goal = \"g\"\ntasks = [{{ title = \"a\", prompt = \"p\" }}, {{ title = \"b\", prompt = \"p\" }}, {{ title = \"c\", prompt = \"p\" }}, {{ title = \"d\", prompt = \"p\" }}]\n{}",
                tasks(0, 2)
            ),
            // The first `[[tasks]]` line is inside the goal; the tasks are a static array.
            format!(
                "goal = \"\"\"\n[[tasks]]\n\"\"\"\ntasks = [{{ title = \"a\", prompt = \"p\" }}, {{ title = \"b\", prompt = \"p\" }}]\n{}",
                tasks(0, 2)
            ),
            // A root table after the tasks.
            format!("goal = \"g\"\n{}[budget]\nx = 1\n", tasks(0, 8)),
            // A root key defined twice, once in each half.
            format!("goal = \"g\"\n{}[tasks.x]\ny = 1\n", tasks(0, 8)),
            // The cut line is inside a multi-line string that runs past the middle.
            format!(
                "goal = \"g\"\n{}[[tasks]]\ntitle = \"long\"\nprompt = \"\"\"\n{}\n[[tasks]]\n\"\"\"\n",
                tasks(0, 2),
                "x\n".repeat(200)
            ),
        ];
        for text in &cases {
            let parsed = parse(text, one_thread);
            let whole = WorkflowFile::parse(text, WorkflowFormat::Toml, "f");
            match (&parsed, &whole) {
                (None, _) => {}
                (Some(p), Ok(w)) => assert_eq!(p, w, "{text}"),
                (Some(_), Err(e)) => panic!("cut parsed where the whole is refused ({e}):\n{text}"),
            }
        }
        // The string that runs past the middle: the whole file is fine, the cut is not used.
        assert_eq!(parse(&cases[4], one_thread), None);
        assert!(WorkflowFile::parse(&cases[4], WorkflowFormat::Toml, "f").is_ok());
    }

    mod property {
        use super::*;
        use proptest::prelude::*;

        /// A task of a workflow file.
        fn task() -> impl Strategy<Value = String> {
            prop_oneof![
                6 => (0u8..200).prop_map(|n| format!("[[tasks]]\ntitle = \"t{n}\"\nprompt = \"p\"\n")),
                1 => Just("[[tasks]]\ntitle = \"m\"\nprompt = \"\"\"\n[[tasks]]\ntitle = \"x\"\n\"\"\"\n".to_owned()),
                1 => Just("[[tasks]]\ntitle = \"l\"\nprompt = '''\n[[tasks]]\n'''\n".to_owned()),
                1 => Just("[[tasks]]\ntitle = \"a\"\nchecks = [\n\"true\",\n]\n".to_owned()),
                1 => Just("[[tasks]]\r\ntitle = \"crlf\"\r\nprompt = \"p\"\r\n".to_owned()),
                1 => Just("# [[tasks]]\n".to_owned()),
            ]
        }

        /// What a cut must not be fooled by.
        fn trap() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("checks = [\n[[tasks]]\n]\n".to_owned()),
                Just("[budget]\nx = 1\n".to_owned()),
                Just("[tasks.x]\ny = 1\n".to_owned()),
                Just("[[tasks.x]]\n".to_owned()),
                Just("title = \"again\"\n".to_owned()),
                Just("[tasks]\n".to_owned()),
                Just("[[tasks]]\n".to_owned()),
                Just("prompt = \"\"\"\n".to_owned()),
                Just("\"\"\"\n".to_owned()),
                Just("goal = \"again\"\n".to_owned()),
                Just("tasks = []\n".to_owned()),
            ]
        }

        fn preamble() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => Just("goal = \"g\"\n".to_owned()),
                1 => Just("goal = \"\"\"\n[[tasks]]\n\"\"\"\n".to_owned()),
                1 => Just("goal = \"g\"\ntasks = [{ title = \"s\", prompt = \"p\" }]\n".to_owned()),
                1 => Just("goal = \"\"\"\n[[tasks]]\n\"\"\"\ntasks = [{ title = \"s\", prompt = \"p\" }]\n".to_owned()),
                1 => Just("goal = \"g\"\nverify = [\n\"true\",\n]\nbudget_usd = 2.5\n".to_owned()),
                1 => Just(String::new()),
            ]
        }

        /// A preamble, tasks, and at most two traps among them.
        fn file() -> impl Strategy<Value = String> {
            (
                preamble(),
                proptest::collection::vec(task(), 0..16),
                proptest::collection::vec((any::<proptest::sample::Index>(), trap()), 0..3),
            )
                .prop_map(|(preamble, mut pieces, traps)| {
                    for (at, trap) in traps {
                        let at = at.index(pieces.len() + 1);
                        pieces.insert(at, trap);
                    }
                    preamble + &pieces.concat()
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// Whatever the file and the size of its pieces, a cut parse is what the whole
            /// parse gives, or is not used.
            #[test]
            fn a_cut_parse_is_the_whole_parse_or_nothing(text in file(), piece in 1usize..400) {
                let whole = WorkflowFile::parse(&text, WorkflowFormat::Toml, "f");
                match (parse_in_pieces(&text, piece, one_thread), whole) {
                    (None, _) => {}
                    (Some(cut), Ok(whole)) => prop_assert_eq!(cut, whole),
                    (Some(cut), Err(e)) => prop_assert!(false, "cut {cut:?} where the whole is refused: {e}\n{text}"),
                }
            }
        }
    }
}

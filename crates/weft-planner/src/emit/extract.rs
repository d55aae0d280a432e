//! Finding the JSON object a model meant to emit inside a free-text reply.
//!
//! Models wrap JSON in fences, put prose before and after it, echo the schema before the
//! real plan, think aloud in `<think>` blocks and get cut off mid-object. The scan below is
//! string-aware and tries the last emission first; what it cannot parse it reports with the
//! parser's own message, so the repair turn can quote it.

use serde_json::Value;

/// How many restarts the scan makes after an unmatched `{` (a stray brace in prose can
/// otherwise swallow the rest of the reply). Bounded so hostile input stays linear.
const MAX_SCAN_PASSES: usize = 16;

/// How many keyed candidates are parsed at most, newest first; bounds the work on deeply
/// nested input.
const MAX_CANDIDATES: usize = 64;

/// What a reply holds for one top-level key.
#[derive(Debug, Clone, PartialEq)]
pub enum Extraction {
    /// A JSON object with the key at its top level.
    Found(Value),
    /// An object that names the key but does not parse; `error` is serde_json's message
    /// with the line and column in `candidate`.
    Broken { candidate: String, error: String },
    /// The reply ends inside an object that names the key: the model was cut off.
    Truncated,
    /// No object names the key.
    Absent,
}

/// What a planner reply is, checked in the order a reply can hold them.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyKind {
    /// `{"tasks": [...]}`: a complete plan (not yet validated).
    Plan(Value),
    /// `{"taskOps": [...]}`: edits to the existing plan (not yet validated).
    TaskOps(Value),
    /// An object for `key` exists but is not valid JSON.
    Broken { key: &'static str, error: String },
    /// The reply was cut off inside an object for `key`.
    Truncated { key: &'static str },
    /// A chat message.
    Prose,
}

/// Classify a planner reply. Task ops are checked first: an `add` op carries a task, and a
/// reply about edits must never be mistaken for a new plan.
pub fn classify_reply(text: &str) -> ReplyKind {
    for key in ["taskOps", "tasks"] {
        match extract(text, key) {
            Extraction::Found(value) if key == "taskOps" => return ReplyKind::TaskOps(value),
            Extraction::Found(value) => return ReplyKind::Plan(value),
            Extraction::Broken { error, .. } => return ReplyKind::Broken { key, error },
            Extraction::Truncated => return ReplyKind::Truncated { key },
            Extraction::Absent => {}
        }
    }
    ReplyKind::Prose
}

/// Extract the JSON object with `key` at its top level from a model reply.
///
/// `<think>` blocks are dropped; every balanced `{…}` that contains `"key":` is a candidate
/// (fences and prose around it do not matter). Candidates are tried newest first — the one
/// that ends last — after trailing commas are dropped and raw control characters inside
/// strings escaped; the first that parses to an object with the key wins. Candidates with
/// an ellipsis outside strings (`{"tasks": [...]}`) are format mentions, not emissions, and
/// are skipped. When the reply ends inside an object naming the key, after any winner, the
/// model was cut off: `Truncated`.
pub fn extract(text: &str, key: &str) -> Extraction {
    let text = strip_think(text);
    let bytes = text.as_bytes();
    let scan = scan_objects(bytes);
    let hits = key_hits(&text, key);

    // A hit inside no balanced span but after the first unmatched `{` is inside an object
    // the reply never closed. Spans are sorted by start, so the running maximum of their
    // ends answers "is this offset inside any span" with one binary search.
    let reach: Vec<usize> = scan
        .spans
        .iter()
        .scan(0, |furthest, &(_, end)| {
            *furthest = end.max(*furthest);
            Some(*furthest)
        })
        .collect();
    let in_some_span = |hit: usize| {
        let starting_before = scan.spans.partition_point(|&(start, _)| start <= hit);
        starting_before > 0 && reach[starting_before - 1] > hit
    };
    let dangling_hit = |after: usize| {
        scan.first_unclosed.is_some_and(|open| {
            hits.iter()
                .any(|&hit| hit >= open && hit >= after && !in_some_span(hit))
        })
    };

    let mut candidates: Vec<(usize, usize)> = scan
        .spans
        .iter()
        .copied()
        .filter(|&(start, end)| {
            let first = hits.partition_point(|&hit| hit < start);
            hits.get(first).is_some_and(|&hit| hit < end)
        })
        .collect();
    // Newest emission first: the one that ends last; for nested candidates the outer one.
    candidates.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));

    let mut first_broken: Option<(usize, usize, String)> = None;
    for &(start, end) in candidates.iter().take(MAX_CANDIDATES) {
        let candidate = &text[start..end];
        let repaired = repair(candidate);
        if repaired.has_ellipsis {
            continue;
        }
        match serde_json::from_str::<Value>(&repaired.text) {
            Ok(Value::Object(map)) if map.contains_key(key) => {
                if dangling_hit(end) {
                    return Extraction::Truncated;
                }
                return Extraction::Found(Value::Object(map));
            }
            Ok(_) => {}
            Err(error) => {
                if first_broken.is_none() {
                    let message = position_in_original(&error, candidate, &repaired);
                    first_broken = Some((start, end, message));
                }
            }
        }
    }
    match first_broken {
        Some((_, end, _)) if dangling_hit(end) => Extraction::Truncated,
        Some((start, end, error)) => Extraction::Broken {
            candidate: text[start..end].to_owned(),
            error,
        },
        None if dangling_hit(0) => Extraction::Truncated,
        None => Extraction::Absent,
    }
}

/// Drop `<think>…</think>` blocks. A closing tag with no opening one before it (some chat
/// templates put the opening tag in the prompt) drops everything before it; an opening tag
/// that is never closed drops the rest (the model was still thinking when it stopped).
/// Tags are only recognised outside JSON objects: a task about `<think>` blocks must not
/// lose half its plan.
fn strip_think(text: &str) -> String {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied_from = 0;
    let mut seen_open = false;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            index += 1;
            continue;
        }
        match byte {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b'"' if depth > 0 => in_string = true,
            b'<' if depth == 0 => {
                let rest = &text[index..];
                if rest.starts_with(OPEN) {
                    seen_open = true;
                    out.push_str(&text[copied_from..index]);
                    match rest.find(CLOSE) {
                        Some(close) => {
                            index += close + CLOSE.len();
                            copied_from = index;
                            continue;
                        }
                        None => return out,
                    }
                }
                if rest.starts_with(CLOSE) && !seen_open {
                    seen_open = true;
                    out.clear();
                    index += CLOSE.len();
                    copied_from = index;
                    continue;
                }
            }
            _ => {}
        }
        index += 1;
    }
    out.push_str(&text[copied_from..]);
    out
}

/// The balanced objects of a text and where its first unmatched `{` is.
#[derive(Debug)]
struct Scan {
    /// `(start, end)` byte ranges of balanced `{…}`, sorted by start.
    spans: Vec<(usize, usize)>,
    first_unclosed: Option<usize>,
}

/// String-aware brace matching. Quotes only count inside an object, so apostrophes and
/// quotes in prose cannot flip the string state. After a pass that leaves a `{` unmatched,
/// the scan restarts just past it: a stray brace in prose must not hide the real object.
fn scan_objects(bytes: &[u8]) -> Scan {
    let mut spans = Vec::new();
    let mut first_unclosed = None;
    let mut from = 0;
    for _ in 0..MAX_SCAN_PASSES {
        match scan_pass(bytes, from, &mut spans) {
            Some(open) => {
                first_unclosed.get_or_insert(open);
                from = open + 1;
            }
            None => break,
        }
    }
    spans.sort_unstable();
    spans.dedup();
    Scan {
        spans,
        first_unclosed,
    }
}

/// One left-to-right pass from `from`; returns the outermost `{` left open at the end.
fn scan_pass(bytes: &[u8], from: usize, spans: &mut Vec<(usize, usize)>) -> Option<usize> {
    let mut stack: Vec<usize> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (offset, &byte) in bytes[from..].iter().enumerate() {
        let index = from + offset;
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'{' => stack.push(index),
            b'}' => {
                if let Some(start) = stack.pop() {
                    spans.push((start, index + 1));
                }
            }
            b'"' if !stack.is_empty() => in_string = true,
            _ => {}
        }
    }
    stack.first().copied()
}

/// Byte offsets of every `"key"` followed by optional whitespace and `:`, ascending.
fn key_hits(text: &str, key: &str) -> Vec<usize> {
    let quoted = format!("\"{key}\"");
    text.match_indices(&quoted)
        .filter(|(at, _)| text[at + quoted.len()..].trim_start().starts_with(':'))
        .map(|(at, _)| at)
        .collect()
}

/// A candidate after the lenient fixes, with a map back to the original's byte offsets.
#[derive(Debug)]
struct Repaired {
    text: String,
    /// `origin[i]` is the candidate offset output byte `i` came from.
    origin: Vec<usize>,
    changed: bool,
    /// `...` or `…` outside strings: a format mention such as `{"tasks": [...]}`.
    has_ellipsis: bool,
}

/// Drop trailing commas before `}`/`]` and escape raw control characters inside strings:
/// the two slips models make most in otherwise valid JSON. Valid JSON passes unchanged.
fn repair(candidate: &str) -> Repaired {
    let bytes = candidate.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 16);
    let mut origin: Vec<usize> = Vec::with_capacity(bytes.len() + 16);
    let mut changed = false;
    let mut has_ellipsis = false;
    let mut in_string = false;
    let mut escaped = false;
    let mut push = |out: &mut Vec<u8>, byte: u8, from: usize| {
        out.push(byte);
        origin.push(from);
    };
    for (index, &byte) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
                push(&mut out, byte, index);
            } else if byte == b'\\' {
                escaped = true;
                push(&mut out, byte, index);
            } else if byte == b'"' {
                in_string = false;
                push(&mut out, byte, index);
            } else if byte < 0x20 {
                changed = true;
                let escape = match byte {
                    b'\n' => "\\n".to_owned(),
                    b'\r' => "\\r".to_owned(),
                    b'\t' => "\\t".to_owned(),
                    other => format!("\\u{other:04x}"),
                };
                for &e in escape.as_bytes() {
                    push(&mut out, e, index);
                }
            } else {
                push(&mut out, byte, index);
            }
            continue;
        }
        match byte {
            b'"' => {
                in_string = true;
                push(&mut out, byte, index);
            }
            b',' => {
                let next = bytes[index + 1..].iter().find(|b| !b.is_ascii_whitespace());
                if matches!(next, Some(b'}' | b']')) {
                    changed = true;
                } else {
                    push(&mut out, byte, index);
                }
            }
            _ => {
                let rest = &bytes[index..];
                if rest.starts_with(b"...") || rest.starts_with("…".as_bytes()) {
                    has_ellipsis = true;
                }
                push(&mut out, byte, index);
            }
        }
    }
    // Only ASCII bytes were inserted or dropped, so the output is still UTF-8.
    let text = String::from_utf8(out).unwrap_or_else(|_| candidate.to_owned());
    Repaired {
        text,
        origin,
        changed,
        has_ellipsis,
    }
}

/// serde_json's message with the line and column moved back into the text the model wrote
/// (the repairs shift positions), so the corrective turn points where the model can look.
fn position_in_original(error: &serde_json::Error, candidate: &str, repaired: &Repaired) -> String {
    let full = error.to_string();
    if !repaired.changed || error.line() == 0 {
        return full;
    }
    let message = match full.rfind(" at line ") {
        Some(index) => &full[..index],
        None => full.as_str(),
    };
    let repaired_index = offset_of(&repaired.text, error.line(), error.column());
    let original_index = match repaired_index {
        Some(index) => repaired
            .origin
            .get(index)
            .copied()
            .unwrap_or(candidate.len()),
        None => candidate.len(),
    };
    let (line, column) = line_and_column(candidate, original_index);
    format!("{message} at line {line} column {column}")
}

/// The byte serde_json's (1-based line, column) points at; its column counts the bytes of
/// the line up to and including the offending one.
fn offset_of(text: &str, line: usize, column: usize) -> Option<usize> {
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(line - 2)
            .map(|(at, _)| at + 1)?
    };
    let index = (line_start + column).checked_sub(1)?;
    (index < text.len()).then_some(index)
}

/// serde_json's convention: 1-based line, column = bytes of the line up to and including
/// the byte at `index`.
fn line_and_column(text: &str, index: usize) -> (usize, usize) {
    let index = index.min(text.len());
    let before = &text.as_bytes()[..index];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    (line, index - line_start + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(text: &str, key: &str) -> Value {
        match extract(text, key) {
            Extraction::Found(value) => value,
            other => panic!("expected Found, got {other:?}"),
        }
    }

    #[test]
    fn think_blocks_are_dropped() {
        assert_eq!(strip_think("a<think>x</think>b<think>y</think>c"), "abc");
        assert_eq!(strip_think("reasoning</think>answer"), "answer");
        assert_eq!(strip_think("answer<think>still going"), "answer");
        assert_eq!(strip_think("plain"), "plain");
        let plan = r#"{"tasks": [{"title": "Drop </think> and <think> tags"}]}"#;
        assert_eq!(strip_think(plan), plan);
        assert_eq!(strip_think(&format!("<think>{{</think>{plan}")), plan);
    }

    #[test]
    fn braces_and_escaped_quotes_in_strings_do_not_confuse_the_scan() {
        let text = r#"x {"tasks": [{"title": "a } \" { b", "prompt": "c"}]} y"#;
        assert_eq!(
            found(text, "tasks"),
            json!({"tasks": [{"title": "a } \" { b", "prompt": "c"}]})
        );
    }

    #[test]
    fn a_stray_brace_in_prose_does_not_hide_the_object() {
        let text = "I {think \"this is fine. {\"tasks\": [{\"title\": \"a\"}]}";
        assert_eq!(found(text, "tasks"), json!({"tasks": [{"title": "a"}]}));
    }

    #[test]
    fn repair_drops_trailing_commas_and_escapes_raw_newlines() {
        let repaired = repair("{\"a\": [1, 2, ],\n \"b\": \"x\ny\t\",}");
        assert_eq!(repaired.text, "{\"a\": [1, 2 ],\n \"b\": \"x\\ny\\t\"}");
        assert!(repaired.changed);
        assert!(!repair("{\"a\": \", ]\"}").changed);
    }

    #[test]
    fn positions_map_back_through_repairs() {
        // The raw newline inside the string is escaped before parsing; the error on line 3
        // of what the model wrote must still say line 3.
        let candidate = "{\"tasks\": [\"a\nb\",\n  x]}";
        let Extraction::Broken { error, .. } = extract(candidate, "tasks") else {
            panic!()
        };
        assert_eq!(error, "expected value at line 3 column 3");
    }

    #[test]
    fn wrapper_objects_fall_back_to_the_inner_object() {
        let text = r#"{"plan": {"tasks": [{"title": "a"}]}}"#;
        assert_eq!(found(text, "tasks"), json!({"tasks": [{"title": "a"}]}));
    }

    #[test]
    fn format_mentions_with_an_ellipsis_are_not_emissions() {
        let text = r#"When you agree I will send {"tasks": [...]} with the plan."#;
        assert_eq!(extract(text, "tasks"), Extraction::Absent);
    }

    #[test]
    fn hostile_input_stays_cheap() {
        // Unclosed, nested and repeated keyed objects: bounded passes and candidates keep
        // this linear-ish instead of quadratic.
        let unclosed = "{\"tasks\": ".repeat(20_000);
        assert_eq!(extract(&unclosed, "tasks"), Extraction::Truncated);
        let nested = format!("{}1{}", "{\"tasks\": ".repeat(5_000), "}".repeat(5_000));
        assert!(matches!(
            extract(&nested, "tasks"),
            Extraction::Found(_) | Extraction::Broken { .. }
        ));
        let many = "{\"tasks\": [}".repeat(20_000);
        assert!(matches!(extract(&many, "tasks"), Extraction::Broken { .. }));
    }

    #[test]
    fn nothing_panics_on_odd_input() {
        for text in [
            "",
            "{",
            "}",
            "\"",
            "{\"",
            "{\"tasks\"",
            "{\"tasks\":",
            "\\",
            "…{…",
        ] {
            let _ = extract(text, "tasks");
        }
    }
}

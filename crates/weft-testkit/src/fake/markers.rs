//! Finding completion-marker material in a prompt, the way an obedient agent (`marker`) and
//! a token-copying agent (`copy-markers`) would.

/// The first half of every marker, as the prompt shows it in its own code span.
pub const MARKER_PREFIX: &str = "WEFT_DONE_";

/// Inline code spans (CommonMark backtick strings of equal length, within one line), in
/// order. One leading and one trailing space are stripped when both are present.
pub fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    for line in text.lines() {
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'`' {
                i += 1;
                continue;
            }
            let open = i;
            while i < bytes.len() && bytes[i] == b'`' {
                i += 1;
            }
            let width = i - open;
            let mut j = i;
            let mut close = None;
            while j < bytes.len() {
                if bytes[j] == b'`' {
                    let run = j;
                    while j < bytes.len() && bytes[j] == b'`' {
                        j += 1;
                    }
                    if j - run == width {
                        close = Some(run);
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            if let Some(close) = close {
                let content = &line[i..close];
                let stripped = content
                    .strip_prefix(' ')
                    .and_then(|inner| inner.strip_suffix(' '))
                    .filter(|inner| !inner.trim().is_empty());
                spans.push(stripped.unwrap_or(content));
                i = close + width;
            }
        }
    }
    spans
}

/// Exactly 16 lowercase hex characters.
pub fn is_marker_id(text: &str) -> bool {
    text.len() == 16 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The identifier the marker instruction asks for: after a code span holding exactly
/// `WEFT_DONE_`, the first later code span holding 16 lowercase hex characters. When the
/// prompt holds several such instructions the last one wins (weft puts its instruction at
/// the end of the prompt).
pub fn marker_id(prompt: &str) -> Option<&str> {
    let spans = code_spans(prompt);
    spans
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, span)| **span == MARKER_PREFIX)
        .find_map(|(at, _)| spans[at + 1..].iter().copied().find(|s| is_marker_id(s)))
}

/// The assembled marker an obedient agent prints, if the prompt asks for one.
pub fn follow_instruction(prompt: &str) -> Option<String> {
    marker_id(prompt).map(|id| format!("{MARKER_PREFIX}{id}"))
}

/// Everything a careless agent would copy from the prompt, in order of appearance,
/// without duplicates:
/// * every `WEFT[_-]DONE[_-]` followed by hex digits or `(defused)` (possibly nothing),
///   verbatim, and again with `-` turned into `_`;
/// * every 16-hex code span prefixed with `WEFT_DONE_`, except the identifier the marker
///   instruction designates.
///
/// It never assembles the instruction's token itself; it reproduces a token only if the
/// prompt already contains it, which is exactly the leak it exists to expose.
pub fn copy_markers(prompt: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut push = |text: String| {
        if !found.contains(&text) {
            found.push(text);
        }
    };
    let bytes = prompt.as_bytes();
    let mut i = 0;
    while let Some(offset) = prompt[i..].find("WEFT") {
        let start = i + offset;
        i = start + 4;
        let sep = |at: usize| bytes.get(at).is_some_and(|b| matches!(b, b'_' | b'-'));
        if !(sep(start + 4) && prompt[start + 5..].starts_with("DONE") && sep(start + 9)) {
            continue;
        }
        let tail_at = start + 10;
        let tail = &prompt[tail_at..];
        let tail_len = if tail.starts_with("(defused)") {
            "(defused)".len()
        } else {
            tail.bytes().take_while(u8::is_ascii_hexdigit).count()
        };
        let verbatim = &prompt[start..tail_at + tail_len];
        push(verbatim.to_owned());
        push(verbatim.replace('-', "_"));
        i = tail_at + tail_len;
    }
    let designated = marker_id(prompt);
    for span in code_spans(prompt) {
        if is_marker_id(span) && Some(span) != designated {
            push(format!("{MARKER_PREFIX}{span}"));
        }
    }
    found
}

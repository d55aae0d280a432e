//! Completion markers: the per-attempt token whose appearance in an agent's output is the
//! evidence that the task is done (DESIGN §6), and the defusing of marker-looking text
//! carried from one task into another's prompt.
//!
//! Two rules keep a marker from settling the wrong task:
//! - the prompt never holds the assembled token: [`Marker::instruction`] names its two
//!   halves separately and asks the agent to print them joined;
//! - text carried from another task goes through [`defuse`], which hyphenates the prefix
//!   and drops the identifier, so no scan (raw, flattened or rendered) can match it and no
//!   agent can copy a predecessor's identifier.

use std::ops::Range;

/// The first half of every marker token.
pub const MARKER_PREFIX: &str = "WEFT_DONE_";
/// Length of a marker's identifier: lowercase hex characters.
pub const MARKER_ID_LEN: usize = 16;
/// What a defused token reads as: the hyphenated prefix, the identifier dropped.
pub const DEFUSED_TOKEN: &str = "WEFT-DONE-(defused)";
/// What a bare prefix (no identifier after it) becomes.
const DEFUSED_PREFIX: &str = "WEFT-DONE-";
/// What a lone identifier found just after a bare prefix becomes.
const DEFUSED_ID: &str = "(defused)";
/// How many characters after a bare prefix are searched for the identifier that belongs to
/// it (the shape of an echoed [`Marker::instruction`]).
const ECHO_WINDOW: usize = 256;
/// A marker cut by a tail at the very start of a text: the prefix's last characters are kept
/// only when at least this many hex characters follow them.
const FRAGMENT_MIN_HEX: usize = 8;
/// Longest CSI sequence recognised; anything longer is treated as text.
const MAX_CSI: usize = 64;
/// Longest OSC/DCS string recognised; an unterminated one is treated as text.
const MAX_ESCAPE_STRING: usize = 4096;

/// One attempt's completion marker: `WEFT_DONE_` followed by 16 lowercase hex characters.
///
/// There is deliberately no `Display`: the assembled token must not slip into a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Marker {
    id: String,
}

impl Marker {
    /// `None` unless `id` is exactly 16 lowercase hex characters.
    pub fn from_id(id: &str) -> Option<Marker> {
        let valid =
            id.len() == MARKER_ID_LEN && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        valid.then(|| Marker { id: id.to_owned() })
    }

    /// A marker from 8 random bytes drawn by the caller (core draws no randomness).
    pub fn from_bytes(bytes: [u8; 8]) -> Marker {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut id = String::with_capacity(MARKER_ID_LEN);
        for byte in bytes {
            id.push(char::from(HEX[usize::from(byte >> 4)]));
            id.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        Marker { id }
    }

    /// The marker a stored token (`WEFT_DONE_<id>`) names.
    pub fn from_token(token: &str) -> Option<Marker> {
        token.strip_prefix(MARKER_PREFIX).and_then(Marker::from_id)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// `WEFT_DONE_` + id: what the agent must print and the scanners look for.
    pub fn token(&self) -> String {
        format!("{MARKER_PREFIX}{}", self.id)
    }

    /// The last paragraph of a prompt. It never contains the assembled token: it names the
    /// two halves as two separate inline code spans (first `WEFT_DONE_`, then, after a short
    /// run of plain words with no backtick, the code span holding the id) and asks for one
    /// final line holding them joined with nothing between.
    pub fn instruction(&self) -> String {
        format!(
            "When the task is fully done, and not before, print one final line that holds only \
             your completion marker. The marker has two parts: first `{MARKER_PREFIX}`, then \
             directly after it `{}`. Write them joined into one token with nothing between them \
             (no space, quote, backtick or line break), and print nothing after that line.",
            self.id
        )
    }

    /// Whether the token appears in `text`, as written or in the [`flatten`]ed view.
    pub fn appears_in(&self, text: &str) -> bool {
        let token = self.token();
        text.contains(&token) || flatten(text).contains(&token)
    }
}

/// The flattened view the scanners read (DESIGN §6): `text` with ANSI escape sequences
/// and every [`is_ignorable`] character (controls, whitespace, box-drawing and block
/// glyphs, zero-width and other invisible characters) removed.
pub fn flatten(text: &str) -> String {
    significant(text, Escapes::Strip)
        .iter()
        .map(|s| s.ch)
        .collect()
}

/// Rewrite every marker-looking token in carried text so no scan can match it.
///
/// - `WEFT_DONE_` followed by hex becomes `WEFT-DONE-(defused)`, also when whitespace, ANSI
///   escapes, control or box-drawing characters or line breaks are interleaved anywhere in
///   the prefix or the id (what the flattened scan would re-join).
/// - A bare `WEFT_DONE_` becomes `WEFT-DONE-`; a lone 16-hex word within the next 256
///   characters (an echoed instruction naming the id in its own code span) becomes
///   `(defused)`.
/// - A text that starts with the cut-off end of a token (`NE_` + at least 8 hex characters,
///   as a tail can begin) is defused the same way.
/// - A text holding an underscore loses its escape sequences and other terminal controls
///   (ESC, C1 controls, CAN, SUB, backspaces, carriage returns not followed by a line
///   feed), so a terminal renders what the linear views read and cannot paint a token
///   together out of parts.
///
/// Hex that runs on after a gap into a longer word (`WEFT_DONE_ faced`) is left alone, so
/// ordinary words after a bare prefix survive. The result holds no `WEFT_DONE_` in any view;
/// defusing is idempotent.
pub fn defuse(text: &str) -> String {
    // Every prefix and every fragment holds an underscore; text without one has nothing to do.
    if !text.contains('_') {
        return text.to_owned();
    }
    // Plain text first, so every view reads it alike (see `plainify`).
    let mut current = plainify(text);
    // Each changing pass replaces underscores by hyphens and adds none, so this ends.
    loop {
        let mut next = current.clone();
        for escapes in [Escapes::Strip, Escapes::Keep] {
            next = defuse_pass(&next, escapes);
        }
        if next == current {
            return next;
        }
        current = next;
    }
}

/// `text` as plain text: escape sequences (whole, as [`Escapes::Strip`] reads them) and
/// every ESC, C1 control, CAN and SUB left over removed, and with them what lets a
/// terminal paint one part of a line over another (backspaces, carriage returns not
/// followed by a line feed).
///
/// Why: the scanners read escapes three ways — raw, their own flattener, and a terminal
/// emulator whose parser ends, abandons and ignores sequences by its own rules (a DCS runs
/// on past BEL, a non-ASCII character inside a CSI is skipped, a cursor move paints
/// `DONE_…` over the `X` of `WEFT_X`). A view that reads a sequence differently from the
/// passes of [`defuse`] can join a token they never saw. Without escapes and overwrites
/// every view reads the same thing — the text less its [`is_ignorable`] characters — and
/// the passes cover that by construction. Only text holding an underscore gets here: a
/// token needs two, so the rest keeps its escapes.
fn plainify(text: &str) -> String {
    if !text.contains(|c: char| {
        c == '\u{1b}'
            || c == '\u{8}'
            || c == '\r'
            || c == '\u{18}'
            || c == '\u{1a}'
            || ('\u{80}'..='\u{9f}').contains(&c)
    }) {
        return text.to_owned();
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let skip = escape_len(&chars, i);
        if skip > 0 {
            i += skip;
            continue;
        }
        let ch = chars[i].1;
        let dropped = match ch {
            '\u{1b}' | '\u{8}' | '\u{18}' | '\u{1a}' | '\u{80}'..='\u{9f}' => true,
            '\r' => chars.get(i + 1).map(|&(_, c)| c) != Some('\n'),
            _ => false,
        };
        if !dropped {
            out.push(ch);
        }
        i += 1;
    }
    out
}

/// How escape sequences are read when building a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escapes {
    /// Whole sequences (CSI, OSC, charset designations) are invisible, as in a stripped view.
    Strip,
    /// Only the ESC character itself is invisible; its parameters read as text. Covers a
    /// scanner that strips less than [`Escapes::Strip`] does.
    Keep,
}

/// A character of a view, with the byte range it came from in the original text.
#[derive(Debug, Clone, Copy)]
struct Sig {
    ch: char,
    start: usize,
    end: usize,
}

/// Characters a marker scan does not see: the one definition both sides use — the
/// scanners (weft-agents' flattened and rendered views drop these, so a marker with them
/// interleaved still counts) and [`defuse`] and [`flatten`] here (which read past them, so
/// a token with them interleaved is still defused).
///
/// They are: C0 controls and space (U+0000–U+0020), DEL, C1 controls and NBSP
/// (U+007F–U+00A0), the soft hyphen (U+00AD), U+1680, the Mongolian vowel separator
/// (U+180E), the Unicode spaces, zero-width space and joiners and the direction marks
/// (U+2000–U+200F), line and paragraph separators, direction embeddings and overrides and
/// the narrow NBSP (U+2028–U+202F), the medium mathematical space, word joiner and
/// invisible operators (U+205F–U+2064), box drawing and block elements (U+2500–U+259F),
/// the ideographic space (U+3000), the BOM (U+FEFF), the replacement character (U+FFFD),
/// and every character a terminal draws with no width of its own (combining marks,
/// variation selectors, other format characters: width 0 by `unicode-width`, the table
/// the rendered view's emulator uses). Every `char::is_whitespace` and `char::is_control`
/// character is among them.
///
/// Why one set, and why this one: defusing must make matching impossible in every view
/// the scanner has. A character some view skips but `defuse` reads as text would let
/// `WEFT_\u{AD}DONE_…` pass `defuse` untouched and then match in that view; so `defuse`
/// must skip at least what any view skips — the union of what each view drops, not the
/// intersection. The other way round costs nothing that matters: a character `defuse`
/// skips but a view shows only makes `defuse` hyphenate a token that view could not have
/// matched. And the scanners read the same set, since a marker should count through
/// every character that does not show. The set is the union of what weft-core and
/// weft-agents each used to skip (weft-agents' was the larger, by the soft hyphen, U+180E,
/// the direction marks, embeddings and overrides and the invisible operators), plus what
/// the rendered view drops without either having listed it: the emulator discards U+FFFD
/// and C1 controls, and a zero-width character at the start of a row has no cell to join,
/// so it vanishes from a screen whose rows are read joined (`WEFT_DO`, a line break,
/// U+0301, `NE_…`).
///
/// Explicit code-point ranges first: the flattened view asks this for every non-ASCII
/// character on its hot path, and most of what it meets there (box drawing) is decided
/// without the width table.
pub fn is_ignorable(c: char) -> bool {
    let cp = u32::from(c);
    cp < 0x21
        || matches!(
            cp,
            0x7F..=0xA0
                | 0xAD
                | 0x1680
                | 0x180E
                | 0x2000..=0x200F
                | 0x2028..=0x202F
                | 0x205F..=0x2064
                | 0x2500..=0x259F
                | 0x3000
                | 0xFEFF
                | 0xFFFD
        )
        || (cp >= 0x300 && unicode_width::UnicodeWidthChar::width(c) == Some(0))
}

/// The characters of `text` a scan would see, each with its source bytes.
fn significant(text: &str, escapes: Escapes) -> Vec<Sig> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let (start, ch) = chars[i];
        if escapes == Escapes::Strip {
            let skip = escape_len(&chars, i);
            if skip > 0 {
                i += skip;
                continue;
            }
        }
        if !is_ignorable(ch) {
            out.push(Sig {
                ch,
                start,
                end: start + ch.len_utf8(),
            });
        }
        i += 1;
    }
    out
}

/// Length in characters of a recognised escape sequence starting at `i`, or 0.
fn escape_len(chars: &[(usize, char)], i: usize) -> usize {
    let at = |k: usize| chars.get(k).map(|&(_, c)| c);
    match at(i) {
        Some('\u{1b}') => match at(i + 1) {
            Some('[') => csi_len(chars, i + 2).map_or(0, |n| n + 2),
            Some(']' | 'P' | 'X' | '^' | '_') => string_len(chars, i + 2).map_or(0, |n| n + 2),
            Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%' | ' ') => {
                if at(i + 2).is_some() { 3 } else { 2 }
            }
            Some(_) => 2,
            None => 1,
        },
        Some('\u{9b}') => csi_len(chars, i + 1).map_or(0, |n| n + 1),
        _ => 0,
    }
}

/// Parameter, intermediate and final bytes of a CSI sequence starting at `from`.
fn csi_len(chars: &[(usize, char)], from: usize) -> Option<usize> {
    for (n, &(_, c)) in chars.iter().skip(from).take(MAX_CSI).enumerate() {
        match c {
            '\u{40}'..='\u{7e}' => return Some(n + 1),
            '\u{20}'..='\u{3f}' => {}
            _ => return None,
        }
    }
    None
}

/// Body and terminator (BEL, ST or ESC `\`) of an OSC/DCS-like string starting at `from`.
/// An ESC that does not start ST ends nothing: the string is then not recognised.
fn string_len(chars: &[(usize, char)], from: usize) -> Option<usize> {
    let end = chars.len().min(from.saturating_add(MAX_ESCAPE_STRING));
    let body = chars.get(from..end)?;
    for (n, &(_, c)) in body.iter().enumerate() {
        match c {
            '\u{7}' | '\u{9c}' => return Some(n + 1),
            '\u{1b}' => {
                return (body.get(n + 1).map(|&(_, next)| next) == Some('\\')).then_some(n + 2);
            }
            _ => {}
        }
    }
    None
}

fn prefix_at(sig: &[Sig], k: usize) -> bool {
    let mut expected = MARKER_PREFIX.chars();
    sig.len() >= k + MARKER_PREFIX.len()
        && sig[k..k + MARKER_PREFIX.len()]
            .iter()
            .all(|s| Some(s.ch) == expected.next())
}

/// Whether bytes were skipped (an ignorable stretch) between two view characters.
fn gap_between(before: &Sig, after: &Sig) -> bool {
    before.end != after.start
}

/// End (exclusive view index) of the identifier that follows a prefix ending at `from`.
///
/// Hex is consumed across gaps, but a last stretch that began after a gap and runs straight
/// on into a longer word is given back: it is a word, not part of an identifier.
fn id_end(sig: &[Sig], from: usize) -> usize {
    let mut end = from;
    let mut after_gap = None;
    while end < sig.len() && sig[end].ch.is_ascii_hexdigit() {
        if end > 0 && gap_between(&sig[end - 1], &sig[end]) {
            after_gap = Some(end);
        }
        end += 1;
    }
    if let Some(segment) = after_gap
        && let Some(next) = sig.get(end)
        && (next.ch.is_alphanumeric() || next.ch == '_')
        && !gap_between(&sig[end - 1], next)
    {
        return segment;
    }
    end
}

/// A text starting with the cut-off end of a token: `(EFT_DONE_ … E_)` + 8 or more hex.
fn leading_fragment(sig: &[Sig]) -> Option<usize> {
    let prefix: Vec<char> = MARKER_PREFIX.chars().collect();
    (2..prefix.len()).rev().find_map(|len| {
        let suffix = &prefix[prefix.len() - len..];
        let matches = sig.len() > len && sig[..len].iter().zip(suffix).all(|(s, &c)| s.ch == c);
        if !matches {
            return None;
        }
        let end = id_end(sig, len);
        (end - len >= FRAGMENT_MIN_HEX).then_some(end)
    })
}

/// Byte range of the first lone 16-hex word in `text[range]`.
fn echoed_id(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let window = &text[range.clone()];
    let mut word_start: Option<usize> = None;
    let limit = window
        .char_indices()
        .nth(ECHO_WINDOW)
        .map_or(window.len(), |(i, _)| i);
    let is_word = |c: char| c.is_ascii_alphanumeric();
    let lone = |start: usize, end: usize| {
        let word = &window[start..end];
        word.len() == MARKER_ID_LEN && word.bytes().all(|b| b.is_ascii_hexdigit())
    };
    for (i, c) in window[..limit].char_indices() {
        match (is_word(c), word_start) {
            (true, None) => word_start = Some(i),
            (false, Some(start)) => {
                if lone(start, i) {
                    return Some(range.start + start..range.start + i);
                }
                word_start = None;
            }
            _ => {}
        }
    }
    let start = word_start?;
    // A word cut by the window is not known to be lone unless the window is the text's end.
    let end = window[limit..]
        .char_indices()
        .find(|&(_, c)| !is_word(c))
        .map_or(window.len(), |(i, _)| limit + i);
    lone(start, end).then(|| range.start + start..range.start + end)
}

fn defuse_pass(text: &str, escapes: Escapes) -> String {
    let sig = significant(text, escapes);
    let mut edits: Vec<(Range<usize>, &'static str)> = Vec::new();
    let mut k = 0;
    if let Some(end) = leading_fragment(&sig) {
        edits.push((sig[0].start..sig[end - 1].end, DEFUSED_TOKEN));
        k = end;
    }
    // Prefix occurrences first, so an echo search can stop at the next one.
    let mut prefixes = Vec::new();
    while k < sig.len() {
        if prefix_at(&sig, k) {
            prefixes.push(k);
            k += MARKER_PREFIX.len();
        } else {
            k += 1;
        }
    }
    for (n, &at) in prefixes.iter().enumerate() {
        let after = at + MARKER_PREFIX.len();
        let end = id_end(&sig, after);
        let next_prefix = prefixes.get(n + 1).map_or(text.len(), |&p| sig[p].start);
        if end > after {
            edits.push((sig[at].start..sig[end - 1].end, DEFUSED_TOKEN));
        } else {
            let prefix_end = sig[after - 1].end;
            edits.push((sig[at].start..prefix_end, DEFUSED_PREFIX));
            if let Some(id) = echoed_id(text, prefix_end..next_prefix) {
                edits.push((id, DEFUSED_ID));
            }
        }
    }
    if edits.is_empty() {
        return text.to_owned();
    }
    edits.sort_by_key(|(range, _)| range.start);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (range, replacement) in edits {
        if range.start < copied {
            continue;
        }
        out.push_str(&text[copied..range.start]);
        out.push_str(replacement);
        copied = range.end;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef";

    fn marker() -> Marker {
        Marker::from_id(ID).unwrap()
    }

    /// True when `text` holds `WEFT_DONE_` followed by at least one hex character.
    fn has_live_token(text: &str) -> bool {
        text.match_indices(MARKER_PREFIX).any(|(i, _)| {
            text[i + MARKER_PREFIX.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_hexdigit())
        })
    }

    fn safe_in_every_view(text: &str) -> bool {
        let out = defuse(text);
        !out.contains(MARKER_PREFIX)
            && !flatten(&out).contains(MARKER_PREFIX)
            && !out
                .chars()
                .filter(|c| !is_ignorable(*c))
                .collect::<String>()
                .contains(MARKER_PREFIX)
    }

    #[test]
    fn ids_must_be_sixteen_lowercase_hex() {
        assert_eq!(marker().id(), ID);
        assert_eq!(marker().token(), "WEFT_DONE_0123456789abcdef");
        assert!(Marker::from_id("0123456789ABCDEF").is_none());
        assert!(Marker::from_id("0123456789abcde").is_none());
        assert!(Marker::from_id("0123456789abcdef0").is_none());
        assert!(Marker::from_id("0123456789abcdeg").is_none());
        assert!(Marker::from_id("").is_none());
        assert_eq!(
            Marker::from_token("WEFT_DONE_0123456789abcdef"),
            Some(marker())
        );
        assert_eq!(Marker::from_token("WEFT-DONE-0123456789abcdef"), None);
    }

    #[test]
    fn from_bytes_hex_encodes() {
        let m = Marker::from_bytes([0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        assert_eq!(m, marker());
        assert_eq!(Marker::from_bytes([0xff; 8]).id(), "ffffffffffffffff");
    }

    #[test]
    fn instruction_is_exact() {
        assert_eq!(
            marker().instruction(),
            "When the task is fully done, and not before, print one final line that holds only \
             your completion marker. The marker has two parts: first `WEFT_DONE_`, then directly \
             after it `0123456789abcdef`. Write them joined into one token with nothing between \
             them (no space, quote, backtick or line break), and print nothing after that line."
        );
    }

    #[test]
    fn instruction_names_two_halves_and_never_the_token() {
        let text = marker().instruction();
        assert!(!text.contains(&marker().token()));
        assert!(!flatten(&text).contains(&marker().token()));
        assert!(!marker().appears_in(&text));
        assert!(!text.contains('\n'), "one paragraph");
        let first = format!("`{MARKER_PREFIX}`");
        let second = format!("`{ID}`");
        let at = text.find(&first).expect("the prefix in its own code span");
        let between_start = at + first.len();
        let between_len = text[between_start..]
            .find(&second)
            .expect("the id in its own code span after the prefix");
        let between = &text[between_start..between_start + between_len];
        assert!(between.chars().count() <= 200, "{between:?}");
        assert!(!between.contains('`'), "{between:?}");
        assert!(!between.trim().is_empty());
        // Removing every character a scan could ignore still never joins the halves.
        let squeezed: String = text.chars().filter(|c| !is_ignorable(*c)).collect();
        assert!(!squeezed.contains(&marker().token()));
        // And a TUI that renders code spans without their backticks does not join them either.
        let rendered: String = text
            .chars()
            .filter(|&c| c != '`' && !c.is_whitespace())
            .collect();
        assert!(!rendered.contains(&marker().token()));
    }

    #[test]
    fn appears_in_reads_raw_and_flattened() {
        let m = marker();
        assert!(m.appears_in("done\nWEFT_DONE_0123456789abcdef\n"));
        assert!(m.appears_in("WEFT_DO\x1b[1mNE_0123 4567\n89ab│cdef"));
        assert!(!m.appears_in("WEFT_DONE_0123456789abcdee"));
    }

    #[test]
    fn flatten_removes_ansi_box_drawing_controls_and_whitespace() {
        assert_eq!(
            flatten("\x1b[31ma b\x1b[0m\r\n│c\x1b]0;title\x07d\x1b(Be\u{200b}f\t"),
            "abcdef"
        );
        // An unterminated OSC is text, not a sequence swallowing the rest.
        assert_eq!(flatten("\x1b]abc"), "]abc");
    }

    #[test]
    fn every_whitespace_and_control_character_is_ignorable() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            if c.is_whitespace() || c.is_control() {
                assert!(is_ignorable(c), "U+{:04X}", u32::from(c));
            }
        }
        for c in [
            '\u{ad}', '\u{180e}', '\u{200e}', '\u{202a}', '\u{2064}', '│', '█', '\u{fffd}',
            '\u{301}', '\u{2066}', '\u{fe0f}',
        ] {
            assert!(is_ignorable(c), "U+{:04X}", u32::from(c));
        }
        for c in ['!', 'W', '_', 'é', '日', '\u{25a0}', '\u{2122}'] {
            assert!(!is_ignorable(c), "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn a_token_with_invisible_format_characters_in_it_is_defused() {
        for invisible in [
            '\u{ad}', '\u{180e}', '\u{200f}', '\u{202e}', '\u{2063}', '\u{fffd}', '\u{301}',
        ] {
            let text = format!("WEFT_{invisible}DONE_0123{invisible}456789abcdef");
            assert_eq!(
                defuse(&text),
                DEFUSED_TOKEN,
                "U+{:04X}",
                u32::from(invisible)
            );
            assert!(marker().appears_in(&text));
        }
    }

    #[test]
    fn assembled_token_is_defused_and_id_dropped() {
        assert_eq!(
            defuse("done: WEFT_DONE_0123456789abcdef\n"),
            "done: WEFT-DONE-(defused)\n"
        );
        assert_eq!(
            defuse("WEFT_DONE_0123456789abcdefWEFT_DONE_fedcba9876543210"),
            "WEFT-DONE-(defused)WEFT-DONE-(defused)"
        );
    }

    #[test]
    fn split_tokens_are_defused() {
        for (text, expected) in [
            ("WEFT_DONE_ 0123456789abcdef", DEFUSED_TOKEN),
            ("WEFT_DONE_\n0123456789abcdef", DEFUSED_TOKEN),
            ("WEFT_DONE_\x1b[0m0123456789abcdef", DEFUSED_TOKEN),
            ("WEFT_DONE_0123\n4567 89ab\r\ncdef", DEFUSED_TOKEN),
            ("WEFT_DONE_01234567\x1b[32m89abcdef\x1b[0m", DEFUSED_TOKEN),
            ("WEFT_DO\nNE_0123456789abcdef", DEFUSED_TOKEN),
            (
                "W E F T _ D O N E _ 0 1 2 3 4 5 6 7 8 9 a b c d e f",
                DEFUSED_TOKEN,
            ),
            ("WEFT_│DONE_0123456789abcdef", DEFUSED_TOKEN),
            ("WEFT\u{200b}_DONE_0123456789abcdef", DEFUSED_TOKEN),
            ("WEFT_DONE_0123456789ABCDEF!", "WEFT-DONE-(defused)!"),
        ] {
            assert_eq!(defuse(text), expected, "{text:?}");
        }
    }

    #[test]
    fn text_around_a_token_survives_as_plain_text() {
        // Text with an underscore loses its escape sequences (every view then reads it
        // alike); the words survive.
        assert_eq!(
            defuse("\x1b[32m✓\x1b[0m all good\nWEFT_DONE_0123456789abcdef\n\x1b[0mbye"),
            "✓ all good\nWEFT-DONE-(defused)\nbye"
        );
        assert_eq!(
            defuse("50%\r100% of x_y\r\n\x1b]0;t\x07done"),
            "50%100% of x_y\r\ndone"
        );
        // Text without one keeps them: no token can form in it.
        assert_eq!(defuse("\x1b[1mbold\x1b[0m\r"), "\x1b[1mbold\x1b[0m\r");
        assert_eq!(defuse("keep snake_case_names"), "keep snake_case_names");
        assert_eq!(defuse("no markers here"), "no markers here");
    }

    #[test]
    fn bare_prefix_is_hyphenated_and_words_after_it_kept() {
        assert_eq!(defuse("print WEFT_DONE_ first"), "print WEFT-DONE- first");
        assert_eq!(
            defuse("WEFT_DONE_ followed by the id"),
            "WEFT-DONE- followed by the id"
        );
        assert_eq!(defuse("`WEFT_DONE_`"), "`WEFT-DONE-`");
        assert_eq!(defuse("WEFT_DONE_"), "WEFT-DONE-");
    }

    #[test]
    fn an_echoed_instruction_loses_its_id() {
        let echoed = marker().instruction();
        let out = defuse(&echoed);
        assert!(!out.contains(ID), "{out}");
        assert!(out.contains("first `WEFT-DONE-`, then directly after it `(defused)`."));
        // Other hex words far from any prefix are left alone.
        assert_eq!(
            defuse("commit 0123456789abcdef landed"),
            "commit 0123456789abcdef landed"
        );
    }

    #[test]
    fn a_tail_starting_inside_a_token_is_defused() {
        assert_eq!(defuse("NE_0123456789abcdef\nok"), "WEFT-DONE-(defused)\nok");
        assert_eq!(defuse("_DONE_0123456789abcdef"), "WEFT-DONE-(defused)");
        // Too short to be an identifier: ordinary text.
        assert_eq!(defuse("E_add more"), "E_add more");
    }

    #[test]
    fn lowercase_or_hyphenated_forms_are_not_tokens() {
        assert_eq!(defuse("WEFT-DONE-(defused)"), "WEFT-DONE-(defused)");
        assert_eq!(defuse("weft_done_0123"), "weft_done_0123");
    }

    #[test]
    fn a_terminal_cannot_paint_a_defused_token_together() {
        for text in [
            "WEFT_X\x08DONE_0123456789abcdef",
            "WEFT_DONX\rWEFT_DONE_0123456789abcdef",
            "WEFT_\x1bP\x07x\x1b\\DONE_0123456789abcdef",
            "WEFT_\x1b\u{80}ADONE_0123456789abcdef",
            "0123456789abcdef\x1b[1GWEFT_DONE_",
        ] {
            let out = defuse(text);
            assert!(
                !out.contains(['\u{1b}', '\u{8}', '\r']),
                "{text:?} -> {out:?}"
            );
            assert!(safe_in_every_view(text), "{text:?} -> {out:?}");
        }
    }

    #[test]
    fn unterminated_escapes_cannot_hide_a_token() {
        for text in [
            "\x1b]WEFT_DONE_0123456789abcdef",
            "\x1b[WEFT_DONE_0123456789abcdef",
            "WEFT_DONE_\x1b]0;x0123456789abcdef",
            "\u{9b}WEFT_DONE_0123456789abcdef",
        ] {
            assert!(safe_in_every_view(text), "{text:?} -> {:?}", defuse(text));
        }
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        /// Pieces that build markers, near-markers and the noise scanners skip.
        fn piece() -> impl Strategy<Value = String> {
            prop_oneof![
                3 => Just(MARKER_PREFIX.to_owned()),
                2 => "[0-9a-f]{1,16}",
                1 => "[0-9a-fA-F]{16}",
                1 => prop::sample::select(vec!["WEFT", "_DONE_", "WEFT_DO", "NE_", "E_", "_"])
                    .prop_map(str::to_owned),
                2 => prop::sample::select(vec![
                    " ", "\n", "\r\n", "\t", "\x1b[0m", "\x1b[1;32m", "\x1b]0;t\x07", "\x1b]",
                    "\x1b[", "\x1b(B", "\u{9b}", "│", "█", "\u{200b}", "`", "-",
                ])
                .prop_map(str::to_owned),
                2 => "[a-zA-Z ,.]{1,12}",
            ]
        }

        proptest! {
            #[test]
            fn no_view_of_defused_text_holds_a_prefix(pieces in prop::collection::vec(piece(), 0..24)) {
                let text: String = pieces.concat();
                let out = defuse(&text);
                prop_assert!(!out.contains(MARKER_PREFIX), "{:?} -> {:?}", text, out);
                prop_assert!(!flatten(&out).contains(MARKER_PREFIX), "{:?} -> {:?}", text, out);
                let squeezed: String = out.chars().filter(|c| !is_ignorable(*c)).collect();
                prop_assert!(!squeezed.contains(MARKER_PREFIX), "{:?} -> {:?}", text, out);
                prop_assert_eq!(defuse(&out), out.clone(), "not idempotent on {:?}", text);
            }

            #[test]
            fn an_embedded_token_loses_its_id(
                before in "[a-z .\n]{0,40}",
                after in "[g-z .\n]{0,40}",
                id in "[0-9a-f]{16}",
            ) {
                let text = format!("{before}\n{MARKER_PREFIX}{id}\n{after}");
                let out = defuse(&text);
                prop_assert!(!out.contains(&id), "{:?} -> {:?}", text, out);
                prop_assert!(out.contains(DEFUSED_TOKEN));
            }
        }
    }

    #[test]
    fn defuse_is_idempotent_and_never_leaves_a_live_prefix() {
        let samples = [
            "a WEFT_DONE_0123456789abcdef b",
            "WEFT_DONE_WEFT_DONE_0123",
            "WEFT_WEFT_DONE_DONE_abc",
            "x\x1b[1mWEFT_DONE_\x1b[0m y 0123456789abcdef",
            "WEFT_D\nONE_ face bad dog",
            "NE_0123456789abcdef WEFT_DONE_",
        ];
        for text in samples {
            let once = defuse(text);
            assert_eq!(defuse(&once), once, "{text:?}");
            assert!(safe_in_every_view(text), "{text:?} -> {once:?}");
            assert!(!has_live_token(&once));
        }
    }
}

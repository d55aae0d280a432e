//! Terminal safety: an agent's output made safe to write to a terminal.
//!
//! An agent's output is untrusted: written raw to a terminal, an OSC 52 sequence sets the
//! user's clipboard, `ESC[2J` clears the screen, cursor movement and `\r` or backspace
//! overwrite what is shown, mode changes (`ESC[?1049h`) switch screens, DCS/APC/PM/SOS
//! strings reach the terminal's own parsers. [`sanitize`] and [`Sanitizer`] make bytes
//! safe to show:
//!
//! - every control byte (C0 except `\n` and `\t`, DEL, the C1 controls U+0080–U+009F) and
//!   every byte that is not valid UTF-8 is **shown escaped** as `\xNN` (so `ESC]52;c;…BEL`
//!   reads `\x1b]52;c;…\x07`). Escaping, not stripping: a log viewer should show what the
//!   agent really sent, and the printable rest of a sequence (`]52;c;…`) is then visibly
//!   part of it instead of looking like the agent's text;
//! - `\r\n` stays; a lone `\r` becomes `\n`, so nothing already shown can be overwritten
//!   (a progress bar's redraws read as successive lines);
//! - SGR colour sequences (`ESC[…m`, parameters digits, `;` and `:`, at most
//!   [`MAX_SGR_PARAMS`] bytes) are kept with [`Keep::Colour`] (a terminal, `NO_COLOR`
//!   unset: see [`Keep::for_output`]) and removed with [`Keep::Nothing`]: colour is
//!   harmless, and escaped colour codes would only be noise.
//!
//! So the output never holds an ESC except at the start of a kept SGR sequence; printable
//! text (and `\n`, `\t`) passes unchanged; sanitizing twice changes nothing more than
//! once. The streaming form holds back at most [`MAX_HELD`] bytes (an escape sequence, a
//! `\r` or a UTF-8 character split by a chunk boundary). Pure: no I/O.

use std::borrow::Cow;

/// What may stay besides printable text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// SGR colour sequences stay.
    Colour,
    /// Nothing but text.
    Nothing,
}

impl Keep {
    /// Colour on a terminal when `NO_COLOR` is unset (or empty), nothing otherwise (the
    /// caller passes the facts: this module reads no environment).
    pub fn for_output(is_terminal: bool, no_color: Option<&str>) -> Keep {
        if is_terminal && no_color.is_none_or(str::is_empty) {
            Keep::Colour
        } else {
            Keep::Nothing
        }
    }
}

/// The longest SGR parameter list kept; a longer one is escaped.
pub const MAX_SGR_PARAMS: usize = 64;

/// The most bytes a [`Sanitizer`] holds back between chunks.
pub const MAX_HELD: usize = MAX_SGR_PARAMS + 2;

/// `bytes` made safe for a terminal; borrowed when nothing changes.
pub fn sanitize(bytes: &[u8], keep: Keep) -> Cow<'_, [u8]> {
    let clean = first_unsafe(bytes) == bytes.len();
    if clean {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    run(bytes, keep, true, &mut out);
    Cow::Owned(out)
}

/// `text` made safe for a terminal; borrowed when nothing changes.
pub fn sanitize_str(text: &str, keep: Keep) -> Cow<'_, str> {
    match sanitize(text.as_bytes(), keep) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        // Valid UTF-8 in, valid UTF-8 out (escapes and kept sequences are ASCII); stay
        // lossy rather than panic all the same.
        Cow::Owned(bytes) => Cow::Owned(
            String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        ),
    }
}

/// The streaming form: bytes arrive in chunks, an escape sequence may be split across
/// them.
#[derive(Debug)]
pub struct Sanitizer {
    keep: Keep,
    /// At most [`MAX_HELD`] bytes.
    held: Vec<u8>,
}

impl Sanitizer {
    pub fn new(keep: Keep) -> Self {
        Self {
            keep,
            held: Vec::new(),
        }
    }

    /// Sanitizes `chunk`, appending what can be written now to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        if self.held.is_empty() {
            let used = run(chunk, self.keep, false, out);
            self.held.extend_from_slice(&chunk[used..]);
            return;
        }
        // A sequence was split: finish it with this chunk (rare, so the copy is cheap).
        let mut joined = std::mem::take(&mut self.held);
        joined.extend_from_slice(chunk);
        let used = run(&joined, self.keep, false, out);
        joined.drain(..used);
        self.held = joined;
    }

    /// Writes what is held at the end of the stream.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let held = std::mem::take(&mut self.held);
        run(&held, self.keep, true, out);
    }
}

fn safe(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t'
}

/// The index of the first byte that may need changing (valid non-C1 UTF-8 is fine).
fn first_unsafe(bytes: &[u8]) -> usize {
    let mut i = 0;
    while i < bytes.len() {
        // Printable ASCII, what nearly every title and name is, 16 bytes at a time (a
        // branch-free test the compiler vectorizes; byte by byte this was a tenth of a
        // 10,000-task plan map).
        while let Some(chunk) = bytes
            .get(i..i + 16)
            .and_then(|c| <&[u8; 16]>::try_from(c).ok())
            && chunk
                .iter()
                .fold(true, |ok, &b| ok & (b.wrapping_sub(0x20) < 0x5f))
        {
            i += 16;
        }
        let Some(&b) = bytes.get(i) else {
            break;
        };
        if safe(b) {
            i += 1;
            continue;
        }
        if b >= 0x80
            && let Utf8::Char(n) = utf8(&bytes[i..], true)
            && !is_c1(&bytes[i..i + n])
        {
            i += n;
            continue;
        }
        return i;
    }
    bytes.len()
}

enum Utf8 {
    Char(usize),
    Partial,
    Invalid,
}

/// The UTF-8 character at the start of `bytes`.
fn utf8(bytes: &[u8], eof: bool) -> Utf8 {
    let n = match bytes[0] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return Utf8::Invalid,
    };
    if bytes.len() < n {
        let continuing = bytes[1..].iter().all(|b| (0x80..0xC0).contains(b));
        return if continuing && !eof {
            Utf8::Partial
        } else {
            Utf8::Invalid
        };
    }
    if std::str::from_utf8(&bytes[..n]).is_ok() {
        Utf8::Char(n)
    } else {
        Utf8::Invalid
    }
}

/// U+0080–U+009F: the C1 controls (`\xc2\x9b` is CSI to some terminals).
fn is_c1(ch: &[u8]) -> bool {
    ch.len() == 2 && ch[0] == 0xC2 && ch[1] < 0xA0
}

enum Sgr {
    /// A whole SGR sequence of this length.
    Whole(usize),
    Partial,
    Not,
}

fn sgr(bytes: &[u8], eof: bool) -> Sgr {
    let partial = if eof { Sgr::Not } else { Sgr::Partial };
    match bytes.get(1) {
        None => return partial,
        Some(b'[') => {}
        Some(_) => return Sgr::Not,
    }
    let mut j = 2;
    while j < bytes.len() && (bytes[j].is_ascii_digit() || bytes[j] == b';' || bytes[j] == b':') {
        j += 1;
        if j - 2 > MAX_SGR_PARAMS {
            return Sgr::Not;
        }
    }
    match bytes.get(j) {
        None => partial,
        Some(b'm') => Sgr::Whole(j + 1),
        Some(_) => Sgr::Not,
    }
}

fn escape(b: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[
        b'\\',
        b'x',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 15)],
    ]);
}

/// Sanitizes `buf` into `out`; returns how many bytes were used (the rest, only when
/// `!eof`, is an incomplete sequence to hold).
fn run(buf: &[u8], keep: Keep, eof: bool, out: &mut Vec<u8>) -> usize {
    let mut i = 0;
    while i < buf.len() {
        let clean = i + first_unsafe(&buf[i..]);
        out.extend_from_slice(&buf[i..clean]);
        i = clean;
        if i == buf.len() {
            break;
        }
        let b = buf[i];
        match b {
            b'\r' => match buf.get(i + 1) {
                None if !eof => return i,
                Some(b'\n') => {
                    out.extend_from_slice(b"\r\n");
                    i += 2;
                }
                _ => {
                    out.push(b'\n');
                    i += 1;
                }
            },
            0x1b => match sgr(&buf[i..], eof) {
                Sgr::Whole(n) => {
                    if keep == Keep::Colour {
                        out.extend_from_slice(&buf[i..i + n]);
                    }
                    i += n;
                }
                Sgr::Partial => return i,
                Sgr::Not => {
                    escape(b, out);
                    i += 1;
                }
            },
            0x80.. => match utf8(&buf[i..], eof) {
                Utf8::Char(n) => {
                    // A C1 control (any other character was copied above).
                    for &byte in &buf[i..i + n] {
                        escape(byte, out);
                    }
                    i += n;
                }
                Utf8::Partial => return i,
                Utf8::Invalid => {
                    escape(b, out);
                    i += 1;
                }
            },
            _ => {
                escape(b, out);
                i += 1;
            }
        }
    }
    buf.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first loop [`first_unsafe`] had, byte by byte: the reference for its fast path.
    fn first_unsafe_bytewise(bytes: &[u8]) -> usize {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if safe(b) {
                i += 1;
                continue;
            }
            if b >= 0x80
                && let Utf8::Char(n) = utf8(&bytes[i..], true)
                && !is_c1(&bytes[i..i + n])
            {
                i += n;
                continue;
            }
            return i;
        }
        bytes.len()
    }

    #[test]
    fn the_printable_ascii_fast_path_finds_the_same_first_unsafe_byte() {
        let specials: [&[u8]; 8] = [
            b"\x1b[2J",
            b"\x07",
            b"\x7f",
            "é".as_bytes(),
            "\u{85}".as_bytes(),
            &[0xff],
            b"\n",
            b"\t",
        ];
        for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 50] {
            let plain: Vec<u8> = (0..len).map(|i| b' ' + (i % 95) as u8).collect();
            assert_eq!(first_unsafe(&plain), first_unsafe_bytewise(&plain));
            for at in 0..=len {
                for special in specials {
                    let mut text = plain.clone();
                    text.splice(at..at, special.iter().copied());
                    assert_eq!(
                        first_unsafe(&text),
                        first_unsafe_bytewise(&text),
                        "{text:?}"
                    );
                }
            }
        }
    }

    fn plain(text: &str) -> String {
        sanitize_str(text, Keep::Nothing).into_owned()
    }

    #[test]
    fn control_sequences_are_shown_escaped() {
        let cases = [
            ("a\x1b]52;c;aGk=\x07b", r"a\x1b]52;c;aGk=\x07b"),
            ("\x1b]52;c;aGk=\x1b\\x", r"\x1b]52;c;aGk=\x1b\x"),
            ("clear\x1b[2J\x1b[H", r"clear\x1b[2J\x1b[H"),
            ("erase\x1b[K", r"erase\x1b[K"),
            ("\x1b[?1049hscreen", r"\x1b[?1049hscreen"),
            ("\x1b[10;20Hmove", r"\x1b[10;20Hmove"),
            ("\x1bPq#0;2;0;0;0\x1b\\", r"\x1bPq#0;2;0;0;0\x1b\"),
            (
                "\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\",
                r"\x1b_apc\x1b\\x1b^pm\x1b\\x1bXsos\x1b\",
            ),
            ("bell\x07 bs\x08 del\x7f", r"bell\x07 bs\x08 del\x7f"),
            ("c1 \u{9b}2J", r"c1 \xc2\x9b2J"),
            ("bad \u{fffd}", "bad \u{fffd}"),
        ];
        for (input, expected) in cases {
            assert_eq!(plain(input), expected, "{input:?}");
        }
        assert_eq!(&*sanitize(b"raw \xff\xfe", Keep::Nothing), br"raw \xff\xfe");
    }

    #[test]
    fn colour_is_kept_only_when_asked() {
        let text = "\x1b[1;31mred\x1b[0m \x1b[38:5:196mx\x1b[m";
        assert_eq!(sanitize_str(text, Keep::Colour), text);
        assert_eq!(plain(text), "red x");
        assert_eq!(Keep::for_output(true, None), Keep::Colour);
        assert_eq!(Keep::for_output(true, Some("")), Keep::Colour);
        assert_eq!(Keep::for_output(true, Some("1")), Keep::Nothing);
        assert_eq!(Keep::for_output(false, None), Keep::Nothing);
    }

    #[test]
    fn carriage_returns_cannot_overwrite() {
        assert_eq!(plain("a\r\nb"), "a\r\nb");
        assert_eq!(plain("50%\r100%\n"), "50%\n100%\n");
        assert_eq!(plain("end\r"), "end\n");
    }

    #[test]
    fn printable_text_is_borrowed() {
        let text = "plain text, tabs\tand lines\n, ünïcödé 日本 🎉";
        assert!(matches!(
            sanitize_str(text, Keep::Nothing),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_sequence_split_across_chunks_is_handled_whole() {
        let text = "a\x1b[31mb\x1b]52;c;x\x07c\r\nd\u{e9}\r";
        for keep in [Keep::Colour, Keep::Nothing] {
            let whole = sanitize(text.as_bytes(), keep).into_owned();
            for cut in 0..=text.len() {
                let mut s = Sanitizer::new(keep);
                let mut out = Vec::new();
                s.push(&text.as_bytes()[..cut], &mut out);
                s.push(&text.as_bytes()[cut..], &mut out);
                s.finish(&mut out);
                assert_eq!(out, whole, "cut at {cut}");
            }
        }
    }
}

//! Secret-named assignments: `NAME=value`, `export NAME="value"`, `"name": "value"`,
//! `name: value`. The rules (and the reasons) are in the parent module's docs; this is
//! the hand-written form of the pattern
//! `\b NAME ["']? [ \t]* (:=|=|:) [ \t]* ("…"|'…'|${…}|\"…\"|unquoted)`.

use super::*;

/// Longest name looked at, each side of its fragment.
const NAME_MAX: usize = 128;
/// Longest run of blanks around a separator looked at.
const BLANKS_MAX: usize = 64;
/// How far back a line start is looked for.
const LINE_MAX: usize = 256;

/// The value of an assignment.
struct Value {
    /// The bytes masked.
    inner: (usize, usize),
    /// Where the value ends (after a closing quote).
    end: usize,
    quoted: bool,
    cont: Cont,
}

enum Step<T> {
    Done(T),
    Fail,
    /// The hay ended first.
    More,
}

pub(super) fn name(hay: &Hay<'_>, at: usize, flen: usize) -> Found {
    let buf = hay.buf;
    let more = !hay.eof;
    let wait = || open(at, buf.len(), Class::Value);
    let mut first = at;
    while first > 0 && Class::Name.has(buf[first - 1]) {
        if at - first >= NAME_MAX {
            return Found::Skip(at + 1);
        }
        first -= 1;
    }
    let name_end = run_end(buf, at + flen, Class::Name);
    if name_end - at > NAME_MAX {
        return Found::Skip(name_end);
    }
    if name_end == buf.len() {
        return if more { wait() } else { Found::Skip(name_end) };
    }
    // `\b[A-Za-z_]`: the first place in the run a name can start.
    let Some(start) = (first..=at).find(|&s| {
        (buf[s].is_ascii_alphabetic() || buf[s] == b'_') && (s == 0 || !Class::Word.has(buf[s - 1]))
    }) else {
        return Found::Skip(name_end);
    };
    let mut i = name_end;
    if matches!(buf[i], b'"' | b'\'') {
        i += 1;
    }
    let sp1 = i;
    i = run_end(buf, i, Class::Blank);
    let spaced1 = i > sp1;
    if i - sp1 > BLANKS_MAX {
        return Found::Skip(name_end);
    }
    // The separator: `:=`, `=` or `:`.
    let sep;
    match buf.get(i) {
        None if more => return wait(),
        Some(b'=') => {
            sep = b'=';
            i += 1;
        }
        Some(b':') => match buf.get(i + 1) {
            None if more => return wait(),
            Some(b'=') => {
                sep = b'=';
                i += 2;
            }
            _ => {
                sep = b':';
                i += 1;
            }
        },
        _ => return Found::Skip(name_end),
    }
    let sep_end = i;
    i = run_end(buf, i, Class::Blank);
    let spaced2 = i > sep_end;
    if i - sep_end > BLANKS_MAX {
        return Found::Skip(sep_end);
    }
    if i == buf.len() {
        return if more { wait() } else { Found::Skip(sep_end) };
    }
    // `name:value` (a JSON key, `host:port`) is masked only when quoted: decide before
    // parsing the value, since JSON lines are full of these.
    if sep == b':' && !spaced2 && !matches!(buf[i], b'"' | b'\'' | b'\\') {
        return Found::Skip(sep_end);
    }
    let value = match value(buf, i, more) {
        Step::Done(v) => v,
        Step::Fail => return Found::Skip(name_end),
        Step::More => {
            return Found::Open(Open {
                trigger: at,
                span_start: inner_start(buf, i),
                repl: Repl::Mask,
                cont: value_cont(buf, i),
            });
        }
    };
    let waiting = Found::Open(Open {
        trigger: at,
        span_start: value.inner.0,
        repl: Repl::Mask,
        cont: value.cont,
    });
    let inner = &buf[value.inner.0..value.inner.1];
    if inner.is_empty()
        || inner == MASK.as_bytes()
        || inner.starts_with(b"=")
        || is_reference(inner)
        || inner.starts_with(MARKER_PREFIX.as_bytes())
    {
        return Found::Skip(sep_end);
    }
    let masked = if value.quoted {
        true
    } else if is_keyword(inner) || matches!(buf.get(value.end), Some(b'(' | b'[')) {
        false
    } else if sep == b'=' && !spaced1 && !spaced2 {
        true
    } else if sep == b':' && !spaced2 {
        false
    } else {
        let line_ends = match line_ends(buf, value.end, more) {
            Step::Done(ends) => ends,
            Step::More => return waiting,
            Step::Fail => false,
        };
        if sep == b':' {
            spaced2 && line_ends
        } else {
            line_ends && line_start(buf, start, hay.bof)
        }
    };
    if masked {
        Found::Span(span(value.inner.0, value.inner.1, at), value.end)
    } else {
        Found::Skip(sep_end)
    }
}

/// Where the masked part of a value starting at `at` begins (after its opening quote).
fn inner_start(buf: &[u8], at: usize) -> usize {
    match buf.get(at) {
        Some(b'"' | b'\'') => at + 1,
        Some(b'\\') if buf.get(at + 1) == Some(&b'"') => at + 2,
        _ => at,
    }
}

/// How the rest of a value starting at `at` is recognised once it outgrows the bound.
fn value_cont(buf: &[u8], at: usize) -> Cont {
    match buf.get(at) {
        Some(b'"') => Cont::Quote(b'"'),
        Some(b'\'') => Cont::Quote(b'\''),
        Some(b'$') if buf.get(at + 1) == Some(&b'{') => Cont::Until(b'}'),
        Some(b'\\') => Cont::JsonQuote,
        _ => Cont::Run(Class::Value),
    }
}

fn value(buf: &[u8], at: usize, more: bool) -> Step<Value> {
    let need = |i: usize| i >= buf.len();
    let cont = value_cont(buf, at);
    let quoted = |inner: (usize, usize), end: usize| {
        Step::Done(Value {
            inner,
            end,
            quoted: true,
            cont,
        })
    };
    let end_or = |ok: bool| if ok { Step::More } else { Step::Fail };
    match buf[at] {
        b'"' => {
            let mut j = at + 1;
            loop {
                if need(j) {
                    return end_or(more);
                }
                match buf[j] {
                    b'"' => return quoted((at + 1, j), j + 1),
                    b'\n' => return Step::Fail,
                    b'\\' => {
                        if need(j + 1) {
                            return end_or(more);
                        }
                        if buf[j + 1] == b'\n' {
                            return Step::Fail;
                        }
                        j += 2;
                    }
                    _ => j += 1,
                }
            }
        }
        b'\'' => match memchr::memchr2(b'\'', b'\n', &buf[at + 1..]) {
            Some(k) if buf[at + 1 + k] == b'\'' => quoted((at + 1, at + 1 + k), at + 2 + k),
            Some(_) => Step::Fail,
            None => end_or(more),
        },
        b'$' if buf.get(at + 1) == Some(&b'{') => {
            match memchr::memchr2(b'}', b'\n', &buf[at + 2..]) {
                Some(k) if buf[at + 2 + k] == b'}' => Step::Done(Value {
                    inner: (at, at + 3 + k),
                    end: at + 3 + k,
                    quoted: false,
                    cont,
                }),
                Some(_) => unquoted(buf, at, more),
                None if more => Step::More,
                None => unquoted(buf, at, more),
            }
        }
        b'$' if need(at + 1) && more => Step::More,
        b'\\' if need(at + 1) && more => Step::More,
        b'\\' if buf[at + 1] == b'"' => {
            // A JSON-escaped quote: the value runs to the next `\"`.
            let mut j = at + 2;
            loop {
                if need(j) {
                    return end_or(more);
                }
                match buf[j] {
                    b'\\' => {
                        if need(j + 1) {
                            return end_or(more);
                        }
                        if buf[j + 1] == b'"' {
                            return quoted((at + 2, j), j + 2);
                        }
                        j += 2;
                    }
                    b'"' | b'\n' => return Step::Fail,
                    _ => j += 1,
                }
            }
        }
        _ => unquoted(buf, at, more),
    }
}

/// An unquoted value: `[^\s"'`,;&|(){}\[\]<>]+`, stopping before a JSON escape of a
/// line break, tab or quote (an escaped backslash is part of the value).
fn unquoted(buf: &[u8], at: usize, more: bool) -> Step<Value> {
    let mut j = at;
    loop {
        if j == buf.len() {
            if more {
                return Step::More;
            }
            break;
        }
        let b = buf[j];
        if b == b'\\' {
            match buf.get(j + 1) {
                None if more => return Step::More,
                Some(b'n' | b'r' | b't' | b'"') | None => break,
                Some(b'\\') => j += 2,
                Some(_) => j += 1,
            }
        } else if value_byte(b) {
            j += 1;
        } else {
            break;
        }
    }
    if j == at {
        return Step::Fail;
    }
    Step::Done(Value {
        inner: (at, j),
        end: j,
        quoted: false,
        cont: Cont::Run(Class::Value),
    })
}

/// Whether only blanks or a `#` comment follow on the line (a JSON-escaped line
/// break ends it too).
fn line_ends(buf: &[u8], at: usize, more: bool) -> Step<bool> {
    let mut k = at;
    while k < buf.len() && matches!(buf[k], b' ' | b'\t' | b'\r' | 0x0b | 0x0c) {
        k += 1;
    }
    match buf.get(k) {
        None if more => Step::More,
        None | Some(b'\n' | b'#') => Step::Done(true),
        Some(b'\\') => match buf.get(k + 1) {
            None if more => Step::More,
            Some(b'n' | b'r') => Step::Done(true),
            _ => Step::Done(false),
        },
        Some(_) => Step::Done(false),
    }
}

/// Whether the name at `start` begins its line, after blanks and an optional
/// `export`/`set`/`declare`/`local`/`readonly` (with flags) and an opening quote.
fn line_start(buf: &[u8], start: usize, bof: bool) -> bool {
    let floor = start.saturating_sub(LINE_MAX);
    let mut ls = start;
    loop {
        if ls == 0 && bof {
            break;
        }
        if ls > 0 && (buf[ls - 1] == b'\n' || (ls >= 2 && &buf[ls - 2..ls] == b"\\n")) {
            break;
        }
        if ls == floor {
            // No line start within reach: not a line of its own.
            return false;
        }
        ls -= 1;
    }
    let skip_blanks = |p: &[u8]| p.iter().take_while(|b| Class::Blank.has(**b)).count();
    let mut p = &buf[ls..start];
    p = &p[skip_blanks(p)..];
    for word in [&b"export"[..], b"set", b"declare", b"local", b"readonly"] {
        let Some(rest) = p.strip_prefix(word) else {
            continue;
        };
        let blanks = skip_blanks(rest);
        if blanks > 0 {
            let mut rest = &rest[blanks..];
            if let Some(flag) = rest.strip_prefix(b"-") {
                let letters = flag.iter().take_while(|b| b.is_ascii_alphabetic()).count();
                let after = &flag[letters..];
                let blanks = skip_blanks(after);
                if letters > 0 && blanks > 0 {
                    rest = &after[blanks..];
                }
            }
            p = rest;
        }
        break;
    }
    matches!(p, [] | [b'"'] | [b'\''])
}

fn is_keyword(value: &[u8]) -> bool {
    const KEYWORDS: [&[u8]; 8] = [
        b"true",
        b"false",
        b"null",
        b"none",
        b"nil",
        b"undefined",
        b"yes",
        b"no",
    ];
    KEYWORDS.iter().any(|k| value.eq_ignore_ascii_case(k))
}

/// `$NAME` or `${NAME}`: a reference to a value kept elsewhere.
fn is_reference(value: &[u8]) -> bool {
    let Some(rest) = value.strip_prefix(b"$") else {
        return false;
    };
    let rest = rest
        .strip_prefix(b"{")
        .and_then(|r| r.strip_suffix(b"}"))
        .unwrap_or(rest);
    !rest.is_empty() && rest.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

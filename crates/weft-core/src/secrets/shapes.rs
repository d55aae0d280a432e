//! Secret shapes: token prefixes, JWTs, PEM private keys, URL passwords, bearer tokens
//! and secret-named assignments (see the parent module for the rules).
//!
//! One Aho-Corasick automaton finds every *trigger* (a token prefix, `eyJ`, `-----BEGIN `,
//! `://`, `Bearer`, a name fragment such as `key`/`Key`/`KEY`); a detector per trigger then
//! checks the shape around it. Detectors look behind the trigger freely (the boundary
//! before a token, an assignment's name, a URL's scheme) but decide only on bytes up to
//! their end; when the hay ends inside a candidate and more may come, they say so
//! ([`Found::Open`]) instead of guessing.

use std::sync::LazyLock;

use crate::marker::MARKER_PREFIX;

use super::MASK;
use super::finder::Finder;

/// The bytes being scanned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hay<'a> {
    pub(crate) buf: &'a [u8],
    /// Nothing follows `buf`.
    pub(crate) eof: bool,
    /// `buf[0]` is the first byte of the text (nothing precedes it).
    pub(crate) bof: bool,
}

/// What a span is replaced with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repl {
    Mask,
    /// A PEM body: the text's own line break, `****`, the line break again.
    Pem(&'static str),
}

/// Bytes to mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) repl: Repl,
    /// Where the shape scan found the trigger behind this span (a rescan starts there).
    pub(crate) trigger: usize,
}

/// How the rest of a candidate that outgrew the hold bound is recognised while it is
/// dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cont {
    /// While bytes are in the class.
    Run(Class),
    /// Until `-----END ` (which is written).
    PemEnd,
    /// Until this quote (`"` honours backslash escapes) or a line break.
    Quote(u8),
    /// Until a JSON-escaped quote `\"`, an unescaped `"` or a line break.
    JsonQuote,
    /// Until this byte or a line break.
    Until(u8),
}

/// A candidate the hay ended inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Open {
    pub(crate) trigger: usize,
    /// The earliest byte a mask of this candidate could cover (`buf.len()` when the part
    /// seen so far is never masked).
    pub(crate) span_start: usize,
    /// If the candidate outgrows the hold bound: masked from `span_start` with this, and
    /// the rest dropped while `cont` holds.
    pub(crate) repl: Repl,
    pub(crate) cont: Cont,
}

/// A detector's answer.
#[derive(Debug)]
enum Found {
    /// Not this shape; search on from here.
    Skip(usize),
    /// Mask this; search on from here.
    Span(Span, usize),
    Open(Open),
}

/// Byte classes of the shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// `[A-Za-z0-9_-]`
    Tok,
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[A-Za-z0-9_]`
    Word,
    /// `[A-Za-z0-9-]`
    Slack,
    /// `[A-Z0-9]`
    Upper,
    /// `[A-Za-z0-9_.-]`: a JWT and its dots.
    Jwt,
    /// A URL's userinfo without `:`.
    User,
    /// A URL password.
    Password,
    /// `[A-Za-z0-9._~+/=-]`
    Bearer,
    /// An unquoted assignment value, backslashes excluded.
    Value,
    /// `[ \t]`
    Blank,
    /// `[A-Z0-9 ]`
    PemLabel,
    /// `[A-Za-z0-9_.-]`: a name.
    Name,
    /// `[A-Za-z0-9+.-]`: a URL scheme.
    Scheme,
}

impl Class {
    #[inline]
    pub(crate) fn has(self, b: u8) -> bool {
        match self {
            Class::Tok => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            Class::Alnum => b.is_ascii_alphanumeric(),
            Class::Word => b.is_ascii_alphanumeric() || b == b'_',
            Class::Slack => b.is_ascii_alphanumeric() || b == b'-',
            Class::Upper => b.is_ascii_uppercase() || b.is_ascii_digit(),
            Class::Jwt | Class::Name => {
                b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'
            }
            Class::User => password_byte(b) && b != b':',
            Class::Password => password_byte(b),
            Class::Bearer => {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
            }
            Class::Value => value_byte(b) && b != b'\\',
            Class::Blank => b == b' ' || b == b'\t',
            Class::PemLabel => b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ',
            Class::Scheme => b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'),
        }
    }
}

/// A byte a URL's userinfo may hold: anything but white space, the delimiters that end
/// it (`@ / ? #`) and the characters a URL never holds raw (quotes, backslashes,
/// brackets), so a mask cannot eat into the JSON or code around a URL.
#[inline]
fn password_byte(b: u8) -> bool {
    !(b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(
            b,
            b'@' | b'/'
                | b'?'
                | b'#'
                | b'"'
                | b'\\'
                | b'<'
                | b'>'
                | b'`'
                | b'{'
                | b'}'
                | b'|'
                | b'^'
                | b'['
                | b']'
        ))
}

/// `[^\s"'`,;&|(){}\[\]<>]`
#[inline]
fn value_byte(b: u8) -> bool {
    !(b.is_ascii_whitespace()
        || matches!(
            b,
            b'"' | b'\''
                | b'`'
                | b','
                | b';'
                | b'&'
                | b'|'
                | b'('
                | b')'
                | b'{'
                | b'}'
                | b'['
                | b']'
                | b'<'
                | b'>'
        ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A token prefix: its body class, minimum body length, whether a digit is required.
    Prefixed(Class, usize, bool),
    Aws,
    Jwt,
    Pem,
    Url,
    Bearer,
    Name,
}

const TRIGGERS: &[(&str, Kind)] = &[
    ("sk-", Kind::Prefixed(Class::Tok, 20, true)),
    ("ghp_", Kind::Prefixed(Class::Alnum, 30, false)),
    ("gho_", Kind::Prefixed(Class::Alnum, 30, false)),
    ("ghu_", Kind::Prefixed(Class::Alnum, 30, false)),
    ("ghs_", Kind::Prefixed(Class::Alnum, 30, false)),
    ("ghr_", Kind::Prefixed(Class::Alnum, 30, false)),
    ("github_pat_", Kind::Prefixed(Class::Word, 30, false)),
    ("glpat-", Kind::Prefixed(Class::Tok, 20, false)),
    ("xoxa-", Kind::Prefixed(Class::Slack, 10, true)),
    ("xoxb-", Kind::Prefixed(Class::Slack, 10, true)),
    ("xoxp-", Kind::Prefixed(Class::Slack, 10, true)),
    ("xoxr-", Kind::Prefixed(Class::Slack, 10, true)),
    ("xoxs-", Kind::Prefixed(Class::Slack, 10, true)),
    ("AKIA", Kind::Aws),
    ("ASIA", Kind::Aws),
    ("eyJ", Kind::Jwt),
    ("-----BEGIN ", Kind::Pem),
    ("://", Kind::Url),
    ("Bearer", Kind::Bearer),
    ("bearer", Kind::Bearer),
    // Name fragments (`is_secret_name`) in the casings names use.
    ("key", Kind::Name),
    ("Key", Kind::Name),
    ("KEY", Kind::Name),
    ("token", Kind::Name),
    ("Token", Kind::Name),
    ("TOKEN", Kind::Name),
    ("secret", Kind::Name),
    ("Secret", Kind::Name),
    ("SECRET", Kind::Name),
    ("password", Kind::Name),
    ("Password", Kind::Name),
    ("PASSWORD", Kind::Name),
];

/// The longest trigger.
pub(crate) const MAX_TRIGGER_LEN: usize = 11;

/// Where the name fragments begin in [`TRIGGERS`].
const NAMES_FROM: usize = 20;

/// Two searchers, shapes and name fragments: Teddy is several times faster on two sets of
/// 20 and 12 literals than on one of 32.
static FINDERS: LazyLock<[Finder; 2]> = LazyLock::new(|| {
    let patterns: Vec<&str> = TRIGGERS.iter().map(|(t, _)| *t).collect();
    [
        Finder::new(&patterns[..NAMES_FROM], false),
        Finder::new(&patterns[NAMES_FROM..], false),
    ]
});

/// The next trigger at or after a position, from both searchers; each one's next match is
/// kept until the search passes it.
struct Triggers<'a> {
    buf: &'a [u8],
    next: [Option<(usize, usize, usize)>; 2],
    /// Where each searcher's `next` was searched from.
    from: [usize; 2],
}

impl<'a> Triggers<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            next: [None; 2],
            from: [usize::MAX; 2],
        }
    }

    /// The leftmost trigger starting at or after `pos`: (index in `TRIGGERS`, start, end).
    fn find(&mut self, pos: usize) -> Option<(usize, usize, usize)> {
        for i in 0..2 {
            let stale = self.from[i] == usize::MAX
                || self.from[i] > pos
                || self.next[i].is_some_and(|m| m.1 < pos);
            if stale {
                self.from[i] = pos;
                self.next[i] = FINDERS[i].find(self.buf, pos);
            }
        }
        match (self.next[0], self.next[1]) {
            (Some(a), Some(b)) if b.1 < a.1 => Some((b.0 + NAMES_FROM, b.1, b.2)),
            (Some(a), _) => Some(a),
            (None, Some(b)) => Some((b.0 + NAMES_FROM, b.1, b.2)),
            (None, None) => None,
        }
    }
}

#[test]
fn the_longest_trigger_is_known() {
    assert_eq!(
        TRIGGERS.iter().map(|(t, _)| t.len()).max(),
        Some(MAX_TRIGGER_LEN)
    );
    assert!(TRIGGERS[..NAMES_FROM].iter().all(|(_, k)| *k != Kind::Name));
    assert!(TRIGGERS[NAMES_FROM..].iter().all(|(_, k)| *k == Kind::Name));
}

/// Every shape span at or after `from` into `spans`; the candidate the scan stopped at, if
/// the hay ended inside one, with where output must be held from. `resume` is set to where
/// the search for triggers went on after the last one (a later scan must not start before
/// it: that would find triggers inside a span or a skipped name).
pub(crate) fn find(
    hay: &Hay<'_>,
    from: usize,
    spans: &mut Vec<Span>,
    resume: &mut usize,
) -> Option<(Open, usize)> {
    let mut pos = from;
    let found = scan_from(hay, &mut pos, spans);
    *resume = pos;
    if found.is_some() {
        return found;
    }
    if hay.eof {
        return None;
    }
    partial_jwt(hay)
}

/// The trigger loop: each trigger's detector decides, and the search goes on after the
/// trigger or where the detector says (after a span, after a rejected name). Triggers that
/// overlap the one just looked at are not looked at.
fn scan_from(hay: &Hay<'_>, pos: &mut usize, spans: &mut Vec<Span>) -> Option<(Open, usize)> {
    let buf = hay.buf;
    let mut triggers = Triggers::new(buf);
    while let Some((pattern, at, end)) = triggers.find(*pos) {
        let kind = TRIGGERS[pattern].1;
        let next = match detect(hay, at, end - at, kind) {
            Found::Skip(next) => {
                let cut = before_pem(buf, end, next, kind);
                if cut >= buf.len()
                    && !hay.eof
                    && buf.len() - at <= super::HOLD
                    && ends_in_begin_prefix(buf, end, kind)
                {
                    // The run this shape skips reaches the end of what has arrived, and
                    // that end may be the start of a key's BEGIN line, which would end
                    // the run (`before_pem`). The next bytes tell: the search starts at
                    // this trigger again then, as a whole-text scan would have gone on.
                    // A skipped run has no mask, so nothing is held (`span_start` at the
                    // end); the BEGIN line itself is never masked. Bounded: a stream
                    // keeps the run from its trigger on, so a run longer than `HOLD` is
                    // decided at the cut as before (a key after 16 KiB of one run, cut
                    // inside its BEGIN line, is the case this does not cover).
                    *pos = at;
                    let open = Open {
                        trigger: at,
                        span_start: buf.len(),
                        // Never used: with nothing held, the stream never finds this
                        // candidate held too long (which masks and drops with these).
                        repl: Repl::Mask,
                        cont: Cont::PemEnd,
                    };
                    return Some((open, buf.len()));
                }
                cut
            }
            Found::Span(mut span, next) => {
                let cut = before_pem(buf, end, next, kind);
                if cut < next {
                    span.end = span.end.min(cut);
                }
                if span.end > span.start {
                    spans.push(span);
                }
                cut
            }
            Found::Open(open) => {
                // If this candidate turns out not to be one, the search goes on after its
                // trigger: any later trigger may start a mask.
                let later = triggers.find(end).map_or(buf.len(), |m| m.1);
                *pos = at;
                return Some((open, open.span_start.min(later)));
            }
        };
        *pos = next.max(end);
    }
    None
}

/// Where the trigger search goes on after a shape whose trigger ends at `from` and which
/// says to go on at `next`: at the first PEM BEGIN line between the two, if there is one.
///
/// Why: `-` is a byte of tokens, JWTs and names, so a token, a JWT or a would-be name
/// written right before a private key reads on into its `-----BEGIN` (up to the space),
/// and the search went on after it: the key's BEGIN line was never looked at and its
/// body came out whole (`eyJ….…-----BEGIN RSA PRIVATE KEY-----`, or an END line then a
/// BEGIN line, where `KEY-----…-----BEGIN` reads as a name). Now the other shape's mask
/// ends where the BEGIN line starts, and the key is looked at. A PEM key's own body is
/// left whole: a BEGIN line inside it does not end its mask.
fn before_pem(buf: &[u8], from: usize, next: usize, kind: Kind) -> usize {
    if kind == Kind::Pem || next <= from {
        return next;
    }
    // A BEGIN line starting before `next` may end after it (the other shape stops at
    // its space).
    let window = &buf[from..(next + PEM_BEGIN.len() - 1).min(buf.len())];
    match memchr::memmem::find(window, PEM_BEGIN) {
        Some(i) if from + i < next => from + i,
        _ => next,
    }
}

/// The start of a private key's BEGIN line (a run of other shapes ends before it).
pub(crate) const PEM_BEGIN: &[u8] = b"-----BEGIN ";

/// Whether `buf`, after `from`, ends with the first bytes (not all) of a BEGIN line: a
/// line a stream may still complete. A PEM key's own run is not cut by one.
fn ends_in_begin_prefix(buf: &[u8], from: usize, kind: Kind) -> bool {
    kind != Kind::Pem
        && (1..PEM_BEGIN.len()).any(|n| buf.len() - from >= n && buf.ends_with(&PEM_BEGIN[..n]))
}

/// A JWT's mask starts at its trigger: a trailing `e` or `ey` is held.
fn partial_jwt(hay: &Hay<'_>) -> Option<(Open, usize)> {
    let buf = hay.buf;
    let len = buf.len();
    let partial = if buf.ends_with(b"ey") {
        2
    } else if buf.ends_with(b"e") {
        1
    } else {
        0
    };
    if partial > 0 && boundary_before(hay, len - partial, Class::Jwt) {
        let at = len - partial;
        return Some((
            Open {
                trigger: at,
                span_start: at,
                repl: Repl::Mask,
                cont: Cont::Run(Class::Jwt),
            },
            at,
        ));
    }
    None
}

fn detect(hay: &Hay<'_>, at: usize, len: usize, kind: Kind) -> Found {
    match kind {
        Kind::Prefixed(class, min, digit) => prefixed(hay, at, len, class, min, digit),
        Kind::Aws => aws(hay, at),
        Kind::Jwt => jwt(hay, at),
        Kind::Pem => pem(hay, at),
        Kind::Url => url(hay, at),
        Kind::Bearer => bearer(hay, at),
        Kind::Name => assign::name(hay, at, len),
    }
}

/// The end of the run of `class` bytes starting at `from`.
#[inline]
pub(crate) fn run_end(buf: &[u8], from: usize, class: Class) -> usize {
    let mut i = from;
    while i < buf.len() && class.has(buf[i]) {
        i += 1;
    }
    i
}

/// Whether a shape may start at `at`: the byte before is not in `class`, or is the letter
/// of a JSON escape (`\n`, `\t`, `\r`), or there is none.
fn boundary_before(hay: &Hay<'_>, at: usize, class: Class) -> bool {
    let buf = hay.buf;
    if at == 0 {
        return true;
    }
    let prev = buf[at - 1];
    if !class.has(prev) {
        return true;
    }
    matches!(prev, b'n' | b't' | b'r') && odd_backslashes_before(buf, at - 1)
}

/// Whether the run of backslashes ending just before `at` is odd (so `buf[at]` is
/// escaped).
fn odd_backslashes_before(buf: &[u8], at: usize) -> bool {
    let mut n = 0;
    let mut i = at;
    while i > 0 && buf[i - 1] == b'\\' {
        n += 1;
        i -= 1;
    }
    n % 2 == 1
}

/// Shrinks a span so it never splits a JSON escape: not starting on an escaped byte, not
/// ending after the backslash of an escape.
pub(crate) fn json_safe(buf: &[u8], span: &mut Span) {
    if span.start < span.end && odd_backslashes_before(buf, span.start) && buf[span.start] < 0x80 {
        span.start += 1;
    }
    if span.start < span.end
        && buf[span.end - 1] == b'\\'
        && !odd_backslashes_before(buf, span.end - 1)
    {
        span.end -= 1;
    }
}

fn open(trigger: usize, span_start: usize, class: Class) -> Found {
    Found::Open(Open {
        trigger,
        span_start,
        repl: Repl::Mask,
        cont: Cont::Run(class),
    })
}

/// A prefixed token: `sk-…`, `ghp_…`, `glpat-…`, `xoxb-…`. The prefix stays visible.
fn prefixed(hay: &Hay<'_>, at: usize, tlen: usize, body: Class, min: usize, digit: bool) -> Found {
    if !boundary_before(hay, at, Class::Tok) {
        return Found::Skip(at + 1);
    }
    let start = at + tlen;
    let end = run_end(hay.buf, start, body);
    if end == hay.buf.len() && !hay.eof {
        return open(at, start, body);
    }
    let token = &hay.buf[start..end];
    if token.len() >= min && (!digit || token.iter().any(u8::is_ascii_digit)) {
        Found::Span(span(start, end, at), end)
    } else {
        Found::Skip(at + 1)
    }
}

fn span(start: usize, end: usize, trigger: usize) -> Span {
    Span {
        start,
        end,
        repl: Repl::Mask,
        trigger,
    }
}

/// An AWS access key id: `AKIA`/`ASIA` + exactly 16 of `[A-Z0-9]`, alone.
fn aws(hay: &Hay<'_>, at: usize) -> Found {
    if !boundary_before(hay, at, Class::Alnum) {
        return Found::Skip(at + 1);
    }
    let start = at + 4;
    let end = run_end(hay.buf, start, Class::Upper);
    if end - start > 16 {
        return Found::Skip(at + 1);
    }
    if end == hay.buf.len() && !hay.eof {
        return open(at, start, Class::Upper);
    }
    let alone = hay.buf.get(end).is_none_or(|b| !b.is_ascii_alphanumeric());
    if end - start == 16 && alone {
        Found::Span(span(start, end, at), end)
    } else {
        Found::Skip(at + 1)
    }
}

/// A JWT: `eyJ…` `.` `…` `.` `…` (and any further `.part`), masked whole.
fn jwt(hay: &Hay<'_>, at: usize) -> Found {
    if !boundary_before(hay, at, Class::Jwt) {
        return Found::Skip(at + 1);
    }
    let buf = hay.buf;
    let more = !hay.eof;
    let open_here = || open(at, at, Class::Jwt);
    let mut end = at;
    for (part, min) in [10usize, 2, 8].into_iter().enumerate() {
        let start = if part == 0 { at } else { end + 1 };
        if part > 0 {
            match buf.get(end) {
                Some(b'.') => {}
                None if more => return open_here(),
                _ => return Found::Skip(at + 1),
            }
        }
        end = run_end(buf, start, Class::Tok);
        if end == buf.len() && more {
            return open_here();
        }
        if end - start < min {
            return Found::Skip(at + 1);
        }
    }
    // Further non-empty `.part`s belong to it too (a JWE has five).
    while buf.get(end) == Some(&b'.') {
        let next = run_end(buf, end + 1, Class::Tok);
        if next == buf.len() && more {
            return open_here();
        }
        if next == end + 1 {
            break;
        }
        end = next;
    }
    Found::Span(span(at, end, at), end)
}

const PEM_END: &[u8] = b"-----END ";

/// Whether a PEM label (`RSA PRIVATE KEY`, …) followed by `-----` starts at `from`:
/// `Some(end of the line's dashes)`, `None` when it cannot, `Err` when the hay ends first.
fn pem_label(buf: &[u8], from: usize) -> Result<Option<usize>, ()> {
    let end = run_end(buf, from, Class::PemLabel);
    if end - from > 64 {
        return Ok(None);
    }
    if end == buf.len() {
        return Err(());
    }
    let label = &buf[from..end];
    if !(label.ends_with(b"PRIVATE KEY") || label.ends_with(b"PRIVATE KEY BLOCK")) {
        return Ok(None);
    }
    let dashes = &buf[end..buf.len().min(end + 5)];
    if dashes.len() < 5 {
        return if b"-----".starts_with(dashes) {
            Err(())
        } else {
            Ok(None)
        };
    }
    Ok((dashes == b"-----").then_some(end + 5))
}

/// A PEM private key: the BEGIN line stays, the body to the END line is masked.
fn pem(hay: &Hay<'_>, at: usize) -> Found {
    let buf = hay.buf;
    let more = !hay.eof;
    let header_end = match pem_label(buf, at + 11) {
        Ok(Some(end)) => end,
        Ok(None) => return Found::Skip(at + 1),
        Err(()) if more => {
            return Found::Open(Open {
                trigger: at,
                span_start: buf.len(),
                repl: Repl::Mask,
                cont: Cont::PemEnd,
            });
        }
        Err(()) => return Found::Skip(at + 1),
    };
    let rest = &buf[header_end..];
    if rest.len() < 4 && more {
        return Found::Open(Open {
            trigger: at,
            span_start: header_end,
            repl: Repl::Pem("\n"),
            cont: Cont::PemEnd,
        });
    }
    let nl = [r"\r\n", r"\n", "\r\n", "\n"]
        .into_iter()
        .find(|nl| rest.starts_with(nl.as_bytes()))
        .unwrap_or("");
    let repl = Repl::Pem(nl);
    for i in memchr::memmem::find_iter(rest, PEM_END).map(|i| header_end + i) {
        match pem_label(buf, i + PEM_END.len()) {
            Ok(Some(_)) => {
                return Found::Span(
                    Span {
                        start: header_end,
                        end: i,
                        repl,
                        trigger: at,
                    },
                    i,
                );
            }
            Ok(None) => {}
            Err(()) if more => break,
            Err(()) => {}
        }
    }
    if more {
        return Found::Open(Open {
            trigger: at,
            span_start: header_end,
            repl,
            cont: Cont::PemEnd,
        });
    }
    Found::Span(
        Span {
            start: header_end,
            end: buf.len(),
            repl,
            trigger: at,
        },
        buf.len(),
    )
}

/// Longest URL scheme and user name looked at.
const SCHEME_MAX: usize = 32;
const USER_MAX: usize = 256;

/// A URL's password: `scheme://user:PASSWORD@`.
fn url(hay: &Hay<'_>, at: usize) -> Found {
    let buf = hay.buf;
    let more = !hay.eof;
    // The scheme: `\b[A-Za-z][A-Za-z0-9+.-]*` right before `://`.
    let mut first = at;
    while first > 0 && at - first < SCHEME_MAX && Class::Scheme.has(buf[first - 1]) {
        first -= 1;
    }
    let starts = (first..at)
        .find(|&s| buf[s].is_ascii_alphabetic() && (s == 0 || !Class::Word.has(buf[s - 1])));
    if starts.is_none() {
        return Found::Skip(at + 1);
    }
    let user = at + 3;
    let user_end = run_end(buf, user, Class::User);
    if user_end - user > USER_MAX {
        return Found::Skip(at + 1);
    }
    if user_end == buf.len() {
        return if more {
            open(at, buf.len(), Class::Password)
        } else {
            Found::Skip(at + 1)
        };
    }
    if buf[user_end] != b':' {
        return Found::Skip(at + 1);
    }
    let password = user_end + 1;
    let end = run_end(buf, password, Class::Password);
    if end == buf.len() && more {
        return open(at, password, Class::Password);
    }
    if end > password && buf.get(end) == Some(&b'@') {
        Found::Span(span(password, end, at), end)
    } else {
        Found::Skip(at + 1)
    }
}

/// `Bearer TOKEN`: the token (8 or more characters and its `=` padding) is masked.
fn bearer(hay: &Hay<'_>, at: usize) -> Found {
    let buf = hay.buf;
    let more = !hay.eof;
    if !boundary_before(hay, at, Class::Word) {
        return Found::Skip(at + 1);
    }
    let blank = at + 6;
    let start = run_end(buf, blank, Class::Blank);
    if start == buf.len() {
        return if more && start - blank <= 64 {
            open(at, buf.len(), Class::Bearer)
        } else {
            Found::Skip(at + 1)
        };
    }
    if start == blank {
        return Found::Skip(at + 1);
    }
    let mut end = run_end(buf, start, Class::Bearer);
    if end - start < 8 {
        return if end == buf.len() && more {
            open(at, start, Class::Bearer)
        } else {
            Found::Skip(at + 1)
        };
    }
    while buf.get(end) == Some(&b'=') {
        end += 1;
    }
    if end == buf.len() && more {
        return open(at, start, Class::Bearer);
    }
    Found::Span(span(start, end, at), end)
}

mod assign;

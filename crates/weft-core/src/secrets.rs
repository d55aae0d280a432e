//! Secrets: which environment values are secret, and the one masker that hides them in
//! everything weft captures or shows (output logs, tails, verdicts, events, research
//! results, previews).
//!
//! # What is masked
//!
//! [`Masker`] finds, in any text or byte stream:
//!
//! - **known values**: the values of secret-named variables ([`secret_values`]), exactly as
//!   written, and their **base64** (standard and URL-safe alphabets, with or without
//!   padding, at each of the three byte alignments, so a secret is found inside a longer
//!   base64 blob too). Only the characters that depend on the secret alone are matched, so
//!   one or two characters at either end of an encoded secret (which mix in a few bits of
//!   the secret with its neighbours) stay visible; the secret does not. Values shorter than
//!   [`MIN_SECRET_LEN`] are ignored, base64 forms of values shorter than
//!   [`MIN_BASE64_SECRET_LEN`] too.
//! - **token shapes**, each with a minimum length and a boundary before it, so ordinary text
//!   (hex shas, UUIDs, paths, `desk-top`) is left alone. The well-known prefix stays
//!   visible (`ghp_****`), the rest is masked:
//!   - `sk-` + at least 20 of `[A-Za-z0-9_-]` with a digit among them (OpenAI, Anthropic
//!     `sk-ant-…`, `sk-proj-…`);
//!   - `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` + at least 30 alphanumerics; `github_pat_` + at
//!     least 30 of `[A-Za-z0-9_]`; `glpat-` + at least 20 of `[A-Za-z0-9_-]`;
//!   - `xoxa-`/`xoxb-`/`xoxp-`/`xoxr-`/`xoxs-` + at least 10 of `[A-Za-z0-9-]` with a digit;
//!   - `AKIA`/`ASIA` + exactly 16 of `[A-Z0-9]`;
//!   - JWTs: `eyJ…` three (or more) base64url parts joined by dots (at least 10, 2 and 8
//!     characters), masked whole;
//!   - PEM private keys: from a `-----BEGIN … PRIVATE KEY-----` line to its
//!     `-----END … PRIVATE KEY-----` (or the end of the text); both marker lines stay, the
//!     body becomes `****` between line breaks of the kind the text uses (a JSON-escaped
//!     `\n` stays escaped, so a JSON line stays one valid line);
//!   - the password of a URL: `scheme://user:PASSWORD@host` (the user may be empty);
//!   - a `Bearer` token (at least 8 characters);
//! - **secret-named assignments**: the value of `NAME=value`, `export NAME="…"`,
//!   `"name": "…"`, `name: value`, … whose name is secret-like ([`is_secret_name`]). This
//!   rule errs towards leaving code alone: an unquoted value is masked only in the shapes
//!   configuration uses (`NAME=value` without spaces, a whole `NAME = value` line,
//!   `name: value` ending its line), not when it is followed by a call or an index
//!   (`token = get_token()`, `api_key = os.environ["KEY"]`), nor when it is a keyword
//!   (`true`, `null`, …), a variable reference (`$TOKEN`, `${TOKEN}`) or a weft completion
//!   marker (`WEFT_DONE_…`, which is weft's own and must stay readable).
//!
//! Masks never split a JSON escape (`\"`, `\n`), so a masked JSON line still parses.
//!
//! # Streams
//!
//! [`StreamMasker`] masks a byte stream that arrives in arbitrary chunks and gives exactly
//! the output [`Masker::mask_bytes`] gives for the whole stream, as long as no single
//! candidate is longer than the hold bound: it holds back only the bytes that could still
//! become (part of) a mask. The bound is [`Masker::hold_bound`]:
//! `max(HOLD, longest known value and base64 form)` bytes past the last byte written, plus
//! [`CONTEXT`] bytes already written that are kept for look-behind (the boundary before a
//! token, an assignment's name, a URL's scheme). A candidate that outgrows the bound is
//! decided on the safe side: it is masked from where its mask would begin, and the rest of
//! it is dropped as it arrives until it ends (a PEM block longer than the bound is masked
//! from its BEGIN line on until its `-----END`; a URL password candidate is masked even if
//! no `@` follows).
//!
//! Everything here is pure: no I/O, no clock.

mod exact;
mod finder;
mod shapes;
mod stream;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

pub use exact::encode_base64;
pub use stream::StreamMasker;

use shapes::{Hay, Repl, Span};

/// What a masked secret is replaced with.
pub const MASK: &str = "****";

/// Known values shorter than this are not masked: they would mask ordinary text (an env
/// value like `MAX_TOKENS=8` is not a secret worth hiding every `8` for).
pub const MIN_SECRET_LEN: usize = 4;

/// Known values shorter than this are not looked for in base64: a short encoded fragment
/// would match ordinary text by chance.
pub const MIN_BASE64_SECRET_LEN: usize = 8;

/// How far past the last byte written a [`StreamMasker`] holds back a candidate before it
/// decides it on the safe side (raised to the longest known value).
pub const HOLD: usize = 16 * 1024;

/// Bytes already written that a [`StreamMasker`] keeps for look-behind.
pub const CONTEXT: usize = 512;

/// Name fragments that mark a variable's value as secret.
const SECRET_NAME_PARTS: [&str; 4] = ["KEY", "TOKEN", "SECRET", "PASSWORD"];

pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// The values to mask among `vars` (short values are skipped: masking "1" everywhere
/// would destroy logs and hide nothing).
pub fn secret_values<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let values: Vec<String> = vars
        .into_iter()
        .filter(|(name, _)| is_secret_name(name))
        .map(|(_, value)| value.to_owned())
        .collect();
    prepare(&values)
}

/// `values` without the ones shorter than [`MIN_SECRET_LEN`], longest first (so a secret
/// containing another is masked whole), without duplicates.
pub fn prepare(values: &[String]) -> Vec<String> {
    let mut out: Vec<String> = values
        .iter()
        .filter(|v| v.len() >= MIN_SECRET_LEN)
        .cloned()
        .collect();
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

/// `text` with every known secret (`secrets`), token shape and secret-named assignment
/// masked (see the module docs). Builds a [`Masker`] each time: keep one where the same
/// secrets mask many texts.
pub fn mask(text: &str, secrets: &[String]) -> String {
    Masker::new(secrets).mask(text).into_owned()
}

/// How an environment variable is shown: its value, or `****` for secrets.
pub fn shown_value(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        MASK.into()
    } else {
        value.to_owned()
    }
}

/// The one masker: known values (and their base64), token shapes and secret-named
/// assignments. Cheap to clone; `Default` masks shapes and assignments only.
#[derive(Clone, Default)]
pub struct Masker {
    exact: Arc<exact::Exact>,
}

impl fmt::Debug for Masker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Masker")
            .field("known_values", &self.exact.values())
            .finish()
    }
}

impl Masker {
    /// A masker for these known secret values (short ones are ignored, see
    /// [`MIN_SECRET_LEN`]) and every shape.
    pub fn new(values: &[String]) -> Self {
        Self {
            exact: Arc::new(exact::Exact::new(&prepare(values))),
        }
    }

    /// How many known values this masker looks for.
    pub fn known_values(&self) -> usize {
        self.exact.values()
    }

    /// The most bytes past the last one written a [`StreamMasker`] holds back.
    pub fn hold_bound(&self) -> usize {
        HOLD.max(self.exact.longest())
    }

    /// `text` masked; borrowed when nothing was found.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.mask_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Masks start and end on ASCII bytes or whole UTF-8 values, so this cannot
            // fail; stay lossy rather than panic all the same.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// `bytes` masked; borrowed when nothing was found.
    pub fn mask_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let hay = Hay {
            buf: bytes,
            eof: true,
            bof: true,
        };
        let found = self.scan(&hay, 0, 0);
        if found.spans.is_empty() {
            return Cow::Borrowed(bytes);
        }
        let mut out = Vec::with_capacity(bytes.len());
        write_masked(bytes, 0, bytes.len(), &found.spans, &mut out);
        Cow::Owned(out)
    }

    /// Every mask in `hay` (shapes from `shape_from`, known values from `exact_from`),
    /// merged, and where output must be held back when the hay is not at its end.
    fn scan(&self, hay: &Hay<'_>, shape_from: usize, exact_from: usize) -> Scan {
        let mut shape_spans = Vec::new();
        let mut resume = shape_from;
        let open = shapes::find(hay, shape_from, &mut shape_spans, &mut resume);
        let mut exact_spans = Vec::new();
        self.exact.find(hay.buf, exact_from, &mut exact_spans);
        let mut hold = hay.buf.len();
        if !hay.eof {
            hold = hold.min(self.exact.hold(hay.buf));
            if let Some((_, bound)) = &open {
                hold = hold.min(*bound);
            }
        }
        for span in shape_spans.iter_mut().chain(exact_spans.iter_mut()) {
            shapes::json_safe(hay.buf, span);
        }
        Scan {
            spans: merge(shape_spans, exact_spans),
            open: open.map(|(open, _)| open),
            hold,
            resume,
        }
    }
}

/// What one scan found.
#[derive(Debug)]
struct Scan {
    /// Sorted, disjoint, non-empty.
    spans: Vec<Span>,
    /// The candidate the shape scan stopped at because the hay ended inside it.
    open: Option<shapes::Open>,
    /// Output from here on may still change with more input.
    hold: usize,
    /// Where the shape scan's search for triggers stopped.
    resume: usize,
}

/// The union of two sorted span lists (spans that only touch stay apart, so a stream cut
/// between them gives the same output); a merged span takes the replacement of the one
/// that starts first (the longer on a tie).
fn merge(a: Vec<Span>, b: Vec<Span>) -> Vec<Span> {
    let mut all: Vec<Span> = a.into_iter().chain(b).filter(|s| s.start < s.end).collect();
    all.sort_by(|x, y| x.start.cmp(&y.start).then(y.end.cmp(&x.end)));
    let mut merged: Vec<Span> = Vec::with_capacity(all.len());
    for span in all {
        match merged.last_mut() {
            Some(last) if span.start < last.end => {
                last.end = last.end.max(span.end);
                last.trigger = last.trigger.min(span.trigger);
            }
            _ => merged.push(span),
        }
    }
    merged
}

/// Appends `buf[from..to]` to `out` with the spans inside it replaced.
fn write_masked(buf: &[u8], from: usize, to: usize, spans: &[Span], out: &mut Vec<u8>) {
    let mut at = from;
    for span in spans {
        if span.end <= from || span.start >= to {
            continue;
        }
        let start = span.start.max(at);
        out.extend_from_slice(&buf[at..start]);
        span.repl.write(out);
        at = span.end.min(to);
    }
    out.extend_from_slice(&buf[at..to]);
}

impl Repl {
    fn write(self, out: &mut Vec<u8>) {
        match self {
            Repl::Mask => out.extend_from_slice(MASK.as_bytes()),
            Repl::Pem(nl) => {
                out.extend_from_slice(nl.as_bytes());
                out.extend_from_slice(MASK.as_bytes());
                out.extend_from_slice(nl.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests;

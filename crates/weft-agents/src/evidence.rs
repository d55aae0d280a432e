//! Marker evidence: did the agent print its completion marker?
//!
//! [`MarkerScanner`] watches an output stream as it arrives, in chunks of any size split
//! anywhere (inside a UTF-8 character, inside an escape sequence, inside the marker), and
//! reports the first [`View`] in which the marker appeared:
//!
//! - **raw**: the bytes as they came;
//! - **flattened**: the bytes with every ANSI escape sequence removed (CSI, OSC and the other
//!   string sequences DCS/SOS/PM/APC, two- and three-byte ESC sequences), C0/C1 control
//!   characters and DEL removed, box-drawing and block characters (U+2500–U+259F) removed,
//!   and all whitespace and invisible format characters removed: exactly the characters
//!   [`weft_core::marker::is_ignorable`] names, the set [`weft_core::defuse`] reads past
//!   (one definition, so defused text cannot match here). So
//!   `WEFT_DO\x1b[1mNE_…`, a marker wrapped across lines by a TUI, or one drawn inside a
//!   `│ … │` frame still matches;
//! - **rendered**: the visible screen of a terminal emulator (`vt100`, default 50 rows ×
//!   250 columns, no scrollback) fed the same bytes, its cells read row by row and flattened
//!   the same way. This reassembles markers a TUI paints in fragments with cursor moves
//!   (`\x1b[5;10HWEFT_DONE_` … `\x1b[5;20H0123…`), backspaces or carriage returns.
//!
//! [`text_contains_marker`] answers the same question for a whole text (assistant text, a
//! final result, a transcript) with the raw and flattened views.
//!
//! # Bounded cost and memory
//!
//! The two linear views keep only the last `token.len() - 1` bytes of their view between
//! chunks, plus at most a few bytes of an unfinished UTF-8 character, and a scratch buffer of
//! [`BLOCK`] bytes (input is flattened in blocks of at most that size, whatever the chunk
//! size). Escape sequences are bounded too: a CSI longer than 64 parameter bytes or a string
//! sequence (OSC …) longer than 4096 bytes is abandoned and the bytes after it count as text
//! again, so a stray `ESC ]` cannot hide the rest of the stream.
//!
//! The raw view is a prebuilt `memmem` finder plus a seam check across chunk boundaries.
//! The flattened view does not flatten everything: a match must begin with the token's
//! first byte, kept, outside any escape sequence, and the flattener's state right after any
//! ESC byte is the same whatever preceded it. So it jumps with `memchr` from one occurrence
//! of the first byte to the next, works out the state there from the last ESC before it
//! (at most one bounded sequence to follow), rejects most candidates by comparing raw
//! bytes, and flattens in full only from a candidate that may really begin the token, until
//! no flattened suffix is a prefix of the token any more; where candidates crowd, it
//! flattens whole blocks instead. Flattening itself compacts 16 or 8 bytes at a time
//! without branches while none is ESC or non-ASCII, and skips ordinary CSI sequences and
//! whole UTF-8 characters in one step. On agent output this runs at several GB/s; text
//! dense in the token's first byte (`W`) falls back to the full flattening speed, about
//! 1 GB/s (`benches/marker_scan.rs`).
//!
//! The rendered view feeds every byte to the emulator (the grid is fixed: rows × cols
//! cells of 32 bytes, about 400 KB at the default size; the emulator's OSC buffer is kept
//! under 4 KiB by cancelling over-long string sequences with CAN, which also lets it show
//! text again after a stray `ESC P`). Reading the screen costs about one pass over its
//! cells, so it is done only when it can find something the linear views could not, and
//! not too often:
//!
//! - the screen is *dirty* once a sequence that moves the cursor or shifts cells has been
//!   seen since the last read: a CSI cursor move, scroll, insertion or deletion (final
//!   byte in ``A–I L M P S T X Z @ ` a b d e f r s u``), `ESC 7 8 D E M`, backspace, or a
//!   carriage return not followed by a line feed. Output without these is linear, and
//!   the linear views already see everything it shows;
//! - a dirty screen is read at the end of a [`MarkerScanner::feed`] once at least
//!   `scan_gap` bytes (default 4 KiB) have been fed since the last read (the first dirty
//!   chunk, and any dirty chunk after `scan_gap` bytes of linear output, are read at
//!   once). So reading costs at most one screen pass per `scan_gap` bytes of input,
//!   whatever the chunking;
//! - [`MarkerScanner::flush`] reads the screen now if anything was fed since the last
//!   read. **The supervisor calls it when the output goes quiet (e.g. 250 ms without
//!   bytes) and when the process exits**, so a marker painted just before an idle pause or
//!   an exit is never left unread.
//!
//! A marker that a TUI paints and then erases or scrolls away within the same `scan_gap`
//! bytes can be missed by the rendered view (the linear views still see its bytes).
//!
//! # What never matches
//!
//! Another token (another attempt's marker), the defused form (`WEFT-DONE-`, id dropped),
//! the prefix alone, the id alone. Note that the flattened views remove whitespace: text
//! that *shows* the two halves of the marker separated only by whitespace or escape
//! sequences counts as the marker. The prompt that tells the agent how to assemble the
//! marker must therefore keep visible, non-space text between the halves.

use std::fmt;

use memchr::memmem::Finder;
use weft_core::marker::is_ignorable;

/// Input is flattened in blocks of this many bytes; the flattened view's scratch buffer
/// never grows beyond it (plus the token length).
pub const BLOCK: usize = 16 * 1024;

/// Longest CSI (parameter and intermediate bytes) the flattened view will swallow.
const CSI_MAX: usize = 64;
/// Longest ESC intermediate run the flattened view will swallow.
const INTER_MAX: usize = 8;
/// Longest OSC / DCS / SOS / PM / APC string any view will swallow.
const STR_MAX: usize = 4096;

/// Where a marker was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The raw bytes.
    Raw,
    /// Escape sequences, controls, box drawing and whitespace removed.
    Flattened,
    /// The emulated terminal screen.
    Rendered,
}

impl View {
    /// `"raw"`, `"flattened"` or `"rendered"`.
    pub fn as_str(self) -> &'static str {
        match self {
            View::Raw => "raw",
            View::Flattened => "flattened",
            View::Rendered => "rendered",
        }
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which views a scanner runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Views {
    /// The raw bytes.
    pub raw: bool,
    /// The flattened bytes.
    pub flattened: bool,
    /// The emulated screen.
    pub rendered: bool,
}

impl Views {
    /// All three views (the default).
    pub const ALL: Views = Views {
        raw: true,
        flattened: true,
        rendered: true,
    };
    /// Raw and flattened: for output that is not a terminal's (pipes, files, texts).
    pub const LINEAR: Views = Views {
        raw: true,
        flattened: true,
        rendered: false,
    };
}

impl Default for Views {
    fn default() -> Self {
        Views::ALL
    }
}

/// How a [`MarkerScanner`] is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanOptions {
    /// The views to run.
    pub views: Views,
    /// Rows of the rendered screen (clamped to 1..=500). Best equal to the PTY's size.
    pub rows: u16,
    /// Columns of the rendered screen (clamped to 1..=1000).
    pub cols: u16,
    /// Least input, in bytes, between two reads of a dirty rendered screen (module docs).
    pub scan_gap: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            views: Views::ALL,
            rows: 50,
            cols: 250,
            scan_gap: 4 * 1024,
        }
    }
}

/// Watches one output stream for one marker. See the module documentation.
#[derive(Debug)]
pub struct MarkerScanner {
    found: Option<View>,
    raw: Option<RawView>,
    flat: Option<FlatView>,
    rendered: Option<RenderedView>,
    bytes: u64,
    reads_before_release: u64,
}

impl MarkerScanner {
    /// A scanner running all three views with the default options.
    pub fn new(token: &str) -> Self {
        Self::with_options(token, ScanOptions::default())
    }

    /// A scanner running only the given views (default options otherwise).
    pub fn with_views(token: &str, views: Views) -> Self {
        Self::with_options(
            token,
            ScanOptions {
                views,
                ..ScanOptions::default()
            },
        )
    }

    /// A scanner with explicit options. An empty token is never found; a token that is
    /// empty once flattened (only whitespace, say) is looked for in the raw view only.
    pub fn with_options(token: &str, options: ScanOptions) -> Self {
        let raw_token = token.as_bytes();
        let flat_token = flatten_text(raw_token);
        let views = options.views;
        MarkerScanner {
            found: None,
            raw: (views.raw && !raw_token.is_empty()).then(|| RawView::new(raw_token)),
            flat: (views.flattened && !flat_token.is_empty()).then(|| FlatView::new(&flat_token)),
            rendered: (views.rendered && !flat_token.is_empty())
                .then(|| RenderedView::new(&flat_token, &options)),
            bytes: 0,
            reads_before_release: 0,
        }
    }

    /// Scans the next chunk. Returns the view that first saw the marker, in this call or
    /// an earlier one (once found, the scanner does no more work). Within one chunk the
    /// views are asked in the order raw, flattened, rendered.
    pub fn feed(&mut self, chunk: &[u8]) -> Option<View> {
        if self.found.is_some() {
            return self.found;
        }
        self.bytes += chunk.len() as u64;
        if let Some(raw) = &mut self.raw
            && raw.feed(chunk)
        {
            self.found = Some(View::Raw);
        } else if let Some(flat) = &mut self.flat
            && flat.feed(chunk)
        {
            self.found = Some(View::Flattened);
        } else if let Some(rendered) = &mut self.rendered
            && rendered.feed(chunk)
        {
            self.found = Some(View::Rendered);
        }
        if self.found.is_some() {
            self.release();
        }
        self.found
    }

    /// Reads the rendered screen now if anything was fed since the last read. Call when
    /// the output goes quiet and at exit.
    pub fn flush(&mut self) -> Option<View> {
        if self.found.is_none()
            && let Some(rendered) = &mut self.rendered
            && rendered.flush()
        {
            self.found = Some(View::Rendered);
            self.release();
        }
        self.found
    }

    /// The view that saw the marker, if any did.
    pub fn found(&self) -> Option<View> {
        self.found
    }

    /// Bytes fed so far (until the marker was found).
    pub fn bytes_scanned(&self) -> u64 {
        self.bytes
    }

    /// Times the rendered screen was read (for tests and benchmarks).
    pub fn screen_reads(&self) -> u64 {
        self.rendered
            .as_ref()
            .map_or(self.reads_before_release, |r| r.reads)
    }

    /// Bytes held in buffers whose size depends on the input: the linear views' tails,
    /// scratch buffers and unfinished sequences, the rendered view's screen-read buffer
    /// and the bound on the emulator's pending OSC string. Stays under
    /// `BLOCK + 4 × token.len() + 4 KiB + 5 × rows × cols` (about 83 KB at the default
    /// size), whatever was fed. The emulator's fixed grid (rows × cols × 32 bytes, about
    /// 400 KB) is not counted.
    pub fn retained_bytes(&self) -> usize {
        self.raw.as_ref().map_or(0, RawView::retained)
            + self.flat.as_ref().map_or(0, FlatView::retained)
            + self.rendered.as_ref().map_or(0, RenderedView::retained)
    }

    /// Frees the views once the marker is found.
    fn release(&mut self) {
        self.reads_before_release = self.screen_reads();
        self.raw = None;
        self.flat = None;
        self.rendered = None;
    }
}

/// Whether `text` holds `token`, in the raw or the flattened view (raw first). For whole
/// texts: assistant messages, final results, transcript records. An empty token is never
/// found.
pub fn text_contains_marker(text: &str, token: &str) -> Option<View> {
    let mut scanner = MarkerScanner::with_views(token, Views::LINEAR);
    scanner.feed(text.as_bytes())
}

/// `text` flattened as the flattened view sees it (escape sequences, controls, box
/// drawing, whitespace and invisible characters removed). Useful to show what was matched.
pub fn flatten(text: &[u8]) -> Vec<u8> {
    flatten_text(text)
}

fn flatten_text(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len().min(1 << 20));
    let mut flattener = Flattener::default();
    let mut buf = vec![0u8; BLOCK + 16];
    for block in text.chunks(BLOCK) {
        let o = flattener.run(block, &mut buf, 0);
        out.extend_from_slice(&buf[..o]);
    }
    let o = flattener.end(&mut buf, 0);
    out.extend_from_slice(&buf[..o]);
    out
}

// ---------------------------------------------------------------------------------------
// Raw view

#[derive(Debug)]
struct RawView {
    finder: Finder<'static>,
    /// Last `len - 1` bytes seen.
    tail: Vec<u8>,
    /// `tail` followed by the start of the next chunk, to catch a marker cut in two.
    seam: Vec<u8>,
}

impl RawView {
    fn new(token: &[u8]) -> Self {
        RawView {
            finder: Finder::new(token).into_owned(),
            tail: Vec::with_capacity(token.len()),
            seam: Vec::with_capacity(2 * token.len()),
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> bool {
        let keep = self.finder.needle().len() - 1;
        if !self.tail.is_empty() && !chunk.is_empty() {
            self.seam.clear();
            self.seam.extend_from_slice(&self.tail);
            self.seam.extend_from_slice(&chunk[..keep.min(chunk.len())]);
            if self.finder.find(&self.seam).is_some() {
                return true;
            }
        }
        if self.finder.find(chunk).is_some() {
            return true;
        }
        keep_tail(&mut self.tail, chunk, keep);
        false
    }

    fn retained(&self) -> usize {
        self.tail.capacity() + self.seam.capacity()
    }
}

/// `tail` becomes the last `keep` bytes of `tail ++ chunk`.
fn keep_tail(tail: &mut Vec<u8>, chunk: &[u8], keep: usize) {
    if chunk.len() >= keep {
        tail.clear();
        tail.extend_from_slice(&chunk[chunk.len() - keep..]);
    } else {
        tail.extend_from_slice(chunk);
        if tail.len() > keep {
            let excess = tail.len() - keep;
            tail.drain(..excess);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Flattened view

/// Quick rejection of a candidate for a token of printable ASCII: flattens the raw bytes
/// from it on the fly while they are plain ASCII (printable bytes kept, spaces and controls
/// other than ESC dropped, the state staying ground) and answers whether a kept byte
/// differs from the token's. Stops, undecided, at ESC, at a non-ASCII byte, at the end of
/// the input or once the whole token matched.
fn rejects(token: &[u8], rest: &[u8]) -> bool {
    let mut t = 0;
    for &b in rest {
        if t == token.len() || b == 0x1B || b >= 0x80 {
            return false;
        }
        if KEEP[usize::from(b)] == 1 {
            if b != token[t] {
                return true;
            }
            t += 1;
        }
    }
    false
}

/// Candidates closer than this many bytes to the previous position are *dense*; after
/// [`DENSE_RUN`] dense ones in a row, the next [`BLOCK`] bytes are flattened in bulk.
const DENSE_GAP: usize = 48;
const DENSE_RUN: u32 = 32;

/// First piece of input flattened in full after a candidate; doubled while a match may
/// still be under way, up to [`BLOCK`].
const PIECE: usize = 64;

/// The flattened view.
///
/// A match in the flattened stream starts with the token's first byte, kept, at a point
/// where no escape sequence is open. So when that byte is printable ASCII the view
/// alternates between two modes:
///
/// - *skip*: `memchr` to the next occurrence of the first byte; the state machine's state
///   there is known without flattening what lies between, because the state right after
///   any ESC byte is the same whatever came before it: the state at the candidate is the
///   state after the last ESC before it, advanced over the (few) bytes between. Nothing
///   there can start a match, so nothing is flattened;
/// - *active*: from a candidate in ground state, flatten in full (in pieces of
///   [`PIECE`] bytes, doubling) and search, until no suffix of the flattened tail is a
///   prefix of the token any more; then skip again, from the exact state reached.
///
/// Otherwise (a token starting with a non-ASCII character) the view stays active.
#[derive(Debug)]
struct FlatView {
    finder: Finder<'static>,
    /// The token's first byte, when skipping is possible.
    first: Option<u8>,
    /// Every byte of the token is printable ASCII (allows the quick rejection).
    plain: bool,
    flattener: Flattener,
    /// `buf[..tail]` holds the last flattened bytes (fewer than the token) while active;
    /// each piece is flattened after them and the whole searched at once.
    buf: Vec<u8>,
    tail: usize,
    active: bool,
    piece: usize,
    /// Dense candidates in a row.
    dense: u32,
}

impl FlatView {
    fn new(token: &[u8]) -> Self {
        let first = token
            .first()
            .copied()
            .filter(|b| KEEP[usize::from(*b)] == 1);
        FlatView {
            finder: Finder::new(token).into_owned(),
            first,
            plain: token.iter().all(|b| KEEP[usize::from(*b)] == 1),
            flattener: Flattener::default(),
            buf: vec![0u8; BLOCK + token.len() + 16],
            tail: 0,
            active: first.is_none(),
            piece: if first.is_none() { BLOCK } else { PIECE },
            dense: 0,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> bool {
        let n = chunk.len();
        let mut i = 0;
        while i < n {
            if self.active {
                let end = n.min(i + self.piece);
                if self.flatten_piece(&chunk[i..end]) {
                    return true;
                }
                i = end;
                continue;
            }
            let Some(first) = self.first else {
                self.active = true;
                continue;
            };
            if self.flattener.st != St::Ground {
                i += self.flattener.settle(&chunk[i..]);
                continue;
            }
            let Some(k) = memchr::memchr(first, &chunk[i..]) else {
                // No candidate in the rest of the chunk: only the state at its end matters.
                if let Some(e) = memchr::memrchr(0x1B, &chunk[i..]) {
                    self.flattener.after_esc();
                    self.flattener.settle(&chunk[i + e + 1..]);
                }
                return false;
            };
            let candidate = i + k;
            if let Some(e) = memchr::memrchr(0x1B, &chunk[i..candidate]) {
                self.flattener.after_esc();
                self.flattener.settle(&chunk[i + e + 1..candidate]);
                if self.flattener.st != St::Ground {
                    // The candidate is inside an escape sequence: keep skipping from it.
                    i = candidate;
                    continue;
                }
            }
            // Candidates close together cost more one by one than flattening in bulk.
            self.dense = if k < DENSE_GAP { self.dense + 1 } else { 0 };
            let bulk = self.dense >= DENSE_RUN;
            if !bulk && self.plain && rejects(self.finder.needle(), &chunk[candidate..]) {
                i = candidate + 1;
                continue;
            }
            self.active = true;
            self.tail = 0;
            self.piece = if bulk { BLOCK } else { PIECE };
            self.dense = 0;
            i = candidate;
        }
        false
    }

    /// Flattens one piece after the tail and searches; leaves active mode when the tail
    /// can no longer begin the token.
    fn flatten_piece(&mut self, piece: &[u8]) -> bool {
        let o = self.flattener.run(piece, &mut self.buf, self.tail);
        if o == self.tail {
            return false;
        }
        let token = self.finder.needle();
        if self.finder.find(&self.buf[..o]).is_some() {
            return true;
        }
        let kept = (token.len() - 1).min(o);
        self.buf.copy_within(o - kept..o, 0);
        self.tail = kept;
        if self.first.is_some() {
            let tail = &self.buf[..kept];
            let open = (0..kept).any(|q| token.starts_with(&tail[q..]));
            if open {
                self.piece = (self.piece * 2).min(BLOCK);
            } else {
                self.active = false;
                self.tail = 0;
            }
        }
        false
    }

    fn retained(&self) -> usize {
        self.buf.capacity() + self.flattener.pending()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum St {
    #[default]
    Ground,
    /// After ESC.
    Esc,
    /// ESC followed by intermediate bytes (0x20–0x2F).
    EscInter,
    /// Inside `ESC [`.
    Csi,
    /// Inside an OSC, DCS, SOS, PM or APC string.
    Str,
    /// ESC inside a string: `\` ends it, anything else starts a new sequence.
    StrEsc,
    /// Inside a multi-byte UTF-8 character.
    Utf8,
}

/// Byte-level flattening state machine, resumable at any byte.
#[derive(Debug, Default)]
struct Flattener {
    st: St,
    /// Bytes swallowed in the current sequence (for the bounds).
    seq: usize,
    utf8: [u8; 4],
    utf8_len: u8,
    utf8_need: u8,
}

/// 1 for printable ASCII other than space (kept), 0 for everything else.
static KEEP: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0x21;
    while b < 0x7F {
        t[b] = 1;
        b += 1;
    }
    t
};

/// The high bit of each lane of `x` holding ESC or a non-ASCII byte. Exact for the lowest
/// flagged lane (borrows only run upwards), which is all the callers use.
#[inline(always)]
fn special(x: u64) -> u64 {
    let e = x ^ ESCS;
    (x & HI) | (e.wrapping_sub(ONES) & !e & HI)
}

/// The high bit of each lane of `x` holding a printable non-space ASCII byte (0x21–0x7E).
/// Exact for lanes below the lowest [`special`] one (a carry only reaches lanes above its
/// own).
#[inline(always)]
fn kept(x: u64) -> u64 {
    x.wrapping_add(0x5F5F_5F5F_5F5F_5F5F) & !x.wrapping_add(ONES) & HI
}

/// Writes the bytes of `w8` whose lane in `keep` is 1 (lanes are 0x01 or 0x00) to the
/// front of `dst`, in order; returns how many. Bytes past that count are garbage.
#[inline(always)]
fn compact(dst: &mut [u8; 8], w8: [u8; 8], keep: u64) -> usize {
    if keep == ONES {
        *dst = w8;
        return 8;
    }
    // Each kept byte's place is the number of kept bytes before it (prefix sums by
    // multiplication), so the eight stores are independent of each other.
    let inclusive = keep.wrapping_mul(ONES);
    let before = inclusive - keep;
    for (k, b) in w8.into_iter().enumerate() {
        dst[((before >> (8 * k)) & 7) as usize] = b;
    }
    (inclusive >> 56) as usize
}

/// The character at the start of `bytes` and its length, if it is a complete, valid,
/// multi-byte UTF-8 sequence.
#[inline]
fn decode_utf8(bytes: &[u8]) -> Option<(char, usize)> {
    let cont = |k: usize| {
        bytes
            .get(k)
            .copied()
            .filter(|b| b & 0xC0 == 0x80)
            .map(|b| u32::from(b & 0x3F))
    };
    let lead = u32::from(*bytes.first()?);
    let (cp, len) = match lead {
        0xC2..=0xDF => (((lead & 0x1F) << 6) | cont(1)?, 2),
        0xE0..=0xEF => (((lead & 0x0F) << 12) | (cont(1)? << 6) | cont(2)?, 3),
        0xF0..=0xF4 => (
            ((lead & 0x07) << 18) | (cont(1)? << 12) | (cont(2)? << 6) | cont(3)?,
            4,
        ),
        _ => return None,
    };
    // Overlong forms and surrogates are left to the state machine (kept as bytes).
    let min = [0, 0, 0x80, 0x800, 0x1_0000][len];
    if cp < min {
        return None;
    }
    char::from_u32(cp).map(|c| (c, len))
}

/// Length of the UTF-8 character a lead byte starts.
fn utf8_len(lead: u8) -> Option<usize> {
    match lead {
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

const HI2: u128 = 0x8080_8080_8080_8080_8080_8080_8080_8080;
const ONES2: u128 = 0x0101_0101_0101_0101_0101_0101_0101_0101;
const ESCS2: u128 = 0x1B1B_1B1B_1B1B_1B1B_1B1B_1B1B_1B1B_1B1B;
const HI: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;
const ESCS: u64 = 0x1B1B_1B1B_1B1B_1B1B;

impl Flattener {
    /// Flattens `input` into `out[o..]`, returning the new end. `out` must have room for
    /// `input.len() + 4` more bytes; the fast path runs while it has 8 bytes to spare.
    fn run(&mut self, input: &[u8], out: &mut [u8], mut o: usize) -> usize {
        let n = input.len();
        let mut i = 0;
        while i < n {
            match self.st {
                St::Ground => {
                    // Fast path, 8 bytes at a time: the bytes before the first ESC or
                    // non-ASCII byte of the word are copied without branches, dropping
                    // controls and spaces as they go. The common case (no such byte)
                    // advances by a constant, so the next load never waits on this one.
                    // Two words at a time while both are clean.
                    while let Some(src) = input.get(i..i + 16) {
                        let Ok(w16) = <[u8; 16]>::try_from(src) else {
                            break;
                        };
                        let x = u128::from_le_bytes(w16);
                        let e = x ^ ESCS2;
                        if (x & HI2) | (e.wrapping_sub(ONES2) & !e & HI2) != 0 {
                            break;
                        }
                        let keep =
                            (x.wrapping_add(ONES2 * 0x5F) & !x.wrapping_add(ONES2) & HI2) >> 7;
                        let (a, b) = w16.split_at(8);
                        let (Ok(a), Ok(b)) = (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b))
                        else {
                            break;
                        };
                        let Some(Ok(first)) = out
                            .get_mut(o..o + 16)
                            .map(|d| <&mut [u8; 8]>::try_from(&mut d[..8]))
                        else {
                            break;
                        };
                        let n1 = compact(first, a, keep as u64);
                        let Some(Ok(second)) = out
                            .get_mut(o + n1..o + n1 + 8)
                            .map(<&mut [u8; 8]>::try_from)
                        else {
                            break;
                        };
                        let n2 = compact(second, b, (keep >> 64) as u64);
                        o += n1 + n2;
                        i += 16;
                    }
                    while let Some(w) = input.get(i..i + 8) {
                        let Ok(w8) = <[u8; 8]>::try_from(w) else {
                            break;
                        };
                        let Some(Ok(dst)) = out.get_mut(o..o + 8).map(<&mut [u8; 8]>::try_from)
                        else {
                            break;
                        };
                        let x = u64::from_le_bytes(w8);
                        let special = special(x);
                        let kept = kept(x);
                        if special == 0 {
                            o += compact(dst, w8, kept >> 7);
                            i += 8;
                            continue;
                        }
                        let clean = (special.trailing_zeros() / 8) as usize;
                        let clean_lanes = (1u64 << (clean * 8)) - 1;
                        o += compact(dst, w8, (kept & clean_lanes) >> 7);
                        i += clean;
                        break;
                    }
                    // Whole characters in this block, as many in a row as there are: no
                    // need for the state machine (box drawing comes in long runs).
                    while let Some(&b) = input.get(i)
                        && b >= 0xC2
                        && let Some((c, len)) = decode_utf8(&input[i..])
                    {
                        if !is_ignorable(c) {
                            out[o..o + len].copy_from_slice(&input[i..i + len]);
                            o += len;
                        }
                        i += len;
                    }
                    // A complete, ordinary CSI (colours, cursor moves) in this block is
                    // skipped in one go; anything else goes through the state machine.
                    if input.get(i) == Some(&0x1B)
                        && input.get(i + 1) == Some(&b'[')
                        && let Some(len) = input[i + 2..]
                            .iter()
                            .take(CSI_MAX + 1)
                            .position(|b| !(0x20..=0x3F).contains(b))
                        && len < CSI_MAX
                        && (0x40..=0x7E).contains(&input[i + 2 + len])
                    {
                        i += len + 3;
                        continue;
                    }
                    if let Some(&b) = input.get(i) {
                        i += 1;
                        o = self.ground(b, out, o);
                    }
                }
                St::Csi => {
                    // Parameters in bulk, then the final byte through the state machine.
                    while let Some(&b) = input.get(i) {
                        if !(0x20..=0x3F).contains(&b) || self.seq >= CSI_MAX {
                            break;
                        }
                        self.seq += 1;
                        i += 1;
                    }
                    if let Some(&b) = input.get(i) {
                        let (consumed, new_o) = self.other(b, out, o);
                        o = new_o;
                        if consumed {
                            i += 1;
                        }
                    }
                }
                St::Str => i = self.skip_string(input, i),
                _ => {
                    let b = input[i];
                    let (consumed, new_o) = self.other(b, out, o);
                    o = new_o;
                    if consumed {
                        i += 1;
                    }
                }
            }
        }
        o
    }

    /// The state right after an ESC byte, whatever the state before it.
    fn after_esc(&mut self) {
        self.st = St::Esc;
        self.seq = 0;
        self.utf8_len = 0;
    }

    /// Advances over `input` without output until back in ground state; returns the bytes
    /// consumed (all of them if the state is still not ground).
    fn settle(&mut self, input: &[u8]) -> usize {
        let mut scratch = [0u8; 8];
        let mut i = 0;
        while i < input.len() {
            match self.st {
                St::Ground => break,
                St::Str => i = self.skip_string(input, i),
                _ => {
                    let (consumed, _) = self.other(input[i], &mut scratch, 0);
                    if consumed {
                        i += 1;
                    }
                }
            }
        }
        i
    }

    /// Inside a string sequence: skips its body in bulk, up to its terminator or bound.
    fn skip_string(&mut self, input: &[u8], mut i: usize) -> usize {
        let n = input.len();
        let end = n.min(i + STR_MAX.saturating_sub(self.seq));
        match memchr::memchr2(0x07, 0x1B, &input[i..end]) {
            Some(k) => {
                i += k;
                self.st = if input[i] == 0x07 {
                    St::Ground
                } else {
                    St::StrEsc
                };
                i + 1
            }
            None => {
                self.seq += end - i;
                if self.seq >= STR_MAX {
                    // Too long to be a real sequence: text again.
                    self.st = St::Ground;
                }
                end
            }
        }
    }

    /// The stream ended: an unfinished UTF-8 character is emitted as is.
    fn end(&mut self, out: &mut [u8], mut o: usize) -> usize {
        if self.st == St::Utf8 {
            for k in 0..usize::from(self.utf8_len) {
                out[o] = self.utf8[k];
                o += 1;
            }
        }
        *self = Flattener::default();
        o
    }

    fn pending(&self) -> usize {
        usize::from(self.utf8_len)
    }

    fn ground(&mut self, b: u8, out: &mut [u8], mut o: usize) -> usize {
        match b {
            0x1B => {
                self.st = St::Esc;
                self.seq = 0;
            }
            0x00..=0x7F => {
                out[o] = b;
                o += usize::from(KEEP[usize::from(b)]);
            }
            0xC2..=0xF4 => {
                self.st = St::Utf8;
                self.utf8[0] = b;
                self.utf8_len = 1;
                self.utf8_need = utf8_len(b).map_or(2, |n| n as u8);
            }
            _ => {
                // Not a valid lead byte: kept, so it separates what surrounds it.
                out[o] = b;
                o += 1;
            }
        }
        o
    }

    /// One byte in a state other than Ground and Str. Returns whether it was consumed
    /// (if not, the state changed and the byte must be looked at again) and the new end.
    fn other(&mut self, b: u8, out: &mut [u8], mut o: usize) -> (bool, usize) {
        match self.st {
            St::Ground | St::Str => return (false, o),
            St::Utf8 => {
                if b & 0xC0 == 0x80 {
                    self.utf8[usize::from(self.utf8_len)] = b;
                    self.utf8_len += 1;
                    if self.utf8_len == self.utf8_need {
                        let bytes = &self.utf8[..usize::from(self.utf8_len)];
                        let invisible = std::str::from_utf8(bytes)
                            .ok()
                            .and_then(|s| s.chars().next())
                            .is_some_and(is_ignorable);
                        if !invisible {
                            for &x in bytes {
                                out[o] = x;
                                o += 1;
                            }
                        }
                        self.st = St::Ground;
                        self.utf8_len = 0;
                    }
                    return (true, o);
                }
                // Broken character: keep its bytes, look at this byte afresh.
                for k in 0..usize::from(self.utf8_len) {
                    out[o] = self.utf8[k];
                    o += 1;
                }
                self.utf8_len = 0;
                self.st = St::Ground;
                return (false, o);
            }
            St::Esc => match b {
                b'[' => {
                    self.st = St::Csi;
                    self.seq = 0;
                }
                b']' | b'P' | b'X' | b'^' | b'_' => {
                    self.st = St::Str;
                    self.seq = 0;
                }
                0x20..=0x2F => {
                    self.st = St::EscInter;
                    self.seq = 1;
                }
                0x30..=0x7E | 0x18 | 0x1A => self.st = St::Ground,
                0x00..=0x1F | 0x7F => {}
                _ => {
                    self.st = St::Ground;
                    return (false, o);
                }
            },
            St::EscInter => match b {
                0x20..=0x2F => {
                    self.seq += 1;
                    if self.seq > INTER_MAX {
                        self.st = St::Ground;
                    }
                }
                0x30..=0x7E | 0x18 | 0x1A => self.st = St::Ground,
                0x1B => {
                    self.st = St::Esc;
                    self.seq = 0;
                }
                0x00..=0x1F | 0x7F => {}
                _ => {
                    self.st = St::Ground;
                    return (false, o);
                }
            },
            St::Csi => match b {
                0x20..=0x3F => {
                    if self.seq >= CSI_MAX {
                        // Too long to be a real sequence: text again.
                        self.st = St::Ground;
                        return (false, o);
                    }
                    self.seq += 1;
                }
                0x40..=0x7E | 0x18 | 0x1A => self.st = St::Ground,
                0x1B => {
                    self.st = St::Esc;
                    self.seq = 0;
                }
                0x00..=0x1F | 0x7F => {}
                _ => {
                    self.st = St::Ground;
                    return (false, o);
                }
            },
            St::StrEsc => {
                if b == b'\\' {
                    self.st = St::Ground;
                } else {
                    self.st = St::Esc;
                    self.seq = 0;
                    return (false, o);
                }
            }
        }
        (true, o)
    }
}

// ---------------------------------------------------------------------------------------
// Rendered view

struct RenderedView {
    parser: vt100::Parser,
    finder: Finder<'static>,
    tracker: Tracker,
    /// A cursor move or cell shift was seen since the last read.
    dirty: bool,
    /// Bytes fed since the last read.
    since_read: usize,
    scan_gap: usize,
    /// The flattened screen, reused between reads.
    buf: Vec<u8>,
    reads: u64,
}

impl fmt::Debug for RenderedView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RenderedView")
            .field("size", &self.parser.screen().size())
            .field("tracker", &self.tracker)
            .field("dirty", &self.dirty)
            .field("since_read", &self.since_read)
            .field("scan_gap", &self.scan_gap)
            .field("reads", &self.reads)
            .finish_non_exhaustive()
    }
}

impl RenderedView {
    fn new(token: &[u8], options: &ScanOptions) -> Self {
        let rows = options.rows.clamp(1, 500);
        let cols = options.cols.clamp(1, 1000);
        RenderedView {
            parser: vt100::Parser::new(rows, cols, 0),
            finder: Finder::new(token).into_owned(),
            tracker: Tracker::default(),
            dirty: false,
            // The first dirty chunk is read at once.
            since_read: options.scan_gap,
            scan_gap: options.scan_gap,
            buf: Vec::new(),
            reads: 0,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> bool {
        let mut start = 0;
        let mut i = 0;
        while i < chunk.len() {
            match self.tracker.step(chunk, i) {
                Step::Next(next) => i = next,
                Step::Dirty(next) => {
                    self.dirty = true;
                    i = next;
                }
                Step::EndString(at) => {
                    // Keep the emulator's OSC buffer bounded and let it see text again:
                    // CAN ends any sequence.
                    self.parser.process(&chunk[start..at]);
                    self.parser.process(b"\x18");
                    start = at;
                    i = at;
                }
            }
        }
        self.parser.process(&chunk[start..]);
        if self.tracker.pending_cr {
            // Unknown yet whether a line feed follows: read to be safe.
            self.dirty = true;
        }
        self.since_read = self.since_read.saturating_add(chunk.len());
        if self.dirty && self.since_read >= self.scan_gap {
            return self.read();
        }
        false
    }

    fn flush(&mut self) -> bool {
        (self.dirty || self.since_read > 0) && self.read()
    }

    /// Reads the visible screen, row after row, flattened, and looks for the token.
    fn read(&mut self) -> bool {
        self.dirty = false;
        self.since_read = 0;
        self.reads += 1;
        self.buf.clear();
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        for row in 0..rows {
            for col in 0..cols {
                let Some(cell) = screen.cell(row, col) else {
                    continue;
                };
                if !cell.has_contents() {
                    continue;
                }
                let contents = cell.contents();
                if contents.len() == 1 {
                    let b = contents.as_bytes()[0];
                    if KEEP[usize::from(b)] == 1 {
                        self.buf.push(b);
                    }
                } else {
                    // A wide or combined character: its first visible character, and one
                    // 0xFF (never in a token) for whatever is combined with it. At most
                    // five bytes per cell.
                    let mut visible = contents.chars().filter(|c| !is_ignorable(*c));
                    if let Some(c) = visible.next() {
                        let mut utf8 = [0u8; 4];
                        self.buf
                            .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                        if visible.next().is_some() {
                            self.buf.push(0xFF);
                        }
                    }
                }
            }
        }
        self.finder.find(&self.buf).is_some()
    }

    fn retained(&self) -> usize {
        self.buf.capacity() + self.tracker.seq.min(STR_MAX)
    }
}

/// What the rendered view's tracker saw.
enum Step {
    /// Continue at this index.
    Next(usize),
    /// A cursor move or cell shift ended just before this index.
    Dirty(usize),
    /// A string sequence reached its bound at this index: end it in the emulator.
    EndString(usize),
}

/// Follows escape sequences just enough to know when the cursor moves and to bound
/// string sequences. Not a terminal: the emulator does the real work.
#[derive(Debug, Default)]
struct Tracker {
    st: St,
    seq: usize,
    /// The open string is an OSC (ended by BEL too; DCS, SOS, PM and APC are not).
    osc: bool,
    /// The last byte was a carriage return.
    pending_cr: bool,
}

impl Tracker {
    fn step(&mut self, chunk: &[u8], i: usize) -> Step {
        if self.pending_cr {
            self.pending_cr = false;
            if chunk[i] != b'\n' {
                return Step::Dirty(i);
            }
        }
        match self.st {
            St::Ground | St::Utf8 => {
                let Some(k) = memchr::memchr3(0x1B, 0x08, b'\r', &chunk[i..]) else {
                    return Step::Next(chunk.len());
                };
                let at = i + k;
                match chunk[at] {
                    0x1B => {
                        self.st = St::Esc;
                        self.seq = 0;
                        Step::Next(at + 1)
                    }
                    0x08 => Step::Dirty(at + 1),
                    _ => {
                        self.pending_cr = true;
                        Step::Next(at + 1)
                    }
                }
            }
            St::Str => {
                let end = chunk.len().min(i + STR_MAX.saturating_sub(self.seq));
                let body = &chunk[i..end];
                let stop = if self.osc {
                    memchr::memchr3(0x07, 0x1B, 0x18, body)
                } else {
                    memchr::memchr2(0x1B, 0x18, body)
                };
                match stop {
                    Some(k) => {
                        let at = i + k;
                        self.st = if chunk[at] == 0x1B {
                            St::StrEsc
                        } else {
                            St::Ground
                        };
                        self.seq = 0;
                        Step::Next(at + 1)
                    }
                    None => {
                        self.seq += end - i;
                        if self.seq >= STR_MAX {
                            self.st = St::Ground;
                            self.seq = 0;
                            Step::EndString(end)
                        } else {
                            Step::Next(end)
                        }
                    }
                }
            }
            St::StrEsc => {
                if chunk[i] == b'\\' {
                    self.st = St::Ground;
                    Step::Next(i + 1)
                } else {
                    self.st = St::Esc;
                    Step::Next(i)
                }
            }
            St::Esc => {
                let b = chunk[i];
                match b {
                    b'[' => {
                        self.st = St::Csi;
                        self.seq = 0;
                        Step::Next(i + 1)
                    }
                    b']' | b'P' | b'X' | b'^' | b'_' => {
                        self.st = St::Str;
                        self.seq = 0;
                        self.osc = b == b']';
                        Step::Next(i + 1)
                    }
                    0x20..=0x2F => {
                        self.st = St::EscInter;
                        Step::Next(i + 1)
                    }
                    b'7' | b'8' | b'D' | b'E' | b'M' => {
                        self.st = St::Ground;
                        Step::Dirty(i + 1)
                    }
                    0x1B => Step::Next(i + 1),
                    _ => {
                        self.st = St::Ground;
                        Step::Next(i + 1)
                    }
                }
            }
            St::EscInter => {
                let b = chunk[i];
                if !(0x20..=0x2F).contains(&b) {
                    self.st = if b == 0x1B { St::Esc } else { St::Ground };
                }
                Step::Next(i + 1)
            }
            St::Csi => {
                let b = chunk[i];
                match b {
                    0x20..=0x3F => Step::Next(i + 1),
                    0x1B => {
                        self.st = St::Esc;
                        Step::Next(i + 1)
                    }
                    0x40..=0x7E => {
                        self.st = St::Ground;
                        if b"ABCDEFGHILMPSTXZ@`abdefrsu".contains(&b) {
                            Step::Dirty(i + 1)
                        } else {
                            Step::Next(i + 1)
                        }
                    }
                    0x00..=0x1F | 0x7F => Step::Next(i + 1),
                    _ => {
                        self.st = St::Ground;
                        Step::Next(i + 1)
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flatten_removes_what_it_should() {
        assert_eq!(flatten(b"a b\tc\r\nd"), b"abcd");
        assert_eq!(flatten(b"WEFT_DO\x1b[1;31mNE_x"), b"WEFT_DONE_x");
        assert_eq!(
            flatten(b"a\x1b]0;title\x07b\x1b]8;;http://x\x1b\\c"),
            b"abc"
        );
        assert_eq!(flatten("│ab─┼cd█".as_bytes()), b"abcd");
        assert_eq!(flatten("a\u{a0}b\u{200b}c\u{3000}d".as_bytes()), b"abcd");
        assert_eq!(flatten("héllo".as_bytes()), "héllo".as_bytes());
        assert_eq!(flatten(b"a\x1b(Bb\x1b7c"), b"abc");
    }

    #[test]
    fn over_long_sequences_are_abandoned() {
        let mut input = b"\x1b]".to_vec();
        input.extend(std::iter::repeat_n(b'x', STR_MAX + 10));
        input.extend_from_slice(b"MARK");
        let flat = flatten(&input);
        assert!(flat.ends_with(b"MARK"));
        assert!(flat.len() < 20);
    }

    #[test]
    fn keep_tail_keeps_the_end() {
        let mut tail = b"abc".to_vec();
        keep_tail(&mut tail, b"de", 4);
        assert_eq!(tail, b"bcde");
        keep_tail(&mut tail, b"fghij", 4);
        assert_eq!(tail, b"ghij");
    }
}

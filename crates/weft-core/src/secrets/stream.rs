//! The streaming form of the masker: chunks in, masked bytes out, a bounded carry.

use super::shapes::{Cont, Hay, MAX_TRIGGER_LEN, PEM_BEGIN};
use super::{CONTEXT, Masker, write_masked};

/// Masks a byte stream that arrives in arbitrary chunks (see the parent module for the
/// bound): a secret split across chunks is still masked, and ordinary output passes
/// straight through. One per stream; the [`Masker`] is passed to each call.
#[derive(Debug, Default)]
pub struct StreamMasker {
    /// Look-behind (`..emitted`, already written) and the held bytes (`emitted..`).
    carry: Vec<u8>,
    emitted: usize,
    /// Where the next scan for shapes and for known values starts (in `carry`).
    shape_from: usize,
    exact_from: usize,
    /// Bytes were dropped from the front of `carry` (so `carry[0]` is not the stream's
    /// first byte).
    trimmed: bool,
    /// The rest of a candidate that outgrew the hold bound, being dropped.
    dropping: Option<Dropping>,
}

/// Capacity the carry may keep between chunks; more is released.
const KEEP_CAPACITY: usize = 256 * 1024;

impl StreamMasker {
    /// Masks `chunk`, appending what can be written now to `out`.
    pub fn push(&mut self, masker: &Masker, chunk: &[u8], out: &mut Vec<u8>) {
        let mut chunk = chunk;
        if let Some(dropping) = &mut self.dropping {
            match dropping.consume(chunk) {
                None => {
                    self.remember(chunk);
                    return;
                }
                Some((n, literal)) => {
                    out.extend_from_slice(literal);
                    let dropped = dropping.dropped + n;
                    let is_run = matches!(dropping.cont, Cont::Run(_));
                    self.remember(&chunk[..n]);
                    self.dropping = None;
                    chunk = &chunk[n..];
                    if is_run {
                        // What was dropped last may be a key's BEGIN line that the run
                        // read on into: it goes back to the scan (see `begin_back`).
                        let back = begin_back(&self.carry, chunk.first().copied(), dropped);
                        self.emitted -= back;
                        self.shape_from = self.emitted;
                        self.exact_from = self.emitted;
                    }
                }
            }
        }
        self.carry.extend_from_slice(chunk);
        self.process(masker, false, out);
    }

    /// Writes the held bytes, masked, at the end of the stream, and starts over.
    pub fn finish(&mut self, masker: &Masker, out: &mut Vec<u8>) {
        if self.dropping.is_none() {
            self.process(masker, true, out);
        }
        *self = Self::default();
    }

    /// How many bytes are held back right now (for tests of the bound).
    pub fn held(&self) -> usize {
        self.carry.len() - self.emitted
    }

    fn process(&mut self, masker: &Masker, eof: bool, out: &mut Vec<u8>) {
        loop {
            let hay = Hay {
                buf: &self.carry,
                eof,
                bof: !self.trimmed,
            };
            let scan = masker.scan(&hay, self.shape_from, self.exact_from);
            let len = self.carry.len();
            let mut until = scan.hold.clamp(self.emitted, len);
            // Never split inside a found mask: it goes out whole with what follows.
            if let Some(span) = scan.spans.iter().find(|s| s.start < until && until < s.end) {
                until = span.start.max(self.emitted);
            }
            if let Some(open) = scan.open
                && !eof
                && len - until > masker.hold_bound()
            {
                // Held too long: mask the candidate from where its mask would begin and
                // drop the rest of it as it arrives.
                let at = open.span_start.clamp(self.emitted, len);
                write_masked(&self.carry, self.emitted, at, &scan.spans, out);
                open.repl.write(out);
                let mut dropping = Dropping::new(open.cont);
                match dropping.consume(&self.carry[at..]) {
                    None => {
                        self.emitted = len;
                        self.shape_from = len;
                        self.exact_from = len;
                        self.dropping = Some(dropping);
                        self.trim();
                        return;
                    }
                    Some((n, literal)) => {
                        out.extend_from_slice(literal);
                        let back = if matches!(open.cont, Cont::Run(_)) {
                            begin_back(&self.carry[..at + n], self.carry.get(at + n).copied(), n)
                        } else {
                            0
                        };
                        self.emitted = at + n - back;
                        self.exact_from = self.emitted;
                        self.shape_from = if back > 0 {
                            self.emitted
                        } else {
                            self.emitted.max(open.trigger + 1)
                        };
                        continue;
                    }
                }
            }
            write_masked(&self.carry, self.emitted, until, &scan.spans, out);
            self.emitted = until;
            self.exact_from = until;
            // The shape scan resumes at the trigger of anything still undecided, and early
            // enough to see a trigger split by the chunk's end.
            let seam = len.saturating_sub(MAX_TRIGGER_LEN - 1).max(scan.resume);
            self.shape_from = scan
                .spans
                .iter()
                .filter(|s| s.end > until)
                .map(|s| s.trigger)
                .chain(scan.open.map(|o| o.trigger))
                .fold(seam, usize::min)
                .max(self.shape_from);
            self.trim();
            return;
        }
    }

    /// Keeps dropped bytes as look-behind (only while nothing is held).
    fn remember(&mut self, bytes: &[u8]) {
        debug_assert_eq!(self.emitted, self.carry.len());
        self.carry.extend_from_slice(bytes);
        self.emitted = self.carry.len();
        self.shape_from = self.emitted;
        self.exact_from = self.emitted;
        self.trim();
    }

    /// Drops look-behind older than [`CONTEXT`] bytes before anything still needed.
    fn trim(&mut self) {
        let needed = self.shape_from.min(self.exact_from).min(self.emitted);
        let cut = needed.saturating_sub(CONTEXT);
        if cut > 0 {
            self.carry.drain(..cut);
            self.emitted -= cut;
            self.shape_from -= cut;
            self.exact_from -= cut;
            self.trimmed = true;
        }
        if self.carry.capacity() > KEEP_CAPACITY && self.carry.len() < KEEP_CAPACITY / 4 {
            self.carry.shrink_to(KEEP_CAPACITY / 4);
        }
    }
}

/// How many of the last bytes of `kept` (at most `dropped`, the bytes the run dropped)
/// are a private key's `-----BEGIN` that an overlong run of token bytes read on into,
/// `next` being the byte after them: then they go back to the scan, which finds the key.
///
/// Why: `-` and letters are token bytes, so a run dropped because it outgrew the hold
/// bound (`Cont::Run`) went on through the BEGIN line up to its space, and the key's body
/// came out whole. Masking the whole text ends such a run where the BEGIN line starts
/// (`shapes::before_pem`); this does the same for the stream.
fn begin_back(kept: &[u8], next: Option<u8>, dropped: usize) -> usize {
    // The line's bytes up to its space, which ends the run; the space is `next`.
    let (begin, space) = PEM_BEGIN.split_at(PEM_BEGIN.len() - 1);
    if next == Some(space[0]) && kept.ends_with(begin) {
        begin.len().min(dropped)
    } else {
        0
    }
}

/// Recognises the rest of a candidate being dropped.
#[derive(Debug)]
struct Dropping {
    cont: Cont,
    /// The last bytes dropped (`-----END ` may straddle chunks).
    tail: Vec<u8>,
    /// The last byte dropped was a backslash that escapes the next.
    escape: bool,
    /// Bytes dropped so far (before the current chunk).
    dropped: usize,
}

const PEM_END: &[u8] = b"-----END ";

impl Dropping {
    fn new(cont: Cont) -> Self {
        Self {
            cont,
            tail: Vec::new(),
            escape: false,
            dropped: 0,
        }
    }

    /// Drops the candidate's bytes at the start of `chunk`. `None`: all of it was dropped
    /// and the candidate goes on; `Some((n, literal))`: it ended after `n` bytes, and
    /// `literal` (bytes dropped earlier that belong to what follows) is written first.
    fn consume(&mut self, chunk: &[u8]) -> Option<(usize, &'static [u8])> {
        let ended = self.consume_inner(chunk);
        if ended.is_none() {
            self.dropped += chunk.len();
        }
        ended
    }

    fn consume_inner(&mut self, chunk: &[u8]) -> Option<(usize, &'static [u8])> {
        match self.cont {
            Cont::Run(class) => chunk
                .iter()
                .position(|b| !class.has(*b))
                .map(|n| (n, &b""[..])),
            Cont::Until(stop) => chunk
                .iter()
                .position(|b| *b == stop || *b == b'\n')
                .map(|n| (n, &b""[..])),
            Cont::Quote(quote) => {
                for (i, &b) in chunk.iter().enumerate() {
                    if self.escape {
                        self.escape = false;
                        continue;
                    }
                    if b == quote || b == b'\n' {
                        return Some((i, b""));
                    }
                    self.escape = quote == b'"' && b == b'\\';
                }
                None
            }
            Cont::JsonQuote => {
                for (i, &b) in chunk.iter().enumerate() {
                    if self.escape {
                        self.escape = false;
                        if b == b'"' {
                            // The closing `\"`: its backslash was dropped with the last
                            // chunk.
                            return Some((i, b"\\"));
                        }
                        continue;
                    }
                    if b == b'\\' {
                        if chunk.get(i + 1) == Some(&b'"') {
                            return Some((i, b""));
                        }
                        self.escape = true;
                    } else if b == b'"' || b == b'\n' {
                        return Some((i, b""));
                    }
                }
                None
            }
            Cont::PemEnd => {
                let head = &chunk[..chunk.len().min(PEM_END.len())];
                let mut seam = self.tail.clone();
                seam.extend_from_slice(head);
                if let Some(i) = memchr::memmem::find(&seam, PEM_END)
                    && i < self.tail.len()
                {
                    // It began in bytes already dropped: write it, go on after it.
                    return Some((i + PEM_END.len() - self.tail.len(), PEM_END));
                }
                if let Some(i) = memchr::memmem::find(chunk, PEM_END) {
                    return Some((i, b""));
                }
                seam.clear();
                seam.extend_from_slice(&self.tail);
                seam.extend_from_slice(&chunk[chunk.len().saturating_sub(PEM_END.len())..]);
                let keep = seam.len().saturating_sub(PEM_END.len() - 1);
                self.tail = seam[keep..].to_vec();
                None
            }
        }
    }
}

//! The streaming form of the masker: chunks in, masked bytes out, a bounded carry.

use super::shapes::{Cont, Hay, MAX_TRIGGER_LEN};
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
                    self.remember(&chunk[..n]);
                    self.dropping = None;
                    chunk = &chunk[n..];
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
                        self.emitted = at + n;
                        self.exact_from = self.emitted;
                        self.shape_from = self.emitted.max(open.trigger + 1);
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

/// Recognises the rest of a candidate being dropped.
#[derive(Debug)]
struct Dropping {
    cont: Cont,
    /// The last bytes dropped (`-----END ` may straddle chunks).
    tail: Vec<u8>,
    /// The last byte dropped was a backslash that escapes the next.
    escape: bool,
}

const PEM_END: &[u8] = b"-----END ";

impl Dropping {
    fn new(cont: Cont) -> Self {
        Self {
            cont,
            tail: Vec::new(),
            escape: false,
        }
    }

    /// Drops the candidate's bytes at the start of `chunk`. `None`: all of it was dropped
    /// and the candidate goes on; `Some((n, literal))`: it ended after `n` bytes, and
    /// `literal` (bytes dropped earlier that belong to what follows) is written first.
    fn consume(&mut self, chunk: &[u8]) -> Option<(usize, &'static [u8])> {
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

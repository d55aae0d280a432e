//! The bounded buffers output passes through: secret masking, line splitting, the tail and
//! the capped log file. Each holds at most a fixed number of bytes whatever the child
//! prints.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use weft_core::secrets::StreamMasker;

/// What a masked secret is replaced with.
pub(crate) use weft_core::secrets::MASK;

/// Known secret values shorter than this are not masked (see [`weft_core::secrets`]).
pub use weft_core::secrets::MIN_SECRET_LEN;

/// The masker of one attempt: its known secret values (deduplicated, longest first, short
/// ones dropped) and every shape weft masks ([`weft_core::secrets::Masker`]).
#[derive(Debug, Default)]
pub(crate) struct Secrets {
    masker: weft_core::secrets::Masker,
}

impl Secrets {
    pub(crate) fn new(values: &[String]) -> Self {
        Self {
            masker: weft_core::secrets::Masker::new(values),
        }
    }

    /// `text` with every secret masked.
    pub(crate) fn mask_str(&self, text: &str) -> String {
        self.masker.mask(text).into_owned()
    }
}

/// Masks secrets in a byte stream that arrives in arbitrary chunks: a secret or a secret
/// shape split across two chunks is still masked. Holds back only the bytes that could
/// still become part of a mask (at most [`weft_core::secrets::Masker::hold_bound`] bytes,
/// see [`weft_core::secrets`] for what happens to a longer candidate), so ordinary output
/// passes straight through.
#[derive(Debug, Default)]
pub(crate) struct Masker {
    stream: StreamMasker,
}

impl Masker {
    pub(crate) fn push(&mut self, secrets: &Secrets, chunk: &[u8], out: &mut Vec<u8>) {
        self.stream.push(&secrets.masker, chunk, out);
    }

    /// The held-back bytes, masked, at end of stream.
    pub(crate) fn finish(&mut self, secrets: &Secrets, out: &mut Vec<u8>) {
        self.stream.finish(&secrets.masker, out);
    }
}

/// Splits a byte stream into lines on `\n`, dropping one trailing `\r`. Lines longer than
/// `cap` are not kept whole: the callback gets their first `head` bytes and their full
/// length.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    buf: Vec<u8>,
    cap: usize,
    head: usize,
    /// Length so far of a line that outgrew `cap` (its head is in `buf`).
    overflow: Option<u64>,
}

/// A line's bytes; `Some(total)` when the line was longer than the splitter's cap and
/// `bytes` is only its head.
pub(crate) type LineSink<'a> = dyn FnMut(&[u8], Option<u64>) + 'a;

/// Capacity a line buffer may keep between lines; more is released.
const KEEP_CAPACITY: usize = 64 * 1024;

impl Default for LineSplitter {
    fn default() -> Self {
        Self::new(4096, 4096)
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl LineSplitter {
    pub(crate) fn new(cap: usize, head: usize) -> Self {
        Self {
            buf: Vec::new(),
            cap: cap.max(head),
            head,
            overflow: None,
        }
    }

    pub(crate) fn push(&mut self, data: &[u8], sink: &mut LineSink<'_>) {
        let mut rest = data;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            let segment = &rest[..nl];
            rest = &rest[nl + 1..];
            if let Some(total) = self.overflow.take() {
                sink(&self.buf, Some(total + segment.len() as u64));
                self.reset();
            } else if self.buf.len() + segment.len() > self.cap {
                let total = (self.buf.len() + segment.len()) as u64;
                self.keep_head(segment);
                sink(&self.buf, Some(total));
                self.reset();
            } else if self.buf.is_empty() {
                sink(strip_cr(segment), None);
            } else {
                self.buf.extend_from_slice(segment);
                sink(strip_cr(&self.buf), None);
                self.reset();
            }
        }
        if rest.is_empty() {
            return;
        }
        if let Some(total) = &mut self.overflow {
            *total += rest.len() as u64;
        } else if self.buf.len() + rest.len() > self.cap {
            let total = (self.buf.len() + rest.len()) as u64;
            self.keep_head(rest);
            self.overflow = Some(total);
        } else {
            self.buf.extend_from_slice(rest);
        }
    }

    /// The last line, if the stream did not end with a newline.
    pub(crate) fn finish(&mut self, sink: &mut LineSink<'_>) {
        if let Some(total) = self.overflow.take() {
            sink(&self.buf, Some(total));
        } else if !self.buf.is_empty() {
            sink(strip_cr(&self.buf), None);
        }
        self.buf = Vec::new();
    }

    /// Keeps only the first `head` bytes of the current line (`buf` then `more`).
    fn keep_head(&mut self, more: &[u8]) {
        if self.buf.len() < self.head {
            let take = (self.head - self.buf.len()).min(more.len());
            self.buf.extend_from_slice(&more[..take]);
        }
        self.buf.truncate(self.head);
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf.shrink_to(self.head);
        }
    }

    fn reset(&mut self) {
        self.buf.clear();
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::new();
        }
    }
}

/// The last `cap` bytes of output.
#[derive(Debug)]
pub(crate) struct Tail {
    buf: VecDeque<u8>,
    cap: usize,
}

impl Tail {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            cap,
        }
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        if self.cap == 0 {
            return;
        }
        if data.len() >= self.cap {
            self.buf.clear();
            self.buf.extend(&data[data.len() - self.cap..]);
            return;
        }
        let over = (self.buf.len() + data.len()).saturating_sub(self.cap);
        self.buf.drain(..over);
        self.buf.extend(data);
    }

    /// Lossy UTF-8 of the kept bytes, at most `cap` bytes long: a character cut by the
    /// window's start is dropped rather than shown as a replacement character.
    pub(crate) fn into_string(mut self) -> String {
        let bytes = self.buf.make_contiguous();
        let skip = bytes
            .iter()
            .take(3)
            .take_while(|b| (0x80..0xC0).contains(*b))
            .count();
        let text = String::from_utf8_lossy(&bytes[skip..]).into_owned();
        keep_last(text, self.cap)
    }
}

/// The last at most `max` bytes of `text`, starting on a character boundary.
pub(crate) fn keep_last(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

/// The first at most `max` bytes of `text`, ending on a character boundary.
pub(crate) fn keep_first(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The output log: everything written in arrival order until `cap` bytes, then one note.
#[derive(Debug)]
pub(crate) struct LogFile {
    file: Option<fs_err::File>,
    path: PathBuf,
    written: u64,
    cap: u64,
    last_byte: u8,
    pub(crate) truncated: bool,
    pub(crate) error: Option<String>,
}

impl LogFile {
    /// The log at `path`; an empty path keeps no file (everything else still happens).
    pub(crate) fn create(path: &Path, cap: u64) -> std::io::Result<Self> {
        if path.as_os_str().is_empty() {
            return Ok(Self {
                file: None,
                path: PathBuf::new(),
                written: 0,
                cap,
                last_byte: b'\n',
                truncated: false,
                error: None,
            });
        }
        // Readable only by the user, whatever the umask: the log may hold secrets an
        // agent printed that no mask recognised.
        let file = fs_err::File::from_parts(crate::contain::private::create_file(path)?, path);
        Ok(Self {
            file: Some(file),
            path: path.to_owned(),
            written: 0,
            cap,
            last_byte: b'\n',
            truncated: false,
            error: None,
        })
    }

    /// Whether output is written to a file at all.
    pub(crate) fn keeps_file(&self) -> bool {
        !self.path.as_os_str().is_empty()
    }

    pub(crate) fn write(&mut self, data: &[u8]) {
        if self.truncated || data.is_empty() {
            return;
        }
        let Some(file) = &mut self.file else {
            return;
        };
        let room = self.cap - self.written;
        let (now, cut) = if data.len() as u64 <= room {
            (data, false)
        } else {
            // `room` < data.len(), so it fits in usize.
            (&data[..usize::try_from(room).unwrap_or(0)], true)
        };
        let mut result = file.write_all(now);
        if let Some(&last) = now.last() {
            self.last_byte = last;
        }
        self.written += now.len() as u64;
        if cut {
            self.truncated = true;
            let newline = if self.last_byte == b'\n' { "" } else { "\n" };
            let note = format!(
                "{newline}[weft: log capped at {} bytes; further output dropped]\n",
                self.cap
            );
            result = result.and_then(|()| file.write_all(note.as_bytes()));
        }
        if let Err(err) = result {
            self.error = Some(format!("writing {}: {err}", self.path.display()));
            self.truncated = true;
            self.file = None;
        }
    }

    pub(crate) fn close(&mut self) {
        if let Some(file) = self.file.take()
            && let Err(err) = file.sync_data()
        {
            self.error
                .get_or_insert_with(|| format!("syncing {}: {err}", self.path.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask_chunks(secrets: &[&str], chunks: &[&[u8]]) -> String {
        let secrets = Secrets::new(&secrets.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        let mut masker = Masker::default();
        let mut out = Vec::new();
        for chunk in chunks {
            masker.push(&secrets, chunk, &mut out);
        }
        masker.finish(&secrets, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn masks_secrets_across_chunks() {
        assert_eq!(
            mask_chunks(&["hunter22"], &[b"pw=hun", b"ter22!"]),
            "pw=****!"
        );
        assert_eq!(
            mask_chunks(&["hunter22"], &[b"h", b"u", b"n", b"ter22"]),
            "****"
        );
        assert_eq!(
            mask_chunks(&["hunter22"], &[b"hunte", b"x hunter2"]),
            "huntex hunter2"
        );
        assert_eq!(mask_chunks(&["abcd", "bcdefg"], &[b"xabcdefgy"]), "x****y");
        assert_eq!(
            mask_chunks(&["abc"], &[b"abc"]),
            "abc",
            "short secrets ignored"
        );
        assert_eq!(mask_chunks(&[], &[b"plain"]), "plain");
    }

    #[test]
    fn masks_secret_shapes_across_chunks() {
        let token = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
        let (a, b) = token.split_at(9);
        assert_eq!(
            mask_chunks(
                &[],
                &[
                    b"DATABASE_URL=postgres://admin:p",
                    b"w@db/x ",
                    a.as_bytes(),
                    b.as_bytes(),
                    b"\n"
                ]
            ),
            "DATABASE_URL=postgres://admin:****@db/x ghp_****\n"
        );
    }

    #[test]
    fn masker_passes_ordinary_output_through_at_once() {
        let secrets = Secrets::new(&["sekrit-value".to_owned()]);
        let mut masker = Masker::default();
        let mut out = Vec::new();
        masker.push(&secrets, b"hello world\n", &mut out);
        assert_eq!(out, b"hello world\n");
        masker.push(&secrets, b"tail sek", &mut out);
        assert_eq!(out, b"hello world\ntail ");
    }

    fn split(cap: usize, head: usize, chunks: &[&[u8]]) -> Vec<(String, Option<u64>)> {
        let mut splitter = LineSplitter::new(cap, head);
        let mut lines = Vec::new();
        let mut sink = |line: &[u8], total: Option<u64>| {
            lines.push((String::from_utf8_lossy(line).into_owned(), total));
        };
        for chunk in chunks {
            splitter.push(chunk, &mut sink);
        }
        splitter.finish(&mut sink);
        lines
    }

    #[test]
    fn splits_lines() {
        assert_eq!(
            split(100, 100, &[b"a\r\nb", b"c\n\nlast"]),
            vec![
                ("a".into(), None),
                ("bc".into(), None),
                (String::new(), None),
                ("last".into(), None)
            ]
        );
        assert_eq!(
            split(8, 4, &[b"0123456789", b"abc\nok\n"]),
            vec![("0123".into(), Some(13)), ("ok".into(), None)]
        );
        assert_eq!(
            split(8, 4, &[b"0123456789abc"]),
            vec![("0123".into(), Some(13))]
        );
    }

    #[test]
    fn tail_keeps_the_last_bytes_on_a_char_boundary() {
        let mut tail = Tail::new(4);
        tail.push(b"hello ");
        tail.push("wörld".as_bytes());
        assert_eq!(tail.into_string(), "rld");
        let mut tail = Tail::new(4);
        tail.push(&[0xff, 0xfe, 0xfd, 0xfc]);
        assert!(tail.into_string().len() <= 4);
    }
}

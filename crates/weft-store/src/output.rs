//! Live output: an attempt's raw output, readable from any process by byte offset.
//!
//! # Contract
//!
//! The engine's supervisor appends everything an attempt prints (stdout and stderr,
//! secrets masked) to the file its attempt row names (`log_path`), and only appends: bytes
//! once written never change or move, and the file stops growing at the log cap. So a byte
//! offset names the same byte for every reader, forever, and any process can read an
//! attempt's output without talking to the engine:
//!
//! - [`Store::read_output`]`(attempt, offset, max)` returns the bytes from `offset`, at
//!   most `max` (bounded by [`OUTPUT_CHUNK_MAX`]), with the offset to ask for next and
//!   whether the attempt is still running.
//! - To fetch history and then follow: start at 0 (or any offset kept from before), ask
//!   again from `next` while a chunk comes back full, and when one comes back short, wait
//!   a moment (the engine polls at 200 ms) and ask again — until [`OutputChunk::finished`].
//! - `live` is read before the bytes: a chunk that says the attempt is no longer running
//!   and reaches the end of the file holds the last of its output (`finished`). A chunk
//!   that says it is running may be followed by more.
//! - An offset past the end returns no bytes and `next` = the end (a reader that kept a
//!   stale offset is not refused). Bytes are raw: a chunk may end inside a UTF-8
//!   character; a text reader keeps the partial character for the next chunk.
//!
//! Nothing here writes; reading never blocks the engine (the file is opened read-only per
//! call, no lock is taken).

use std::io::{Read, Seek, SeekFrom};

use fs_err as fs;
use weft_core::AttemptStatus;

use crate::{Store, StoreError};

/// The most bytes one [`Store::read_output`] call returns.
pub const OUTPUT_CHUNK_MAX: usize = 1024 * 1024;

/// A piece of an attempt's output (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// Where `bytes` starts in the attempt's output.
    pub offset: u64,
    pub bytes: Vec<u8>,
    /// The offset to read from next (`offset + bytes.len()`).
    pub next: u64,
    /// The attempt was still running when this chunk was read.
    pub live: bool,
    /// No more output will ever come after `next`: the attempt ended and this chunk
    /// reached the end of its output.
    pub finished: bool,
}

impl Store {
    /// Up to `max` bytes of the attempt's output from `offset` (see the module docs);
    /// `None` when the workspace has no such attempt. An attempt that never started has
    /// no output: one empty, finished chunk.
    pub fn read_output(
        &self,
        attempt_id: &str,
        offset: u64,
        max: usize,
    ) -> Result<Option<OutputChunk>, StoreError> {
        // Status first: bytes read after it are at least as new as what it says.
        let Some(attempt) = self.attempt(attempt_id)? else {
            return Ok(None);
        };
        let live = attempt.status == AttemptStatus::Running;
        let max = max.clamp(1, OUTPUT_CHUNK_MAX);
        let empty = |next: u64| OutputChunk {
            offset,
            bytes: Vec::new(),
            next,
            live,
            finished: !live,
        };
        let Some(path) = attempt.log_path else {
            return Ok(Some(empty(offset)));
        };
        let io = |source: std::io::Error| StoreError::Io {
            path: path.clone().into(),
            source,
        };
        let mut file = match fs::File::open(&path) {
            Ok(file) => file,
            // Not created yet (the attempt is starting) or removed with its run.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Some(empty(offset)));
            }
            Err(e) => return Err(io(e)),
        };
        let len = file.metadata().map_err(io)?.len();
        if offset >= len {
            return Ok(Some(OutputChunk {
                offset: len,
                ..empty(len)
            }));
        }
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let wanted = usize::try_from(len - offset).unwrap_or(usize::MAX).min(max);
        let mut bytes = Vec::with_capacity(wanted);
        file.take(wanted as u64)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        let next = offset + bytes.len() as u64;
        Ok(Some(OutputChunk {
            offset,
            bytes,
            next,
            live,
            finished: !live && next >= len,
        }))
    }
}

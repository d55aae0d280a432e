//! A large plan's tasks rendered by two threads taking turns, written in plan order: what
//! `weft status` and `weft status --json` do from [`SPLIT_FROM`] tasks on.
//!
//! Contract: [`in_turns`] writes to `out` exactly the bytes one thread writing every task
//! in order gives (tests hold the map and the JSON equal to it), and returns each chunk's
//! result in order. Threads: this one and one helper, started on another CPU
//! (`weft_store::apart`), ended before it returns. Bounds: the helper writes into two
//! buffers of one chunk each, reused (a buffer per half, 1.3 MiB for 10,000 tasks of JSON,
//! cost more in page faults than the helper saved). A panic on either thread is one on
//! this thread; an error writing to `out` ends both; neither ever waits for the other
//! once that one is gone.
//!
//! How: the tasks are cut into chunks of [`CHUNK`]. First each thread prepares its half
//! (`prepare`: what the map measures of every row), and each waits for the other's. Then
//! this thread writes the even chunks straight to `out`, and the helper the odd ones into
//! a buffer this thread writes out in its turn and hands back. Both go at about the same
//! pace, so neither waits long at a turn.

use std::io::Write;
use std::ops::Range;
use std::sync::{OnceLock, mpsc};

/// From this many tasks on, two threads render them. Below it a thread's start (~0.1 ms)
/// is more than it saves.
pub const SPLIT_FROM: usize = 3_000;

/// Tasks a turn (~40 KiB of map, ~130 KiB of JSON).
pub const CHUNK: usize = 512;

/// What [`in_turns`] hands `write`: both halves' prepared parts, each with the tasks it
/// covers.
pub struct Prepared<'p, P> {
    pub halves: [(&'p P, Range<usize>); 2],
}

impl<P> Prepared<'_, P> {
    /// The part prepared for task `index` and where that part begins.
    pub fn of(&self, index: usize) -> (&P, usize) {
        let [(first, range), (second, second_range)] = &self.halves;
        if range.contains(&index) || !second_range.contains(&index) {
            (first, range.start)
        } else {
            (second, second_range.start)
        }
    }
}

/// Write tasks `0..count` to `out` in order, `write(prepared, range, sink)` writing the
/// tasks of `range` to `sink`, two threads taking turns from `split_from` tasks on (see the
/// module docs); each chunk's result, in order.
pub fn in_turns<P, R>(
    out: &mut dyn Write,
    count: usize,
    split_from: usize,
    prepare: impl Fn(Range<usize>) -> P + Sync,
    write: impl Fn(&Prepared<'_, P>, Range<usize>, &mut dyn Write) -> std::io::Result<R> + Sync,
) -> std::io::Result<Vec<R>>
where
    P: Send + Sync,
    R: Send,
{
    if count < split_from.max(2) {
        let whole = prepare(0..count);
        let prepared = Prepared {
            halves: [(&whole, 0..count), (&whole, 0..count)],
        };
        return Ok(vec![write(&prepared, 0..count, out)?]);
    }
    let half = count / 2;
    let chunks = count.div_ceil(CHUNK);
    let chunk = |index: usize| index * CHUNK..((index + 1) * CHUNK).min(count);
    let parts: [OnceLock<P>; 2] = [OnceLock::new(), OnceLock::new()];
    std::thread::scope(|scope| {
        let (mine_ready, mine_ready_seen) = mpsc::sync_channel::<()>(1);
        let (theirs_ready, theirs_ready_seen) = mpsc::sync_channel::<()>(1);
        let (full, filled) = mpsc::sync_channel::<(Vec<u8>, std::io::Result<R>)>(2);
        let (free, freed) = mpsc::sync_channel::<Vec<u8>>(2);
        let (parts, prepare, write) = (&parts, &prepare, &write);
        let prepared = move || -> Option<Prepared<'_, P>> {
            Some(Prepared {
                halves: [(parts[0].get()?, 0..half), (parts[1].get()?, half..count)],
            })
        };
        weft_store::apart::spawn(scope, move || {
            let _ = parts[1].set(prepare(half..count));
            if theirs_ready.send(()).is_err() || mine_ready_seen.recv().is_err() {
                return;
            }
            let Some(both) = prepared() else {
                return;
            };
            let mut spare = vec![Vec::new(), Vec::new()];
            for index in (1..chunks).step_by(2) {
                let Some(mut buffer) = spare.pop().or_else(|| freed.recv().ok()) else {
                    return;
                };
                let result = write(&both, chunk(index), &mut buffer);
                if full.send((buffer, result)).is_err() {
                    return;
                }
            }
        });
        let _ = parts[0].set(prepare(0..half));
        // Gone (it panicked): the scope's end raises its panic here.
        let _ = mine_ready.send(());
        if theirs_ready_seen.recv().is_err() {
            return Ok(Vec::new());
        }
        let both = prepared().expect("both halves are prepared");
        let mut results = Vec::with_capacity(chunks);
        for index in 0..chunks {
            if index % 2 == 0 {
                results.push(write(&both, chunk(index), &mut *out)?);
            } else {
                let Ok((mut buffer, result)) = filled.recv() else {
                    return Ok(results);
                };
                out.write_all(&buffer)?;
                results.push(result?);
                buffer.clear();
                let _ = free.send(buffer);
            }
        }
        Ok(results)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each task's line, as one thread writes them; `prepare` notes which thread prepared
    /// which half.
    fn lines(count: usize, split_from: usize) -> (String, Vec<Range<usize>>) {
        let mut out = Vec::new();
        let results = in_turns(
            &mut out,
            count,
            split_from,
            |range| range.start * 1000,
            |prepared, range, sink| {
                for index in range.clone() {
                    let (part, from) = prepared.of(index);
                    assert_eq!(*part, from * 1000, "task {index} gets its own half's part");
                    writeln!(sink, "task {index}")?;
                }
                Ok(range)
            },
        )
        .unwrap();
        (String::from_utf8(out).unwrap(), results)
    }

    #[test]
    fn two_threads_write_what_one_writes_in_the_same_order() {
        for count in [
            0,
            1,
            2,
            3,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK,
            5 * CHUNK + 7,
        ] {
            let (one, whole) = lines(count, usize::MAX);
            let expected: String = (0..count).map(|i| format!("task {i}\n")).collect();
            assert_eq!(one, expected);
            assert_eq!(whole, vec![0..count]);
            let (two, chunks) = lines(count, 2);
            assert_eq!(two, expected, "{count} tasks in turns");
            if count >= 2 {
                let flat: Vec<usize> = chunks.iter().flat_map(|r| r.clone()).collect();
                assert_eq!(flat, (0..count).collect::<Vec<_>>(), "chunks in order");
                assert_eq!(chunks.len(), count.div_ceil(CHUNK));
            }
        }
    }

    #[test]
    fn an_error_writing_ends_both_threads_and_is_returned() {
        struct Fails(usize);
        impl Write for Fails {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
                }
                self.0 -= 1;
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        for fails_after in [0, 1, 700, 1500] {
            let error = in_turns(
                &mut Fails(fails_after),
                4 * CHUNK,
                2,
                |_| (),
                |_, range, sink| {
                    for index in range {
                        writeln!(sink, "task {index}")?;
                    }
                    Ok(())
                },
            )
            .unwrap_err();
            assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe);
        }
    }

    #[test]
    fn a_panic_on_the_helper_is_a_panic_here_not_a_hang() {
        for panics_in in ["prepare", "write"] {
            let outcome = std::panic::catch_unwind(|| {
                let mut out = Vec::new();
                in_turns(
                    &mut out,
                    4 * CHUNK,
                    2,
                    |range| {
                        assert!(!(panics_in == "prepare" && range.start > 0), "boom");
                    },
                    |_, range, _| {
                        assert!(!(panics_in == "write" && range.start == CHUNK), "boom");
                        Ok(())
                    },
                )
            });
            assert!(
                outcome.is_err(),
                "{panics_in}: the helper's panic is raised"
            );
        }
    }
}

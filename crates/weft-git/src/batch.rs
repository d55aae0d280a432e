//! Long-lived git processes a [`Repo`] handle keeps for what a run asks on every task:
//! a `git cat-file --batch-command` that reads refs and objects, `git update-ref --stdin`
//! processes that move refs in transactions, and writers of objects (`git hash-object -w
//! --stdin-paths`, one for blobs, one for trees, one for commits).
//!
//! Why: an isolated run asks git the same small things for every task (where are the
//! integration ref and weft's record of it; which symlinks did the task add; create and
//! move the task branch; write the landing's merge commit and its evidence note), and on
//! an idle machine each git process costs 1.2–1.5 ms to start and stop (much of it the
//! C library's start-up), several times what the question costs. Asked over a pipe of a
//! process already running, each is a few tens of microseconds. The objects are still
//! git's to write: weft only writes their content to a private temporary file for
//! `hash-object` to read.
//!
//! The contract:
//! - **Never a different answer.** Each process is an optimisation of a one-shot command
//!   the caller still has: on any failure (the process cannot start, dies, is killed by a
//!   Ctrl-C, answers something unexpected) the process is dropped and the caller runs the
//!   one-shot command, whose result and error are the ones it always gave. A process is
//!   started again on the next use.
//! - **Fresh reads.** `cat-file` resolves a ref name each time it is asked (a loose ref is
//!   read from its file, `packed-refs` is re-read when it changed), and finds objects other
//!   processes wrote since it started; `update-ref --stdin` takes each ref's lock at
//!   `prepare` and holds nothing between transactions.
//! - **Exact names.** `cat-file` resolves a name the way `rev-parse` does, trying
//!   `refs/<name>`, `refs/tags/<name>`, `refs/heads/<name>`, `refs/remotes/<name>` and
//!   `refs/remotes/<name>/HEAD` after the name itself. The name itself wins when it exists;
//!   when it does not, one of those could answer in its place. So a ref is read together
//!   with those five spellings, and the answer counts only when none of them exists (else
//!   the one-shot `for-each-ref`, which matches names exactly, is asked).
//! - **Commits as git writes them.** A commit is written with the author and committer
//!   `git var -l` gave once for the handle (the repository's identity, or weft's
//!   fallback) and the time now, in the zone git gave; when the environment fixes the
//!   dates (`GIT_AUTHOR_DATE`, `GIT_COMMITTER_DATE`) or the configuration could sign or
//!   re-encode commits (`commit.gpgSign`, `i18n.commitEncoding`), git writes them itself.
//! - **Bounded.** An object larger than [`OBJECT_LIMIT`] is not read into memory (the
//!   process is dropped and the caller falls back); at most [`WRITERS`] ref writers and one
//!   writer per object kind are kept, so at most eight processes per handle.
//! - **Threads.** Each process sits behind a mutex held for one exchange; a `Repo` and
//!   its clones share them. Dropping the last handle ends them: their standard input
//!   closes (git exits on end of input) and they are reaped. Nothing is held between
//!   exchanges, so a process killed at any point leaves nothing behind.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::Mutex;

use crate::{Oid, Repo};

/// The largest object a reader takes into memory.
pub(crate) const OBJECT_LIMIT: u64 = 64 << 20;
/// How many `update-ref --stdin` processes (one per reflog message) a handle keeps: a run
/// uses three (creating task branches, moving them, moving the notes ref).
const WRITERS: usize = 4;
/// The longest answer line a reader accepts (an id, a type, a size; or a name it echoes).
const LINE_LIMIT: u64 = 4096;

/// Who weft's commits are by, as `git var -l` said it once for this handle: author and
/// committer without their dates, and the time zone git would stamp them with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Idents {
    pub author: String,
    pub committer: String,
    pub zone: String,
    /// Whether the repository's configuration could make `git commit-tree` sign or
    /// re-encode a commit (`commit.gpgSign`, `i18n.commitEncoding`): commits are then
    /// left to it.
    pub commit_tree_only: bool,
}

impl Idents {
    /// The `author` and `committer` lines of a commit made now.
    pub(crate) fn lines(&self) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!(
            "author {} {now} {zone}\ncommitter {} {now} {zone}\n",
            self.author,
            self.committer,
            zone = self.zone
        )
    }
}

/// The processes one repository handle keeps.
#[derive(Debug, Default)]
pub(crate) struct Processes {
    idents: std::sync::OnceLock<Option<Idents>>,
    reader: Mutex<Option<Piped>>,
    /// `(reflog message, process)`, most recently used last.
    writers: Mutex<VecDeque<(String, Piped)>>,
    /// `git hash-object -w --stdin-paths` for blobs, for trees and for commits.
    objects: Mutex<ObjectWriters>,
}

#[derive(Debug, Default)]
struct ObjectWriters {
    blob: Option<Piped>,
    commit: Option<Piped>,
    tree: Option<Piped>,
    /// Names the next content file.
    written: u64,
}

/// What [`Processes::write_object`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Blob,
    Tree,
    Commit,
}

/// A git process talking over its standard input and output.
#[derive(Debug)]
struct Piped {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Piped {
    fn drop(&mut self) {
        // Idle: nothing is held, so ending it at once is safe. Kill rather than wait for
        // it to see the end of its input, so a wedged git cannot hang the drop.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Piped {
    fn start(repo: &Repo, args: &[&str], read_only: bool) -> Option<Piped> {
        let mut call = repo.call().args(args);
        if read_only {
            call = call.read_only();
        }
        let mut child = call.spawn_piped().ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Piped {
            child,
            stdin,
            stdout,
        })
    }

    /// One answer line, without its newline; `None` at end of output or past the limit.
    fn line(&mut self) -> Option<String> {
        let mut line = Vec::new();
        (&mut self.stdout)
            .take(LINE_LIMIT)
            .read_until(b'\n', &mut line)
            .ok()?;
        let line = line.strip_suffix(b"\n")?;
        String::from_utf8(line.to_vec()).ok()
    }
}

/// What `cat-file` says of one name: `None` when it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Info {
    pub oid: Oid,
    pub kind: String,
    pub size: u64,
}

impl Processes {
    /// Run `exchange` on the reader (started if needed); `None` (and the reader dropped)
    /// when it could not be started or the exchange failed.
    fn with_reader<T>(
        &self,
        repo: &Repo,
        exchange: impl FnOnce(&mut Piped) -> Option<T>,
    ) -> Option<T> {
        let mut slot = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Piped::start(repo, &["cat-file", "--batch-command"], true);
        }
        let answer = exchange(slot.as_mut()?);
        if answer.is_none() {
            *slot = None;
        }
        answer
    }

    /// `info` for each of `names`, asked in one write: per name its object, or `None`
    /// when missing. `None` when the reader failed.
    pub(crate) fn info(&self, repo: &Repo, names: &[&str]) -> Option<Vec<Option<Info>>> {
        if names
            .iter()
            .any(|n| n.is_empty() || n.contains(['\n', '\r']))
        {
            return None;
        }
        self.with_reader(repo, |piped| {
            let mut request = String::new();
            for name in names {
                request.push_str("info ");
                request.push_str(name);
                request.push('\n');
            }
            piped.stdin.write_all(request.as_bytes()).ok()?;
            piped.stdin.flush().ok()?;
            let mut answers = Vec::with_capacity(names.len());
            for name in names {
                let line = piped.line()?;
                answers.push(parse_info(&line, name)?);
            }
            Some(answers)
        })
    }

    /// Where each of `references` (full names) points, read exactly (see the module
    /// documentation); `None` when the reader failed or a name is shadowed.
    pub(crate) fn ref_targets(&self, repo: &Repo, references: &[&str]) -> Option<Vec<Option<Oid>>> {
        let mut names: Vec<String> = Vec::with_capacity(references.len() * 6);
        for reference in references {
            names.push((*reference).to_owned());
            names.extend(shadows(reference));
        }
        let asked: Vec<&str> = names.iter().map(String::as_str).collect();
        let answers = self.info(repo, &asked)?;
        let mut found = Vec::with_capacity(references.len());
        for group in answers.chunks(6) {
            if group[1..].iter().any(Option::is_some) {
                return None;
            }
            found.push(group[0].as_ref().map(|info| info.oid.clone()));
        }
        Some(found)
    }

    /// The type and content of object `oid`; `Some(None)` when it is missing.
    pub(crate) fn contents(&self, repo: &Repo, oid: &Oid) -> Option<Option<(String, Vec<u8>)>> {
        self.with_reader(repo, |piped| {
            writeln!(piped.stdin, "contents {oid}").ok()?;
            piped.stdin.flush().ok()?;
            let line = piped.line()?;
            let Some(info) = parse_info(&line, oid.as_str())? else {
                return Some(None);
            };
            if info.size > OBJECT_LIMIT {
                return None;
            }
            let mut content = vec![0; usize::try_from(info.size).ok()? + 1];
            piped.stdout.read_exact(&mut content).ok()?;
            (content.pop() == Some(b'\n')).then_some(())?;
            Some(Some((info.kind, content)))
        })
    }

    /// Apply `commands` (`update`/`create` lines of `git update-ref --stdin`) as one
    /// transaction, logged with `message`. `false` when the transaction was refused or
    /// the writer failed; the caller then runs the one-shot command, which tells them
    /// apart.
    pub(crate) fn transaction(&self, repo: &Repo, message: &str, commands: &str) -> bool {
        let mut writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        let mut piped = match writers.iter().position(|(m, _)| m == message) {
            Some(index) => writers.remove(index).map(|(_, p)| p),
            None => Piped::start(repo, &["update-ref", "-m", message, "--stdin"], false),
        };
        let Some(mut writer) = piped.take() else {
            return false;
        };
        let done = (|| {
            let request = format!("start\n{commands}prepare\ncommit\n");
            writer.stdin.write_all(request.as_bytes()).ok()?;
            writer.stdin.flush().ok()?;
            for expected in ["start: ok", "prepare: ok", "commit: ok"] {
                (writer.line()? == expected).then_some(())?;
            }
            Some(())
        })()
        .is_some();
        if done {
            writers.push_back((message.to_owned(), writer));
            while writers.len() > WRITERS {
                writers.pop_front();
            }
        }
        done
    }
}

impl Processes {
    /// Who commits (looked up once); `None` when weft must leave its commits to git: the
    /// dates are fixed by `GIT_AUTHOR_DATE`/`GIT_COMMITTER_DATE`, or the lookup failed.
    pub(crate) fn idents(&self, repo: &Repo) -> Option<&Idents> {
        if repo.git.sets("GIT_AUTHOR_DATE") || repo.git.sets("GIT_COMMITTER_DATE") {
            return None;
        }
        self.idents
            .get_or_init(|| {
                let options = repo.identity_config().ok()?.to_vec();
                let out = repo
                    .read()
                    .config(&options)
                    .args(["var", "-l"])
                    .run()
                    .ok()?;
                parse_idents(&out.text())
            })
            .as_ref()
    }

    /// Write `content` as an object of `kind` (`git hash-object -w --stdin-paths`, which
    /// reads it from a file weft writes for the moment: a private temporary file that is
    /// removed once git answered). `None` when the writer failed.
    pub(crate) fn write_object(&self, repo: &Repo, kind: Kind, content: &[u8]) -> Option<Oid> {
        let mut writers = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        writers.written += 1;
        let file = std::env::temp_dir().join(format!(
            "weft-object-{}-{}-{}",
            std::process::id(),
            writers.written,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        let path = file
            .to_str()
            .filter(|p| !p.contains(['\n', '\r']))?
            .to_owned();
        // The content first: a file that cannot be written says nothing of the writer.
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file)
            .ok()?;
        let written = out.write_all(content);
        drop(out);
        if written.is_err() {
            let _ = std::fs::remove_file(&file);
            return None;
        }
        let slot = match kind {
            Kind::Blob => &mut writers.blob,
            Kind::Tree => &mut writers.tree,
            Kind::Commit => &mut writers.commit,
        };
        if slot.is_none() {
            let args: &[&str] = match kind {
                Kind::Blob => &["hash-object", "-w", "--no-filters", "--stdin-paths"],
                // git checks a tree's and a commit's format before it writes one.
                Kind::Tree => &["hash-object", "-w", "-t", "tree", "--stdin-paths"],
                Kind::Commit => &["hash-object", "-w", "-t", "commit", "--stdin-paths"],
            };
            *slot = Piped::start(repo, args, false);
        }
        let answer = (|| {
            let piped = slot.as_mut()?;
            writeln!(piped.stdin, "{path}").ok()?;
            piped.stdin.flush().ok()?;
            Oid::parse(&piped.line()?)
        })();
        let _ = std::fs::remove_file(&file);
        if answer.is_none() {
            *slot = None;
        }
        answer
    }
}

/// The names `cat-file` would try in place of `reference` when it does not exist.
fn shadows(reference: &str) -> [String; 5] {
    [
        format!("refs/{reference}"),
        format!("refs/tags/{reference}"),
        format!("refs/heads/{reference}"),
        format!("refs/remotes/{reference}"),
        format!("refs/remotes/{reference}/HEAD"),
    ]
}

/// `<oid> <type> <size>`, or `<name> missing`: `Some(None)` for missing, `None` for
/// anything else (an ambiguous name, a protocol error).
fn parse_info(line: &str, name: &str) -> Option<Option<Info>> {
    if line.strip_suffix(" missing") == Some(name) {
        return Some(None);
    }
    let mut fields = line.split(' ');
    let oid = Oid::parse(fields.next()?)?;
    let kind = fields.next()?.to_owned();
    let size = fields.next()?.parse().ok()?;
    fields.next().is_none().then_some(())?;
    Some(Some(Info { oid, kind, size }))
}

/// `git var -l`: configuration lines first, then the logical variables, so the idents are
/// the last lines that name them.
fn parse_idents(text: &str) -> Option<Idents> {
    let mut author = None;
    let mut committer = None;
    let mut commit_tree_only = false;
    for line in text.lines() {
        if let Some(ident) = line.strip_prefix("GIT_AUTHOR_IDENT=") {
            author = Some(ident);
        } else if let Some(ident) = line.strip_prefix("GIT_COMMITTER_IDENT=") {
            committer = Some(ident);
        } else {
            let key = line
                .split('=')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            commit_tree_only |= key == "commit.gpgsign" || key == "i18n.commitencoding";
        }
    }
    // `Name <email> <seconds> <zone>`: keep the name and email, and the zone.
    let split = |ident: &str| -> Option<(String, String)> {
        let (rest, zone) = ident.rsplit_once(' ')?;
        let (who, seconds) = rest.rsplit_once(' ')?;
        seconds.parse::<i64>().ok()?;
        let zone_ok = zone.len() == 5
            && matches!(zone.as_bytes()[0], b'+' | b'-')
            && zone[1..].bytes().all(|b| b.is_ascii_digit());
        (zone_ok && who.ends_with('>')).then(|| (who.to_owned(), zone.to_owned()))
    };
    let (author, _) = split(author?)?;
    let (committer, zone) = split(committer?)?;
    Some(Idents {
        author,
        committer,
        zone,
        commit_tree_only,
    })
}

/// The content of a tree object holding `entries` (mode, name, id), in git's order (by
/// name, a folder's name compared as if it ended in `/`); `None` for a name git refuses
/// (empty, or holding `/` or a NUL) or a name given twice.
pub(crate) fn tree_content(entries: &mut [(String, Vec<u8>, Oid)]) -> Option<Vec<u8>> {
    let key = |(mode, name, _): &(String, Vec<u8>, Oid)| {
        let mut key = name.clone();
        if mode == "40000" {
            key.push(b'/');
        }
        key
    };
    entries.sort_by_key(key);
    let mut content = Vec::with_capacity(entries.len() * 64);
    for (index, (mode, name, oid)) in entries.iter().enumerate() {
        if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
            return None;
        }
        if index > 0 && entries[index - 1].1 == *name {
            return None;
        }
        content.extend_from_slice(mode.as_bytes());
        content.push(b' ');
        content.extend_from_slice(name);
        content.push(0);
        content.extend(hex_bytes(oid.as_str())?);
    }
    Some(content)
}

/// The raw bytes of a hexadecimal id.
fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    hex.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(*pair.get(1)?)?))
        .collect()
}

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry<'t> {
    pub mode: &'t str,
    pub name: &'t [u8],
    pub oid: Oid,
}

/// The entries of tree object `content` (`<mode> <name>\0<raw id>` each), whose ids are
/// `hash_len` bytes; `None` when it does not parse.
pub(crate) fn tree_entries(content: &[u8], hash_len: usize) -> Option<Vec<Entry<'_>>> {
    let mut entries = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ')?;
        let mode = std::str::from_utf8(&rest[..space]).ok()?;
        let after = &rest[space + 1..];
        let nul = after.iter().position(|&b| b == 0)?;
        let name = &after[..nul];
        let raw = after.get(nul + 1..nul + 1 + hash_len)?;
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let hex: String = raw
            .iter()
            .flat_map(|b| {
                [
                    DIGITS[usize::from(b >> 4)] as char,
                    DIGITS[usize::from(b & 15)] as char,
                ]
            })
            .collect();
        entries.push(Entry {
            mode,
            name,
            oid: Oid::parse(&hex)?,
        });
        rest = &after[nul + 1 + hash_len..];
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_info_line_is_an_object_or_missing_and_nothing_else() {
        let oid = "a".repeat(40);
        assert_eq!(
            parse_info(&format!("{oid} commit 212"), "x"),
            Some(Some(Info {
                oid: Oid::parse(&oid).unwrap(),
                kind: "commit".into(),
                size: 212
            }))
        );
        assert_eq!(
            parse_info("refs/heads/x missing", "refs/heads/x"),
            Some(None)
        );
        assert_eq!(parse_info("refs/heads/y missing", "refs/heads/x"), None);
        assert_eq!(parse_info("refs/heads/x ambiguous", "refs/heads/x"), None);
        assert_eq!(parse_info(&format!("{oid} commit"), "x"), None);
        assert_eq!(parse_info(&format!("{oid} commit 1 2"), "x"), None);
    }

    #[test]
    fn idents_are_the_last_ones_git_var_prints_and_signing_leaves_commits_to_git() {
        let text = "user.name=x\nGIT_COMMITTER_IDENT=Fake <f@f> 1 +0000\n\
                    core.bare=false\n\
                    GIT_COMMITTER_IDENT=Ann Lee <ann@example.com> 1796288293 +0130\n\
                    GIT_AUTHOR_IDENT=Bo <bo@example.com> 1796288293 -0500\n";
        let idents = parse_idents(text).unwrap();
        assert_eq!(idents.committer, "Ann Lee <ann@example.com>");
        assert_eq!(idents.author, "Bo <bo@example.com>");
        assert_eq!(idents.zone, "+0130");
        assert!(!idents.commit_tree_only);
        let signed = format!("Commit.GpgSign=true\n{text}");
        assert!(parse_idents(&signed).unwrap().commit_tree_only);
        assert!(parse_idents("GIT_AUTHOR_IDENT=Bo <b@b> 1 +0000\n").is_none());
        assert!(
            parse_idents(
                "GIT_AUTHOR_IDENT=Bo <b@b> x +0000\nGIT_COMMITTER_IDENT=Bo <b@b> 1 +0000\n"
            )
            .is_none()
        );
    }

    #[test]
    fn a_tree_written_is_in_git_order_and_reads_back_as_it_was_given() {
        let oid = |byte: &str| Oid::parse(&byte.repeat(20)).unwrap();
        let mut entries = vec![
            ("100644".to_owned(), b"a.b".to_vec(), oid("01")),
            ("40000".to_owned(), b"a".to_vec(), oid("02")),
            ("100644".to_owned(), b"a-b".to_vec(), oid("03")),
            ("100644".to_owned(), b"a0".to_vec(), oid("04")),
        ];
        let content = tree_content(&mut entries).unwrap();
        let read = tree_entries(&content, 20).unwrap();
        let names: Vec<&[u8]> = read.iter().map(|e| e.name).collect();
        // `a` is a folder: it sorts as `a/`, after `a.b` and `a-b`, before `a0`.
        assert_eq!(names, [&b"a-b"[..], b"a.b", b"a", b"a0"]);
        assert_eq!(read[2].oid, oid("02"));
        assert_eq!(read[2].mode, "40000");
        let mut twice = vec![
            ("100644".to_owned(), b"x".to_vec(), oid("01")),
            ("100644".to_owned(), b"x".to_vec(), oid("02")),
        ];
        assert!(tree_content(&mut twice).is_none());
        assert!(tree_content(&mut [("100644".to_owned(), b"a/b".to_vec(), oid("01"))]).is_none());
    }

    #[test]
    fn a_tree_is_read_entry_by_entry_and_a_truncated_one_is_refused() {
        let mut tree = Vec::new();
        for (mode, name, byte) in [
            ("100644", "a.txt", 1u8),
            ("40000", "dir", 2),
            ("120000", "link", 3),
        ] {
            tree.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            tree.extend_from_slice(&[byte; 20]);
        }
        let entries = tree_entries(&tree, 20).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1].mode, "40000");
        assert_eq!(entries[1].name, b"dir");
        assert_eq!(entries[2].oid.as_str(), "03".repeat(20));
        assert!(tree_entries(&tree[..tree.len() - 1], 20).is_none());
        assert_eq!(tree_entries(b"", 20), Some(Vec::new()));
    }
}

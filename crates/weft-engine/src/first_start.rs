//! OpenCode's first start: never two OpenCode processes at once on a data folder that has
//! no database yet.
//!
//! OpenCode creates its SQLite database and tables on its first start; two `opencode run`
//! started together on a fresh data folder race on that setup and one exits 1 (`Failed
//! query: CREATE TABLE workspace`), losing a task on a user's first parallel run. So the
//! engine passes the launch of an OpenCode attempt through [`enter`]: while the data
//! folder has no database, only one such attempt starts at a time, and the next waits
//! until the first one has produced its first output (OpenCode only talks once its setup
//! is done) or has ended, whichever comes first ([`Gate::release`]). With a database in
//! place, or `OPENCODE_DB=:memory:`, nothing waits.
//!
//! Threads and bounds: the gate is process-wide (one engine runs a plan's attempts); a
//! wait is bounded by [`MOST_WAIT`] (then the launch goes ahead, as it would have without
//! the gate), and a holder that never talks nor ends lets go after the same time. The wait
//! blocks the launching thread; it happens at most once per fresh data folder.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use weft_agents::transcript::Locator;
use weft_agents::transcript::opencode::{Databases, databases};

/// The longest a launch waits for another's first start, and the longest a first start
/// holds the gate.
pub const MOST_WAIT: Duration = Duration::from_secs(60);

static HELD: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
static CHANGED: Condvar = Condvar::new();

/// A held first start, released once (by whichever of its holders gets there first).
#[derive(Debug)]
pub(crate) struct Gate {
    database: PathBuf,
    released: Mutex<bool>,
}

impl Gate {
    /// Let the next first start go.
    pub(crate) fn release(&self) {
        let mut released = self.released.lock().unwrap_or_else(|e| e.into_inner());
        if *released {
            return;
        }
        *released = true;
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = held.as_mut() {
            set.remove(&self.database);
        }
        CHANGED.notify_all();
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.release();
    }
}

/// The database file OpenCode would create, when there is one to wait for.
fn database(locator: &Locator) -> Option<PathBuf> {
    match databases(locator) {
        Databases::DataDir(dir) => Some(dir.join("opencode.db")),
        Databases::File(path) => Some(path),
        Databases::InMemory | Databases::Unknown => None,
    }
}

/// Before starting an OpenCode process: `None` when its database exists (nothing to
/// serialize); otherwise wait (bounded) while another first start holds the data folder,
/// then hold it. The caller releases the gate on the process's first output or its end,
/// and a thread here lets go after [`MOST_WAIT`] whatever happens.
pub(crate) fn enter(locator: &Locator) -> Option<Arc<Gate>> {
    let database = database(locator)?;
    let deadline = Instant::now() + MOST_WAIT;
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if database.exists() {
            return None;
        }
        let set = held.get_or_insert_with(HashSet::new);
        if !set.contains(&database) || Instant::now() >= deadline {
            set.insert(database.clone());
            break;
        }
        // Wake now and then to look at the database even without a release.
        let (next, _) = CHANGED
            .wait_timeout(held, Duration::from_millis(100))
            .unwrap_or_else(|e| e.into_inner());
        held = next;
    }
    drop(held);
    let gate = Arc::new(Gate {
        database,
        released: Mutex::new(false),
    });
    let weak = Arc::downgrade(&gate);
    let _ = std::thread::Builder::new()
        .name("weft-opencode-first-start".into())
        .spawn(move || {
            std::thread::sleep(MOST_WAIT);
            if let Some(gate) = weak.upgrade() {
                gate.release();
            }
        });
    Some(gate)
}

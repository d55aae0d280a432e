//! Schema migrations, tracked by `PRAGMA user_version`.

use rusqlite::Transaction;

/// Each entry moves the schema from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: plans, tasks, dependencies, events, workspace metadata.
    r#"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT;

    CREATE TABLE plans (
        id         TEXT PRIMARY KEY,
        goal       TEXT NOT NULL,
        status     TEXT NOT NULL,
        runner     TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        revision   INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE tasks (
        plan_id     TEXT NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
        id          TEXT NOT NULL,
        position    INTEGER NOT NULL,
        title       TEXT NOT NULL,
        description TEXT,
        prompt      TEXT NOT NULL,
        runner      TEXT,
        model       TEXT,
        effort      TEXT,
        mode        TEXT,
        kind        TEXT NOT NULL CHECK (kind IN ('ai', 'manual', 'ops')),
        command     TEXT,
        steps       TEXT NOT NULL,
        checks      TEXT NOT NULL,
        status      TEXT NOT NULL,
        hold        INTEGER NOT NULL CHECK (hold IN (0, 1)),
        verdict     TEXT,
        output      TEXT,
        PRIMARY KEY (plan_id, id),
        UNIQUE (plan_id, position)
    ) STRICT;

    CREATE TABLE task_dependencies (
        plan_id    TEXT NOT NULL,
        task_id    TEXT NOT NULL,
        depends_on TEXT NOT NULL,
        position   INTEGER NOT NULL,
        PRIMARY KEY (plan_id, task_id, depends_on),
        FOREIGN KEY (plan_id, task_id) REFERENCES tasks(plan_id, id) ON DELETE CASCADE,
        FOREIGN KEY (plan_id, depends_on) REFERENCES tasks(plan_id, id) ON DELETE CASCADE
    ) STRICT;
    CREATE INDEX task_dependencies_target ON task_dependencies(plan_id, depends_on);

    CREATE TABLE events (
        seq     INTEGER PRIMARY KEY AUTOINCREMENT,
        plan_id TEXT,
        kind    TEXT NOT NULL,
        payload TEXT NOT NULL,
        at      INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX events_by_plan ON events(plan_id, seq);
    "#,
    // 2: runs, attempts and control requests (the execution engine).
    r#"
    CREATE TABLE runs (
        id                 TEXT PRIMARY KEY,
        plan_id            TEXT NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
        status             TEXT NOT NULL,
        base_ref           TEXT,
        integration_branch TEXT,
        engine_pid         INTEGER,
        engine_start_ticks INTEGER,
        started_at         INTEGER NOT NULL,
        ended_at           INTEGER
    ) STRICT;
    CREATE INDEX runs_by_plan ON runs(plan_id, started_at);

    CREATE TABLE attempts (
        id                  TEXT PRIMARY KEY,
        run_id              TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        plan_id             TEXT NOT NULL,
        task_id             TEXT NOT NULL,
        number              INTEGER NOT NULL,
        runner              TEXT NOT NULL,
        status              TEXT NOT NULL,
        cwd                 TEXT NOT NULL,
        worktree            TEXT,
        branch              TEXT,
        marker              TEXT,
        session_id          TEXT,
        agent_session_id    TEXT,
        pid                 INTEGER,
        process_group       INTEGER,
        process_start_ticks INTEGER,
        exit_code           INTEGER,
        signal              INTEGER,
        started_at          INTEGER NOT NULL,
        ended_at            INTEGER,
        verdict             TEXT,
        log_path            TEXT,
        input_tokens        INTEGER,
        output_tokens       INTEGER,
        cost_usd            REAL,
        denials             TEXT NOT NULL,
        final_text          TEXT,
        UNIQUE (run_id, task_id, number)
    ) STRICT;
    CREATE INDEX attempts_by_task ON attempts(plan_id, task_id, started_at);
    CREATE INDEX attempts_by_status ON attempts(status);

    CREATE TABLE control_requests (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        plan_id    TEXT NOT NULL,
        kind       TEXT NOT NULL,
        task_id    TEXT,
        created_at INTEGER NOT NULL,
        handled_at INTEGER
    ) STRICT;
    CREATE INDEX control_requests_open ON control_requests(plan_id, handled_at);
    "#,
    // 3: isolation: where an attempt's branch was cut from, and how its landing went.
    r#"
    ALTER TABLE attempts ADD COLUMN cut_from TEXT;
    ALTER TABLE attempts ADD COLUMN landing TEXT;
    "#,
    // 4: the steps of a manual task a person has ticked off.
    r#"
    ALTER TABLE tasks ADD COLUMN steps_done TEXT NOT NULL DEFAULT '[]';
    "#,
    // 5: the planner: its research log, where its PRD went, and approval asks that any
    // terminal can answer.
    r#"
    CREATE TABLE planning (
        plan_id    TEXT PRIMARY KEY REFERENCES plans(id) ON DELETE CASCADE,
        planner    TEXT NOT NULL,
        one_shot   INTEGER NOT NULL CHECK (one_shot IN (0, 1)),
        prd_path   TEXT,
        updated_at INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE planner_log (
        plan_id  TEXT NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
        seq      INTEGER NOT NULL,
        at       INTEGER NOT NULL,
        turn     INTEGER NOT NULL,
        kind     TEXT NOT NULL,
        tool     TEXT,
        input    TEXT NOT NULL,
        outcome  TEXT,
        detail   TEXT NOT NULL,
        approval TEXT,
        PRIMARY KEY (plan_id, seq)
    ) STRICT;

    CREATE TABLE approval_asks (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        plan_id         TEXT,
        owner_pid       INTEGER NOT NULL,
        scope           TEXT NOT NULL,
        subject         TEXT NOT NULL,
        asker           TEXT NOT NULL,
        created_at      INTEGER NOT NULL,
        expires_at      INTEGER,
        state           TEXT NOT NULL CHECK (state IN ('open', 'answered', 'settled')),
        answer_allowed  INTEGER,
        answer_scope    TEXT,
        answered_at     INTEGER,
        decision        TEXT,
        settled_at      INTEGER
    ) STRICT;
    CREATE INDEX approval_asks_open ON approval_asks(state);
    "#,
    // 6: each task's dependencies also as a JSON list in its own row, in order, so loading
    // a plan reads one table in one pass. `task_dependencies` stays the relational record
    // (its foreign keys keep every dependency pointing at a task of the same plan, and
    // cascade), written beside the column in the same transaction. Reading the 15,000
    // dependency rows of a 10,000-task plan cost as much as reading its tasks.
    r#"
    ALTER TABLE tasks ADD COLUMN dependencies TEXT NOT NULL DEFAULT '[]';
    UPDATE tasks SET dependencies = (
        SELECT json_group_array(d.depends_on ORDER BY d.position)
        FROM task_dependencies d
        WHERE d.plan_id = tasks.plan_id AND d.task_id = tasks.id
    )
    WHERE EXISTS (
        SELECT 1 FROM task_dependencies d WHERE d.plan_id = tasks.plan_id AND d.task_id = tasks.id
    );
    "#,
    // 7 (verify, issue 15; to be numbered after `limits`' and `perf`'s at merge): a run's
    // verification state, one row per run: the last green tip, the tip being verified,
    // and a quarantine's journal while one is in progress.
    r#"
    CREATE TABLE run_verify (
        run_id      TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        green       TEXT,
        verifying   TEXT,
        quarantine  TEXT,
        updated_at  INTEGER NOT NULL
    ) STRICT;
    -- A plan's own verify commands (its workflow file's `verify`), as a JSON list.
    CREATE TABLE plan_verify (
        plan_id   TEXT PRIMARY KEY REFERENCES plans(id) ON DELETE CASCADE,
        commands  TEXT NOT NULL
    ) STRICT;
    "#,
    // 8 (limits, issues 12 and 15): a task's own limits (NULL: the setting applies;
    // durations in milliseconds), a plan's own budget (its workflow file's top-level
    // `budget_usd`/`budget_tokens`, replacing the settings for that plan), and since when
    // a running attempt has been silent past `idle_after` (NULL: it is not idle), written
    // once per transition.
    r#"
    ALTER TABLE tasks ADD COLUMN timeout_ms INTEGER;
    ALTER TABLE tasks ADD COLUMN idle_timeout_ms INTEGER;
    ALTER TABLE tasks ADD COLUMN budget_usd REAL;
    ALTER TABLE tasks ADD COLUMN budget_tokens INTEGER;
    ALTER TABLE attempts ADD COLUMN idle_since INTEGER;
    CREATE TABLE plan_budget (
        plan_id       TEXT PRIMARY KEY REFERENCES plans(id) ON DELETE CASCADE,
        budget_usd    REAL,
        budget_tokens INTEGER
    ) STRICT;
    "#,
    // 9: a task's outline (every column `weft status` shows) as one text, kept in an index
    // in plan order, so the outline of a plan is one scan of one index reading one column
    // per task. Read column by column from the table, a 10,000-task outline cost ~5,500
    // instructions a row (SQLite's ~27 column reads, rusqlite's type and UTF-8 checks of
    // each, a table lookup per row from the position index): over half of `weft status`.
    //
    // The column is VIRTUAL (a STORED one cannot be added without rebuilding the table)
    // and the index holds its value, computed once when a row is written: SQLite reads an
    // indexed expression's value from the index instead of computing it again (its
    // IndexedExpr optimization, 3.41), and the query names the index (`INDEXED BY`) since
    // the planner would otherwise pick the smaller position index and compute the text per
    // row. SQLite keeps it current with every write of the row: there is no second copy
    // that a writer could forget.
    //
    // The text, read by `packed.rs`: each column in this order, as its text's length in
    // bytes, `:` and the text, or `-` for NULL; the texts an outline keeps come first, so
    // it copies one run of bytes (not the verdict, which it parses, nor the numbers). Numbers are their decimal text; the
    // budget is written with 17 significant digits (`%!.17g`: without `!` SQLite stops
    // at 16), which every f64 reads back from exactly. Only functions an older SQLite has
    // too (`length(CAST(x AS BLOB))`, not 3.43's `octet_length`; `CASE`, not `iif`), so
    // the `sqlite3` a system ships (Debian 12's is 3.40) still opens the database.
    r#"
    ALTER TABLE tasks ADD COLUMN outline TEXT GENERATED ALWAYS AS (
           coalesce(length(CAST(id AS BLOB)) || ':' || id, '-')
        || coalesce(length(CAST(title AS BLOB)) || ':' || title, '-')
        || coalesce(length(CAST(runner AS BLOB)) || ':' || runner, '-')
        || coalesce(length(CAST(model AS BLOB)) || ':' || model, '-')
        || coalesce(length(CAST(effort AS BLOB)) || ':' || effort, '-')
        || coalesce(length(CAST(mode AS BLOB)) || ':' || mode, '-')
        || coalesce(length(CAST(checks AS BLOB)) || ':' || checks, '-')
        || coalesce(length(CAST(dependencies AS BLOB)) || ':' || dependencies, '-')
        || coalesce(length(CAST(position AS BLOB)) || ':' || position, '-')
        || coalesce(length(CAST(kind AS BLOB)) || ':' || kind, '-')
        || coalesce(length(CAST(status AS BLOB)) || ':' || status, '-')
        || coalesce(length(CAST(hold AS BLOB)) || ':' || hold, '-')
        || coalesce(length(CAST(verdict AS BLOB)) || ':' || verdict, '-')
        || coalesce(length(CAST(timeout_ms AS BLOB)) || ':' || timeout_ms, '-')
        || coalesce(length(CAST(idle_timeout_ms AS BLOB)) || ':' || idle_timeout_ms, '-')
        || CASE WHEN budget_usd IS NULL THEN '-' ELSE
               length(CAST(printf('%!.17g', budget_usd) AS BLOB)) || ':' || printf('%!.17g', budget_usd)
           END
        || coalesce(length(CAST(budget_tokens AS BLOB)) || ':' || budget_tokens, '-')
    ) VIRTUAL;
    CREATE INDEX tasks_outline ON tasks(plan_id, position, outline);
    "#,
    // 10: a task's kind checked by comparisons, not `kind IN ('ai', 'manual', 'ops')`: an
    // IN list of three or more built an ephemeral b-tree for every row written (created,
    // filled with the three names, searched, closed): 15% of importing a 10,000-task plan
    // (callgrind: 1,280 M instructions before, 1,088 M after); two or fewer are compared
    // (`hold IN (0, 1)` was). The same rows pass.
    //
    // A CHECK constraint is changed in place, as SQLite documents for changing one without
    // rebuilding the table (lang_altertable.html, "other kinds of table schema changes"):
    // the table's text in `sqlite_master`, then this connection's schema read again
    // (`writable_schema = RESET`) and the schema cookie moved by a statement that changes
    // the schema (so every other connection reads it again too). One transaction, as every
    // migration: a crash leaves the store at schema 9. A table whose text holds no such
    // check (none weft wrote) is left as it is: its rows are checked as before, only slower.
    r#"
    PRAGMA writable_schema = ON;
    UPDATE sqlite_master
       SET sql = replace(sql, 'CHECK (kind IN (''ai'', ''manual'', ''ops''))',
                              'CHECK (kind = ''ai'' OR kind = ''manual'' OR kind = ''ops'')')
     WHERE type = 'table' AND name = 'tasks';
    PRAGMA writable_schema = RESET;
    CREATE TABLE schema_moved (x);
    DROP TABLE schema_moved;
    "#,
    // 11: `task_dependencies` without a rowid. With one, each dependency was written
    // twice, in the table by rowid and again in its primary key's index, which holds
    // every column but `position`; now the table is that index. A 100,000-task import
    // writes ~2,300 fewer pages of 4 KiB (of ~27,800) and one b-tree insert fewer per
    // dependency: 2.71 s → 2.63 s. The same rows, foreign keys and index on the target;
    // the rows are copied under the foreign keys, as every write is.
    r#"
    CREATE TABLE task_dependencies_rowless (
        plan_id    TEXT NOT NULL,
        task_id    TEXT NOT NULL,
        depends_on TEXT NOT NULL,
        position   INTEGER NOT NULL,
        PRIMARY KEY (plan_id, task_id, depends_on),
        FOREIGN KEY (plan_id, task_id) REFERENCES tasks(plan_id, id) ON DELETE CASCADE,
        FOREIGN KEY (plan_id, depends_on) REFERENCES tasks(plan_id, id) ON DELETE CASCADE
    ) STRICT, WITHOUT ROWID;
    INSERT INTO task_dependencies_rowless (plan_id, task_id, depends_on, position)
        SELECT plan_id, task_id, depends_on, position FROM task_dependencies;
    DROP TABLE task_dependencies;
    ALTER TABLE task_dependencies_rowless RENAME TO task_dependencies;
    CREATE INDEX task_dependencies_target ON task_dependencies(plan_id, depends_on);
    "#,
];

/// The SQL of every migration, oldest first (for tests that build old databases).
#[doc(hidden)]
pub fn migration_sql() -> &'static [&'static str] {
    MIGRATIONS
}

/// The schema version this weft writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Bring the database up to [`SCHEMA_VERSION`]; the caller holds the write lock.
pub(crate) fn migrate(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    // Read again under the lock: another process may have migrated meanwhile.
    let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(sql)?;
        tx.execute_batch(&format!("PRAGMA user_version = {}", index + 1))?;
    }
    Ok(())
}

//! Schema migrations, tracked by `PRAGMA user_version`.

use rusqlite::Transaction;

/// The outline's expression (see migration 9), in one home: migration 9 adds it to the
/// table, and migration 12's table has it too.
macro_rules! outline_expression {
    () => {
        r#"
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
"#
    };
}

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
    concat!(
        r#"
    ALTER TABLE tasks ADD COLUMN outline TEXT GENERATED ALWAYS AS ("#,
        outline_expression!(),
        r#"    ) VIRTUAL;
    CREATE INDEX tasks_outline ON tasks(plan_id, position, outline);
    "#
    ),
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
    // 12: a plan's tasks and dependencies keyed by a small integer, not by the plan's
    // 32-character id. The id was in every row of `tasks` and `task_dependencies` and in
    // every entry of their five b-trees (the table, the `(plan, id)` and `(plan,
    // position)` keys, the outline index, the dependencies' target index), so each of the
    // ~350,000 b-tree inserts of a 100,000-task import compared it and stored it: a
    // quarter of the store (a 10,000-task plan's: 10.6 → 8.0 MB). `plan_keys` gives each
    // plan its key (the row's id, 1, 2, …, one or two bytes in a record), and cascades a
    // plan's deletion to its tasks as the id's foreign key did; every other table keeps
    // the plan's id. Queries name the plan by id and look the key up in the same
    // statement (`plan_key = (SELECT key FROM plan_keys WHERE plan_id = ?)`: one seek,
    // evaluated once, and the indexes are used as before). An import of 100,000 tasks:
    // 1.59 → 1.41 s (medians of seven alternated imports on the 2-vCPU machine of
    // 2026-12); `weft status` the same.
    //
    // The tables are rebuilt (SQLite cannot change a column's type in place): new ones
    // filled from the old under the foreign keys, the old dropped (the dependencies first,
    // as they refer to the tasks), the new renamed to the old names (which renames the
    // dependencies' references too), the indexes made again. The same columns, checks
    // (the kind's as migration 10 left it) and outline; one transaction, as every
    // migration.
    concat!(
        r#"
    CREATE TABLE plan_keys (
        key     INTEGER PRIMARY KEY,
        plan_id TEXT NOT NULL UNIQUE REFERENCES plans(id) ON DELETE CASCADE
    ) STRICT;
    INSERT INTO plan_keys (plan_id) SELECT id FROM plans ORDER BY created_at, id;

    CREATE TABLE tasks_keyed (
        plan_key        INTEGER NOT NULL REFERENCES plan_keys(key) ON DELETE CASCADE,
        id              TEXT NOT NULL,
        position        INTEGER NOT NULL,
        title           TEXT NOT NULL,
        description     TEXT,
        prompt          TEXT NOT NULL,
        runner          TEXT,
        model           TEXT,
        effort          TEXT,
        mode            TEXT,
        kind            TEXT NOT NULL CHECK (kind = 'ai' OR kind = 'manual' OR kind = 'ops'),
        command         TEXT,
        steps           TEXT NOT NULL,
        checks          TEXT NOT NULL,
        status          TEXT NOT NULL,
        hold            INTEGER NOT NULL CHECK (hold IN (0, 1)),
        verdict         TEXT,
        output          TEXT,
        steps_done      TEXT NOT NULL DEFAULT '[]',
        dependencies    TEXT NOT NULL DEFAULT '[]',
        timeout_ms      INTEGER,
        idle_timeout_ms INTEGER,
        budget_usd      REAL,
        budget_tokens   INTEGER,
        outline         TEXT GENERATED ALWAYS AS ("#,
        outline_expression!(),
        r#"    ) VIRTUAL,
        PRIMARY KEY (plan_key, id),
        UNIQUE (plan_key, position)
    ) STRICT;
    INSERT INTO tasks_keyed (plan_key, id, position, title, description, prompt, runner, model,
                             effort, mode, kind, command, steps, checks, status, hold, verdict,
                             output, steps_done, dependencies, timeout_ms, idle_timeout_ms,
                             budget_usd, budget_tokens)
        SELECT k.key, t.id, t.position, t.title, t.description, t.prompt, t.runner, t.model,
               t.effort, t.mode, t.kind, t.command, t.steps, t.checks, t.status, t.hold,
               t.verdict, t.output, t.steps_done, t.dependencies, t.timeout_ms,
               t.idle_timeout_ms, t.budget_usd, t.budget_tokens
          FROM tasks t JOIN plan_keys k ON k.plan_id = t.plan_id
         ORDER BY k.key, t.position;

    CREATE TABLE task_dependencies_keyed (
        plan_key   INTEGER NOT NULL,
        task_id    TEXT NOT NULL,
        depends_on TEXT NOT NULL,
        position   INTEGER NOT NULL,
        PRIMARY KEY (plan_key, task_id, depends_on),
        FOREIGN KEY (plan_key, task_id) REFERENCES tasks_keyed(plan_key, id) ON DELETE CASCADE,
        FOREIGN KEY (plan_key, depends_on) REFERENCES tasks_keyed(plan_key, id) ON DELETE CASCADE
    ) STRICT, WITHOUT ROWID;
    INSERT INTO task_dependencies_keyed (plan_key, task_id, depends_on, position)
        SELECT k.key, d.task_id, d.depends_on, d.position
          FROM task_dependencies d JOIN plan_keys k ON k.plan_id = d.plan_id;

    DROP TABLE task_dependencies;
    DROP TABLE tasks;
    ALTER TABLE tasks_keyed RENAME TO tasks;
    ALTER TABLE task_dependencies_keyed RENAME TO task_dependencies;
    CREATE INDEX task_dependencies_target ON task_dependencies(plan_key, depends_on);
    CREATE INDEX tasks_outline ON tasks(plan_key, position, outline);
    "#
    ),
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

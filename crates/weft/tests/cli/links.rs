//! Runnable worktrees in monorepos, end to end with real git and the `exec` runner:
//! `links` globs at any depth linked entry by entry, npm/pnpm workspace links recreated
//! to resolve inside the worktree, a `setup` command's files never committed, and the
//! setup contained like every attempt process.

use std::path::{Path, PathBuf};

use crate::engine::statuses;
use crate::harness::{Weft, read};

fn symlink(target: &str, at: &Path) {
    fs_err::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// One `exec` task with this script, stored as the plan.
fn exec_plan(weft: &Weft, script: &str) {
    weft.write(
        "plan.toml",
        &format!(
            "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\nid = \"t\"\ntitle = \"t\"\nprompt = '''\n{script}'''\n"
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
}

/// The files on the run's integration branch.
fn landed_files(weft: &Weft) -> String {
    let branch = weft.git(&[
        "branch",
        "--list",
        "weft/*/integration",
        "--format=%(refname:short)",
    ]);
    weft.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        branch.lines().next().unwrap(),
    ])
}

/// The worktree of the run's first task (kept with `keep_worktrees=true`).
fn first_worktree(weft: &Weft) -> PathBuf {
    let runs = weft.work().join(".weft/worktrees");
    for run in fs_err::read_dir(&runs).unwrap().flatten() {
        for folder in fs_err::read_dir(run.path()).unwrap().flatten() {
            let name = folder.file_name().to_string_lossy().into_owned();
            if name.starts_with("1-") && folder.path().is_dir() {
                return folder.path();
            }
        }
    }
    panic!("no worktree of task 1 under {}", runs.display());
}

fn real(path: &Path) -> PathBuf {
    fs_err::canonicalize(path).unwrap()
}

#[test]
fn globbed_links_at_any_depth_are_linked_one_by_one_and_never_committed() {
    let weft = Weft::new();
    weft.write(".gitignore", "target/\nnode_modules/\n");
    weft.write("packages/a/index.js", "a\n");
    weft.write("packages/b/index.js", "b\n");
    weft.write("packages/c/node_modules/tracked.txt", "tracked\n");
    weft.write("crates/x/src/lib.rs", "\n");
    weft.git(&["add", "-f", "packages/c/node_modules/tracked.txt"]);
    weft.commit_all("fixture");
    // The user's ignored artifacts, at several depths.
    weft.write("packages/a/node_modules/dep/index.js", "dep\n");
    weft.write("packages/c/node_modules/untracked.txt", "main only\n");
    weft.write("crates/x/target/out.bin", "built\n");
    weft.write("target/root.bin", "built\n");
    weft.write("untracked/target/x.bin", "no parent in the worktree\n");
    weft.write(
        "weft.toml",
        "links = [\"packages/*/node_modules\", \"**/target\", \"nothing/*/matches\"]\n",
    );
    exec_plan(
        &weft,
        "test -f packages/a/node_modules/dep/index.js\n\
         test -L crates/x/target && test -f crates/x/target/out.bin\n\
         test -L target && test -f target/root.bin\n\
         test ! -L packages/c/node_modules && test -f packages/c/node_modules/tracked.txt\n\
         test ! -e packages/c/node_modules/untracked.txt\n\
         test ! -e packages/b/node_modules\n\
         echo work > work.txt\n\
         git add -A && git -c user.name=a -c user.email=a@a commit -qm agent\n",
    );
    let run = weft.ok(&["-c", "keep_worktrees=true", "run", "--isolated"]);
    assert_eq!(statuses(&weft)["t"], "completed", "{}", weft.show(&run));

    let tree = landed_files(&weft);
    assert!(tree.contains("work.txt"), "{tree}");
    assert!(
        tree.contains("packages/c/node_modules/tracked.txt"),
        "{tree}"
    );
    for linked in ["packages/a/node_modules", "target", "out.bin", "untracked"] {
        assert!(!tree.contains(linked), "{linked} was committed:\n{tree}");
    }
    // Each match is its own link; a node_modules folder is mirrored entry by entry.
    let worktree = first_worktree(&weft);
    let modules = worktree.join("packages/a/node_modules");
    assert!(!modules.is_symlink() && modules.is_dir());
    assert!(modules.join("dep").is_symlink());
    assert_eq!(
        real(&modules.join("dep")),
        real(&weft.work().join("packages/a/node_modules/dep"))
    );
    assert!(worktree.join("crates/x/target").is_symlink());
    assert!(!worktree.join("untracked").exists());
    let events = weft.ok(&["events", "--json"]).stdout;
    let started = events
        .lines()
        .find(|l| l.contains("\"attempt_started\""))
        .expect("an attempt_started event");
    assert!(
        started.contains("packages/a/node_modules") && started.contains("crates/x/target"),
        "{started}"
    );
}

#[test]
fn a_malformed_links_glob_is_refused_when_settings_load_naming_the_entry_and_its_source() {
    let weft = Weft::new();
    weft.write(
        "weft.toml",
        "links = [\"node_modules\", \"packages/[a/node_modules\"]\n",
    );
    let refused = weft.fails(&["config"], 1);
    assert!(
        refused.stderr.contains("`packages/[a/node_modules`")
            && refused.stderr.contains("malformed glob")
            && refused.stderr.contains("weft.toml"),
        "{}",
        refused.stderr
    );
    let flag = weft.fails(&["-c", "links=/etc", "config"], 2);
    assert!(
        flag.stderr.contains("`/etc`") && flag.stderr.contains("command line"),
        "{}",
        flag.stderr
    );
    // Braces keep their commas: one entry, accepted.
    weft.write("weft.toml", "links = \"packages/{api,web}/node_modules\"\n");
    weft.ok(&["config"]);
}

/// An npm-workspaces monorepo laid out by hand as npm (and pnpm) would: workspace
/// packages linked into `node_modules`, a scoped one, a `.bin` entry, a third-party
/// package, pnpm's `.pnpm` store and a package-level `node_modules`.
fn js_monorepo(weft: &Weft) {
    weft.write(".gitignore", "node_modules/\n");
    weft.write(
        "package.json",
        r#"{"name":"mono","private":true,"workspaces":["packages/*"]}"#,
    );
    weft.write(
        "packages/pkg-a/package.json",
        r#"{"name":"pkg-a","main":"index.js","dependencies":{"pkg-b":"*"}}"#,
    );
    weft.write(
        "packages/pkg-a/index.js",
        "module.exports = require('pkg-b');\n",
    );
    weft.write(
        "packages/pkg-b/package.json",
        r#"{"name":"pkg-b","main":"index.js","bin":{"pkg-b":"cli.js"}}"#,
    );
    weft.write("packages/pkg-b/index.js", "module.exports = 'main';\n");
    weft.write("packages/pkg-b/cli.js", "#!/usr/bin/env node\n");
    weft.write(
        "packages/pkg-c/package.json",
        r#"{"name":"@scope/pkg-c","main":"index.js"}"#,
    );
    weft.write("packages/pkg-c/index.js", "module.exports = 'c';\n");
    weft.commit_all("fixture");
    let work = weft.work();
    symlink("../packages/pkg-a", &work.join("node_modules/pkg-a"));
    symlink("../packages/pkg-b", &work.join("node_modules/pkg-b"));
    symlink(
        "../../packages/pkg-c",
        &work.join("node_modules/@scope/pkg-c"),
    );
    symlink("../pkg-b/cli.js", &work.join("node_modules/.bin/pkg-b"));
    weft.write(
        "node_modules/left-pad/index.js",
        "module.exports = 'pad';\n",
    );
    weft.write("node_modules/.package-lock.json", "{}\n");
    weft.write(
        "node_modules/.pnpm/lodash@4/node_modules/lodash/index.js",
        "module.exports = 'lodash';\n",
    );
    symlink(
        ".pnpm/lodash@4/node_modules/lodash",
        &work.join("node_modules/lodash"),
    );
    symlink(
        "../../pkg-b",
        &work.join("packages/pkg-a/node_modules/pkg-b"),
    );
}

#[test]
#[allow(clippy::print_stderr)]
fn npm_and_pnpm_workspace_links_resolve_inside_the_worktree() {
    let weft = Weft::new();
    js_monorepo(&weft);
    weft.write(
        "weft.toml",
        "links = [\"node_modules\", \"packages/*/node_modules\"]\n",
    );
    // The agent edits a workspace package; its dependents must see the edit.
    exec_plan(
        &weft,
        "echo \"module.exports = 'worktree';\" > packages/pkg-b/index.js\n\
         grep -q worktree node_modules/pkg-b/index.js\n\
         grep -q worktree packages/pkg-a/node_modules/pkg-b/index.js\n\
         grep -q pad node_modules/left-pad/index.js\n",
    );
    let run = weft.ok(&["-c", "keep_worktrees=true", "run", "--isolated"]);
    assert_eq!(statuses(&weft)["t"], "completed", "{}", weft.show(&run));
    let tree = landed_files(&weft);
    assert!(tree.contains("packages/pkg-b/index.js"), "{tree}");
    assert!(
        !tree.contains("node_modules"),
        "a link was committed:\n{tree}"
    );

    let (worktree, main) = (first_worktree(&weft), weft.work());
    let modules = worktree.join("node_modules");
    assert!(modules.is_dir() && !modules.is_symlink());
    // Workspace links: the same relative link, resolving inside the worktree.
    assert_eq!(
        fs_err::read_link(modules.join("pkg-b")).unwrap(),
        Path::new("../packages/pkg-b")
    );
    for (link, inside) in [
        ("node_modules/pkg-a", "packages/pkg-a"),
        ("node_modules/pkg-b", "packages/pkg-b"),
        ("node_modules/@scope/pkg-c", "packages/pkg-c"),
        ("node_modules/.bin/pkg-b", "packages/pkg-b/cli.js"),
        ("packages/pkg-a/node_modules/pkg-b", "packages/pkg-b"),
    ] {
        assert_eq!(
            real(&worktree.join(link)),
            real(&worktree.join(inside)),
            "{link}"
        );
    }
    // Everything else: the main checkout's.
    for (link, there) in [
        ("node_modules/left-pad", "node_modules/left-pad"),
        (
            "node_modules/.package-lock.json",
            "node_modules/.package-lock.json",
        ),
        (
            "node_modules/lodash",
            "node_modules/.pnpm/lodash@4/node_modules/lodash",
        ),
    ] {
        assert_eq!(
            real(&worktree.join(link)),
            real(&main.join(there)),
            "{link}"
        );
    }

    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        eprintln!(
            "NOTE: node is not on PATH; the require() check of the workspace links is skipped"
        );
        return;
    }
    for (module, expected) in [
        ("pkg-b", "worktree"),
        ("pkg-a", "worktree"),
        ("lodash", "lodash"),
    ] {
        let out = weft
            .env
            .command("node")
            .args(["-e", &format!("process.stdout.write(require('{module}'))")])
            .current_dir(&worktree)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected,
            "require('{module}') in the worktree: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn files_a_setup_creates_are_never_committed_and_an_agent_edit_to_one_is_noticed() {
    let weft = Weft::new();
    exec_plan(
        &weft,
        "grep -q generated gen.txt && test -f out/deep/a.txt\n\
         echo changed >> gen.txt\n\
         echo work > work.txt\n",
    );
    let run = weft.ok(&[
        "-c",
        "setup=echo generated > gen.txt && mkdir -p out/deep && echo x > out/deep/a.txt && ln -s /etc etc-link",
        "run",
        "--isolated",
    ]);
    assert_eq!(statuses(&weft)["t"], "completed", "{}", weft.show(&run));
    let tree = landed_files(&weft);
    assert!(tree.contains("work.txt"), "{tree}");
    for made in ["gen.txt", "out/deep/a.txt", "etc-link"] {
        assert!(
            !tree.contains(made),
            "the setup's {made} was committed:\n{tree}"
        );
    }
    let events = weft.ok(&["events", "--json"]).stdout;
    let notice = events
        .lines()
        .find(|l| l.contains("created by the setup command changed"))
        .unwrap_or_else(|| panic!("no notice of the edited setup file:\n{events}"));
    assert!(
        notice.contains("gen.txt") && !notice.contains("a.txt"),
        "{notice}"
    );
}

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

#[test]
fn a_setup_runs_contained_with_the_filtered_environment_and_leaves_nothing_running() {
    let weft = Weft::new();
    exec_plan(&weft, "test -s daemon.pid\n");
    let setup = "[ -z \"$DATABASE_URL\" ] || { echo secret visible; exit 7; }\n\
         [ \"$CARGO_TARGET_DIR\" = passed ] || { echo toolchain variable missing; exit 8; }\n\
         setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' >/dev/null 2>&1 &\n\
         while [ ! -s daemon.pid ]; do sleep 0.01; done\n";
    let args = ["-c", "keep_worktrees=true", "run", "--isolated"];
    let mut command = weft.command(&args);
    command
        .env("WEFT_SETUP", setup)
        .env("DATABASE_URL", "postgres://admin:hunter2@db/prod")
        .env("CARGO_TARGET_DIR", "passed");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert_eq!(statuses(&weft)["t"], "completed", "{}", weft.show(&run));
    let pid: u32 = read(&first_worktree(&weft).join("daemon.pid"))
        .trim()
        .parse()
        .unwrap();
    assert!(!running(pid), "the setup's daemon {pid} is still running");
}

#[test]
fn a_confined_setup_cannot_write_outside_its_worktree_and_says_so() {
    if !crate::contain::landlock_or_skip("a confined setup") {
        return;
    }
    let weft = Weft::new();
    exec_plan(&weft, "true\n");
    let outside = weft.env.root().join("outside.txt");
    let setup = format!("setup=echo x > '{}'", outside.display());
    let failed = weft.fails(
        &["-c", "confine=landlock", "-c", &setup, "run", "--isolated"],
        1,
    );
    assert!(
        failed.stdout.contains("the setup command")
            && failed.stdout.contains("failed")
            && failed.stdout.contains("Permission denied")
            && failed.stdout.contains("ran confined"),
        "{}",
        weft.show(&failed)
    );
    assert!(
        !outside.exists(),
        "the confined setup wrote outside its worktree"
    );
    assert_eq!(statuses(&weft)["t"], "failed");
}

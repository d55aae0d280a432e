//! The git guards end to end (issue 11, §2's git part and §3): work never goes to the
//! wrong place, whatever the agent does to its worktree's git, with confinement on and
//! off (`-c confine=off`: then the guards alone must catch it).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::engine::statuses;
use crate::harness::{Run, Weft};

/// Confinement modes every guard test holds in (`auto` confines: the kernel here has
/// Landlock).
const MODES: [&str; 2] = ["off", "auto"];

fn run_id(weft: &Weft) -> String {
    weft.git(&[
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/weft/*/integration",
    ])
    .split('/')
    .nth(1)
    .expect("an integration branch")
    .to_owned()
}

/// Every ref but weft's own (its branches, `refs/weft/`, and its evidence notes).
fn user_refs(weft: &Weft) -> Vec<String> {
    weft.git(&["for-each-ref", "--format=%(objectname) %(refname)"])
        .lines()
        .filter(|l| {
            !l.contains(" refs/weft/")
                && !l.contains(" refs/heads/weft/")
                && !l.ends_with(" refs/notes/weft")
        })
        .map(str::to_owned)
        .collect()
}

fn sha(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let output = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{} bytes", bytes.len());
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

fn plan(weft: &Weft, tasks: &[(&str, &str)]) {
    let mut text = String::from("goal = \"g\"\nrunner = \"exec\"\n");
    for (id, script) in tasks {
        text.push_str(&format!(
            "[[tasks]]\nid = \"{id}\"\ntitle = \"{id}\"\nprompt = '''\n{script}\n'''\n"
        ));
    }
    weft.write("plan.toml", &text);
    weft.ok(&["plan", "--file", "plan.toml"]);
}

fn run(weft: &Weft, confine: &str) -> Run {
    weft.run(&["run", "-c", &format!("confine={confine}")])
}

/// The verdict reason of task `id`.
fn reason(weft: &Weft, id: &str) -> String {
    let status = weft.status_json();
    let task = status["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id}"))
        .clone();
    task["verdict"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Acceptance 2: the agent deletes its worktree's `.git` and writes a file. weft runs no
/// git in that folder: the attempt fails naming `.git`; the user's branch, index and
/// files (an untracked one, and an edit made while the task ran) are byte for byte as
/// they were; no branch but the task's gained a commit.
#[test]
fn an_agent_that_deletes_its_git_fails_naming_it_and_nothing_of_the_user_is_touched() {
    for confine in MODES {
        let weft = Weft::new();
        let work = weft.work();
        weft.write("untracked.txt", "the user's own untracked file\n");
        let go = weft.env.root().join("go");
        plan(
            &weft,
            &[(
                "wreck",
                &format!(
                    "rm -rf .git\necho x > f.txt\ntouch started\nwhile [ ! -e '{}' ]; do sleep 0.05; done",
                    go.display()
                ),
            )],
        );
        let mut engine = weft
            .command(&["run", "-c", &format!("confine={confine}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = wait_for_file(&work.join(".weft/worktrees"), "started");
        // The user edits a tracked file while the task runs.
        weft.write("README.md", "edited during the run\n");
        let before = (
            sha(&work.join("README.md")),
            sha(&work.join("untracked.txt")),
            sha(&work.join(".git/index")),
            user_refs(&weft),
            weft.git(&["status", "--porcelain"]),
        );
        std::fs::write(&go, "").unwrap();
        let status = engine.wait().unwrap();
        let mut stdout = String::new();
        std::io::Read::read_to_string(engine.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        assert!(!status.success(), "confine={confine}: {stdout}");
        assert_eq!(statuses(&weft)["wreck"], "failed", "confine={confine}");
        let why = reason(&weft, "wreck");
        assert!(
            why.contains("the agent deleted its worktree's `.git`")
                && why.contains("nothing was committed"),
            "confine={confine}: {why}"
        );
        let after = (
            sha(&work.join("README.md")),
            sha(&work.join("untracked.txt")),
            sha(&work.join(".git/index")),
            user_refs(&weft),
            weft.git(&["status", "--porcelain"]),
        );
        assert_eq!(before, after, "confine={confine}");
        let id = run_id(&weft);
        let base = weft.git(&["rev-parse", "main"]);
        assert_eq!(
            weft.git(&["rev-parse", &format!("weft/{id}/integration")]),
            base,
            "confine={confine}: nothing landed"
        );
        // Its work is kept, in its folder.
        let folder = started.parent().unwrap();
        assert_eq!(
            std::fs::read_to_string(folder.join("f.txt")).unwrap(),
            "x\n"
        );
    }
}

/// Acceptance 3: `git checkout -b rogue` and two commits there. Unconfined, the attempt
/// fails naming `rogue` and its commits are kept under `refs/weft/<run>/stray/`;
/// confined, git cannot create the branch at all (`refs/` is not writable).
#[test]
fn an_agent_that_switches_to_another_branch_fails_naming_it_and_its_commits_are_kept() {
    for confine in MODES {
        let weft = Weft::new();
        plan(
            &weft,
            &[(
                "rogue",
                "set -e\ngit checkout -q -b rogue\n\
                 echo one > one.txt && git add one.txt && git -c user.name=a -c user.email=a@a commit -qm one\n\
                 echo two > two.txt && git add two.txt && git -c user.name=a -c user.email=a@a commit -qm two",
            )],
        );
        let before = weft.git(&["rev-parse", "main"]);
        let done = run(&weft, confine);
        assert_ne!(done.code, 0, "{}", weft.show(&done));
        assert_eq!(statuses(&weft)["rogue"], "failed", "confine={confine}");
        assert_eq!(weft.git(&["rev-parse", "main"]), before);
        let id = run_id(&weft);
        if confine == "off" {
            let why = reason(&weft, "rogue");
            let kept = format!("refs/weft/{id}/stray/1-rogue");
            assert!(
                why.contains("the agent switched its worktree to branch `rogue`")
                    && why.contains(&format!(
                        "2 commit(s) there were not landed, kept at `{kept}`"
                    )),
                "{why}"
            );
            assert_eq!(
                weft.git(&["log", "--format=%s", &kept])
                    .lines()
                    .take(2)
                    .collect::<Vec<_>>(),
                ["two", "one"]
            );
            // Every object those commits need is in the repository.
            weft.git(&["rev-list", "--objects", &kept]);
            weft.git(&["fsck", "--no-dangling", "--connectivity-only"]);
        } else {
            let refs = weft.git(&["for-each-ref", "--format=%(refname)"]);
            assert!(!refs.contains("refs/heads/rogue"), "{refs}");
        }
        assert_eq!(
            weft.git(&["rev-parse", &format!("weft/{id}/integration")]),
            before,
            "confine={confine}: nothing landed"
        );
    }
}

/// Acceptance 4: a commit made on the integration branch by something other than weft.
/// The next landing and `weft handoff merge` refuse, naming it; the restore command the
/// hint prints works, and the run then completes and merges.
#[test]
fn a_foreign_commit_on_the_integration_branch_is_refused_until_the_recorded_tip_is_restored() {
    for confine in MODES {
        let weft = Weft::new();
        plan(&weft, &[("a", "echo a > a.txt")]);
        let first = run(&weft, confine);
        assert_eq!(first.code, 0, "{}", weft.show(&first));
        let id = run_id(&weft);
        let integration = format!("refs/heads/weft/{id}/integration");
        let recorded = weft.git(&["rev-parse", &integration]);
        let tree = weft.git(&["rev-parse", &format!("{recorded}^{{tree}}")]);
        let foreign = weft.git(&["commit-tree", &tree, "-p", &recorded, "-m", "sneaky change"]);
        weft.git(&["update-ref", &integration, &foreign]);

        weft.ok(&["task", "add", "--title", "b", "--prompt", "echo b > b.txt"]);
        let refused = run(&weft, confine);
        assert_eq!(refused.code, 1, "{}", weft.show(&refused));
        assert!(
            refused
                .stderr
                .contains("landing on the integration branch is refused")
                && refused.stderr.contains(&foreign[..12])
                && refused.stderr.contains("sneaky change"),
            "{}",
            refused.stderr
        );
        assert_eq!(weft.git(&["rev-parse", &integration]), foreign, "untouched");
        let kept = format!("refs/weft/{id}/foreign/{}", &foreign[..12]);
        assert_eq!(weft.git(&["rev-parse", &kept]), foreign);

        let review = weft.ok(&["handoff", "review"]).stdout;
        assert!(
            review.starts_with("WARNING:") && review.contains("sneaky change"),
            "{review}"
        );
        let merge = weft.fails(&["handoff", "merge", "--yes"], 1);
        assert!(
            merge.stderr.contains("merging the run is refused")
                && merge.stderr.contains("sneaky change"),
            "{}",
            merge.stderr
        );

        // The one command the hint names puts the recorded tip back.
        let restore = merge
            .stderr
            .split('`')
            .find(|part| part.starts_with("git -C "))
            .unwrap_or_else(|| panic!("no restore command in {}", merge.stderr))
            .to_owned();
        let restored = weft
            .env
            .command("sh")
            .args(["-c", &restore])
            .output()
            .unwrap();
        assert!(restored.status.success(), "{restore}: {restored:?}");
        assert_eq!(weft.git(&["rev-parse", &integration]), recorded);

        let again = run(&weft, confine);
        assert_eq!(again.code, 0, "{}", weft.show(&again));
        assert!(statuses(&weft).values().all(|s| s == "completed"));
        weft.ok(&["handoff", "merge", "--yes"]);
        assert_eq!(weft.git(&["show", "main:a.txt"]), "a");
        assert_eq!(weft.git(&["show", "main:b.txt"]), "b");
        let log = weft.git(&["log", "--format=%s", "main"]);
        assert!(!log.contains("sneaky change"), "{log}");
    }
}

/// Acceptance 6: a task that adds `etc-link -> /etc` fails at landing, naming the link;
/// with `outside_symlinks = "allow"` it lands.
#[test]
fn a_symlink_pointing_outside_the_worktree_fails_at_landing_unless_allowed() {
    for confine in MODES {
        let weft = Weft::new();
        plan(
            &weft,
            &[(
                "link",
                "ln -s /etc etc-link\nln -s ../../up up-link\nln -s inside ok-link\necho hi > inside",
            )],
        );
        let done = run(&weft, confine);
        assert_ne!(done.code, 0, "{}", weft.show(&done));
        assert_eq!(statuses(&weft)["link"], "failed", "confine={confine}");
        let why = reason(&weft, "link");
        assert!(
            why.contains("etc-link -> /etc")
                && why.contains("up-link -> ../../up")
                && !why.contains("ok-link"),
            "{why}"
        );
        let id = run_id(&weft);
        assert_eq!(
            weft.git(&["rev-parse", &format!("weft/{id}/integration")]),
            weft.git(&["rev-parse", "main"]),
            "nothing landed"
        );
        let allowed = weft.run(&["retry", "link"]);
        assert_eq!(allowed.code, 0, "{}", weft.show(&allowed));
        let again = weft.run(&[
            "run",
            "-c",
            &format!("confine={confine}"),
            "-c",
            "outside_symlinks=allow",
        ]);
        assert_eq!(again.code, 0, "{}", weft.show(&again));
        assert_eq!(
            weft.git(&["cat-file", "-p", &format!("weft/{id}/integration:etc-link")]),
            "/etc"
        );
    }
}

/// The agent's own `git add -A && git commit` works confined (its objects go to its
/// private object folder) and its commit lands, while the repository's shared object
/// store stays unwritable: `rm -rf .git/objects/??` fails with EACCES inside the agent
/// and every branch of the user is intact.
#[test]
fn a_confined_agent_commits_into_its_private_object_folder_and_cannot_touch_the_shared_store() {
    assert!(
        weft_engine::contain::landlock_available(),
        "this kernel does not enforce Landlock; this test needs it"
    );
    for confine in MODES {
        let weft = Weft::new();
        let objects = weft.work().join(".git/objects");
        let mut script = "echo work > work.txt\n\
             git add -A && git -c user.name=agent -c user.email=a@a commit -qm 'the agent commits'\n\
             echo committed=$?\n"
            .to_owned();
        // Unconfined, this would really destroy the repository: only where it must fail.
        if confine == "auto" {
            script.push_str(&format!(
                "if rm -rf '{}'/?? 2>err; then echo objects=removed; else echo \"objects=denied $(cat err)\"; fi",
                objects.display()
            ));
        }
        plan(&weft, &[("commit", &script)]);
        let refs_before = user_refs(&weft);
        let done = run(&weft, confine);
        assert_eq!(done.code, 0, "confine={confine}: {}", weft.show(&done));
        let log = weft.ok(&["log", "commit"]).stdout;
        assert!(log.contains("committed=0"), "confine={confine}: {log}");
        let id = run_id(&weft);
        let integration = format!("weft/{id}/integration");
        assert_eq!(
            weft.git(&["show", &format!("{integration}:work.txt")]),
            "work"
        );
        assert!(
            weft.git(&["log", "--format=%s", &integration])
                .contains("the agent commits"),
            "confine={confine}"
        );
        if confine == "auto" {
            assert!(
                log.contains("objects=denied") && log.contains("Permission denied"),
                "{log}"
            );
            assert_eq!(user_refs(&weft), refs_before);
            weft.git(&["fsck", "--no-dangling", "--connectivity-only"]);
            weft.ok(&["handoff", "merge", "--yes"]);
            assert_eq!(weft.git(&["show", "main:work.txt"]), "work");
        }
    }
}

/// Wait (bounded) for a file named `name` somewhere below `dir`; its path.
fn wait_for_file(dir: &Path, name: &str) -> PathBuf {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(found) = find(dir, name, 3) {
            return found;
        }
        assert!(Instant::now() < until, "no {name} below {}", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn find(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if entry.file_name() == name {
            return Some(path);
        }
        if depth > 0
            && path.is_dir()
            && !path.is_symlink()
            && let Some(found) = find(&path, name, depth - 1)
        {
            return Some(found);
        }
    }
    None
}

/// A multi-repo group (issue 11 §2): the agent's own `git add` and `git commit` work in
/// every repository of its task folder, confined, with nothing shared writable: one
/// private object folder for the attempt, every repository's store as an alternate. A
/// commit naming content only the other repository's store held (the agent's git found
/// the object there and wrote none), changed again by a later commit so that nothing in
/// the worktree holds it any more, still lands complete. `rm -rf .git/objects/??` of either
/// repository fails with EACCES, every user ref is intact and `git fsck` clean in both.
#[test]
fn a_confined_agent_in_a_two_repo_group_commits_in_both_and_cannot_touch_either_store() {
    assert!(
        weft_engine::contain::landlock_available(),
        "this kernel does not enforce Landlock; this test needs it"
    );
    const REPOS: [&str; 2] = ["api", "web"];
    for confine in MODES {
        let weft = Weft::new();
        std::fs::remove_dir_all(weft.work().join(".git")).unwrap();
        for repo in REPOS {
            weft_testkit::TestRepo::init(&weft.work().join(repo), &weft.env);
        }
        weft.write("web/shared.txt", "only web's store holds this\n");
        weft.git(&["-C", "web", "add", "-A"]);
        weft.git(&["-C", "web", "commit", "-qm", "shared"]);
        weft.ok(&["init"]);
        let mut script = "echo 'work in api' > api/work.txt\n\
             echo 'work in web' > web/work.txt\n\
             echo \"only web's store holds this\" > api/copy.txt\n\
             for r in api web; do (cd $r && git add -A && git -c user.name=agent -c user.email=a@a commit -qm \"the agent commits in $r\"); echo committed-$r=$?; done\n\
             (cd api && echo changed > copy.txt && git -c user.name=agent -c user.email=a@a commit -qam 'the agent changes copy.txt'); echo changed=$?\n"
            .to_owned();
        // Unconfined, this would really destroy the repositories: only where it must fail.
        if confine == "auto" {
            for repo in REPOS {
                let objects = weft.work().join(repo).join(".git/objects");
                script.push_str(&format!(
                    "if rm -rf '{}'/?? 2>err; then echo store-{repo}=removed; else echo \"store-{repo}=denied $(cat err)\"; fi\n",
                    objects.display()
                ));
            }
        }
        plan(&weft, &[("both", &script)]);
        let refs = |weft: &Weft| -> Vec<String> {
            REPOS
                .iter()
                .flat_map(|repo| {
                    weft.git(&[
                        "-C",
                        repo,
                        "for-each-ref",
                        "--format=%(objectname) %(refname)",
                    ])
                    .lines()
                    .filter(|l| {
                        !l.contains(" refs/weft/")
                            && !l.contains(" refs/heads/weft/")
                            && !l.ends_with(" refs/notes/weft")
                    })
                    .map(|l| format!("{repo} {l}"))
                    .collect::<Vec<_>>()
                })
                .collect()
        };
        let refs_before = refs(&weft);
        let done = weft.run(&["run", "--isolated", "-c", &format!("confine={confine}")]);
        assert_eq!(done.code, 0, "confine={confine}: {}", weft.show(&done));
        let log = weft.ok(&["log", "both"]).stdout;
        for repo in REPOS {
            assert!(
                log.contains(&format!("committed-{repo}=0")),
                "confine={confine}: {log}"
            );
        }
        let integration = weft.git(&[
            "-C",
            "api",
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/weft/*/integration",
        ]);
        for repo in REPOS {
            assert_eq!(
                weft.git(&["-C", repo, "show", &format!("{integration}:work.txt")]),
                format!("work in {repo}"),
                "confine={confine}"
            );
            assert!(
                weft.git(&["-C", repo, "log", "--format=%s", &integration])
                    .contains(&format!("the agent commits in {repo}")),
                "confine={confine}: the agent's own commit in {repo} did not land"
            );
        }
        assert!(log.contains("changed=0"), "confine={confine}: {log}");
        assert_eq!(
            weft.git(&["-C", "api", "show", &format!("{integration}:copy.txt")]),
            "changed"
        );
        for repo in REPOS {
            weft.git(&["-C", repo, "fsck", "--no-dangling", "--connectivity-only"]);
        }
        if confine == "auto" {
            for repo in REPOS {
                assert!(
                    log.contains(&format!("store-{repo}=denied")),
                    "{repo}: {log}"
                );
            }
            assert!(log.contains("Permission denied"), "{log}");
            assert_eq!(refs(&weft), refs_before);
            weft.ok(&["handoff", "merge", "--yes"]);
            for repo in REPOS {
                assert_eq!(
                    weft.git(&["-C", repo, "show", "main:work.txt"]),
                    format!("work in {repo}")
                );
            }
        }
    }
}

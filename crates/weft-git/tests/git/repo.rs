//! Opening repositories, HEAD, tracked changes, submodules, error reporting.

use fs_err as fs;
use weft_git::{GitError, Head, MIN_GIT_VERSION};

use crate::support::Fixture;

#[test]
fn git_version_is_recent_enough() {
    let fx = Fixture::new();
    let version = fx.git().check_version().expect("git is new enough");
    assert!(version >= MIN_GIT_VERSION);
}

#[test]
fn a_missing_git_program_is_a_spawn_error() {
    let fx = Fixture::new();
    let git = fx.git().program("/nonexistent/git-for-weft");
    let error = git.open(fx.path()).unwrap_err();
    assert!(matches!(error, GitError::Spawn { .. }), "{error:?}");
    assert!(
        error.to_string().contains("/nonexistent/git-for-weft"),
        "{error}"
    );
}

#[test]
fn a_git_program_briefly_open_for_writing_elsewhere_is_started_once_it_is_free() {
    let fx = Fixture::new();
    let wrapper = crate::support::wrapped_git(&fx, "git-being-written", ":");
    // Another process holds the program open for writing for 50 ms, as a child forked
    // mid-write by another thread does until it execs: the kernel refuses to run it
    // (ETXTBSY) for that long.
    let mut holder = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 3>>'{}'; : > '{}'; sleep 0.05",
            wrapper.display(),
            fx.env.root().join("held").display()
        ))
        .spawn()
        .unwrap();
    let held = fx.env.root().join("held");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !held.exists() {
        assert!(
            std::time::Instant::now() < deadline && holder.try_wait().unwrap().is_none(),
            "the holder never opened {}",
            wrapper.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let opened = fx.git().program(&wrapper).open(fx.path());
    holder.wait().unwrap();
    assert!(opened.is_ok(), "{:?}", opened.err());
}

#[test]
fn init_makes_an_empty_repository_whose_first_commit_takes_everything_in_it() {
    let fx = Fixture::new();
    let dir = fx.env.root().join("fresh");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("README.md"), "# fresh\n").unwrap();
    let repo = fx.git().init(&dir).unwrap();
    assert_eq!(repo.root(), dir.canonicalize().unwrap());
    assert!(matches!(repo.head().unwrap(), Head::Unborn { .. }));
    let commit = repo.commit_all("first", &[] as &[&str]).unwrap();
    assert!(commit.is_some(), "README.md was committed");
    assert_eq!(fx.run_in(&dir, &["ls-files"]), "README.md\n");
}

#[test]
fn init_of_a_missing_folder_names_it() {
    let fx = Fixture::new();
    let dir = fx.env.root().join("missing");
    let error = fx.git().init(&dir).unwrap_err();
    assert!(error.to_string().contains("missing"), "{error}");
}

#[test]
fn open_finds_the_root_from_a_subfolder() {
    let fx = Fixture::new();
    let sub = fx.path().join("a/b");
    fs::create_dir_all(&sub).unwrap();
    let repo = fx.git().open(&sub).unwrap();
    assert_eq!(repo.root(), fx.path().canonicalize().unwrap());
    assert_eq!(repo.git_dir(), repo.root().join(".git"));
    assert_eq!(repo.common_dir(), repo.root().join(".git"));
}

#[test]
fn open_refuses_a_folder_outside_any_repository() {
    let fx = Fixture::new();
    let outside = fx.env.root().join("plain");
    fs::create_dir_all(&outside).unwrap();
    let error = fx.git().open(&outside).unwrap_err();
    assert!(
        matches!(error, GitError::NotARepository { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&*outside.to_string_lossy()), "{message}");
    assert!(message.contains("not in a git repository"), "{message}");
}

#[test]
fn open_refuses_bare_repositories_and_the_git_folder() {
    let fx = Fixture::new();
    let bare = fx.env.root().join("bare.git");
    fx.run(&["init", "-q", "--bare", &bare.to_string_lossy()]);
    let error = fx.git().open(&bare).unwrap_err();
    assert!(matches!(error, GitError::NoWorkTree { .. }), "{error:?}");
    let error = fx.git().open(fx.path().join(".git")).unwrap_err();
    assert!(matches!(error, GitError::NoWorkTree { .. }), "{error:?}");
}

#[test]
fn open_reports_a_missing_folder() {
    let fx = Fixture::new();
    let missing = fx.env.root().join("nope");
    let error = fx.git().open(&missing).unwrap_err();
    assert!(matches!(error, GitError::Io { .. }), "{error:?}");
    assert!(error.to_string().contains("nope"), "{error}");
}

#[test]
fn head_on_a_branch() {
    let fx = Fixture::new();
    let head = fx.open().head().unwrap();
    assert_eq!(
        head,
        Head::Branch {
            name: "main".into(),
            commit: fx.main()
        }
    );
    assert_eq!(head.branch(), Some("main"));
}

#[test]
fn head_detached() {
    let fx = Fixture::new();
    let main = fx.main();
    fx.run(&["checkout", "-q", "--detach", "main"]);
    let head = fx.open().head().unwrap();
    assert_eq!(
        head,
        Head::Detached {
            commit: main.clone()
        }
    );
    assert_eq!(head.commit(), Some(&main));
    assert_eq!(head.branch(), None);
}

#[test]
fn head_unborn() {
    let fx = Fixture::new();
    let fresh = fx.env.root().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    fx.run_in(&fresh, &["init", "-q", "-b", "trunk"]);
    let head = fx.git().open(&fresh).unwrap().head().unwrap();
    assert_eq!(
        head,
        Head::Unborn {
            branch: "trunk".into()
        }
    );
    assert_eq!(head.commit(), None);
    // On an orphan branch of a repository that has commits, too.
    fx.run(&["checkout", "-q", "--orphan", "empty"]);
    assert_eq!(
        fx.open().head().unwrap(),
        Head::Unborn {
            branch: "empty".into()
        }
    );
}

#[test]
fn tracked_changes_ignore_untracked_files() {
    let fx = Fixture::new();
    fx.commit_here(
        &[
            ("keep.txt", Some("k\n")),
            ("dir with space/é.txt", Some("e\n")),
            ("gone.txt", Some("g\n")),
            ("staged.txt", Some("s\n")),
        ],
        "files",
    );
    let repo = fx.open();
    assert!(repo.tracked_changes().unwrap().is_empty());

    fx.write("untracked.txt", "new\n");
    fx.write("dir with space/new é.txt", "new\n");
    assert!(
        repo.tracked_changes().unwrap().is_empty(),
        "untracked files never count"
    );

    fx.write("dir with space/é.txt", "changed\n");
    fs::remove_file(fx.path().join("gone.txt")).unwrap();
    fx.write("staged.txt", "staged\n");
    fx.run(&["add", "staged.txt"]);
    let mut changes = repo.tracked_changes().unwrap();
    changes.sort();
    assert_eq!(changes, ["dir with space/é.txt", "gone.txt", "staged.txt"]);
}

#[test]
fn submodules_are_found() {
    let fx = Fixture::new();
    let repo = fx.open();
    assert!(!repo.has_submodules().unwrap());
    let other = fx.other_repo("library");
    fx.run(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &other.path.to_string_lossy(),
        "vendor/library",
    ]);
    fx.run(&["commit", "-q", "-m", "add a submodule"]);
    assert!(repo.has_submodules().unwrap());
    assert_eq!(repo.submodules().unwrap(), ["vendor/library"]);
}

#[test]
fn failed_commands_name_the_command_the_exit_code_the_stderr_and_the_repository() {
    let fx = Fixture::new();
    let repo = fx.open();
    let error = repo.is_ancestor("main", "no-such-branch").unwrap_err();
    let GitError::Command {
        repo: where_,
        command,
        code,
        stderr,
        ..
    } = &error
    else {
        panic!("expected a command error, got {error:?}");
    };
    assert_eq!(where_, repo.root());
    assert!(command.starts_with("git -C "), "{command}");
    assert!(
        command.ends_with("merge-base --is-ancestor main no-such-branch"),
        "{command}"
    );
    assert_eq!(*code, Some(128));
    assert!(stderr.contains("no-such-branch"), "{stderr}");
    let message = error.to_string();
    assert!(
        message.contains(&*repo.root().to_string_lossy()),
        "{message}"
    );
    assert!(message.contains("exit code 128"), "{message}");
    assert_eq!(error.repo(), Some(repo.root()));
}

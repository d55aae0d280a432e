use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fs_err as fs;
use weft_testkit::Hermetic;

/// A hermetic workspace (a real git repository unless `bare`) and the weft binary.
pub struct Weft {
    pub env: Hermetic,
    /// A folder put first on PATH, holding the fake agent as `claude`, `codex`, `opencode`.
    pub agents: Option<PathBuf>,
}

/// What one weft invocation did.
#[derive(Debug)]
pub struct Run {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub const SAMPLE_TOML: &str = r##"goal = "Add rate limiting to the public API"
runner = "claude-code"

[[tasks]]
id = "limiter"
title = "Add a token-bucket limiter"
description = "The API has no limit today."
prompt = """
Add a token-bucket limiter in src/limit.rs.
Keep it "simple" \\ small.
"""
model = "sonnet"
effort = "high"
mode = "bypassPermissions"
checks = ["cargo test limit"]

[[tasks]]
title = "Wire the limiter into the router"
prompt = "Use the limiter in every public route."
dependencies = ["limiter"]
runner = "codex"

[[tasks]]
title = "Run the whole suite"
kind = "ops"
command = "cargo test --workspace"
dependencies = [1, "#2"]

[[tasks]]
title = "Check the dashboards"
kind = "manual"
steps = ["Open the API dashboard", "Confirm 429s appear under load"]
dependencies = ["run-the-whole-suite"]
"##;

impl Weft {
    /// A workspace that is a git repository with one commit.
    pub fn new() -> Weft {
        let weft = Weft::bare();
        weft.env.git_init();
        weft
    }

    /// A plain folder, not a repository.
    pub fn bare() -> Weft {
        Weft {
            env: Hermetic::new(),
            agents: None,
        }
    }

    /// A repository workspace where the agent CLIs on PATH are the fake agent.
    pub fn with_agents() -> Weft {
        let mut weft = Weft::new();
        let dir = weft.env.root().join("agents");
        fs::create_dir_all(&dir).unwrap();
        let fake = weft_testkit::fake::binary();
        for name in ["claude", "codex", "opencode"] {
            std::os::unix::fs::symlink(&fake, dir.join(name)).unwrap();
        }
        weft.agents = Some(dir);
        weft
    }

    pub fn work(&self) -> PathBuf {
        self.env.work()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = self.env.command(env!("CARGO_BIN_EXE_weft"));
        command.args(args).stdin(Stdio::null());
        if let Some(agents) = &self.agents {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut joined = agents.as_os_str().to_owned();
            joined.push(":");
            joined.push(path);
            command.env("PATH", joined);
            // These engine tests exercise shared mode (tasks in the workspace itself);
            // isolation tests ask for it with --isolated.
            command.env("WEFT_ISOLATION", "false");
            // The fake agents here record what they saw in files beside the workspace,
            // which a confined attempt cannot write; the containment tests confine
            // explicitly. (Their processes are contained either way.)
            command.env("WEFT_CONFINE", "off");
        }
        command
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_command(args, self.command(args))
    }

    pub fn run_command(&self, args: &[&str], mut command: Command) -> Run {
        let output = command.output().expect("weft can be started");
        Run {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Run and insist on success.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(run.code, 0, "weft {args:?} failed:\n{}", self.show(&run));
        run
    }

    /// Run and insist on failure with exit code `code`.
    pub fn fails(&self, args: &[&str], code: i32) -> Run {
        let run = self.run(args);
        assert_eq!(run.code, code, "weft {args:?}:\n{}", self.show(&run));
        run
    }

    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.work().join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&path, text).unwrap();
        path
    }

    pub fn import_sample(&self) -> Run {
        self.write("plan.toml", SAMPLE_TOML);
        self.ok(&["plan", "--file", "plan.toml"])
    }

    pub fn status_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["status", "--json"]).stdout).unwrap()
    }

    /// The run as a transcript with machine-specific parts replaced.
    pub fn show(&self, run: &Run) -> String {
        let root = self.env.root().display().to_string();
        let mut text = format!("$ weft {}\nexit: {}\n", run.args.join(" "), run.code);
        if !run.stdout.is_empty() {
            text.push_str("--- stdout\n");
            text.push_str(&run.stdout);
        }
        if !run.stderr.is_empty() {
            text.push_str("--- stderr\n");
            text.push_str(&run.stderr);
        }
        text.replace(&root, "[ROOT]")
    }

    pub fn db_path(&self) -> PathBuf {
        self.work().join(".weft").join("weft.db")
    }

    /// `git ARGS` in the workspace repository with a committer identity, insisting on
    /// success: its stdout without the trailing newline.
    pub fn git(&self, args: &[&str]) -> String {
        let output = self
            .env
            .command("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
    }

    /// Commit everything in the workspace repository.
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", message]);
    }
}

/// Snapshot several runs as one transcript, with ids and times redacted.
#[macro_export]
macro_rules! snapshot {
    ($weft:expr, $($run:expr),+ $(,)?) => {{
        let mut text = String::new();
        $( text.push_str(&$weft.show(&$run)); text.push('\n'); )+
        let mut settings = insta::Settings::clone_current();
        settings.add_filter(r"\b[0-9a-f]{32}\b", "[PLAN-ID]");
        settings.add_filter(r"\b[0-9a-f]{8}\b", "[PLAN]");
        settings.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", "[TIME]");
        settings.add_filter(r#""(created_at|updated_at)": ?\d+"#, "\"$1\": [MS]");
        settings.bind(|| insta::assert_snapshot!(text));
    }};
}

pub fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

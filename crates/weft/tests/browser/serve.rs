//! A real workspace (a git repository in a hermetic environment, the fake agent on PATH
//! as `claude`) and a real `weft serve` in it, started exactly as a user starts it.
//!
//! `weft serve` is the binary of this package (`CARGO_BIN_EXE_weft`), so these tests live
//! here rather than in weft-server: building it from another package's test would build
//! it again with other features and replace the binary weft's own tests are running.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use weft_testkit::{Hermetic, TestRepo};

/// A git repository with one commit, and the fake agent standing in for the agent CLIs.
#[derive(Debug)]
pub struct Workspace {
    pub env: Hermetic,
    pub repo: TestRepo,
    agents: PathBuf,
}

impl Workspace {
    pub fn new() -> Workspace {
        let env = Hermetic::new();
        let repo = TestRepo::init(&env.work(), &env);
        let agents = env.root().join("agents");
        fs_err::create_dir_all(&agents).unwrap();
        let fake = weft_testkit::fake::binary();
        for name in ["claude", "codex", "opencode"] {
            std::os::unix::fs::symlink(&fake, agents.join(name)).unwrap();
        }
        Workspace { env, repo, agents }
    }

    pub fn path(&self) -> PathBuf {
        self.env.work()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = self.env.command(env!("CARGO_BIN_EXE_weft"));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut joined = self.agents.as_os_str().to_owned();
        joined.push(":");
        joined.push(path);
        command
            .args(args)
            .stdin(Stdio::null())
            .env("PATH", joined)
            // The fake agent records what it saw beside the workspace, which a confined
            // attempt may not write; containment has tests of its own.
            .env("WEFT_CONFINE", "off");
        command
    }

    /// Run `weft ARGS`; panics with its stderr unless it succeeds.
    pub fn weft(&self, args: &[&str]) -> String {
        let Output {
            status,
            stdout,
            stderr,
        } = self.command(args).output().unwrap();
        assert!(
            status.success(),
            "weft {args:?}: {}",
            String::from_utf8_lossy(&stderr)
        );
        String::from_utf8(stdout).unwrap()
    }

    /// Run `weft ARGS --json`, which must fail; its JSON error from stderr.
    pub fn refused(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let output = self.command(&all).output().unwrap();
        assert!(!output.status.success(), "weft {args:?} succeeded");
        serde_json::from_slice(&output.stderr).unwrap()
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.weft(&all)).unwrap()
    }

    /// `git show REV:PATH` in the workspace, or `None` while there is no such file.
    pub fn show(&self, spec: &str) -> Option<String> {
        let output = self
            .env
            .apply(&mut Command::new("git"))
            .args(["show", spec])
            .output()
            .unwrap();
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    }

    pub fn write(&self, relative: &str, text: &str) {
        self.repo.write(relative, text);
    }

    /// `weft status --json`'s tasks as (order, status).
    pub fn statuses(&self) -> Vec<(u64, String)> {
        self.json(&["status"])["plan"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["order"].as_u64().unwrap(),
                    t["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Start `weft serve --port 0` here and read the login URL it prints.
    pub fn serve(&self) -> Server {
        let mut child = self
            .command(&["serve", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(at) = line.find("http://") {
                    let _ = tx.send(
                        line[at..]
                            .split_whitespace()
                            .next()
                            .unwrap_or("")
                            .to_owned(),
                    );
                }
            }
        });
        let login = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "weft serve printed no URL: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            }
        };
        let origin = login.split('/').take(3).collect::<Vec<_>>().join("/");
        let token = fs_err::read_to_string(self.path().join(".weft/server.token"))
            .unwrap()
            .trim()
            .to_owned();
        Server {
            child,
            login,
            origin,
            token,
        }
    }
}

/// A running `weft serve`, stopped on drop.
#[derive(Debug)]
pub struct Server {
    child: Child,
    /// The URL with the one-time login code, as printed.
    pub login: String,
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    /// The bearer token from `.weft/server.token`.
    pub token: String,
}

impl Server {
    /// GET a route with the bearer token; the body as text.
    pub fn get(&self, route: &str) -> String {
        ureq::Agent::config_builder()
            .proxy(None)
            .build()
            .new_agent()
            .get(format!("{}{route}", self.origin))
            .header("Authorization", format!("Bearer {}", self.token))
            .call()
            .unwrap()
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where screenshots go: `target/browser-screenshots/` of this workspace.
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let target = target.canonicalize().unwrap_or(target);
    target.join("browser-screenshots")
}

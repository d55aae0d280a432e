//! A minimal W3C WebDriver client for the browser tests: Debian's `chromedriver` driving
//! headless `chromium`, spoken to over HTTP with `ureq` and `serde_json`.
//!
//! Why not `fantoccini`: it brings hyper, a TLS stack of its own and a tokio runtime, a
//! second async HTTP stack on a 2-core build, for the dozen commands these tests send.
//! `ureq` is already in the workspace (the planner's provider uses it), and the protocol is
//! plain JSON over HTTP: new session, navigate, find, click, type, run a script,
//! screenshot. Each command is a blocking request; waiting is polling with a deadline.
//!
//! Chromium runs as the tests' user (root in CI), so it gets the flags root needs, and a
//! fresh profile folder per session (deleted on drop).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where Debian puts them; `WEFT_CHROMIUM` / `WEFT_CHROMEDRIVER` override.
fn program(var: &str, default: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var) {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    if Path::new(default).exists() {
        return Some(PathBuf::from(default));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// A WebDriver error: the command, and what the driver said.
#[derive(Debug)]
pub struct WdError(pub String);

impl std::fmt::Display for WdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type WdResult<T> = Result<T, WdError>;

/// An element the page holds (its WebDriver reference).
#[derive(Debug, Clone)]
pub struct Element(String);

impl Element {
    /// The element as a script argument (`arguments[i]` in [`Browser::js`]).
    pub fn arg(&self) -> Value {
        json!({ ELEMENT_KEY: self.0 })
    }
}

/// One browser session, and the chromedriver process serving it.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    agent: ureq::Agent,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Start chromedriver and a headless Chromium session; `Ok(None)` when either program
    /// is not installed here.
    pub fn start() -> WdResult<Option<Browser>> {
        let (Some(chromium), Some(chromedriver)) = (
            program(
                "WEFT_CHROMIUM",
                "/usr/bin/chromium",
                &["chromium", "chromium-browser"],
            ),
            program(
                "WEFT_CHROMEDRIVER",
                "/usr/bin/chromedriver",
                &["chromedriver"],
            ),
        ) else {
            return Ok(None);
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| WdError(format!("no free port for chromedriver: {e}")))?
            .port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| WdError(format!("starting {}: {e}", chromedriver.display())))?;
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        let profile = tempfile::tempdir().map_err(|e| WdError(format!("profile folder: {e}")))?;
        let mut browser = Browser {
            driver,
            agent,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            _profile: profile,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match browser.raw("GET", "/status", None) {
                Ok(status) if status["ready"] == true => break,
                _ if Instant::now() > deadline => {
                    return Err(WdError("chromedriver did not become ready in 20 s".into()));
                }
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1600,1000",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!(
            "--user-data-dir={}",
            browser._profile.path().display()
        )])
        .collect::<Vec<_>>();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let session = browser.raw("POST", "/session", Some(caps))?;
        browser.session = session["sessionId"]
            .as_str()
            .ok_or_else(|| WdError(format!("new session: no sessionId in {session}")))?
            .to_owned();
        Ok(Some(browser))
    }

    fn raw(&self, method: &str, path: &str, body: Option<Value>) -> WdResult<Value> {
        let url = format!("{}{}", self.base, path);
        let what = format!("{method} {path}");
        let response = match method {
            "GET" => self.agent.get(&url).call(),
            "DELETE" => self.agent.delete(&url).call(),
            _ => self
                .agent
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body.unwrap_or_else(|| json!({})).to_string()),
        };
        let mut response = response.map_err(|e| WdError(format!("{what}: {e}")))?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| WdError(format!("{what}: reading the answer: {e}")))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| WdError(format!("{what}: not JSON ({e}): {text:.200}")))?;
        if !status.is_success() {
            return Err(WdError(format!(
                "{what}: {} {}",
                value["value"]["error"].as_str().unwrap_or("error"),
                value["value"]["message"].as_str().unwrap_or(&text)
            )));
        }
        Ok(value.get("value").cloned().unwrap_or(value))
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> WdResult<Value> {
        self.raw(method, &format!("/session/{}{path}", self.session), body)
    }

    pub fn goto(&self, url: &str) -> WdResult<()> {
        self.cmd("POST", "/url", Some(json!({ "url": url })))
            .map(drop)
    }

    pub fn url(&self) -> WdResult<String> {
        Ok(self
            .cmd("GET", "/url", None)?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// Every element matching a CSS selector (none is an empty list, not an error).
    pub fn find_all(&self, css: &str) -> WdResult<Vec<Element>> {
        let found = self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        )?;
        Ok(found
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e[ELEMENT_KEY].as_str().map(|id| Element(id.to_owned())))
            .collect())
    }

    /// The first element matching `css`, waiting up to `timeout` for it to appear.
    pub fn wait_for(&self, css: &str, timeout: Duration) -> WdResult<Element> {
        self.wait(&format!("an element {css}"), timeout, || {
            Ok(self.find_all(css)?.into_iter().next())
        })
    }

    /// Poll `probe` until it gives a value or `timeout` passes (a stale element reference
    /// counts as no value yet).
    pub fn wait<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut() -> WdResult<Option<T>>,
    ) -> WdResult<T> {
        let deadline = Instant::now() + timeout;
        loop {
            match probe() {
                Ok(Some(value)) => return Ok(value),
                Ok(None) => {}
                // The dashboard re-renders what an event changed, so an element the probe
                // found can be replaced before it reads it: that is "not yet", not a failure.
                Err(e) if e.0.contains("stale element reference") => {}
                Err(e) => return Err(e),
            }
            if Instant::now() > deadline {
                return Err(WdError(format!("waited {timeout:?} for {what}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn click(&self, el: &Element) -> WdResult<()> {
        self.cmd("POST", &format!("/element/{}/click", el.0), Some(json!({})))
            .map(drop)
    }

    pub fn clear(&self, el: &Element) -> WdResult<()> {
        self.cmd("POST", &format!("/element/{}/clear", el.0), Some(json!({})))
            .map(drop)
    }

    pub fn type_text(&self, el: &Element, text: &str) -> WdResult<()> {
        self.cmd(
            "POST",
            &format!("/element/{}/value", el.0),
            Some(json!({ "text": text })),
        )
        .map(drop)
    }

    pub fn text(&self, el: &Element) -> WdResult<String> {
        Ok(self
            .cmd("GET", &format!("/element/{}/text", el.0), None)?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// Run `script` (a function body; `arguments[i]` are `args`) and return its value.
    pub fn js(&self, script: &str, args: Value) -> WdResult<Value> {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Save a PNG of the window.
    pub fn screenshot(&self, path: &Path) -> WdResult<()> {
        let data = self.cmd("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .map_err(|e| WdError(format!("screenshot: {e}")))?;
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).map_err(|e| WdError(e.to_string()))?;
        }
        fs_err::write(path, png).map_err(|e| WdError(e.to_string()))
    }

    /// The page's console messages since the last call (for a failing test's message).
    pub fn console(&self) -> Vec<String> {
        self.cmd("POST", "/se/log", Some(json!({"type": "browser"})))
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|entry| {
                format!(
                    "{} {}",
                    entry["level"].as_str().unwrap_or(""),
                    entry["message"].as_str().unwrap_or("")
                )
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.cmd("DELETE", "", None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

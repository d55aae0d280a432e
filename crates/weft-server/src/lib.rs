//! `weft serve`: the workspace's local HTTP API, its live event stream and the embedded
//! dashboard.
//!
//! Contract:
//! - **Where it listens.** 127.0.0.1 and ::1 (when the machine has it) on one port, unless
//!   the front end passes other addresses (`--listen`); port 0 picks a free one. Every
//!   request, on any address, goes through [`admission`]: a valid token, this server's own
//!   `Host`, an `Origin` (when present) of its own, and for writes the token header or the
//!   cookie with a matching `Origin`.
//! - **State.** None of its own beyond the token, the unused login codes and the engines
//!   it started: every read goes to the store, every write is one store transaction (or a
//!   control request the running engine picks up), exactly as the CLI's. A `weft run` in a
//!   terminal and this server see each other through the store.
//! - **Threads.** One accept thread per address, one per connection ([`http`] bounds them),
//!   one event poller ([`events`]) while a stream is open, and one per run it started
//!   ([`runs`]; never two engines on one plan: the store's run claim decides).
//! - **What it does not know.** Settings, runner manifests and how the CLI words a plan
//!   map live in the bin; the bin hands them in through [`Host`], so the server depends on
//!   the engine, the store and the core, never on the bin.

pub mod admission;
pub mod api;
mod assets;
pub mod error;
pub mod events;
pub mod http;
pub mod openapi;
pub mod output;
pub mod runs;
pub mod state;

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use weft_engine::EngineConfig;
use weft_engine::runners::Registry;
use weft_store::{AskRecord, Store};

pub use error::{ApiError, ApiResult};

/// What the bin provides: the settings-dependent parts (how a store is opened, the
/// engine's configuration, runner manifests) and the JSON documents whose shape the CLI's
/// `--json` already defines in the bin.
pub trait Host: Send + Sync + 'static {
    /// A store handle as the CLI opens one (busy timeout, secret masking); `create`:
    /// created on first write, else `None` when there is no store yet.
    fn store(&self, create: bool) -> ApiResult<Option<Store>>;
    /// The engine's configuration for running `plan_id` with these options (the CLI's
    /// `weft run` flags, isolation chosen as `weft run` chooses it).
    fn engine_config(&self, plan_id: &str, options: &RunOptions) -> ApiResult<EngineConfig>;
    /// Every runner manifest (built in, user, workspace).
    fn registry(&self) -> Registry;
    /// The `runner` setting.
    fn default_runner(&self) -> String;
    /// `weft status --json` of `plan_id`.
    fn status_json(&self, store: &Store, plan_id: &str) -> ApiResult<serde_json::Value>;
    /// `weft config --json`.
    fn settings_json(&self) -> ApiResult<serde_json::Value>;
    /// The open approval questions whose asker is alive (`weft approvals --json`); closes
    /// the others as withdrawn.
    fn live_asks(&self, store: &mut Store) -> ApiResult<Vec<AskRecord>>;
    /// The `repos` setting (a multi-repo workspace's repositories).
    fn repos(&self) -> Vec<String>;
    /// Where the agents' transcript stores live.
    fn transcript_locator(&self) -> weft_engine::transcripts::Locator;
    /// The PATH runner programs are looked up in.
    fn path_env(&self) -> Option<std::ffi::OsString>;
    /// The `answer_chars` setting.
    fn answer_chars(&self) -> usize;

    /// The names of every runner with a readable manifest.
    fn runner_names(&self) -> BTreeSet<String> {
        self.registry().names().map(str::to_owned).collect()
    }
}

/// Options of one run, as `POST /api/runs` takes them (the `weft run` flags).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// The plan (id, prefix or `current`; default: the current plan).
    #[serde(default)]
    pub plan: Option<String>,
    #[serde(default)]
    pub parallel: Option<u32>,
    #[serde(default)]
    pub halt_on_failure: bool,
    #[serde(default)]
    pub retry_failed: bool,
    #[serde(default)]
    pub isolated: bool,
    #[serde(default)]
    pub without_isolation: bool,
    #[serde(default)]
    pub stash: bool,
}

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `<workspace>/.weft`: where `server.json` and `server.token` are written.
    pub state_dir: PathBuf,
    /// The workspace root (shown by `GET /api/server`).
    pub workspace: PathBuf,
    /// The port (0: any free one).
    pub port: u16,
    /// Addresses other than loopback (`--listen`); empty: 127.0.0.1 and ::1.
    pub listen: Vec<std::net::IpAddr>,
    /// Messages buffered per event stream before a slow client is dropped
    /// (default [`events::CLIENT_BUFFER`]).
    pub client_buffer: usize,
}

/// A started server.
#[derive(Debug)]
pub struct RunningServer {
    /// The addresses it is bound to.
    pub addresses: Vec<SocketAddr>,
    pub port: u16,
    pub token: String,
    /// The one-time code of the login URL.
    pub login_code: String,
    accept_threads: Vec<std::thread::JoinHandle<()>>,
    app: Arc<api::App>,
}

impl RunningServer {
    /// The dashboard's login URL, with the one-time code.
    pub fn login_url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/login?code={}",
            self.port, self.login_code
        )
    }

    /// Wait (at most `limit`) until the runs this server started have ended; true when
    /// none is left. The front end calls it after it raised the engines' interrupt.
    pub fn finish_runs(&self, limit: std::time::Duration) -> bool {
        let start = std::time::Instant::now();
        while self.app.runs.active() {
            if start.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        true
    }

    /// Serve until the process ends.
    pub fn wait(self) {
        for thread in self.accept_threads {
            let _ = thread.join();
        }
    }
}

/// Bind, write `server.json` and `server.token`, and serve on background threads.
/// Refused (409) when another server of this workspace is running: the error names it.
pub fn start(host: Arc<dyn Host>, config: ServerConfig) -> ApiResult<RunningServer> {
    if let Some(running) = state::running_server(&config.state_dir) {
        return Err(ApiError::conflict(format!(
            "a weft server for this workspace is already running: pid {}, http://127.0.0.1:{}/",
            running.pid, running.port
        ))
        .hint("use that one (its token is in .weft/server.token), or stop it first"));
    }
    let listeners = bind(&config)?;
    let addresses: Vec<SocketAddr> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .collect();
    let port = addresses.first().map_or(0, SocketAddr::port);
    let token = random_secret();
    let login_code = random_secret();
    let gate = admission::Gate::new(token.clone(), login_code.clone(), &addresses);
    let app = Arc::new(api::App::new(
        host,
        gate,
        config.workspace.clone(),
        config.client_buffer,
    ));
    state::write(&config.state_dir, port, &token)?;
    let handler: http::Handler = {
        let app = app.clone();
        Arc::new(move |request| app.handle(request))
    };
    let mut accept_threads = Vec::new();
    for listener in listeners {
        accept_threads.push(http::serve(listener, handler.clone())?);
    }
    Ok(RunningServer {
        addresses,
        port,
        token,
        login_code,
        accept_threads,
        app,
    })
}

fn bind(config: &ServerConfig) -> ApiResult<Vec<TcpListener>> {
    let explicit = !config.listen.is_empty();
    let ips: Vec<std::net::IpAddr> = if explicit {
        config.listen.clone()
    } else {
        vec![
            std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::Ipv6Addr::LOCALHOST.into(),
        ]
    };
    let mut listeners: Vec<TcpListener> = Vec::new();
    let mut port = config.port;
    for ip in ips {
        match TcpListener::bind(SocketAddr::new(ip, port)) {
            Ok(listener) => {
                // Every address on the same port: the first one picked it.
                if port == 0 {
                    port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
                }
                listeners.push(listener);
            }
            // ::1 is optional (a machine without IPv6); an address asked for is not.
            Err(_) if !explicit && ip.is_ipv6() && !listeners.is_empty() => {}
            Err(e) => {
                return Err(
                    ApiError::internal(format!("cannot listen on {ip} port {port}: {e}"))
                        .hint("pick another port with --port N (0 picks a free one)"),
                );
            }
        }
    }
    Ok(listeners)
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now() -> weft_core::Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// 32 random bytes as 64 hex characters (two v4 UUIDs: the OS's random source).
fn random_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

//! `weft serve`'s costs: its memory when idle, its memory while 50 attempts stream output
//! to 50 clients, and the latency from a store write to an event-stream client.
//!
//! 1. **Idle RSS**: `weft serve --port 0` in a hermetic git workspace holding a plan,
//!    after a few requests (the first request, the event stream, the OpenAPI document),
//!    read from `/proc/PID/status` (VmRSS, VmHWM). Target under 30 MB.
//! 2. **50 live attempts**: a plan of 50 `exec` tasks that each print a line every 10 ms
//!    for about 15 s, started by `POST /api/runs {"parallel": 50}` (the engine runs inside
//!    the server process), with one output stream per attempt and one event stream read
//!    by clients in this process. The server's peak RSS (VmHWM) and its RSS sampled while
//!    all 50 run. Target under 150 MB.
//! 3. **Store write → SSE client**: this process writes to the store directly (a task
//!    hold or release, 300 times, about 20 ms apart so writes fall anywhere in the poll
//!    cycle) and a reader thread notes when each event arrives on `/api/events`.
//!    p50, p99, max. Target p99 under 100 ms.
//!
//! Figures are printed, never asserted. `WEFT_BENCH_QUICK=1` shortens 2 and 3.
//! `cargo bench -p weft --bench serve`.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fs_err as fs;
use weft_testkit::Hermetic;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn workspace(tasks: &str) -> Hermetic {
    let env = Hermetic::new();
    env.git_init();
    fs::write(env.work().join("plan.toml"), tasks).unwrap();
    let out = env
        .command(WEFT)
        .args(["plan", "--file", "plan.toml"])
        .env("WEFT_WORKSPACE", env.work())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    env
}

fn serve(env: &Hermetic) -> Server {
    let mut child = env
        .command(WEFT)
        .args(["serve", "--port", "0"])
        .env("WEFT_WORKSPACE", env.work())
        .env("WEFT_CONFINE", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let state = env.work().join(".weft");
    let info: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(state.join("server.json")).unwrap()).unwrap();
    Server {
        child,
        port: u16::try_from(info["port"].as_u64().unwrap()).unwrap(),
        token: fs::read_to_string(state.join("server.token"))
            .unwrap()
            .trim()
            .to_owned(),
    }
}

impl Server {
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            self.token,
            body.len()
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let status = text[9..12].parse().unwrap();
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    /// An open stream: the reader after the response head.
    fn stream(&self, path: &str) -> BufReader<TcpStream> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\r\n",
            self.port, self.token
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                return reader;
            }
        }
    }

    /// VmRSS and VmHWM in MB.
    fn rss(&self) -> (f64, f64) {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

fn idle() {
    let env = workspace(
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"One\"\nprompt = \"true\"\n",
    );
    let server = serve(&env);
    for path in [
        "/api/plans",
        "/api/plans/current",
        "/api/openapi.json",
        "/api/settings",
    ] {
        assert_eq!(server.request("GET", path, "").0, 200, "{path}");
    }
    let mut events = server.stream("/api/events?after=0");
    let mut line = String::new();
    events.read_line(&mut line).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (rss, hwm) = server.rss();
    println!("idle server: RSS {rss:.1} MB (peak {hwm:.1} MB), target < 30 MB");
}

fn live_attempts(quick: bool) {
    let seconds = if quick { 5 } else { 15 };
    let lines = seconds * 100;
    let mut plan = String::from("goal = \"fifty\"\nrunner = \"exec\"\n");
    for i in 0..50 {
        plan.push_str(&format!(
            "[[tasks]]\ntitle = \"Stream {i}\"\nprompt = \"i=0; while [ $i -lt {lines} ]; do echo attempt {i} line $i of the output; i=$((i+1)); sleep 0.01; done\"\n"
        ));
    }
    let env = workspace(&plan);
    let server = serve(&env);
    let (status, body) = server.request(
        "POST",
        "/api/runs",
        "{\"parallel\": 50, \"without_isolation\": true}",
    );
    assert_eq!(status, 202, "{body}");
    // Every attempt, once the engine started them.
    let mut ids: Vec<String> = Vec::new();
    let start = Instant::now();
    while ids.len() < 50 && start.elapsed() < Duration::from_secs(60) {
        ids.clear();
        for n in 1..=50 {
            let (status, body) =
                server.request("GET", &format!("/api/plans/current/tasks/{n}/attempts"), "");
            if status == 200
                && let Ok(serde_json::Value::Array(attempts)) = serde_json::from_str(&body)
                && let Some(id) = attempts.last().and_then(|a| a["id"].as_str())
            {
                ids.push(id.to_owned());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let bytes = Arc::new(Mutex::new(0u64));
    let mut readers = Vec::new();
    for id in &ids {
        let mut stream = server.stream(&format!("/api/attempts/{id}/output/stream"));
        let bytes = bytes.clone();
        readers.push(std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                *bytes.lock().unwrap() += n as u64;
            }
        }));
    }
    let mut events = server.stream("/api/events?after=0");
    readers.push(std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while events.read(&mut buf).is_ok_and(|n| n > 0) {}
    }));
    let mut samples = Vec::new();
    let sampling = Instant::now();
    while sampling.elapsed() < Duration::from_secs(seconds as u64) {
        samples.push(server.rss().0);
        std::thread::sleep(Duration::from_millis(250));
    }
    let (_, hwm) = server.rss();
    let max = samples.iter().copied().fold(0.0, f64::max);
    let streamed = *bytes.lock().unwrap() as f64 / 1024.0 / 1024.0;
    println!(
        "50 live attempts ({} output streams + 1 event stream, {streamed:.1} MB streamed): RSS max {max:.1} MB sampled, peak {hwm:.1} MB, target < 150 MB",
        ids.len()
    );
    drop(server);
}

fn latency(quick: bool) {
    let writes = if quick { 100 } else { 300 };
    let env = workspace(
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"true\"\n",
    );
    let server = serve(&env);
    let store = weft_store::Store::open_existing(
        &env.work().join(".weft"),
        weft_store::OpenOptions {
            busy_timeout: Duration::from_secs(5),
        },
    )
    .unwrap()
    .unwrap();
    let plan = store.current_plan_id().unwrap().unwrap();
    let after = store.last_event_seq().unwrap();
    let arrived: Arc<Mutex<HashMap<i64, Instant>>> = Arc::default();
    let mut stream = server.stream(&format!("/api/events?after={after}"));
    {
        let arrived = arrived.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while stream.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Some(id) = line.strip_prefix("id: ")
                    && let Ok(seq) = id.trim().parse::<i64>()
                {
                    arrived.lock().unwrap().insert(seq, Instant::now());
                }
                line.clear();
            }
        });
    }
    let mut store = store;
    let mut written: Vec<(i64, Instant)> = Vec::new();
    for i in 0..writes {
        let edit = weft_core::Edit::SetHold {
            task: "a".into(),
            hold: i % 2 == 0,
        };
        store.apply_edit(&plan, &edit, &|_| true, 0).unwrap();
        let at = Instant::now();
        written.push((store.last_event_seq().unwrap(), at));
        std::thread::sleep(Duration::from_millis(13 + (i * 7) % 17));
    }
    std::thread::sleep(Duration::from_millis(500));
    let arrived = arrived.lock().unwrap();
    let mut delays: Vec<Duration> = written
        .iter()
        .filter_map(|(seq, at)| {
            arrived
                .get(seq)
                .map(|got| got.saturating_duration_since(*at))
        })
        .collect();
    delays.sort_unstable();
    let pick = |q: f64| delays[((delays.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "store write -> SSE client ({} of {writes} writes seen): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, target p99 < 100 ms",
        delays.len(),
        pick(0.5).as_secs_f64() * 1000.0,
        pick(0.99).as_secs_f64() * 1000.0,
        pick(1.0).as_secs_f64() * 1000.0
    );
}

fn main() {
    let quick = std::env::var_os("WEFT_BENCH_QUICK").is_some();
    idle();
    latency(quick);
    live_attempts(quick);
}

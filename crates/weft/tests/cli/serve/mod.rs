//! `weft serve` over real HTTP: the real binary in a hermetic workspace (real git, real
//! SQLite, the fake agent or the exec runner), spoken to with a small raw HTTP/1.1 client
//! (so a test can send any Host, Origin or Cookie it likes).

mod admission;
mod api;
mod events;
mod runs;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Weft;

/// A running `weft serve --port 0`; killed when dropped.
pub struct Served {
    child: Child,
    pub port: u16,
    pub token: String,
    pub login_url: String,
}

/// One response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Insist on `status`.
    #[track_caller]
    pub fn expect(self, status: u16) -> Reply {
        assert_eq!(self.status, status, "{}", self.body);
        self
    }
}

impl Served {
    pub fn start(weft: &Weft) -> Served {
        Served::start_with(weft, &[])
    }

    pub fn start_with(weft: &Weft, env: &[(&str, &str)]) -> Served {
        let mut command = weft.command(&["serve", "--port", "0"]);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("weft serve starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let login_url = first.trim().to_owned();
        assert!(
            login_url.starts_with("http://127.0.0.1:") && login_url.contains("/login?code="),
            "weft serve printed {login_url:?}"
        );
        let state = weft.work().join(".weft");
        let info: Value =
            serde_json::from_str(&fs_err::read_to_string(state.join("server.json")).unwrap())
                .unwrap();
        let token = fs_err::read_to_string(state.join("server.token"))
            .unwrap()
            .trim()
            .to_owned();
        Served {
            child,
            port: u16::try_from(info["port"].as_u64().unwrap()).unwrap(),
            token,
            login_url,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send SIGINT (Ctrl-C) and wait for the process to end; its exit status.
    pub fn interrupt(&mut self) -> std::process::ExitStatus {
        std::process::Command::new("kill")
            .args(["-INT", &self.pid().to_string()])
            .status()
            .unwrap();
        self.child.wait().unwrap()
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A request with exactly these headers (plus Host, unless given, and the length).
    pub fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.host()));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!(
            "Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        stream.write_all(head.as_bytes()).unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).unwrap();
        parse(&bytes)
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    pub fn get(&self, path: &str) -> Reply {
        self.raw("GET", path, &[("Authorization", &self.bearer())], "")
    }

    /// A write with the token and a JSON body.
    pub fn send(&self, method: &str, path: &str, body: &Value) -> Reply {
        self.raw(
            method,
            path,
            &[
                ("Authorization", &self.bearer()),
                ("Content-Type", "application/json"),
            ],
            &body.to_string(),
        )
    }

    pub fn post(&self, path: &str, body: &Value) -> Reply {
        self.send("POST", path, body)
    }

    /// An open event stream (with the token).
    pub fn stream(&self, path: &str, headers: &[(&str, &str)]) -> Sse {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n",
            self.host(),
            self.bearer()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
        }
        Sse { reader }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn parse(bytes: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.lines();
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// The reading end of an event stream.
pub struct Sse {
    reader: BufReader<TcpStream>,
}

impl Sse {
    /// The next message (comments skipped); `None` when the server ended the stream.
    pub fn next(&mut self) -> Option<Message> {
        let mut message = Message {
            id: None,
            event: None,
            data: String::new(),
        };
        let mut any = false;
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if any {
                    return Some(message);
                }
                continue;
            }
            if line.starts_with(':') || line.starts_with("retry:") {
                continue;
            }
            any = true;
            if let Some(v) = line.strip_prefix("id: ") {
                message.id = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("event: ") {
                message.event = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("data: ") {
                message.data.push_str(v);
            }
        }
    }

    /// The next message whose event kind is `kind`, within `limit`.
    pub fn next_of(&mut self, kind: &str, limit: Duration) -> Option<Message> {
        let start = Instant::now();
        while start.elapsed() < limit {
            let message = self.next()?;
            if message.event.as_deref() == Some(kind) {
                return Some(message);
            }
        }
        None
    }

    /// A raw line, heartbeats included.
    pub fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    }
}

/// A workspace with a two-task exec plan (task 1 waits for task 2 never: they are
/// independent; `prompt` is each task's shell script).
pub fn exec_plan(weft: &Weft, first: &str, second: &str) {
    weft.write(
        "plan.toml",
        &format!(
            "goal = \"serve\"\nrunner = \"exec\"\n[[tasks]]\nid = \"one\"\ntitle = \"One\"\nprompt = {first:?}\n[[tasks]]\nid = \"two\"\ntitle = \"Two\"\nprompt = {second:?}\ndependencies = [\"one\"]\n"
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
}

/// Wait until `check` holds (at most `limit`).
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

//! The files a running server leaves in the workspace's state folder:
//! `.weft/server.json` (`{"port", "pid"}`) and `.weft/server.token` (the bearer token
//! alone on one line, mode 0600, for scripts and `curl -H "Authorization: Bearer $(cat
//! .weft/server.token)"`). Both are rewritten at start; a file whose pid is no longer
//! alive (or whose port no longer answers) is a leftover and does not count.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use fs_err as fs;

use crate::error::{ApiError, ApiResult};

pub const SERVER_FILE: &str = "server.json";
pub const TOKEN_FILE: &str = "server.token";

/// What `server.json` records.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServerInfo {
    pub port: u16,
    pub pid: u32,
}

/// The server of this workspace that is running now, if any.
pub fn running_server(state_dir: &Path) -> Option<ServerInfo> {
    let text = fs::read_to_string(state_dir.join(SERVER_FILE)).ok()?;
    let info: ServerInfo = serde_json::from_str(&text).ok()?;
    if info.pid == std::process::id() || !Path::new(&format!("/proc/{}", info.pid)).exists() {
        return None;
    }
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, info.port));
    TcpStream::connect_timeout(&address, Duration::from_millis(500)).ok()?;
    Some(info)
}

/// Write both files (the state folder is created 0700 when missing).
pub fn write(state_dir: &Path, port: u16, token: &str) -> ApiResult<()> {
    let io = |what: &Path, e: std::io::Error| {
        ApiError::internal(format!("cannot write {}: {e}", what.display()))
            .hint("check that the workspace's .weft folder is writable by you")
    };
    if !state_dir.exists() {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(state_dir)
            .map_err(|e| io(state_dir, e))?;
    }
    let token_path = state_dir.join(TOKEN_FILE);
    // Removed first: an existing file keeps its mode when opened for writing.
    let _ = fs::remove_file(&token_path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&token_path)
        .map_err(|e| io(&token_path, e))?;
    writeln!(file, "{token}").map_err(|e| io(&token_path, e))?;
    let info = ServerInfo {
        port,
        pid: std::process::id(),
    };
    let server_path = state_dir.join(SERVER_FILE);
    let mut text = serde_json::to_string(&info).map_err(|e| ApiError::internal(e.to_string()))?;
    text.push('\n');
    let temp = state_dir.join(format!("{SERVER_FILE}.{}", std::process::id()));
    fs::write(&temp, text).map_err(|e| io(&temp, e))?;
    fs::rename(&temp, &server_path).map_err(|e| io(&server_path, e))?;
    Ok(())
}

/// Remove both files if they are still this process's (at a clean exit).
pub fn remove(state_dir: &Path) {
    let Ok(text) = fs::read_to_string(state_dir.join(SERVER_FILE)) else {
        return;
    };
    if serde_json::from_str::<ServerInfo>(&text).is_ok_and(|i| i.pid == std::process::id()) {
        let _ = fs::remove_file(state_dir.join(SERVER_FILE));
        let _ = fs::remove_file(state_dir.join(TOKEN_FILE));
    }
}

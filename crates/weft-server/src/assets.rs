//! The dashboard's files, embedded at build time (`build.rs` lists `assets/`). `/` is
//! `assets/index.html`; before the dashboard exists, a short page says how to use the
//! API instead.

use crate::http::Response;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

/// The page shown when no `assets/index.html` is embedded.
const PLACEHOLDER: &str = "<!doctype html><meta charset=utf-8><title>weft</title><h1>weft serve</h1><p>The dashboard is not part of this build. The API is at <a href=/api/openapi.json>/api/openapi.json</a>.</p>";

/// The bytes of an embedded file.
fn find(name: &str) -> Option<&'static [u8]> {
    embedded::FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, bytes)| *bytes)
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

/// Nothing from the network: the page may load only what this server serves.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn page(status: u16, kind: &str, bytes: Vec<u8>) -> Response {
    Response::bytes(status, kind, bytes)
        .with_header("Content-Security-Policy", CSP)
        .with_header("X-Frame-Options", "DENY")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Cache-Control", "no-cache")
}

/// `/`.
pub fn index() -> Response {
    match find("index.html") {
        Some(bytes) => page(200, content_type("index.html"), bytes.to_vec()),
        None => page(
            200,
            "text/html; charset=utf-8",
            PLACEHOLDER.as_bytes().to_vec(),
        ),
    }
}

/// `/assets/{name}`.
pub fn file(name: &str) -> Option<Response> {
    find(name).map(|bytes| page(200, content_type(name), bytes.to_vec()))
}

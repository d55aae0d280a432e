//! Admission: which requests the server answers at all. Checked in this order, on every
//! request, whatever the address it came in on:
//!
//! 1. `Host` must name this server: `127.0.0.1:PORT`, `[::1]:PORT`, `localhost:PORT`, or
//!    a `--listen` address with the port. Anything else (a DNS-rebinding page whose name
//!    now points at 127.0.0.1) gets **421**.
//! 2. `Origin`, when present, must be `http://` + one of those hosts, else **403** (a page
//!    of another site calling the API from the user's browser).
//! 3. `GET /login?code=C` trades the one-time code for the session cookie (`weft_session`,
//!    HttpOnly, SameSite=Strict, Path=/) and redirects to `/`; a wrong or used code is 401.
//! 4. Everything else needs the token: `Authorization: Bearer T` or the cookie. Missing or
//!    wrong: **401**.
//! 5. A write (POST, PUT, PATCH, DELETE) with the cookie alone also needs an `Origin`
//!    (which step 2 made sure is ours): a cross-site form post carries the foreign origin
//!    or none, and is **403**. A write with a body must be `application/json` (**415**), so
//!    a form's `text/plain` or `application/x-www-form-urlencoded` is refused even where a
//!    browser left Origin out.
//!
//! Tokens are compared in constant time. The login code is used once: the URL printed in
//! a terminal (and maybe kept in its scrollback or a browser's history) is worthless once
//! it was opened.

use std::net::SocketAddr;
use std::sync::Mutex;

use crate::error::ApiError;
use crate::http::{Request, Response};

/// The name of the session cookie.
pub const COOKIE: &str = "weft_session";

/// How a request proved it holds the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    Bearer,
    Cookie,
}

/// What admission decided.
#[derive(Debug)]
pub enum Admitted {
    /// Serve it.
    Yes(Credential),
    /// Answer with this (a refusal, or the login redirect).
    Answer(Response),
}

/// The token, the unused login code and the names this server answers to.
#[derive(Debug)]
pub struct Gate {
    token: String,
    login_code: Mutex<Option<String>>,
    hosts: Vec<String>,
}

impl Gate {
    pub fn new(token: String, login_code: String, addresses: &[SocketAddr]) -> Gate {
        let mut hosts = Vec::new();
        for address in addresses {
            let port = address.port();
            let ip = address.ip();
            let name = if ip.is_ipv6() {
                format!("[{ip}]:{port}")
            } else {
                format!("{ip}:{port}")
            };
            hosts.push(name);
            if ip.is_loopback() {
                hosts.push(format!("localhost:{port}"));
            }
        }
        hosts.sort();
        hosts.dedup();
        Gate {
            token,
            login_code: Mutex::new(Some(login_code)),
            hosts,
        }
    }

    /// The `Host` values this server answers to.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Decide on `request` (see the module docs).
    pub fn admit(&self, request: &Request) -> Admitted {
        match self.check(request) {
            Ok(admitted) => admitted,
            Err(error) => Admitted::Answer(error.response()),
        }
    }

    fn check(&self, request: &Request) -> Result<Admitted, ApiError> {
        let host = request.header("host").unwrap_or_default();
        if !self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Err(ApiError::new(
                421,
                format!("this server does not answer to the host {host:?}"),
            )
            .hint(format!(
                "address it as one of: {} (a foreign name pointing at this machine is refused)",
                self.hosts.join(", ")
            )));
        }
        let origin = request.header("origin");
        if let Some(origin) = origin
            && !self.own_origin(origin)
        {
            return Err(ApiError::new(
                403,
                format!("requests from the origin {origin:?} are refused"),
            )
            .hint("only the dashboard this server serves may call it from a browser"));
        }
        if request.method == "GET" && request.path == "/login" {
            return Ok(Admitted::Answer(self.login(request)?));
        }
        let credential = self.credential(request)?;
        let write = matches!(request.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE");
        if write {
            if credential == Credential::Cookie && origin.is_none() {
                return Err(ApiError::new(
                    403,
                    "a change made with the session cookie must carry this server's Origin",
                )
                .hint(
                    "browsers send it with fetch(); scripts send Authorization: Bearer <token>",
                ));
            }
            let json = request
                .header("content-type")
                .is_some_and(|t| t.to_ascii_lowercase().starts_with("application/json"));
            if !request.body.is_empty() && !json {
                return Err(ApiError::new(415, "a request body must be JSON")
                    .hint("send Content-Type: application/json"));
            }
        }
        Ok(Admitted::Yes(credential))
    }

    fn own_origin(&self, origin: &str) -> bool {
        origin
            .strip_prefix("http://")
            .is_some_and(|rest| self.hosts.iter().any(|h| h.eq_ignore_ascii_case(rest)))
    }

    fn credential(&self, request: &Request) -> Result<Credential, ApiError> {
        let unauthorized = |why: &str| {
            ApiError::new(401, why.to_owned()).hint(
                "open the login URL `weft serve` printed, or send Authorization: Bearer <the token in .weft/server.token>",
            )
        };
        if let Some(value) = request.header("authorization") {
            let token = value
                .strip_prefix("Bearer ")
                .or_else(|| value.strip_prefix("bearer "))
                .unwrap_or_default()
                .trim();
            return if same(token, &self.token) {
                Ok(Credential::Bearer)
            } else {
                Err(unauthorized("the bearer token is wrong"))
            };
        }
        match cookie(request, COOKIE) {
            Some(token) if same(token, &self.token) => Ok(Credential::Cookie),
            Some(_) => Err(unauthorized("the session cookie is not this server's")),
            None => Err(unauthorized("a token is required")),
        }
    }

    fn login(&self, request: &Request) -> Result<Response, ApiError> {
        let code = request.query("code").unwrap_or_default();
        let mut slot = self
            .login_code
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let valid = slot.as_deref().is_some_and(|c| same(code, c));
        if !valid {
            return Err(ApiError::new(401, "this login code is wrong or was used already")
                .hint("run `weft serve` again for a new login URL, or send the token in .weft/server.token"));
        }
        *slot = None;
        Ok(
            Response::bytes(302, "text/plain; charset=utf-8", Vec::new())
                .with_header("Location", "/")
                .with_header(
                    "Set-Cookie",
                    format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", self.token),
                )
                .with_header("Cache-Control", "no-store"),
        )
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .filter(|(k, _)| k == "cookie")
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Equal, in time that depends only on the lengths.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |diff, (x, y)| diff | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn gate() -> Gate {
        let address: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        Gate::new("t".repeat(64), "c".repeat(64), &[address])
    }

    fn request(method: &str, headers: &[(&str, &str)], body: &str) -> Request {
        Request {
            method: method.into(),
            path: "/api/plans".into(),
            query: Vec::new(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned()))
                .collect(),
            body: body.as_bytes().to_vec(),
            local: "127.0.0.1:4000".parse().unwrap(),
        }
    }

    fn status(admitted: Admitted) -> u16 {
        match admitted {
            Admitted::Yes(_) => 200,
            Admitted::Answer(response) => response.status,
        }
    }

    proptest! {
        /// Whatever else a request carries, a Host that is not the server's own is 421.
        #[test]
        fn any_foreign_host_is_refused_with_421(host in "[a-z0-9.:\\[\\]-]{0,40}", method in "GET|POST|PUT|PATCH|DELETE") {
            prop_assume!(!gate().hosts().iter().any(|h| h.eq_ignore_ascii_case(&host)));
            let token = format!("Bearer {}", "t".repeat(64));
            let admitted = gate().admit(&request(&method, &[("Host", &host), ("Authorization", &token)], ""));
            prop_assert_eq!(status(admitted), 421);
        }

        /// Any token but the right one is 401, by header or by cookie.
        #[test]
        fn any_wrong_token_is_refused_with_401(token in "[ -~]{0,80}") {
            prop_assume!(token != "t".repeat(64));
            let bearer = format!("Bearer {token}");
            let cookie = format!("{COOKIE}={token}");
            for header in [("Authorization", bearer.as_str()), ("Cookie", cookie.as_str())] {
                let admitted = gate().admit(&request("GET", &[("Host", "127.0.0.1:4000"), header], ""));
                prop_assert_eq!(status(admitted), 401);
            }
        }
    }

    #[test]
    fn the_right_token_with_the_own_host_and_origin_is_admitted_and_a_cookie_write_needs_the_origin()
     {
        let token = format!("Bearer {}", "t".repeat(64));
        let cookie = format!("{COOKIE}={}", "t".repeat(64));
        let own = [
            ("Host", "localhost:4000"),
            ("Origin", "http://127.0.0.1:4000"),
        ];
        fn with<'a>(
            own: &[(&'a str, &'a str)],
            extra: &[(&'a str, &'a str)],
        ) -> Vec<(&'a str, &'a str)> {
            let mut headers = own.to_vec();
            headers.extend_from_slice(extra);
            headers
        }
        assert_eq!(
            status(gate().admit(&request(
                "GET",
                &with(&own, &[("Authorization", &token)]),
                ""
            ))),
            200
        );
        let json = ("Content-Type", "application/json");
        assert_eq!(
            status(gate().admit(&request(
                "POST",
                &with(&own, &[("Cookie", &cookie), json]),
                "{}"
            ))),
            200
        );
        let no_origin = [
            ("Host", "127.0.0.1:4000"),
            ("Cookie", cookie.as_str()),
            json,
        ];
        assert_eq!(
            status(gate().admit(&request("POST", &no_origin, "{}"))),
            403
        );
        let form = ("Content-Type", "text/plain");
        assert_eq!(
            status(gate().admit(&request(
                "POST",
                &with(&own, &[("Authorization", &token), form]),
                "x"
            ))),
            415
        );
    }
}

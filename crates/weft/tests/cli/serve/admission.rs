//! Who the server answers: the token, its own Host and Origin, the login code, loopback.

use std::os::unix::fs::PermissionsExt;

use super::Served;
use crate::harness::Weft;

#[test]
fn a_request_without_a_token_or_with_a_wrong_one_is_refused_with_401_and_a_json_error() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let none = served.raw("GET", "/api/plans", &[], "").expect(401);
    assert_eq!(none.json()["error"], "a token is required");
    assert!(
        none.json()["hint"]
            .as_str()
            .unwrap()
            .contains("server.token")
    );
    served
        .raw("GET", "/api/plans", &[("Authorization", "Bearer nope")], "")
        .expect(401);
    served
        .raw("GET", "/api/plans", &[("Cookie", "weft_session=nope")], "")
        .expect(401);
    // The page itself needs the token too.
    served.raw("GET", "/", &[], "").expect(401);
    served.get("/api/plans").expect(200);
}

#[test]
fn a_foreign_host_is_421_and_a_foreign_origin_is_403_even_with_the_token() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let auth = format!("Bearer {}", served.token);
    let rebinding = format!("evil.example:{}", served.port);
    let host = served
        .raw(
            "GET",
            "/api/plans",
            &[("Host", &rebinding), ("Authorization", &auth)],
            "",
        )
        .expect(421);
    assert!(
        host.json()["error"]
            .as_str()
            .unwrap()
            .contains("evil.example")
    );
    // Another port of localhost is another origin.
    let other_port = format!("127.0.0.1:{}", served.port.wrapping_add(1));
    served
        .raw(
            "GET",
            "/api/plans",
            &[("Host", &other_port), ("Authorization", &auth)],
            "",
        )
        .expect(421);
    served
        .raw(
            "GET",
            "/api/plans",
            &[("Origin", "http://evil.example"), ("Authorization", &auth)],
            "",
        )
        .expect(403);
    // Its own names pass.
    let localhost = format!("localhost:{}", served.port);
    served
        .raw(
            "GET",
            "/api/plans",
            &[
                ("Host", &localhost),
                ("Origin", &served.origin()),
                ("Authorization", &auth),
            ],
            "",
        )
        .expect(200);
}

/// The login code sets an HttpOnly, SameSite=Strict cookie once; with it a page may read,
/// and write only with its own Origin; a cross-site form post is refused.
#[test]
fn the_login_code_works_once_and_its_cookie_writes_only_with_the_servers_own_origin() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let path = &served.login_url[served.login_url.find("/login").unwrap()..];
    let login = served.raw("GET", path, &[], "").expect(302);
    assert_eq!(login.header("Location"), Some("/"));
    let cookie = login.header("Set-Cookie").unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    // Used once: the same URL again is refused.
    served.raw("GET", path, &[], "").expect(401);
    served.raw("GET", "/login?code=guess", &[], "").expect(401);
    served
        .raw("GET", "/api/plans", &[("Cookie", &pair)], "")
        .expect(200);
    served.raw("GET", "/", &[("Cookie", &pair)], "").expect(200);
    let edit = r#"{"title":"Renamed by the page"}"#;
    // A cross-site form: foreign Origin, form content type.
    served
        .raw(
            "PATCH",
            "/api/plans/current/tasks/1",
            &[
                ("Cookie", &pair),
                ("Origin", "http://evil.example"),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            "title=pwned",
        )
        .expect(403);
    served
        .raw(
            "POST",
            "/api/plans/current/tasks/1/hold",
            &[("Cookie", &pair), ("Content-Type", "text/plain")],
            "",
        )
        .expect(403);
    // No Origin at all with the cookie: refused too.
    served
        .raw(
            "PATCH",
            "/api/plans/current/tasks/1",
            &[("Cookie", &pair), ("Content-Type", "application/json")],
            edit,
        )
        .expect(403);
    // Its own Origin, but a form body: not JSON.
    served
        .raw(
            "PATCH",
            "/api/plans/current/tasks/1",
            &[
                ("Cookie", &pair),
                ("Origin", &served.origin()),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            "title=pwned",
        )
        .expect(415);
    assert_eq!(
        weft.status_json()["plan"]["tasks"][0]["title"],
        "Add a token-bucket limiter"
    );
    served
        .raw(
            "PATCH",
            "/api/plans/current/tasks/1",
            &[
                ("Cookie", &pair),
                ("Origin", &served.origin()),
                ("Content-Type", "application/json"),
            ],
            edit,
        )
        .expect(200);
    assert_eq!(
        weft.status_json()["plan"]["tasks"][0]["title"],
        "Renamed by the page"
    );
}

#[test]
fn the_server_listens_on_loopback_only_and_records_its_port_pid_and_a_private_token() {
    let weft = Weft::new();
    let served = Served::start(&weft);
    let hosts = served.get("/api/server").expect(200).json()["hosts"].clone();
    for host in hosts.as_array().unwrap() {
        let host = host.as_str().unwrap();
        assert!(
            host.starts_with("127.0.0.1:")
                || host.starts_with("[::1]:")
                || host.starts_with("localhost:"),
            "bound to {host}"
        );
    }
    // A non-loopback address of this machine, if it has one, does not answer.
    if let Ok(probe) = std::net::UdpSocket::bind("0.0.0.0:0")
        && probe.connect("192.0.2.1:9").is_ok()
        && let Ok(local) = probe.local_addr()
        && !local.ip().is_loopback()
    {
        let address = std::net::SocketAddr::new(local.ip(), served.port);
        assert!(
            std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(1))
                .is_err(),
            "{address} answered"
        );
    }
    let state = weft.work().join(".weft");
    let info: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(state.join("server.json")).unwrap()).unwrap();
    assert_eq!(info["pid"], served.pid());
    assert_eq!(info["port"], served.port);
    let token = state.join("server.token");
    assert_eq!(
        fs_err::metadata(&token).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let text = fs_err::read_to_string(&token).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert_eq!(text.trim().len(), 64);
}

#[test]
fn a_second_server_in_the_same_workspace_reports_the_running_one_instead_of_starting() {
    let weft = Weft::new();
    let served = Served::start(&weft);
    let second = weft.fails(&["serve", "--port", "0"], 1);
    assert!(
        second.stderr.contains(&format!("pid {}", served.pid()))
            && second
                .stderr
                .contains(&format!("127.0.0.1:{}", served.port)),
        "{}",
        second.stderr
    );
    // The running one's files are untouched.
    assert_eq!(
        fs_err::read_to_string(weft.work().join(".weft/server.token"))
            .unwrap()
            .trim(),
        served.token
    );
}

//! The dashboard's files, embedded in the binary at build time (`include_str!`): building
//! weft needs no Node, no npm and no build step, and the page loads nothing from the
//! network. The files are hand-written HTML, CSS and JavaScript under `assets/`; every
//! value that comes from a task, an agent or a file reaches the page as DOM text
//! (`textContent`), never as markup.
//!
//! `/` serves [`INDEX`] ([`index`]); `/assets/NAME` serves [`get`]`(NAME)` ([`file`]). A
//! name outside the fixed list is `None` (a 404), so no request can reach the file system
//! through this module. The list is spelled out (not globbed by a build script) so the
//! binary holds exactly the files named here, and a test checks the page names no other.

use crate::http::Response;

/// One embedded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    /// The file name under `/assets/`.
    pub name: &'static str,
    /// Its `Content-Type` header value.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static str,
}

/// The page at `/`.
pub const INDEX: Asset = Asset {
    name: "index.html",
    content_type: "text/html; charset=utf-8",
    body: include_str!("../assets/index.html"),
};

/// Every file under `/assets/`, in the order the page loads them.
pub const FILES: &[Asset] = &[
    js("dom.js", include_str!("../assets/dom.js")),
    js("graph.js", include_str!("../assets/graph.js")),
    js("panel.js", include_str!("../assets/panel.js")),
    js("views.js", include_str!("../assets/views.js")),
    js("app.js", include_str!("../assets/app.js")),
    Asset {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../assets/app.css"),
    },
    INDEX,
];

const fn js(name: &'static str, body: &'static str) -> Asset {
    Asset {
        name,
        content_type: "text/javascript; charset=utf-8",
        body,
    }
}

/// The embedded file `/assets/{name}`, if there is one by that exact name.
pub fn get(name: &str) -> Option<&'static Asset> {
    FILES.iter().find(|asset| asset.name == name)
}

/// `GET /`: the dashboard page.
pub fn index() -> Response {
    page(&INDEX)
}

/// `GET /assets/{name}`: one file of the dashboard, if there is one by that name.
pub fn file(name: &str) -> Option<Response> {
    get(name).map(page)
}

fn page(asset: &Asset) -> Response {
    Response::bytes(200, asset.content_type, asset.body.as_bytes().to_vec())
        .with_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        .with_header("X-Content-Type-Options", "nosniff")
        .with_header("X-Frame-Options", "DENY")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Cache-Control", "no-cache")
}

/// The `Content-Security-Policy` the dashboard is served with: its own scripts, styles and
/// API only (no inline script, nothing from another origin), so even markup that slipped
/// into the page could neither run nor phone home.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_and_stylesheet_the_page_names_is_embedded() {
        for part in INDEX.body.split("/assets/").skip(1) {
            let name = part.split('"').next().unwrap_or_default();
            assert!(
                get(name).is_some(),
                "index.html loads /assets/{name}, which is not embedded"
            );
        }
    }

    #[test]
    fn the_page_loads_nothing_from_another_origin() {
        for asset in FILES {
            for needle in ["http://", "https://", "//cdn", "@import"] {
                // The SVG namespace URI is a name, not a request.
                let hits = asset
                    .body
                    .match_indices(needle)
                    .filter(|(at, _)| !asset.body[*at..].starts_with("http://www.w3.org/2000/svg"))
                    .count();
                assert_eq!(hits, 0, "{} mentions {needle}", asset.name);
            }
        }
    }

    #[test]
    fn no_script_assigns_markup_from_data() {
        for asset in FILES.iter().filter(|a| a.name.ends_with(".js")) {
            for needle in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
            ] {
                assert!(!asset.body.contains(needle), "{} uses {needle}", asset.name);
            }
        }
    }

    #[test]
    fn an_unknown_or_traversing_name_is_not_served() {
        assert!(get("../Cargo.toml").is_none());
        assert!(get("app.js/").is_none());
        assert!(get("").is_none());
        assert_eq!(
            get("app.css").map(|a| a.content_type),
            Some("text/css; charset=utf-8")
        );
    }
}

//! The OpenAPI 3.1 document, generated from the route table ([`crate::api::ROUTES`]):
//! every route with its method, path parameters, request body and responses, and the
//! error object every failure returns. Committed as `schemas/openapi.json`; a test fails
//! when the two differ (`WEFT_UPDATE_OPENAPI=1` rewrites the file).

use serde_json::{Map, Value, json};

use crate::api::{Body, Produces, ROUTES};

/// The document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let entry = paths
            .entry(route.path.to_owned())
            .or_insert_with(|| json!({}));
        let parameters: Vec<Value> = route
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| {
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
            })
            .collect();
        let content_type = match route.produces {
            Produces::Json => "application/json",
            Produces::Text => "text/plain",
            Produces::EventStream => "text/event-stream",
            Produces::Html => "text/html",
        };
        let mut operation = json!({
            "summary": route.summary,
            "operationId": operation_id(route.method, route.path),
            "responses": {
                route.status.to_string(): {
                    "description": "success",
                    "content": {content_type: {}},
                },
                "default": {
                    "description": "an error: 400 bad input, 401 no or wrong token, 403 foreign Origin, 404 unknown id, 409 wrong state, 421 foreign Host",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                },
            },
        });
        if !parameters.is_empty() {
            operation["parameters"] = Value::Array(parameters);
        }
        if let Body::Json(name) = route.body {
            operation["requestBody"] = json!({
                "required": false,
                "description": format!("a JSON object ({name}); an empty body is {{}}"),
                "content": {"application/json": {"schema": {"type": "object"}}},
            });
        }
        entry[route.method.to_ascii_lowercase()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "weft serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The local API of a weft workspace. Every request needs the token (Authorization: Bearer, or the weft_session cookie GET /login?code= sets). Bodies are the JSON the CLI's --json prints.",
        },
        "servers": [{"url": "http://127.0.0.1:{port}", "variables": {"port": {"default": "0"}}}],
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": crate::admission::COOKIE},
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error", "hint", "causes"],
                    "properties": {
                        "error": {"type": "string"},
                        "hint": {"type": ["string", "null"]},
                        "causes": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        },
        "security": [{"bearer": []}, {"cookie": []}],
        "paths": paths,
    })
}

/// `GET /api/plans/{plan}/tasks` → `get_api_plans_plan_tasks`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    for part in path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        id.extend(
            part.chars()
                .filter(|c| !matches!(c, '{' | '}'))
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    if path == "/" {
        id.push_str("_index");
    }
    id
}

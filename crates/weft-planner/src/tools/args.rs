//! Tool arguments: one description per parameter gives both the JSON Schema offered to the
//! model and the checks (and error messages) applied to what it sends.

use serde_json::{Map, Value, json};
use thiserror::Error;

/// What a parameter holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    /// An integer in `min..=max`.
    Int {
        min: u64,
        max: u64,
    },
    Bool,
}

/// One parameter of a tool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    pub description: &'static str,
}

/// A bad argument: the message names it and the shape the tool expects.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}; `{tool}` expects {shape}")]
pub(crate) struct ArgError {
    tool: &'static str,
    message: String,
    shape: String,
}

/// The checked arguments of one call.
#[derive(Debug)]
pub(crate) struct Args {
    tool: &'static str,
    params: &'static [Param],
    map: Map<String, Value>,
}

impl Args {
    /// Parses the raw JSON text the model sent: an object whose keys are all parameters of
    /// the tool. Empty text and `null` count as `{}`.
    pub(crate) fn parse(
        tool: &'static str,
        params: &'static [Param],
        raw: &str,
    ) -> Result<Args, ArgError> {
        let error = |message: String| ArgError {
            tool,
            message,
            shape: shape(params),
        };
        let value: Value = if raw.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(raw)
                .map_err(|e| error(format!("the arguments are not valid JSON ({e})")))?
        };
        let map = match value {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(error(format!(
                    "the arguments must be a JSON object, not {}",
                    type_name(&other)
                )));
            }
        };
        for key in map.keys() {
            if !params.iter().any(|p| p.name == key) {
                let known: Vec<&str> = params.iter().map(|p| p.name).collect();
                return Err(error(format!(
                    "unknown argument `{key}` (known: {})",
                    known.join(", ")
                )));
            }
        }
        let args = Args { tool, params, map };
        for param in params {
            // Type-check every argument up front, so a mistake is reported whichever
            // argument the tool happens to read first.
            args.value(param.name)?;
        }
        Ok(args)
    }

    fn param(&self, name: &str) -> &'static Param {
        self.params
            .iter()
            .find(|p| p.name == name)
            .unwrap_or(&UNKNOWN)
    }

    fn error(&self, message: String) -> ArgError {
        ArgError {
            tool: self.tool,
            message,
            shape: shape(self.params),
        }
    }

    /// The argument's value after checks; `None` when absent or `null`.
    fn value(&self, name: &str) -> Result<Option<&Value>, ArgError> {
        let param = self.param(name);
        let value = match self.map.get(name) {
            None | Some(Value::Null) if param.required => {
                return Err(self.error(format!(
                    "missing argument `{name}` ({})",
                    kind_text(param.kind)
                )));
            }
            None | Some(Value::Null) => return Ok(None),
            Some(value) => value,
        };
        let fits = match param.kind {
            Kind::Str => value.is_string(),
            Kind::Bool => value.is_boolean(),
            Kind::Int { min, max } => integer(value).is_some_and(|n| n >= min && n <= max),
        };
        if !fits {
            return Err(self.error(format!(
                "argument `{name}` must be {}, got {}",
                kind_text(param.kind),
                shown(value)
            )));
        }
        Ok(Some(value))
    }

    pub(crate) fn string(&self, name: &str) -> Result<Option<String>, ArgError> {
        Ok(self.value(name)?.and_then(Value::as_str).map(str::to_owned))
    }

    pub(crate) fn required_string(&self, name: &str) -> Result<String, ArgError> {
        self.string(name)?.ok_or_else(|| {
            self.error(format!(
                "missing argument `{name}` ({})",
                kind_text(self.param(name).kind)
            ))
        })
    }

    pub(crate) fn int(&self, name: &str) -> Result<Option<u64>, ArgError> {
        Ok(self.value(name)?.and_then(integer))
    }

    pub(crate) fn boolean(&self, name: &str) -> Result<Option<bool>, ArgError> {
        Ok(self.value(name)?.and_then(Value::as_bool))
    }

    /// An error about an argument's value that the schema cannot express.
    pub(crate) fn invalid(&self, message: impl Into<String>) -> ArgError {
        self.error(message.into())
    }
}

const UNKNOWN: Param = Param {
    name: "",
    kind: Kind::Str,
    required: false,
    description: "",
};

/// A non-negative integer (`3` or `3.0`).
fn integer(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return Some(n);
    }
    let f = value.as_f64()?;
    // Whole, non-negative and exactly representable.
    (f >= 0.0 && f.fract() == 0.0 && f < 9_007_199_254_740_992.0).then_some(f as u64)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as quoted in an error message, shortened.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(60).collect();
        format!("{cut}…")
    } else {
        text
    }
}

fn kind_text(kind: Kind) -> String {
    match kind {
        Kind::Str => "a string".to_owned(),
        Kind::Bool => "true or false".to_owned(),
        Kind::Int { min, max } => format!("an integer from {min} to {max}"),
    }
}

/// The expected shape, e.g. `{"path": string, "depth"?: integer 1-3}`.
fn shape(params: &[Param]) -> String {
    let fields: Vec<String> = params
        .iter()
        .map(|p| {
            let kind = match p.kind {
                Kind::Str => "string".to_owned(),
                Kind::Bool => "boolean".to_owned(),
                Kind::Int { min, max } => format!("integer {min}-{max}"),
            };
            let optional = if p.required { "" } else { "?" };
            format!("\"{}\"{optional}: {kind}", p.name)
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

/// The JSON Schema of a tool's arguments.
pub(crate) fn schema(params: &[Param]) -> Value {
    let mut properties = Map::new();
    for p in params {
        let mut property = match p.kind {
            Kind::Str => json!({"type": "string"}),
            Kind::Bool => json!({"type": "boolean"}),
            Kind::Int { min, max } => json!({"type": "integer", "minimum": min, "maximum": max}),
        };
        property["description"] = Value::String(p.description.to_owned());
        properties.insert(p.name.to_owned(), property);
    }
    let required: Vec<&str> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &[Param] = &[
        Param {
            name: "path",
            kind: Kind::Str,
            required: true,
            description: "a path",
        },
        Param {
            name: "depth",
            kind: Kind::Int { min: 1, max: 3 },
            required: false,
            description: "how deep",
        },
        Param {
            name: "all",
            kind: Kind::Bool,
            required: false,
            description: "everything",
        },
    ];

    #[test]
    fn accepts_well_formed_arguments() {
        let args = Args::parse("t", PARAMS, r#"{"path": "src", "depth": 2.0, "all": null}"#)
            .expect("valid");
        assert_eq!(args.required_string("path").unwrap(), "src");
        assert_eq!(args.int("depth").unwrap(), Some(2));
        assert_eq!(args.boolean("all").unwrap(), None);
    }

    #[test]
    fn names_the_bad_argument_and_the_shape() {
        let e = Args::parse("t", PARAMS, r#"{"path": 3}"#).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("`path` must be a string, got 3"), "{text}");
        assert!(text.contains(r#"{"path": string, "depth"?: integer 1-3, "all"?: boolean}"#));
        let e = Args::parse("t", PARAMS, r#"{"path": "a", "depth": 9}"#).unwrap_err();
        assert!(e.to_string().contains("from 1 to 3, got 9"), "{e}");
        let e = Args::parse("t", PARAMS, r#"{"path": "a", "colour": 1}"#).unwrap_err();
        assert!(e.to_string().contains("unknown argument `colour`"), "{e}");
        let e = Args::parse("t", PARAMS, "{}").unwrap_err();
        assert!(e.to_string().contains("missing argument `path`"), "{e}");
        let e = Args::parse("t", PARAMS, "[1]").unwrap_err();
        assert!(e.to_string().contains("JSON object, not an array"), "{e}");
        let e = Args::parse("t", PARAMS, "{\"path\": ").unwrap_err();
        assert!(e.to_string().contains("not valid JSON"), "{e}");
    }

    #[test]
    fn schema_lists_required_and_bounds() {
        let s = schema(PARAMS);
        assert_eq!(s["required"], json!(["path"]));
        assert_eq!(s["properties"]["depth"]["maximum"], json!(3));
        assert_eq!(s["additionalProperties"], json!(false));
    }
}

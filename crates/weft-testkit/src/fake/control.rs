//! Claude Code's stdio protocol (`--input-format stream-json` with
//! `--permission-prompt-tool stdio`), in the shapes of the real recording
//! `data/agent-output/claude/cc2.1.197-stream-json-permission-prompt-tool-stdio.*`:
//!
//! * stdin line 1, the prompt:
//!   `{"type":"user","message":{"role":"user","content":"…"},"parent_tool_use_id":null,"session_id":""}`
//!   (`content` may also be a list of blocks; its `text` blocks are the prompt);
//! * stdout, when a tool needs approval:
//!   `{"type":"control_request","request_id":"<uuid>","request":{"subtype":"can_use_tool",…}}`;
//! * stdin, the answer:
//!   `{"type":"control_response","response":{"subtype":"success","request_id":"<same>","response":{"behavior":"allow","updatedInput":{…}}}}`
//!   or `…"response":{"behavior":"deny","message":"…"}`.

use std::io::BufRead;

use serde_json::{Value, json};

/// The deny message used when stdin ends (or carries a line that is not JSON) before the
/// answer arrives.
pub const NO_ANSWER: &str = "no answer";

/// How a permission request was answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `{"behavior":"allow","updatedInput":{…}}`; `updated_input` is `null` when absent.
    Allow { updated_input: Value },
    /// `{"behavior":"deny","message":"…"}`, or no usable answer at all ([`NO_ANSWER`]).
    Deny { message: String },
}

/// The prompt carried by a stream-json `user` line: `message.content` when it is a string,
/// else the `text` of its `{"type":"text"}` blocks joined by newlines (other blocks, such
/// as images, are skipped). Anything else is refused with a reason.
pub fn user_message_text(line: &str) -> Result<String, String> {
    let expected = r#"expected {"type":"user","message":{"role":"user","content":"…"}}"#;
    let value: Value = serde_json::from_str(line.trim_end_matches(['\r', '\n']))
        .map_err(|error| format!("the first stdin line is not JSON ({error}); {expected}"))?;
    if value["type"] != "user" {
        return Err(format!(
            "the first stdin line is not a `user` message; {expected}"
        ));
    }
    match &value["message"]["content"] {
        Value::String(text) => Ok(text.clone()),
        Value::Array(blocks) => {
            let mut texts = Vec::new();
            for block in blocks {
                if !block.is_object() {
                    return Err(format!(
                        "the first stdin line has a content block that is not an object; {expected}"
                    ));
                }
                if block["type"] == "text" {
                    let text = block["text"].as_str().ok_or_else(|| {
                        format!("the first stdin line has a text block without `text`; {expected}")
                    })?;
                    texts.push(text);
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(format!(
            "the first stdin line has no `message.content` string or list; {expected}"
        )),
    }
}

/// The `can_use_tool` control request for one tool call.
pub fn can_use_tool_request(
    request_id: &str,
    tool: &str,
    input: &Value,
    tool_use_id: &str,
) -> Value {
    let description = input["description"].as_str().unwrap_or(tool);
    json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {
            "subtype": "can_use_tool",
            "tool_name": tool,
            "display_name": tool,
            "input": input,
            "description": description,
            "permission_suggestions": [],
            "decision_reason": "This command requires approval",
            "decision_reason_type": "other",
            "tool_use_id": tool_use_id,
        },
    })
}

/// The answer `line` gives to `request_id`, or `None` when it is about something else.
///
/// A matching `success` response with `behavior` `allow` or `deny` is that answer (a deny
/// without a `message` has an empty one); a matching `error` response, or an unknown
/// `behavior`, is a deny carrying the error text (or [`NO_ANSWER`]).
pub fn answer_in(line: &Value, request_id: &str) -> Option<Answer> {
    if line["type"] != "control_response" || line["response"]["request_id"] != request_id {
        return None;
    }
    let response = &line["response"];
    let answer = match (response["subtype"].as_str(), &response["response"]) {
        (Some("success"), decision) if decision["behavior"] == "allow" => Answer::Allow {
            updated_input: decision["updatedInput"].clone(),
        },
        (Some("success"), decision) if decision["behavior"] == "deny" => Answer::Deny {
            message: decision["message"].as_str().unwrap_or_default().to_owned(),
        },
        _ => Answer::Deny {
            message: response["error"].as_str().unwrap_or(NO_ANSWER).to_owned(),
        },
    };
    Some(answer)
}

/// Read stdin lines until the answer to `request_id`; other JSON lines are skipped. End
/// of input, a read error or a line that is not JSON is a deny with [`NO_ANSWER`].
pub fn read_answer(reader: &mut dyn BufRead, request_id: &str) -> Answer {
    let no_answer = || Answer::Deny {
        message: NO_ANSWER.to_owned(),
    };
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return no_answer(),
            Ok(_) => {}
        }
        let Ok(value) = serde_json::from_str::<Value>(line.trim_end_matches(['\r', '\n'])) else {
            return no_answer();
        };
        if let Some(answer) = answer_in(&value, request_id) {
            return answer;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn user_lines_give_their_text() {
        let line = r#"{"type":"user","message":{"role":"user","content":"hi\n@fake say x"},"parent_tool_use_id":null,"session_id":""}"#;
        assert_eq!(user_message_text(line).unwrap(), "hi\n@fake say x");
        let blocks = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}}"#;
        assert_eq!(user_message_text(blocks).unwrap(), "a\nb");
        assert!(user_message_text("hello").is_err());
        assert!(user_message_text(r#"{"type":"control_response"}"#).is_err());
        assert!(user_message_text(r#"{"type":"user","message":{"content":7}}"#).is_err());
        assert!(user_message_text(r#"{"type":"user","message":{"content":["x"]}}"#).is_err());
    }

    #[test]
    fn answers_are_matched_by_request_id() {
        let input = "{\"type\":\"user\"}\n\
            {\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"other\",\"response\":{\"behavior\":\"deny\",\"message\":\"x\"}}}\n\
            {\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"r1\",\"response\":{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"ls\"}}}}\n";
        assert_eq!(
            read_answer(&mut Cursor::new(input), "r1"),
            Answer::Allow {
                updated_input: json!({"command": "ls"})
            }
        );
        let deny = "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"r1\",\"response\":{\"behavior\":\"deny\",\"message\":\"not now\",\"interrupt\":false}}}\n";
        assert_eq!(
            read_answer(&mut Cursor::new(deny), "r1"),
            Answer::Deny {
                message: "not now".into()
            }
        );
        let error = "{\"type\":\"control_response\",\"response\":{\"subtype\":\"error\",\"request_id\":\"r1\",\"error\":\"boom\"}}\n";
        assert_eq!(
            read_answer(&mut Cursor::new(error), "r1"),
            Answer::Deny {
                message: "boom".into()
            }
        );
        for silent in ["", "{\"type\":\"user\"}\n", "not json\n{}\n"] {
            assert_eq!(
                read_answer(&mut Cursor::new(silent), "r1"),
                Answer::Deny {
                    message: NO_ANSWER.into()
                }
            );
        }
    }

    #[test]
    fn requests_describe_the_call() {
        let request = can_use_tool_request(
            "r1",
            "Bash",
            &json!({"command": "rm -rf build", "description": "clean"}),
            "toolu_fake_1",
        );
        assert_eq!(request["request"]["description"], "clean");
        assert_eq!(request["request"]["tool_use_id"], "toolu_fake_1");
        let request = can_use_tool_request("r1", "Bash", &json!({"command": "ls"}), "t");
        assert_eq!(request["request"]["description"], "Bash");
    }
}

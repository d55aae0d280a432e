//! What a script can ask of the request: the marker its prompt asks for, the folder its
//! prompt states, and the side channel.

use super::*;

const INSTRUCTION: &str = "print one final line that holds only your completion marker. The marker has two parts: first `WEFT_DONE_`, then directly after it `0123456789abcdef`. Write them joined.";

#[test]
fn with_marker_appends_the_marker_the_prompt_asks_for_in_any_api() {
    let model = MockModel::start(vec![
        MockReply::text("Done.").with_marker(),
        MockReply::text("Done.").with_marker(),
        MockReply::text("No instruction here.").with_marker(),
    ]);
    // Backticks elsewhere in the request (a system prompt's code spans) never pair with
    // the instruction's: each string is searched on its own.
    let messages = json!({
        "system": [{"type": "text", "text": "Use `ls`, not `find"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": INSTRUCTION}]}],
        "stream": false,
    });
    let answer = post(&model, "/v1/messages", &messages, &[]);
    let body: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(
        body["content"][0]["text"],
        "Done.\nWEFT_DONE_0123456789abcdef"
    );

    let chat = json!({"messages": [{"role": "user", "content": INSTRUCTION}], "stream": true});
    let answer = post(&model, "/v1/chat/completions", &chat, &[]);
    assert_eq!(answer.streamed_text(), "Done.\nWEFT_DONE_0123456789abcdef");

    let plain = json!({"messages": [{"role": "user", "content": "hi"}], "stream": true});
    let answer = post(&model, "/v1/chat/completions", &plain, &[]);
    assert_eq!(answer.streamed_text(), "No instruction here.");
}

#[test]
fn cwd_in_tool_arguments_becomes_the_folder_the_prompt_states() {
    let call = || {
        MockReply::tool_calls(vec![(
            "Write",
            json!({"file_path": format!("{CWD}/a.txt"), "content": "x"}),
        )])
    };
    let model = MockModel::start(vec![call(), call(), call()]);
    let stated = [
        // Claude Code's environment section.
        json!({"system": "Env:\n - Primary working directory: /w/claude tree\n - Platform: linux", "stream": false}),
        // Codex's environment context.
        json!({"input": [{"content": [{"text": "<environment_context>\n  <cwd>/w/codex</cwd>\n</environment_context>"}]}], "stream": false}),
        // OpenCode's.
        json!({"messages": [{"role": "system", "content": "<env>\n  Working directory: /w/opencode\n</env>"}], "stream": false}),
    ];
    let paths: Vec<String> = [
        ("/v1/messages", &stated[0]),
        ("/v1/responses", &stated[1]),
        ("/v1/chat/completions", &stated[2]),
    ]
    .into_iter()
    .map(|(path, body)| {
        let answer: Value = serde_json::from_str(&post(&model, path, body, &[]).body).unwrap();
        let arguments = answer["content"][0]["input"].clone();
        let arguments = if arguments.is_null() {
            let text = answer["output"][0]["arguments"]
                .as_str()
                .or(
                    answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
                        .as_str(),
                )
                .unwrap()
                .to_owned();
            serde_json::from_str(&text).unwrap()
        } else {
            arguments
        };
        arguments["file_path"].as_str().unwrap().to_owned()
    })
    .collect();
    assert_eq!(
        paths,
        [
            "/w/claude tree/a.txt",
            "/w/codex/a.txt",
            "/w/opencode/a.txt"
        ]
    );
}

#[test]
fn the_side_channel_answers_without_taking_a_scripted_reply() {
    let model = MockModel::start(vec![MockReply::text("main answer")]);
    assert!(model.side_url().ends_with("/side/v1"));
    let side_path = format!(
        "{}/chat/completions",
        model.side_url().trim_start_matches(&model.root_url())
    );
    let body = json!({"messages": [{"role": "user", "content": "title?"}], "stream": true});
    let side = post(&model, &side_path, &body, &[]);
    assert_eq!(side.streamed_text(), "Mock title");
    assert_eq!(model.remaining(), 1);
    let main = post(&model, "/v1/chat/completions", &body, &[]);
    assert_eq!(main.streamed_text(), "main answer");
    assert_eq!(model.model_requests().len(), 1);
    assert!(model.requests()[0].is_side());
}

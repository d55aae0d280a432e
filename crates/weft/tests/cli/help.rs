//! Shell completions and manual pages, generated from the command line definition.

use crate::harness::Weft;

#[test]
fn completions_are_printed_for_each_shell() {
    let weft = Weft::bare();
    let bash = weft.ok(&["completions", "bash"]).stdout;
    assert!(bash.contains("complete -F _weft"), "{bash}");
    assert!(bash.contains("force-start"), "every command is completed");
    let zsh = weft.ok(&["completions", "zsh"]).stdout;
    assert!(zsh.starts_with("#compdef weft"), "{zsh}");
    let fish = weft.ok(&["completions", "fish"]).stdout;
    assert!(fish.contains("complete -c weft"), "{fish}");
    let unknown = weft.fails(&["completions", "tcsh"], 2);
    assert!(
        unknown.stderr.contains("possible values"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn the_man_page_lists_every_command_and_each_command_has_its_own() {
    let weft = Weft::bare();
    let page = weft.ok(&["man"]).stdout;
    assert!(page.contains(".TH weft 1"), "{page}");
    for command in ["plan", "task", "handoff", "approvals", "completions"] {
        assert!(page.contains(command), "{command} is missing from the page");
    }
    let edit = weft.ok(&["man", "task", "edit"]).stdout;
    assert!(edit.contains(".TH weft-task-edit 1"), "{edit}");
    assert!(edit.contains("\\-\\-title"), "{edit}");
    let unknown = weft.fails(&["man", "task", "nope"], 1);
    assert!(
        unknown
            .stderr
            .contains("hint: its commands: add, remove, edit"),
        "{}",
        unknown.stderr
    );
}

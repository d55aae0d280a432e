//! The argv template engine used by runner manifests.
//!
//! A template is a list of entries; each entry renders to at most one argv element (or one
//! environment value). Rules:
//!
//! - **Variables** are written `{{name}}` and may stand alone (`"{{model}}"`) or sit inside a
//!   larger entry (`"--model={{model}}"`). The names are fixed: `prompt`, `prompt_file`,
//!   `model`, `effort`, `mode`, `cwd`, `session_id`, `relay`, `resume`, `system` ([`Var`]).
//!   Spaces inside the braces are allowed (`{{ model }}`).
//! - A variable is **set** when it has a non-empty value. Empty and absent are the same.
//! - An entry that is **exactly one variable** and whose variable is unset is **dropped**
//!   (no argv element at all, not an empty one). This makes optional positionals easy.
//! - An entry that mixes text and an unset variable (`"--model={{model}}"`) cannot be
//!   rendered honestly (`--model=` would silently mean something else), so rendering fails
//!   with a [`RenderError`] naming the variable. Guard such entries with `{{if model}}`.
//! - **Conditionals** are whole entries: `"{{if COND}}"` … `"{{/if}}"` keep the entries
//!   between them only when COND holds. They nest. COND is one of
//!   `X` (X is set), `!X` (X is unset), `X=value` (X is set to exactly `value`) and
//!   `X!=value` (X is unset or set to something else). The comparison is with the rendered
//!   value, e.g. the CLI value a mode id maps to.
//! - `{{` always opens a tag; there is no escape. A lone `}}` is plain text. An entry with
//!   no tags is copied as is, including the empty string (`""` renders as an empty argv
//!   element, which some CLIs need, e.g. `--tools ""`).
//!
//! Everything that can be checked without values is checked by [`Template::parse`]:
//! unknown variable names, unclosed `{{if}}`, stray `{{/if}}`, malformed `{{`, and
//! conditionals that do not stand alone. Rendering can then only fail on an unset variable
//! inside a larger entry.

use std::fmt;

/// A template variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Var {
    /// The composed task prompt.
    Prompt,
    /// Path of a file holding the prompt (set only when the manifest delivers the prompt
    /// by file).
    PromptFile,
    /// The task's model, as the CLI names it.
    Model,
    /// The task's reasoning effort.
    Effort,
    /// The CLI value of the task's mode (after the manifest's `modes` mapping).
    Mode,
    /// The working directory the agent runs in.
    Cwd,
    /// The session id weft chose for this attempt.
    SessionId,
    /// Set (to `1`) when weft answers the agent's permission requests itself (the
    /// manifest's `relay`, in one of its `relay_modes`).
    Relay,
    /// The CLI's own session to continue (the planner resumes its session each turn).
    Resume,
    /// Text for the CLI's system prompt (the planner's instructions). A manifest that
    /// renders it takes it as an option on every launch; one that does not gets it inside
    /// the first message of a session.
    System,
    /// Set (to `1`) when weft confines the process with its own Landlock ruleset, so a CLI
    /// whose own sandbox cannot start inside it (Codex's bubblewrap) can be told to skip
    /// it: `{{if confined}}` … `{{/if}}`.
    Confined,
}

impl Var {
    /// Every variable, in documentation order.
    pub const ALL: [Var; 11] = [
        Var::Prompt,
        Var::PromptFile,
        Var::Model,
        Var::Effort,
        Var::Mode,
        Var::Cwd,
        Var::SessionId,
        Var::Relay,
        Var::Resume,
        Var::System,
        Var::Confined,
    ];

    /// The name used between the braces.
    pub fn name(self) -> &'static str {
        match self {
            Var::Prompt => "prompt",
            Var::PromptFile => "prompt_file",
            Var::Model => "model",
            Var::Effort => "effort",
            Var::Mode => "mode",
            Var::Cwd => "cwd",
            Var::SessionId => "session_id",
            Var::Relay => "relay",
            Var::Resume => "resume",
            Var::System => "system",
            Var::Confined => "confined",
        }
    }

    /// The variable with this name, if any.
    pub fn from_name(name: &str) -> Option<Var> {
        Var::ALL.into_iter().find(|v| v.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }

    fn known_list() -> String {
        Var::ALL.map(Var::name).join(", ")
    }
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The values a template is rendered with. Empty values count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars {
    values: [Option<String>; Var::ALL.len()],
}

impl Vars {
    pub fn new() -> Self {
        Self::default()
    }

    /// Set (or, with `None` or an empty string, unset) a variable.
    pub fn set(&mut self, var: Var, value: Option<impl Into<String>>) -> &mut Self {
        self.values[var.index()] = value.map(Into::into).filter(|v| !v.is_empty());
        self
    }

    /// Builder form of [`Vars::set`].
    pub fn with(mut self, var: Var, value: impl Into<String>) -> Self {
        self.set(var, Some(value));
        self
    }

    /// The value of a variable when it is set (non-empty).
    pub fn get(&self, var: Var) -> Option<&str> {
        self.values[var.index()].as_deref()
    }
}

/// A template entry (or value) that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry {index} {text:?}: {problem}")]
pub struct TemplateError {
    /// Index of the offending entry (0 for a single value).
    pub index: usize,
    /// The entry as written.
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
}

/// A template that could not be rendered with the given values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "entry {index} {text:?} uses {{{{{var}}}}}, which is not set; guard it with \
     \"{{{{if {var}}}}}\" … \"{{{{/if}}}}\" or make the variable the whole entry"
)]
pub struct RenderError {
    pub index: usize,
    pub text: String,
    pub var: Var,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(Var),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Test {
    Set,
    Unset,
    Equals(String),
    Differs(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cond {
    var: Var,
    test: Test,
}

impl Cond {
    fn holds(&self, vars: &Vars) -> bool {
        let value = vars.get(self.var);
        match &self.test {
            Test::Set => value.is_some(),
            Test::Unset => value.is_none(),
            Test::Equals(want) => value == Some(want.as_str()),
            Test::Differs(want) => value != Some(want.as_str()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Entry {
        index: usize,
        text: String,
        pieces: Vec<Piece>,
    },
    If {
        cond: Cond,
        body: Vec<Node>,
    },
}

/// A parsed, validated template.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    nodes: Vec<Node>,
}

/// What one tag (`{{…}}`) says.
enum Tag {
    Var(Var),
    If(Cond),
    EndIf,
}

/// One entry split into text and tags.
enum Lexed {
    Pieces(Vec<Piece>),
    If(Cond),
    EndIf,
}

impl Template {
    /// Parse a list of argv entries.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Template, TemplateError> {
        // Stack of open conditionals: (condition, nodes collected so far, index of `{{if}}`).
        let mut stack: Vec<(Cond, Vec<Node>, usize)> = Vec::new();
        let mut current: Vec<Node> = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let text = entry.as_ref();
            match lex(index, text)? {
                Lexed::Pieces(pieces) => current.push(Node::Entry {
                    index,
                    text: text.to_owned(),
                    pieces,
                }),
                Lexed::If(cond) => {
                    stack.push((cond, std::mem::take(&mut current), index));
                }
                Lexed::EndIf => {
                    let Some((cond, outer, _)) = stack.pop() else {
                        return Err(TemplateError {
                            index,
                            text: text.to_owned(),
                            problem: "\"{{/if}}\" without an open \"{{if …}}\"".into(),
                        });
                    };
                    let body = std::mem::replace(&mut current, outer);
                    current.push(Node::If { cond, body });
                }
            }
        }
        if let Some((_, _, index)) = stack.pop() {
            return Err(TemplateError {
                index,
                text: entries[index].as_ref().to_owned(),
                problem: "this \"{{if …}}\" is never closed with \"{{/if}}\"".into(),
            });
        }
        Ok(Template { nodes: current })
    }

    /// Parse a single value (an environment value): variables only, no conditionals.
    pub fn parse_value(text: &str) -> Result<Template, TemplateError> {
        match lex(0, text)? {
            Lexed::Pieces(pieces) => Ok(Template {
                nodes: vec![Node::Entry {
                    index: 0,
                    text: text.to_owned(),
                    pieces,
                }],
            }),
            Lexed::If(_) | Lexed::EndIf => Err(TemplateError {
                index: 0,
                text: text.to_owned(),
                problem: "conditionals are for argv lists; a single value cannot use them".into(),
            }),
        }
    }

    /// Whether the template mentions `var` anywhere (as a value or in a condition).
    pub fn uses(&self, var: Var) -> bool {
        fn walk(nodes: &[Node], var: Var) -> bool {
            nodes.iter().any(|node| match node {
                Node::Entry { pieces, .. } => pieces.contains(&Piece::Var(var)),
                Node::If { cond, body } => cond.var == var || walk(body, var),
            })
        }
        walk(&self.nodes, var)
    }

    /// Whether `var` is rendered somewhere outside a condition (conditions only test it).
    pub fn renders(&self, var: Var) -> bool {
        fn walk(nodes: &[Node], var: Var) -> bool {
            nodes.iter().any(|node| match node {
                Node::Entry { pieces, .. } => pieces.contains(&Piece::Var(var)),
                Node::If { body, .. } => walk(body, var),
            })
        }
        walk(&self.nodes, var)
    }

    /// Render to argv entries.
    pub fn render(&self, vars: &Vars) -> Result<Vec<String>, RenderError> {
        let mut out = Vec::new();
        render_nodes(&self.nodes, vars, &mut out)?;
        Ok(out)
    }

    /// Render a template made by [`Template::parse_value`]: `None` when the value is exactly
    /// one unset variable (the caller omits it).
    pub fn render_value(&self, vars: &Vars) -> Result<Option<String>, RenderError> {
        Ok(self.render(vars)?.into_iter().next())
    }
}

fn render_nodes(nodes: &[Node], vars: &Vars, out: &mut Vec<String>) -> Result<(), RenderError> {
    for node in nodes {
        match node {
            Node::If { cond, body } => {
                if cond.holds(vars) {
                    render_nodes(body, vars, out)?;
                }
            }
            Node::Entry {
                index,
                text,
                pieces,
            } => {
                if let [Piece::Var(var)] = pieces.as_slice() {
                    if let Some(value) = vars.get(*var) {
                        out.push(value.to_owned());
                    }
                    continue;
                }
                let mut rendered = String::with_capacity(text.len());
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => rendered.push_str(t),
                        Piece::Var(var) => match vars.get(*var) {
                            Some(value) => rendered.push_str(value),
                            None => {
                                return Err(RenderError {
                                    index: *index,
                                    text: text.clone(),
                                    var: *var,
                                });
                            }
                        },
                    }
                }
                out.push(rendered);
            }
        }
    }
    Ok(())
}

fn lex(index: usize, text: &str) -> Result<Lexed, TemplateError> {
    let fail = |problem: String| TemplateError {
        index,
        text: text.to_owned(),
        problem,
    };
    let mut pieces: Vec<Piece> = Vec::new();
    let mut rest = text;
    let mut control: Option<Lexed> = None;
    let mut tags = 0usize;
    while let Some(open) = rest.find("{{") {
        tags += 1;
        if open > 0 {
            pieces.push(Piece::Text(rest[..open].to_owned()));
        }
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err(fail(
                "\"{{\" is never closed with \"}}\" (there is no escape for a literal \"{{\")"
                    .into(),
            ));
        };
        let inner = &after[..close];
        match parse_tag(inner).map_err(&fail)? {
            Tag::Var(var) => pieces.push(Piece::Var(var)),
            Tag::If(cond) => control = Some(Lexed::If(cond)),
            Tag::EndIf => control = Some(Lexed::EndIf),
        }
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_owned()));
    }
    if let Some(control) = control {
        // A conditional must be the whole entry, so that every entry is at most one argv
        // element and the structure is visible in the list.
        if !pieces.is_empty() || tags > 1 {
            return Err(fail(
                "\"{{if …}}\" and \"{{/if}}\" must be entries of their own".into(),
            ));
        }
        return Ok(control);
    }
    if pieces.is_empty() {
        // The empty string: an explicit empty argv element.
        pieces.push(Piece::Text(String::new()));
    }
    Ok(Lexed::Pieces(pieces))
}

fn parse_tag(inner: &str) -> Result<Tag, String> {
    let tag = inner.trim();
    if tag.is_empty() {
        return Err("empty \"{{}}\"".into());
    }
    if tag == "/if" {
        return Ok(Tag::EndIf);
    }
    if let Some(cond) = tag.strip_prefix("if ").or_else(|| tag.strip_prefix("if\t")) {
        return parse_cond(cond.trim()).map(Tag::If);
    }
    if tag == "if" {
        return Err("\"{{if}}\" needs a condition, e.g. \"{{if model}}\"".into());
    }
    if tag.starts_with('/') {
        return Err(format!(
            "unknown closing tag \"{{{{{tag}}}}}\"; conditionals close with \"{{{{/if}}}}\""
        ));
    }
    var_named(tag).map(Tag::Var)
}

fn parse_cond(cond: &str) -> Result<Cond, String> {
    if let Some(name) = cond.strip_prefix('!') {
        return Ok(Cond {
            var: var_named(name.trim())?,
            test: Test::Unset,
        });
    }
    if let Some((name, value)) = cond.split_once("!=") {
        return Ok(Cond {
            var: var_named(name.trim())?,
            test: Test::Differs(cond_value(value)?),
        });
    }
    if let Some((name, value)) = cond.split_once('=') {
        return Ok(Cond {
            var: var_named(name.trim())?,
            test: Test::Equals(cond_value(value)?),
        });
    }
    Ok(Cond {
        var: var_named(cond)?,
        test: Test::Set,
    })
}

fn cond_value(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(
            "a comparison needs a value; test for an unset variable with \"{{if !name}}\"".into(),
        );
    }
    Ok(value.to_owned())
}

fn var_named(name: &str) -> Result<Var, String> {
    if let Some(var) = Var::from_name(name) {
        return Ok(var);
    }
    if name.is_empty() {
        return Err(format!(
            "missing variable name (known: {})",
            Var::known_list()
        ));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "malformed tag \"{{{{{name}}}}}\": expected a variable name (known: {}) or \
             \"if …\" / \"/if\"",
            Var::known_list()
        ));
    }
    Err(format!(
        "unknown variable \"{name}\" (known: {})",
        Var::known_list()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(entries: &[&str]) -> Template {
        Template::parse(entries).expect("template parses")
    }

    fn render(entries: &[&str], vars: &Vars) -> Vec<String> {
        parse(entries).render(vars).expect("template renders")
    }

    fn err(entries: &[&str]) -> TemplateError {
        Template::parse(entries).expect_err("template is refused")
    }

    #[test]
    fn plain_entries_are_copied() {
        assert_eq!(
            render(&["run", "", "a }} b", "x{y}"], &Vars::new()),
            vec!["run", "", "a }} b", "x{y}"]
        );
    }

    #[test]
    fn variables_render_whole_and_inside_larger_entries() {
        let vars = Vars::new().with(Var::Model, "opus").with(Var::Cwd, "/w");
        assert_eq!(
            render(
                &["{{model}}", "--model={{model}}", "{{ model }}@{{cwd}}"],
                &vars
            ),
            vec!["opus", "--model=opus", "opus@/w"]
        );
    }

    #[test]
    fn a_whole_entry_unset_variable_is_dropped() {
        assert_eq!(
            render(&["a", "{{model}}", "b"], &Vars::new()),
            vec!["a", "b"]
        );
        let mut vars = Vars::new();
        vars.set(Var::Model, Some(""));
        assert_eq!(render(&["{{model}}"], &vars), Vec::<String>::new());
    }

    #[test]
    fn a_partial_entry_with_an_unset_variable_is_an_error() {
        let e = parse(&["x", "--model={{model}}"])
            .render(&Vars::new())
            .unwrap_err();
        assert_eq!(e.index, 1);
        assert_eq!(e.var, Var::Model);
        assert_eq!(e.text, "--model={{model}}");
        let msg = e.to_string();
        assert!(msg.contains("{{model}}"), "{msg}");
        assert!(msg.contains("{{if model}}"), "{msg}");
    }

    #[test]
    fn conditionals_include_their_entries_only_when_set() {
        let t = &[
            "run",
            "{{if model}}",
            "--model",
            "{{model}}",
            "{{/if}}",
            "{{prompt}}",
        ];
        let none = Vars::new().with(Var::Prompt, "p");
        assert_eq!(render(t, &none), vec!["run", "p"]);
        let some = none.clone().with(Var::Model, "m");
        assert_eq!(render(t, &some), vec!["run", "--model", "m", "p"]);
    }

    #[test]
    fn conditionals_nest() {
        let t = &[
            "{{if model}}",
            "-m",
            "{{model}}",
            "{{if effort}}",
            "--effort={{effort}}",
            "{{/if}}",
            "{{/if}}",
            "end",
        ];
        assert_eq!(
            render(t, &Vars::new().with(Var::Effort, "high")),
            vec!["end"]
        );
        assert_eq!(
            render(t, &Vars::new().with(Var::Model, "m")),
            vec!["-m", "m", "end"]
        );
        assert_eq!(
            render(
                t,
                &Vars::new().with(Var::Model, "m").with(Var::Effort, "high")
            ),
            vec!["-m", "m", "--effort=high", "end"]
        );
    }

    #[test]
    fn negated_and_compared_conditions() {
        let t = &[
            "{{if !model}}",
            "no-model",
            "{{/if}}",
            "{{if mode=plan}}",
            "planning",
            "{{/if}}",
            "{{if mode != plan}}",
            "--auto",
            "{{/if}}",
        ];
        assert_eq!(render(t, &Vars::new()), vec!["no-model", "--auto"]);
        assert_eq!(
            render(t, &Vars::new().with(Var::Mode, "plan")),
            vec!["no-model", "planning"]
        );
        assert_eq!(
            render(
                t,
                &Vars::new().with(Var::Mode, "build").with(Var::Model, "x")
            ),
            vec!["--auto"]
        );
    }

    #[test]
    fn parse_errors_name_entry_and_problem() {
        let e = err(&["ok", "{{modle}}"]);
        assert_eq!((e.index, e.text.as_str()), (1, "{{modle}}"));
        assert!(e.problem.contains("unknown variable \"modle\""), "{e}");
        assert!(e.problem.contains("session_id"), "{e}");

        let e = err(&["a", "{{if model}}", "b"]);
        assert_eq!(e.index, 1);
        assert!(e.problem.contains("never closed"), "{e}");

        let e = err(&["a", "{{/if}}"]);
        assert_eq!(e.index, 1);
        assert!(e.problem.contains("without an open"), "{e}");

        let e = err(&["--x={{model"]);
        assert!(e.problem.contains("never closed"), "{e}");

        let e = err(&["{{}}"]);
        assert!(e.problem.contains("empty"), "{e}");

        let e = err(&["{{ bad-name }}"]);
        assert!(e.problem.contains("malformed"), "{e}");

        let e = err(&["--x{{if model}}"]);
        assert!(e.problem.contains("entries of their own"), "{e}");

        let e = err(&["{{if model}}{{/if}}"]);
        assert!(e.problem.contains("entries of their own"), "{e}");

        let e = err(&["{{if}}"]);
        assert!(e.problem.contains("needs a condition"), "{e}");

        let e = err(&["{{if nope}}", "{{/if}}"]);
        assert!(e.problem.contains("unknown variable \"nope\""), "{e}");

        let e = err(&["{{if mode=}}", "{{/if}}"]);
        assert!(e.problem.contains("needs a value"), "{e}");

        let e = err(&["{{/end}}"]);
        assert!(e.problem.contains("closing tag"), "{e}");
    }

    #[test]
    fn the_innermost_unclosed_if_is_reported() {
        let e = err(&["{{if model}}", "{{/if}}", "{{if effort}}", "x"]);
        assert_eq!(e.index, 2);
    }

    #[test]
    fn values_take_variables_but_no_conditionals() {
        let t = Template::parse_value("{{cwd}}").unwrap();
        assert_eq!(t.render_value(&Vars::new()).unwrap(), None);
        assert_eq!(
            t.render_value(&Vars::new().with(Var::Cwd, "/w")).unwrap(),
            Some("/w".to_owned())
        );
        let t = Template::parse_value("").unwrap();
        assert_eq!(t.render_value(&Vars::new()).unwrap(), Some(String::new()));
        assert!(Template::parse_value("{{if model}}").is_err());
        assert!(Template::parse_value("{{/if}}").is_err());
        let t = Template::parse_value("x={{model}}").unwrap();
        assert!(t.render_value(&Vars::new()).is_err());
    }

    #[test]
    fn uses_and_renders_see_through_conditionals() {
        let t = parse(&[
            "{{if mode!=plan}}",
            "--auto",
            "{{/if}}",
            "{{if model}}",
            "{{model}}",
            "{{/if}}",
        ]);
        assert!(t.uses(Var::Mode));
        assert!(!t.renders(Var::Mode));
        assert!(t.uses(Var::Model) && t.renders(Var::Model));
        assert!(!t.uses(Var::Prompt));
    }

    fn entry() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just("{{".to_owned()),
                Just("}}".to_owned()),
                Just("{{if model}}".to_owned()),
                Just("{{/if}}".to_owned()),
                Just("{{model}}".to_owned()),
                Just("{{prompt}}".to_owned()),
                Just("{{if !mode}}".to_owned()),
                "[a-z -]{0,4}",
            ],
            0..4,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn parse_and_render_never_panic(entries in prop::collection::vec(entry(), 0..8),
                                        model in proptest::option::of("[a-z]{0,3}"),
                                        prompt in proptest::option::of("[a-z ]{0,3}")) {
            if let Ok(t) = Template::parse(&entries) {
                let mut vars = Vars::new();
                vars.set(Var::Model, model).set(Var::Prompt, prompt);
                let _ = t.render(&vars);
            }
        }

        #[test]
        fn entries_without_tags_render_unchanged(entries in prop::collection::vec("[^{]{0,8}", 0..8)) {
            let t = Template::parse(&entries).unwrap();
            prop_assert_eq!(t.render(&Vars::new()).unwrap(), entries);
        }

        #[test]
        fn rendered_count_never_exceeds_entries(entries in prop::collection::vec(entry(), 0..8)) {
            if let Ok(t) = Template::parse(&entries) {
                let vars = Vars::new().with(Var::Model, "m").with(Var::Prompt, "p");
                if let Ok(out) = t.render(&vars) {
                    prop_assert!(out.len() <= entries.len());
                }
            }
        }
    }
}

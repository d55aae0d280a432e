//! The quote-aware shell lexer: words with their quoting, operators, redirections and
//! here-document bodies; expansions it cannot see through are refused as it reads.

/// A shell word: its characters after quote removal, each marked quoted or not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) chars: Vec<(char, bool)>,
}

impl Word {
    pub(super) fn plain(text: &str) -> Word {
        Word {
            chars: text.chars().map(|c| (c, false)).collect(),
        }
    }

    pub(super) fn text(&self) -> String {
        self.chars.iter().map(|c| c.0).collect()
    }

    /// Has an unquoted glob character.
    pub(super) fn has_glob(&self) -> bool {
        self.chars
            .iter()
            .any(|&(c, q)| !q && matches!(c, '*' | '?' | '['))
    }

    /// Starts with an unquoted `~` (tilde expansion).
    pub(super) fn tilde(&self) -> bool {
        matches!(self.chars.first(), Some(&('~', false)))
    }

    /// Has an unquoted `{…}` containing an unquoted `,` or `..` (brace expansion).
    pub(super) fn brace_expansion(&self) -> bool {
        let cs = &self.chars;
        for (i, &(c, q)) in cs.iter().enumerate() {
            if c != '{' || q {
                continue;
            }
            let mut depth = 0usize;
            for j in i + 1..cs.len() {
                let (d, dq) = cs[j];
                if dq {
                    continue;
                }
                match d {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' => return true,
                    '.' if cs.get(j + 1) == Some(&('.', false)) => return true,
                    _ => {}
                }
            }
        }
        false
    }

    /// `NAME=value` with an unquoted valid name.
    pub(super) fn assignment(&self) -> Option<(String, Word)> {
        let mut name = String::new();
        for (i, &(c, q)) in self.chars.iter().enumerate() {
            if q {
                return None;
            }
            if c == '=' {
                if name.is_empty() {
                    return None;
                }
                return Some((
                    name,
                    Word {
                        chars: self.chars[i + 1..].to_vec(),
                    },
                ));
            }
            let ok =
                c == '_' || c.is_ascii_alphabetic() || (c.is_ascii_digit() && !name.is_empty());
            if !ok {
                return None;
            }
            name.push(c);
        }
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Semi,
    And,
    Or,
    Pipe,
    Background,
    LParen,
    RParen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RedirKind {
    /// `>`, `>|`
    Out,
    /// `>>`
    Append,
    /// `&>`, `&>>`
    OutErr,
    /// `>&`
    DupOut,
    /// `<`
    In,
    /// `<&`
    DupIn,
    /// `<>`
    ReadWrite,
    /// `<<<`
    HereString,
    /// `<<`, `<<-` (the body was checked by the lexer)
    Heredoc,
}

#[derive(Debug, Clone)]
pub(super) enum Tok {
    Word(Word),
    Op(Op),
    Redir(Option<u32>, RedirKind),
}

pub(super) const SUBSTITUTION: &str = "command substitution (`$(…)` or backticks) is not allowed: its output \
     can't be checked before it runs; run the inner command on its own first";
pub(super) const EXPANSION: &str = "variable and arithmetic expansion (`$NAME`, `${…}`, `$((…))`) is not \
     allowed: the policy can't see the value; write it literally";
pub(super) const PROCESS_SUBSTITUTION: &str =
    "process substitution (`<(…)`, `>(…)`) is not allowed: it runs a hidden command";

pub(super) fn expansion_follows(s: &[char], j: usize) -> bool {
    s.get(j).is_some_and(|&c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '_' | '{' | '(' | '[' | '@' | '*' | '#' | '?' | '$' | '!' | '-'
            )
    })
}

pub(super) fn expansion_reason(s: &[char], j: usize) -> &'static str {
    if s.get(j) == Some(&'(') && s.get(j + 1) != Some(&'(') {
        SUBSTITUTION
    } else {
        EXPANSION
    }
}

pub(super) struct Lexer {
    pub(super) s: Vec<char>,
    pub(super) i: usize,
    pub(super) toks: Vec<Tok>,
    pub(super) cur: Option<Word>,
    /// After `<<`/`<<-`: the next word is a delimiter (`true`: strip leading tabs).
    pub(super) want_delim: Option<bool>,
    /// Heredocs whose bodies start at the next newline: (delimiter, quoted, strip tabs).
    pub(super) pending: Vec<(String, bool, bool)>,
}

pub(super) fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let mut lx = Lexer {
        s: src.chars().collect(),
        i: 0,
        toks: Vec::new(),
        cur: None,
        want_delim: None,
        pending: Vec::new(),
    };
    lx.run()?;
    Ok(lx.toks)
}

impl Lexer {
    pub(super) fn push(&mut self, c: char, quoted: bool) {
        self.cur
            .get_or_insert_with(Word::default)
            .chars
            .push((c, quoted));
    }

    pub(super) fn start_word(&mut self) {
        self.cur.get_or_insert_with(Word::default);
    }

    pub(super) fn finish(&mut self) {
        if let Some(w) = self.cur.take() {
            if let Some(strip) = self.want_delim.take() {
                let quoted = w.chars.iter().any(|c| c.1);
                self.pending.push((w.text(), quoted, strip));
            } else {
                self.toks.push(Tok::Word(w));
            }
        }
    }

    pub(super) fn op(&mut self, tok: Tok) -> Result<(), String> {
        self.finish();
        if self.want_delim.is_some() {
            return Err("a here-document (`<<`) needs a delimiter word".to_owned());
        }
        self.toks.push(tok);
        Ok(())
    }

    pub(super) fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    pub(super) fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => {
                    self.finish();
                    self.i += 1;
                }
                '\n' => {
                    self.op(Tok::Op(Op::Semi))?;
                    self.i += 1;
                    self.heredoc_bodies()?;
                }
                '#' if self.cur.is_none() => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\\' => match self.peek(1) {
                    Some('\n') => self.i += 2,
                    Some(n) => {
                        self.push(n, true);
                        self.i += 2;
                    }
                    None => {
                        self.push('\\', true);
                        self.i += 1;
                    }
                },
                '\'' => {
                    self.start_word();
                    self.i += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err("unbalanced single quote".to_owned()),
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(ch) => {
                                self.push(ch, true);
                                self.i += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.start_word();
                    self.i += 1;
                    loop {
                        match self.peek(0) {
                            None => return Err("unbalanced double quote".to_owned()),
                            Some('"') => {
                                self.i += 1;
                                break;
                            }
                            Some('\\') => match self.peek(1) {
                                Some(n @ ('$' | '`' | '"' | '\\')) => {
                                    self.push(n, true);
                                    self.i += 2;
                                }
                                Some('\n') => self.i += 2,
                                _ => {
                                    self.push('\\', true);
                                    self.i += 1;
                                }
                            },
                            Some('`') => return Err(SUBSTITUTION.to_owned()),
                            Some('$') => {
                                if expansion_follows(&self.s, self.i + 1) {
                                    return Err(expansion_reason(&self.s, self.i + 1).to_owned());
                                }
                                self.push('$', true);
                                self.i += 1;
                            }
                            Some(ch) => {
                                self.push(ch, true);
                                self.i += 1;
                            }
                        }
                    }
                }
                '$' => {
                    if matches!(self.peek(1), Some('\'' | '"')) {
                        return Err("`$'…'` and `$\"…\"` quoting is not supported; use plain \
                                    quotes"
                            .to_owned());
                    }
                    if expansion_follows(&self.s, self.i + 1) {
                        return Err(expansion_reason(&self.s, self.i + 1).to_owned());
                    }
                    self.push('$', false);
                    self.i += 1;
                }
                '`' => return Err(SUBSTITUTION.to_owned()),
                '|' => {
                    let (op, n) = match self.peek(1) {
                        Some('|') => (Op::Or, 2),
                        Some('&') => (Op::Pipe, 2),
                        _ => (Op::Pipe, 1),
                    };
                    self.op(Tok::Op(op))?;
                    self.i += n;
                }
                '&' => {
                    let (tok, n) = match (self.peek(1), self.peek(2)) {
                        (Some('&'), _) => (Tok::Op(Op::And), 2),
                        (Some('>'), Some('>')) => (Tok::Redir(None, RedirKind::OutErr), 3),
                        (Some('>'), _) => (Tok::Redir(None, RedirKind::OutErr), 2),
                        _ => (Tok::Op(Op::Background), 1),
                    };
                    self.op(tok)?;
                    self.i += n;
                }
                ';' => {
                    if matches!(self.peek(1), Some(';' | '&')) {
                        return Err("`;;`/`;&` (case syntax) is not supported".to_owned());
                    }
                    self.op(Tok::Op(Op::Semi))?;
                    self.i += 1;
                }
                '(' => {
                    self.op(Tok::Op(Op::LParen))?;
                    self.i += 1;
                }
                ')' => {
                    self.op(Tok::Op(Op::RParen))?;
                    self.i += 1;
                }
                '<' | '>' => self.redirection(c)?,
                _ => {
                    self.push(c, false);
                    self.i += 1;
                }
            }
        }
        self.finish();
        if self.want_delim.is_some() {
            return Err("a here-document (`<<`) needs a delimiter word".to_owned());
        }
        if !self.pending.is_empty() {
            return Err("a here-document has no body (unterminated `<<`)".to_owned());
        }
        Ok(())
    }

    pub(super) fn redirection(&mut self, c: char) -> Result<(), String> {
        // A word made only of unquoted digits right before the operator is its descriptor.
        let fd = match &self.cur {
            Some(w)
                if !w.chars.is_empty()
                    && self.want_delim.is_none()
                    && w.chars.iter().all(|&(d, q)| !q && d.is_ascii_digit()) =>
            {
                let fd = w.text().parse().ok();
                self.cur = None;
                fd
            }
            _ => None,
        };
        let (kind, n) = if c == '>' {
            match self.peek(1) {
                Some('>') => (RedirKind::Append, 2),
                Some('|') => (RedirKind::Out, 2),
                Some('&') => (RedirKind::DupOut, 2),
                Some('(') => return Err(PROCESS_SUBSTITUTION.to_owned()),
                _ => (RedirKind::Out, 1),
            }
        } else {
            match (self.peek(1), self.peek(2)) {
                (Some('<'), Some('<')) => (RedirKind::HereString, 3),
                (Some('<'), Some('-')) => {
                    self.op(Tok::Redir(fd, RedirKind::Heredoc))?;
                    self.want_delim = Some(true);
                    self.i += 3;
                    return Ok(());
                }
                (Some('<'), _) => {
                    self.op(Tok::Redir(fd, RedirKind::Heredoc))?;
                    self.want_delim = Some(false);
                    self.i += 2;
                    return Ok(());
                }
                (Some('&'), _) => (RedirKind::DupIn, 2),
                (Some('>'), _) => (RedirKind::ReadWrite, 2),
                (Some('('), _) => return Err(PROCESS_SUBSTITUTION.to_owned()),
                _ => (RedirKind::In, 1),
            }
        };
        self.op(Tok::Redir(fd, kind))?;
        self.i += n;
        Ok(())
    }

    pub(super) fn heredoc_bodies(&mut self) -> Result<(), String> {
        for (delim, quoted, strip) in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            loop {
                if self.i >= self.s.len() {
                    return Err(format!("the here-document is not terminated by `{delim}`"));
                }
                let end = self.s[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.s.len(), |p| self.i + p);
                let line: String = self.s[self.i..end].iter().collect();
                self.i = (end + 1).min(self.s.len());
                let cmp = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if cmp == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if !quoted {
                let chars: Vec<char> = body.chars().collect();
                for (k, &c) in chars.iter().enumerate() {
                    if c == '`' {
                        return Err(SUBSTITUTION.to_owned());
                    }
                    if c == '$' && expansion_follows(&chars, k + 1) {
                        return Err(format!(
                            "{} (in a here-document with an unquoted delimiter; quote it: \
                             <<'{delim}')",
                            expansion_reason(&chars, k + 1)
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

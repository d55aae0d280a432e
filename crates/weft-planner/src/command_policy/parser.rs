//! The shell parser: lists, pipelines, subshells and simple commands with their
//! redirections, from the lexer's tokens.

use super::*;

pub(super) type Redirs = Vec<(RedirKind, Option<u32>, Option<Word>)>;

#[derive(Debug)]
pub(super) struct Simple {
    pub(super) assigns: Vec<(String, Word)>,
    pub(super) words: Vec<Word>,
    pub(super) redirs: Redirs,
}

#[derive(Debug)]
pub(super) enum Cmd {
    Simple(Simple),
    Subshell(Vec<Pipeline>, Redirs),
}

pub(super) type Pipeline = Vec<Cmd>;

pub(super) struct Parser {
    pub(super) toks: Vec<Tok>,
    pub(super) i: usize,
}

impl Parser {
    pub(super) fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    pub(super) fn peek_op(&self) -> Option<Op> {
        match self.peek() {
            Some(Tok::Op(op)) => Some(*op),
            _ => None,
        }
    }

    pub(super) fn skip_newlines(&mut self) {
        while self.peek_op() == Some(Op::Semi) {
            self.i += 1;
        }
    }

    pub(super) fn list(&mut self, nested: bool) -> Result<Vec<Pipeline>, String> {
        let mut out = Vec::new();
        loop {
            self.skip_newlines();
            match self.peek_op() {
                _ if self.peek().is_none() => {
                    if nested {
                        return Err("unbalanced `(`".to_owned());
                    }
                    break;
                }
                Some(Op::RParen) => {
                    if nested {
                        break;
                    }
                    return Err("unbalanced `)`".to_owned());
                }
                _ => {}
            }
            out.push(self.pipeline()?);
            match self.peek_op() {
                None if self.peek().is_none() => {}
                Some(Op::Semi | Op::RParen) => {}
                Some(Op::And | Op::Or) => {
                    self.i += 1;
                    self.skip_newlines();
                    if self.peek().is_none() || self.peek_op().is_some_and(|o| o != Op::LParen) {
                        return Err("`&&`/`||` must be followed by a command".to_owned());
                    }
                }
                Some(Op::Background) => {
                    return Err(
                        "background jobs (`&`) are not allowed: they outlive the tool \
                                call; run the command in the foreground"
                            .to_owned(),
                    );
                }
                _ => return Err("unexpected token after a command".to_owned()),
            }
        }
        Ok(out)
    }

    pub(super) fn pipeline(&mut self) -> Result<Pipeline, String> {
        let mut cmds = vec![self.cmd()?];
        while self.peek_op() == Some(Op::Pipe) {
            self.i += 1;
            self.skip_newlines();
            cmds.push(self.cmd()?);
        }
        Ok(cmds)
    }

    pub(super) fn redirs(&mut self, out: &mut Redirs) -> Result<bool, String> {
        if let Some(Tok::Redir(fd, kind)) = self.peek().cloned() {
            self.i += 1;
            if kind == RedirKind::Heredoc {
                out.push((kind, fd, None));
            } else {
                match self.peek().cloned() {
                    Some(Tok::Word(w)) => {
                        self.i += 1;
                        out.push((kind, fd, Some(w)));
                    }
                    _ => return Err("a redirection needs a target word".to_owned()),
                }
            }
            return Ok(true);
        }
        Ok(false)
    }

    pub(super) fn cmd(&mut self) -> Result<Cmd, String> {
        if self.peek_op() == Some(Op::LParen) {
            self.i += 1;
            let inner = self.list(true)?;
            if self.peek_op() != Some(Op::RParen) {
                return Err("unbalanced `(`".to_owned());
            }
            self.i += 1;
            if inner.is_empty() {
                return Err("empty subshell".to_owned());
            }
            let mut redirs = Vec::new();
            while self.redirs(&mut redirs)? {}
            return Ok(Cmd::Subshell(inner, redirs));
        }
        let mut simple = Simple {
            assigns: Vec::new(),
            words: Vec::new(),
            redirs: Vec::new(),
        };
        loop {
            if self.redirs(&mut simple.redirs)? {
                continue;
            }
            match self.peek().cloned() {
                Some(Tok::Word(w)) => {
                    self.i += 1;
                    match w.assignment() {
                        Some(a) if simple.words.is_empty() => simple.assigns.push(a),
                        _ => simple.words.push(w),
                    }
                }
                Some(Tok::Op(Op::LParen)) => {
                    return Err(
                        "unexpected `(` (functions and arrays are not supported)".to_owned()
                    );
                }
                _ => break,
            }
        }
        if simple.words.is_empty() && simple.assigns.is_empty() && simple.redirs.is_empty() {
            return Err("empty command (a stray operator?)".to_owned());
        }
        Ok(Cmd::Simple(simple))
    }
}

pub(super) fn parse(src: &str) -> Result<Vec<Pipeline>, String> {
    let toks = lex(src)?;
    let mut p = Parser { toks, i: 0 };
    p.list(false)
}

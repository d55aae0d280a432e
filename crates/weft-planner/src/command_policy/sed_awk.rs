//! `sed` and `awk`: their scripts are parsed, and what writes, runs or reads the
//! environment is refused.

use super::*;

impl<'e> Classifier<'e> {
    pub(super) fn sed(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let mut scripts: Vec<String> = Vec::new();
        let mut files: Vec<Word> = Vec::new();
        let mut i = 0;
        let mut ended = false;
        while i < args.len() {
            let t = args[i].text();
            i += 1;
            if ended || !t.starts_with('-') || t == "-" {
                files.push(args[i - 1].clone());
                continue;
            }
            if t == "--" {
                ended = true;
                continue;
            }
            let allowed = match t.strip_prefix("--") {
                Some(long) => self.sed_long(prog, long, args, &mut i, &mut scripts),
                None => self.sed_short(prog, &t, args, &mut i, &mut scripts),
            };
            if !allowed {
                return;
            }
        }
        if scripts.is_empty() {
            if files.is_empty() {
                self.refuse(format!("`{prog}` needs a script"));
                return;
            }
            scripts.push(files.remove(0).text());
        }
        for s in &scripts {
            match sed_script(s) {
                Ok(reads) => {
                    for r in reads {
                        self.path(ctx, &r, r.starts_with('~'), false, Use::Read);
                    }
                }
                Err(e) => {
                    self.refuse(format!("`{prog}` script: {e}"));
                    return;
                }
            }
        }
        self.paths(ctx, &files, Use::Read);
    }

    /// One `--long` option of `sed` (`long` without its dashes; a value may follow at
    /// `*i`); whether it is allowed.
    fn sed_long(
        &mut self,
        prog: &str,
        long: &str,
        args: &[Word],
        i: &mut usize,
        scripts: &mut Vec<String>,
    ) -> bool {
        let (name, value) = long
            .split_once('=')
            .map_or((long, None), |(n, v)| (n, Some(v)));
        match name {
            "quiet" | "silent" | "regexp-extended" | "separate" | "null-data" | "unbuffered"
            | "posix" | "debug" | "sandbox" | "zero-terminated" => {}
            "expression" => match value {
                Some(v) => scripts.push(v.to_owned()),
                None => {
                    scripts.push(args.get(*i).map(Word::text).unwrap_or_default());
                    *i += 1;
                }
            },
            "line-length" => {
                if value.is_none() {
                    *i += 1;
                }
            }
            _ if "in-place".starts_with(name) && name.len() >= 2 => {
                self.refuse(format!(
                    "`{prog} --in-place` edits files; use `sed -n` to read"
                ));
                return false;
            }
            _ => {
                self.refuse(format!(
                    "`{prog} --{name}` is not allowed (`-f` reads a script the policy \
                     can't see)"
                ));
                return false;
            }
        }
        true
    }

    /// One cluster of short `sed` options (`t`, a value may follow at `*i`); whether it is
    /// allowed.
    fn sed_short(
        &mut self,
        prog: &str,
        t: &str,
        args: &[Word],
        i: &mut usize,
        scripts: &mut Vec<String>,
    ) -> bool {
        let chars: Vec<char> = t[1..].chars().collect();
        for (k, &c) in chars.iter().enumerate() {
            match c {
                'n' | 'E' | 'r' | 's' | 'z' | 'u' => {}
                'i' => {
                    self.refuse(format!(
                        "`{prog} -i` edits files in place; use `sed -n` to read"
                    ));
                    return false;
                }
                'e' | 'l' => {
                    let rest: String = chars[k + 1..].iter().collect();
                    let v = if rest.is_empty() {
                        *i += 1;
                        args.get(*i - 1).map(Word::text).unwrap_or_default()
                    } else {
                        rest
                    };
                    if c == 'e' {
                        scripts.push(v);
                    }
                    break;
                }
                _ => {
                    self.refuse(format!(
                        "`{prog} -{c}` is not allowed (`-f` reads a script the policy can't \
                         see, `-i` edits files)"
                    ));
                    return false;
                }
            }
        }
        true
    }

    pub(super) fn awk(&mut self, ctx: &Ctx, prog: &str, args: &[Word]) {
        let mut program: Option<String> = None;
        let mut files = Vec::new();
        let mut i = 0;
        let mut ended = false;
        while i < args.len() {
            let t = args[i].text();
            i += 1;
            if program.is_some() || ended || !t.starts_with('-') || t == "-" {
                if program.is_none() {
                    program = Some(t);
                } else if args[i - 1].assignment().is_none() {
                    files.push(args[i - 1].clone());
                }
                continue;
            }
            if t == "--" {
                ended = true;
                continue;
            }
            if t == "-F" || t == "-v" {
                i += 1;
            } else if t.starts_with("-F")
                || t.starts_with("-v")
                || t.starts_with("--field-separator=")
                || t.starts_with("--assign=")
            {
                // attached value
            } else if t == "--field-separator" || t == "--assign" {
                i += 1;
            } else if t == "--sandbox" || t == "--posix" || t == "--characters-as-bytes" {
            } else {
                self.refuse(format!(
                    "`{prog} {t}` is not allowed (`-f`, `-i`, `-l`, `-E` and `-e` load code the \
                     policy can't check)"
                ));
                return;
            }
        }
        let Some(program) = program else {
            self.refuse(format!("`{prog}` needs a program"));
            return;
        };
        if let Err(e) = awk_program(&program) {
            self.refuse(format!("`{prog}` program: {e}"));
            return;
        }
        self.paths(ctx, &files, Use::Read);
    }
}

/// Parses a sed script; returns the files it reads (`r`, `R`) or why it is refused.
pub(super) fn sed_script(script: &str) -> Result<Vec<String>, String> {
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut reads = Vec::new();
    let n = s.len();
    let to_eol = |i: &mut usize| -> String {
        let start = *i;
        while *i < n && s[*i] != '\n' {
            *i += 1;
        }
        s[start..*i].iter().collect::<String>().trim().to_owned()
    };
    fn skip_regex(s: &[char], i: &mut usize, delim: char) -> Result<(), String> {
        while *i < s.len() {
            match s[*i] {
                '\\' => *i += 2,
                c if c == delim => {
                    *i += 1;
                    return Ok(());
                }
                '\n' => return Err("unterminated regular expression".to_owned()),
                _ => *i += 1,
            }
        }
        Err("unterminated regular expression".to_owned())
    }
    fn address(s: &[char], i: &mut usize) -> Result<(), String> {
        match s.get(*i) {
            Some(c) if c.is_ascii_digit() => {
                while s.get(*i).is_some_and(|c| c.is_ascii_digit() || *c == '~') {
                    *i += 1;
                }
            }
            Some('$') => *i += 1,
            Some('/') => {
                *i += 1;
                skip_regex(s, i, '/')?;
                while matches!(s.get(*i), Some('I' | 'M')) {
                    *i += 1;
                }
            }
            Some('\\') => {
                let Some(&d) = s.get(*i + 1) else {
                    return Err("bad address".to_owned());
                };
                *i += 2;
                skip_regex(s, i, d)?;
                while matches!(s.get(*i), Some('I' | 'M')) {
                    *i += 1;
                }
            }
            _ => {}
        }
        Ok(())
    }
    while i < n {
        while i < n && (s[i].is_whitespace() || s[i] == ';') {
            i += 1;
        }
        if i >= n {
            break;
        }
        if s[i] == '#' {
            to_eol(&mut i);
            continue;
        }
        address(&s, &mut i)?;
        if s.get(i) == Some(&',') {
            i += 1;
            if matches!(s.get(i), Some('+' | '~')) {
                i += 1;
            }
            address(&s, &mut i)?;
        }
        while i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '!') {
            i += 1;
        }
        let Some(&cmd) = s.get(i) else {
            return Err("missing command".to_owned());
        };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while i < n && (s[i] == ' ' || s[i].is_ascii_digit()) {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line, with backslash-newline continuations.
                while i < n && s[i] != '\n' {
                    if s[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < n && s[i] != '\n' && s[i] != ';' {
                    i += 1;
                }
            }
            'r' | 'R' => {
                let f = to_eol(&mut i);
                if f.is_empty() {
                    return Err("`r` needs a file".to_owned());
                }
                reads.push(f);
            }
            'w' | 'W' => return Err("the `w` command writes a file".to_owned()),
            'e' => return Err("the `e` command runs a shell command".to_owned()),
            's' | 'y' => {
                let Some(&d) = s.get(i) else {
                    return Err(format!("`{cmd}` needs a delimiter"));
                };
                if d == '\\' || d == '\n' {
                    return Err(format!("bad `{cmd}` delimiter"));
                }
                i += 1;
                skip_regex(&s, &mut i, d)?;
                skip_regex(&s, &mut i, d)?;
                if cmd == 's' {
                    while i < n && !matches!(s[i], ';' | '\n' | '}' | ' ' | '\t') {
                        match s[i] {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' => i += 1,
                            c if c.is_ascii_digit() => i += 1,
                            'w' | 'W' => {
                                return Err("the `s///w` flag writes a file".to_owned());
                            }
                            'e' => return Err("the `s///e` flag runs a shell command".to_owned()),
                            c => return Err(format!("unknown `s` flag `{c}`")),
                        }
                    }
                }
            }
            c => return Err(format!("unknown or unsupported command `{c}`")),
        }
    }
    Ok(reads)
}

/// Scans an awk program for what makes it more than a reader.
pub(super) fn awk_program(prog: &str) -> Result<(), String> {
    let s: Vec<char> = prog.chars().collect();
    let n = s.len();
    let mut i = 0;
    let mut prev_operand = false;
    let mut depth: i32 = 0;
    let mut print_depth: Option<i32> = None;
    const OPERATOR_WORDS: &[&str] = &[
        "print", "printf", "return", "if", "while", "for", "do", "else", "in", "case",
    ];
    while i < n {
        let c = s[i];
        match c {
            '"' => {
                i += 1;
                while i < n && s[i] != '"' {
                    if s[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                prev_operand = true;
            }
            '/' if !prev_operand => {
                i += 1;
                let mut in_class = false;
                while i < n {
                    match s[i] {
                        '\\' => i += 1,
                        '[' => in_class = true,
                        ']' => in_class = false,
                        '/' if !in_class => break,
                        '\n' => return Err("unterminated regular expression".to_owned()),
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                prev_operand = true;
            }
            '#' => {
                while i < n && s[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => i += 2,
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < n && (s[i].is_ascii_alphanumeric() || s[i] == '_') {
                    i += 1;
                }
                let word: String = s[start..i].iter().collect();
                match word.as_str() {
                    "system" => return Err("`system()` runs a shell command".to_owned()),
                    "getline" => {
                        return Err(
                            "`getline` reads files or command output the policy can't see"
                                .to_owned(),
                        );
                    }
                    "ENVIRON" | "PROCINFO" => {
                        return Err(format!(
                            "`{word}` reads the environment, which holds secrets"
                        ));
                    }
                    "print" | "printf" => print_depth = Some(depth),
                    _ => {}
                }
                prev_operand = !OPERATOR_WORDS.contains(&word.as_str());
            }
            c if c.is_ascii_digit() => {
                while i < n && (s[i].is_ascii_alphanumeric() || s[i] == '.') {
                    i += 1;
                }
                prev_operand = true;
            }
            '(' | '[' => {
                depth += 1;
                i += 1;
                prev_operand = false;
            }
            ')' | ']' => {
                depth -= 1;
                i += 1;
                prev_operand = true;
            }
            '>' => {
                if print_depth == Some(depth) {
                    return Err("output redirection inside the program writes a file".to_owned());
                }
                i += 1;
                prev_operand = false;
            }
            '|' => {
                if s.get(i + 1) == Some(&'|') {
                    i += 2;
                    prev_operand = false;
                } else {
                    return Err("`|` in an awk program pipes to or from a command".to_owned());
                }
            }
            ';' | '\n' | '{' | '}' => {
                print_depth = None;
                i += 1;
                prev_operand = false;
            }
            ' ' | '\t' | '\r' => i += 1,
            '@' => {
                return Err(
                    "`@` (gawk indirect calls, @include, @load) runs code the policy can't see"
                        .to_owned(),
                );
            }
            '$' => {
                i += 1;
                prev_operand = false;
            }
            _ => {
                i += 1;
                prev_operand = false;
            }
        }
    }
    Ok(())
}

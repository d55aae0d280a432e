//! `find`: every primary known, the writing ones refused, and the commands `-exec` runs
//! classified.

use super::*;

impl<'e> Classifier<'e> {
    pub(super) fn find(&mut self, ctx: &Ctx, args: &[Word]) {
        let Some(mut i) = self.find_start(ctx, args) else {
            return;
        };
        // Expression.
        while i < args.len() {
            let t = args[i].text();
            let ts = t.as_str();
            i += 1;
            if FIND_NO_ARG.contains(&ts) {
                continue;
            }
            if FIND_ONE_ARG.contains(&ts) {
                if i >= args.len() {
                    self.refuse(format!("`find {t}` needs an argument"));
                    return;
                }
                i += 1;
                continue;
            }
            let newer_xy = ts.len() == 8
                && ts.starts_with("-newer")
                && ts[6..].chars().all(|c| "amcBt".contains(c));
            if FIND_PATH_ARG.contains(&ts) || newer_xy {
                let Some(w) = args.get(i) else {
                    self.refuse(format!("`find {t}` needs an argument"));
                    return;
                };
                if !(newer_xy && ts.ends_with('t')) {
                    self.path_word(ctx, w, Use::Meta);
                }
                i += 1;
                continue;
            }
            match ts {
                "-delete" => {
                    self.refuse("`find -delete` deletes files");
                    return;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    self.refuse(format!("`find {t}` writes a file"));
                    return;
                }
                "-follow" => {
                    self.refuse("`find -follow` follows symlinks, which can leave the workspace");
                    return;
                }
                "-files0-from" => {
                    self.refuse("`find -files0-from` reads start points the policy can't see");
                    return;
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let Some(next) = self.find_exec(ctx, &t, args, i) else {
                        return;
                    };
                    i = next;
                }
                _ => {
                    self.refuse(format!(
                        "`find {t}` is not a find primary the policy knows; only tests, -print, \
                         -printf and -exec with read-only commands are allowed"
                    ));
                    return;
                }
            }
        }
    }

    /// `find`'s leading options and start paths: where its expression begins, or `None`
    /// when the line is refused.
    fn find_start(&mut self, ctx: &Ctx, args: &[Word]) -> Option<usize> {
        let mut i = 0;
        // Leading options.
        while i < args.len() {
            let t = args[i].text();
            match t.as_str() {
                "-P" => i += 1,
                "-L" | "-H" => {
                    self.refuse(format!(
                        "`find {t}` follows symlinks, which can leave the workspace"
                    ));
                    return None;
                }
                "-D" => i += 2,
                _ if t.starts_with("-O") => i += 1,
                _ => break,
            }
        }
        // Start paths.
        while i < args.len() {
            let t = args[i].text();
            if t.starts_with('-') || matches!(t.as_str(), "(" | ")" | "!" | ",") {
                break;
            }
            self.path_word(ctx, &args[i], Use::Dir);
            i += 1;
        }
        Some(i)
    }

    /// `find … -exec CMD … ;` (or `+`, `-execdir`, `-ok`, `-okdir`) whose command starts at
    /// `start`: the command is classified; returns where the expression goes on, or `None`
    /// when the line is refused.
    fn find_exec(&mut self, ctx: &Ctx, t: &str, args: &[Word], start: usize) -> Option<usize> {
        let Some(end) = (start..args.len()).find(|&k| matches!(args[k].text().as_str(), ";" | "+"))
        else {
            self.refuse(format!(
                "`find {t}` needs a terminating `\\;` or `+` (an unquoted `;` ends \
                 the whole command)"
            ));
            return None;
        };
        let inner_words = &args[start..end];
        if inner_words.is_empty() {
            self.refuse(format!("`find {t}` needs a command"));
            return None;
        }
        if inner_words.iter().any(|w| {
            let x = w.text();
            x != "{}" && x.contains("{}")
        }) {
            self.refuse(format!(
                "`find {t}` with `{{}}` inside a larger word lets a file name inject \
                 shell syntax; pass `{{}}` as its own argument"
            ));
            return None;
        }
        if let Some(mut inner) = self.nested(ctx) {
            inner.stdin = Input::Unknown;
            self.command(&mut inner, inner_words, Input::Unknown);
        }
        Some(end + 1)
    }
}

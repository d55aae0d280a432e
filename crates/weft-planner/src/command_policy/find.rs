//! `find`: every primary known, the writing ones refused, and the commands `-exec` runs
//! classified.

use super::*;

impl<'e> Classifier<'e> {
    pub(super) fn find(&mut self, ctx: &Ctx, args: &[Word]) {
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
                    return;
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
        // Expression.
        const NO_ARG: &[&str] = &[
            "-print",
            "-print0",
            "-ls",
            "-prune",
            "-quit",
            "-true",
            "-false",
            "-empty",
            "-readable",
            "-writable",
            "-executable",
            "-nouser",
            "-nogroup",
            "-depth",
            "-d",
            "-mount",
            "-xdev",
            "-noleaf",
            "-daystart",
            "-ignore_readdir_race",
            "-noignore_readdir_race",
            "-a",
            "-and",
            "-o",
            "-or",
            "-not",
            "!",
            "(",
            ")",
            ",",
            "-nowarn",
            "-warn",
        ];
        const ONE_ARG: &[&str] = &[
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-wholename",
            "-iwholename",
            "-regex",
            "-iregex",
            "-regextype",
            "-type",
            "-xtype",
            "-size",
            "-mtime",
            "-mmin",
            "-atime",
            "-amin",
            "-ctime",
            "-cmin",
            "-perm",
            "-user",
            "-group",
            "-uid",
            "-gid",
            "-links",
            "-inum",
            "-maxdepth",
            "-mindepth",
            "-lname",
            "-ilname",
            "-used",
            "-printf",
            "-fstype",
            "-context",
        ];
        const PATH_ARG: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];
        while i < args.len() {
            let t = args[i].text();
            let ts = t.as_str();
            i += 1;
            if NO_ARG.contains(&ts) {
                continue;
            }
            if ONE_ARG.contains(&ts) {
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
            if PATH_ARG.contains(&ts) || newer_xy {
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
                    let start = i;
                    let Some(end) =
                        (start..args.len()).find(|&k| matches!(args[k].text().as_str(), ";" | "+"))
                    else {
                        self.refuse(format!(
                            "`find {t}` needs a terminating `\\;` or `+` (an unquoted `;` ends \
                             the whole command)"
                        ));
                        return;
                    };
                    let inner_words = &args[start..end];
                    if inner_words.is_empty() {
                        self.refuse(format!("`find {t}` needs a command"));
                        return;
                    }
                    if inner_words.iter().any(|w| {
                        let x = w.text();
                        x != "{}" && x.contains("{}")
                    }) {
                        self.refuse(format!(
                            "`find {t}` with `{{}}` inside a larger word lets a file name inject \
                             shell syntax; pass `{{}}` as its own argument"
                        ));
                        return;
                    }
                    if let Some(mut inner) = self.nested(ctx) {
                        inner.stdin = Input::Unknown;
                        self.command(&mut inner, inner_words, Input::Unknown);
                    }
                    i = end + 1;
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
}

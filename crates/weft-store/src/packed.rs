//! A task's outline as the `outline` column holds it (migration 9): every column `weft
//! status` shows, in one text, read from the `tasks_outline` index in one scan.
//!
//! Contract: [`outline_row`] gives for a row exactly what reading its columns one by one
//! gives ([`crate::outline::RowTexts`], the same values [`crate::rows`] reads into a
//! `Task`), and refuses exactly the rows that would be refused, naming the task and the
//! column. The text is each column in [`COLUMNS`]' order as `<length in bytes>:<text>`,
//! or `-` for NULL, so no character a column can hold (`:`, `-`, digits, newlines) is
//! ever read as a separator. Pure: no SQLite here, only the text it computed.
//!
//! Two readers: [`plain_row`] reads a plain row (nearly every one) in one pass, and leaves
//! any other to [`Fields`], which reads column by column and words the refusal; a property
//! test holds the two equal on every row the first reads.

use weft_core::{TaskKind, TaskLimits, TaskStatus};

use crate::outline::RowTexts;
use crate::rows::{Checked, limits_of, naming_task, parse_json, parse_status};

/// The columns in the text, in order (migration 9's expression).
pub(crate) const COLUMNS: [&str; 17] = [
    "id",
    "title",
    "runner",
    "model",
    "effort",
    "mode",
    "checks",
    "dependencies",
    "position",
    "kind",
    "status",
    "hold",
    "verdict",
    "timeout_ms",
    "idle_timeout_ms",
    "budget_usd",
    "budget_tokens",
];

/// The row whose `outline` column is `bytes`, or what is wrong with it.
pub(crate) fn outline_row(bytes: &[u8]) -> Checked<RowTexts<'_>> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => return Err(not_utf8(bytes, error)),
    };
    match plain_row(text) {
        Some(row) => Ok(row),
        None => fields_row(text),
    }
}

/// [`outline_row`] of a text, column by column: any row, refused if it must be.
fn fields_row(text: &str) -> Checked<RowTexts<'_>> {
    let mut fields = Fields {
        whole: text,
        rest: text,
        at: 0,
    };
    let id = fields.required()?;
    let row = naming_task(id, fields.after_id(id));
    if row.is_ok() && !fields.rest.is_empty() {
        return Err(format!(
            "task {id:?}: the outline column has more than its columns"
        ));
    }
    row
}

/// The row of `text` when it is a plain one, read in one pass: every column where it
/// should be, the numbers small, a verdict that parses, no limits (nearly every row of a
/// plan); `None` for anything else, which [`Fields`] then reads, and refuses if it must.
///
/// Cost: this is what `weft status` does 10,000 times for a plan of 10,000 tasks. Reading
/// each column through [`Fields::next`] (a `Result` per column, a check of its name for the
/// error it might give, a char-boundary check per slice) was ~1,200 instructions a row;
/// this finds the 17 columns' bounds with a byte loop first and checks only the texts it
/// keeps. Contract: for a row it reads, the very [`RowTexts`] [`Fields`] reads (a test
/// holds the two equal over random rows).
fn plain_row(text: &str) -> Option<RowTexts<'_>> {
    let bytes = text.as_bytes();
    // Each column's text as a byte range, `None` for NULL.
    let mut columns = [None::<(usize, usize)>; COLUMNS.len()];
    let mut at = 0;
    for column in &mut columns {
        if *bytes.get(at)? == b'-' {
            at += 1;
            continue;
        }
        let mut len = 0usize;
        let start = at;
        while let Some(&byte) = bytes.get(at)
            && byte.is_ascii_digit()
        {
            len = len * 10 + usize::from(byte - b'0');
            at += 1;
        }
        // 1 to 9 digits (as `Fields` reads them), then `:`.
        if at == start || at - start > 9 || bytes.get(at) != Some(&b':') {
            return None;
        }
        at += 1;
        *column = Some((at, at + len));
        at += len;
    }
    if at != bytes.len() {
        return None;
    }
    let str_at = |index: usize| -> Option<Option<&str>> {
        match columns[index] {
            None => Some(None),
            Some((start, end)) => text.get(start..end).map(Some),
        }
    };
    let required = |index: usize| str_at(index).flatten();
    let small = |index: usize| -> Option<u32> {
        let digits = required(index)?;
        if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(digits.bytes().fold(0, |n, b| n * 10 + u32::from(b - b'0')))
    };
    let id = required(0)?;
    let dependencies = required(7)?;
    // The texts an outline keeps end with the dependencies.
    let kept_end = columns[7]?.1;
    let hold = match small(11)? {
        0 => false,
        1 => true,
        _ => return None,
    };
    if columns[13..].iter().any(Option::is_some) {
        return None;
    }
    let verdict = match str_at(12)? {
        None => None,
        Some(verdict) => Some(parse_json(verdict, "verdict", id).ok()?),
    };
    Some(RowTexts {
        text: text.get(..kept_end)?,
        id,
        order: small(8)?,
        title: required(1)?,
        runner: str_at(2)?,
        model: str_at(3)?,
        effort: str_at(4)?,
        mode: str_at(5)?,
        kind: TaskKind::parse(required(9)?)?,
        checks: required(6)?,
        status: TaskStatus::parse(required(10)?)?,
        hold,
        verdict,
        dependencies,
        limits: TaskLimits::default(),
    })
}

/// The columns of a text, one after the other: how any row is read, and refused if it
/// must be, naming the column.
struct Fields<'r> {
    whole: &'r str,
    rest: &'r str,
    /// The index in [`COLUMNS`] of the next one.
    at: usize,
}

impl<'r> Fields<'r> {
    fn name(&self) -> &'static str {
        COLUMNS.get(self.at).copied().unwrap_or("outline")
    }

    /// The next column's text, `None` for NULL.
    ///
    /// Only rows [`plain_row`] leaves come here (with limits, a verdict that does not
    /// parse, damage), so this reads for the clearest refusal, not for speed.
    #[inline]
    fn next(&mut self) -> Checked<Option<&'r str>> {
        let bytes = self.rest.as_bytes();
        self.at += 1;
        if bytes.first() == Some(&b'-') {
            self.rest = &self.rest[1..];
            return Ok(None);
        }
        let mut len = 0usize;
        let mut digits = 0;
        // At most 9 digits: no column comes near a gigabyte, and no sum can overflow.
        while let Some(digit) = bytes.get(digits).map(|b| b.wrapping_sub(b'0'))
            && digit < 10
            && digits < 9
        {
            len = len * 10 + usize::from(digit);
            digits += 1;
        }
        if digits == 0 || bytes.get(digits) != Some(&b':') {
            return Err(self.damaged());
        }
        let start = digits + 1;
        let Some(value) = self.rest.get(start..start + len) else {
            return Err(self.damaged());
        };
        self.rest = &self.rest[start + len..];
        Ok(Some(value))
    }

    #[cold]
    fn damaged(&self) -> String {
        let column = COLUMNS.get(self.at - 1).copied().unwrap_or("outline");
        format!("the outline column is damaged at {column}")
    }

    fn required(&mut self) -> Checked<&'r str> {
        let column = self.name();
        self.next()?
            .ok_or_else(|| format!("the {column} column is NULL"))
    }

    /// An INTEGER column (`None` for NULL), as SQLite writes it.
    fn integer(&mut self) -> Checked<Option<i64>> {
        let column = self.name();
        let Some(text) = self.next()? else {
            return Ok(None);
        };
        // The common case, a small number, without a general parse.
        if text.len() == 1 && text.as_bytes()[0].is_ascii_digit() {
            return Ok(Some(i64::from(text.as_bytes()[0] - b'0')));
        }
        text.parse::<i64>()
            .map(Some)
            .map_err(|_| format!("the {column} column holds {text:?}, not an integer"))
    }

    fn after_id(&mut self, id: &'r str) -> Checked<RowTexts<'r>> {
        let title = self.required()?;
        let runner = self.next()?;
        let model = self.next()?;
        let effort = self.next()?;
        let mode = self.next()?;
        let checks = self.required()?;
        let dependencies = self.required()?;
        // The texts an outline keeps end here.
        let kept = &self.whole[..self.whole.len() - self.rest.len()];
        let order = self.integer()?.ok_or("the position column is NULL")?;
        let order = u32::try_from(order)
            .map_err(|_| format!("the position column holds {order}, out of range"))?;
        let kind = parse_status(self.required()?, TaskKind::parse, "task kind")?;
        let status = parse_status(self.required()?, TaskStatus::parse, "task status")?;
        let hold = match self.integer()?.ok_or("the hold column is NULL")? {
            0 => false,
            1 => true,
            other => return Err(format!("the hold column holds {other}, not 0 or 1")),
        };
        let verdict = self
            .next()?
            .map(|v| parse_json(v, "verdict", id))
            .transpose()?;
        let limits = self.limits(id)?;
        Ok(RowTexts {
            text: kept,
            id,
            order,
            title,
            runner,
            model,
            effort,
            mode,
            kind,
            checks,
            status,
            hold,
            verdict,
            dependencies,
            limits,
        })
    }

    /// The four limits, by the rules the full load applies to their columns
    /// ([`limits_of`]).
    fn limits(&mut self, id: &str) -> Checked<TaskLimits> {
        // No limit set, what nearly every task has.
        if let Some(rest) = self.rest.strip_prefix("----") {
            self.rest = rest;
            self.at += 4;
            return Ok(TaskLimits::default());
        }
        let not_a_number = |e: String| format!("task {id:?}: a limit is not a number: {e}");
        let timeout = self.integer().map_err(not_a_number)?;
        let idle_timeout = self.integer().map_err(not_a_number)?;
        let usd = self
            .next()?
            .map(|text| {
                text.parse::<f64>()
                    .map_err(|_| format!("task {id:?}: budget_usd is not a number: {text:?}"))
            })
            .transpose()?;
        let tokens = self.integer().map_err(not_a_number)?;
        limits_of(id, [timeout, idle_timeout], usd, tokens)
    }
}

/// Which column of a text that is not UTF-8 holds the bytes that are not (only a damaged
/// row comes here). The text up to the first such byte is read like any row's: the
/// column whose text it cuts short is the one that holds the byte.
fn not_utf8(bytes: &[u8], error: std::str::Utf8Error) -> String {
    let whole = || format!("the outline column holds text that is not UTF-8: {error}");
    let Ok(valid) = std::str::from_utf8(&bytes[..error.valid_up_to()]) else {
        return whole();
    };
    let mut fields = Fields {
        whole: valid,
        rest: valid,
        at: 0,
    };
    let mut id = None;
    while fields.at < COLUMNS.len() {
        let column = fields.name();
        let header = valid.len() - fields.rest.len();
        match fields.next() {
            Ok(value) if fields.at == 1 => id = value,
            Ok(_) => {}
            Err(_) => {
                // The column's text: after its length and `:`, that many bytes.
                let Some((digits, _)) = fields.rest.split_once(':') else {
                    return whole();
                };
                let start = header + digits.len() + 1;
                let end = digits
                    .parse::<usize>()
                    .map_or(bytes.len(), |len| (start + len).min(bytes.len()));
                let Err(e) = std::str::from_utf8(&bytes[start..end]) else {
                    return whole();
                };
                let problem = format!("the {column} column holds text that is not UTF-8: {e}");
                return match id {
                    Some(id) => format!("task {id:?}: {problem}"),
                    None => problem,
                };
            }
        }
    }
    whole()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: Option<&str>) -> String {
        text.map_or("-".into(), |t| format!("{}:{t}", t.len()))
    }

    fn packed(columns: [Option<&str>; 17]) -> String {
        columns.iter().map(|c| field(*c)).collect()
    }

    fn plain() -> [Option<&'static str>; 17] {
        [
            Some("t-1"),
            Some("a title: 12:3 - with -"),
            None,
            Some("gpt-5"),
            None,
            None,
            Some("[]"),
            Some(r#"["t-0"]"#),
            Some("3"),
            Some("ai"),
            Some("pending"),
            Some("0"),
            None,
            Some("60000"),
            None,
            Some("0.10000000000000001"),
            Some("200"),
        ]
    }

    #[test]
    fn every_column_reads_back_whatever_characters_it_holds() {
        let text = packed(plain());
        let row = outline_row(text.as_bytes()).unwrap();
        assert_eq!(row.id, "t-1");
        assert_eq!(row.order, 3);
        assert_eq!(row.title, "a title: 12:3 - with -");
        assert_eq!(row.kind, TaskKind::Ai);
        assert_eq!(row.status, TaskStatus::Pending);
        assert!(!row.hold);
        assert!(row.verdict.is_none());
        assert_eq!(row.dependencies, r#"["t-0"]"#);
        assert_eq!(row.runner, None);
        assert_eq!(row.model, Some("gpt-5"));
        assert_eq!(row.limits.timeout, Some(std::time::Duration::from_secs(60)));
        assert_eq!(row.limits.budget_usd, Some(0.1));
        assert_eq!(row.limits.budget_tokens, Some(200));
        // The outline keeps the texts it shows, up to the dependencies.
        assert!(text.starts_with(row.text) && row.text.ends_with(r#"["t-0"]"#));
        // An empty text is not NULL.
        let mut columns = plain();
        columns[2] = Some("");
        assert_eq!(
            outline_row(packed(columns).as_bytes()).unwrap().runner,
            Some("")
        );
    }

    #[test]
    fn a_damaged_text_is_refused_naming_the_task_and_the_column() {
        let refusal =
            |columns: [Option<&str>; 17]| outline_row(packed(columns).as_bytes()).unwrap_err();
        let mut columns = plain();
        columns[10] = Some("bogus");
        assert_eq!(
            refusal(columns),
            r#"task "t-1": unknown task status "bogus""#
        );
        let mut columns = plain();
        columns[1] = None;
        assert_eq!(refusal(columns), r#"task "t-1": the title column is NULL"#);
        let mut columns = plain();
        columns[11] = Some("2");
        assert_eq!(
            refusal(columns),
            r#"task "t-1": the hold column holds 2, not 0 or 1"#
        );
        let mut columns = plain();
        columns[13] = Some("-5");
        assert_eq!(
            refusal(columns),
            r#"task "t-1": a negative time limit (-5 ms)"#
        );
        let mut columns = plain();
        columns[0] = None;
        assert_eq!(refusal(columns), "the id column is NULL");
        // Lengths that do not fit, and text after the last column.
        let text = packed(plain());
        for broken in [&text[..text.len() - 1], "3:t-1", "x:ab", "99:t-1", ""] {
            assert!(outline_row(broken.as_bytes()).is_err(), "{broken:?}");
        }
        let longer = format!("{text}-");
        assert!(
            outline_row(longer.as_bytes())
                .unwrap_err()
                .contains("more than its columns")
        );
        // A length that ends inside a character.
        assert!(outline_row("2:é".as_bytes()).is_err());
    }

    proptest::proptest! {
        /// The one-pass reading of a plain row is the column-by-column one, and a row it
        /// leaves (damaged, or with limits) is left to it: over rows of any texts, NULLs,
        /// numbers, verdicts and limits, whole or damaged.
        #[test]
        fn a_plain_row_reads_as_the_columns_read_it(
            texts in proptest::collection::vec(
                proptest::option::weighted(0.8, "[a-z0-9:\\-é\"\\[\\], ]{0,12}"),
                17,
            ),
            numbers in (0u32..2_000_000_000, 0u8..3, 0usize..4),
            limits in proptest::collection::vec(proptest::option::weighted(0.3, 0u32..1000), 4),
            cut in proptest::option::weighted(0.3, 0usize..200),
        ) {
            let (position, hold, verdict) = numbers;
            let verdicts = [
                None,
                Some(r#"{"outcome":"pass","reason":"ok","checks":[],"decided_at":1}"#.to_owned()),
                Some("{not json".to_owned()),
                texts[12].clone(),
            ];
            let mut columns = texts.clone();
            columns[8] = Some(position.to_string());
            columns[9] = Some(["ai", "manual", "ops"][position as usize % 3].to_owned());
            columns[10] = Some(if position % 5 == 0 { "bogus" } else { "pending" }.to_owned());
            columns[11] = Some(hold.to_string());
            columns[12] = verdicts[verdict].clone();
            for (column, limit) in columns[13..].iter_mut().zip(&limits) {
                *column = limit.map(|l| l.to_string());
            }
            let whole: String = columns.iter().map(|c| field(c.as_deref())).collect();
            let text = match cut {
                Some(cut) => whole.get(..cut.min(whole.len())).unwrap_or(&whole),
                None => &whole,
            };
            let slow = fields_row(text);
            match plain_row(text) {
                Some(fast) => {
                    let slow = slow.expect("a plain row reads column by column too");
                    proptest::prop_assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
                }
                None => {
                    // Left to the columns' reading; a well-formed row without limits and
                    // with a verdict that parses is never left.
                    let plain = cut.is_none()
                        && limits.iter().all(Option::is_none)
                        && verdict < 2
                        && position % 5 != 0
                        && position < 1_000_000_000
                        && hold < 2
                        && columns.iter().take(8).enumerate().all(|(i, c)| {
                            c.is_some() || [2, 3, 4, 5].contains(&i)
                        });
                    proptest::prop_assert!(!plain, "a plain row left to the slow reading: {text:?}");
                }
            }
        }
    }

    #[test]
    fn text_that_is_not_utf8_is_refused_naming_its_column() {
        let mut bytes = packed(plain()).into_bytes();
        let title = bytes.windows(7).position(|w| w == b"a title").unwrap();
        bytes[title] = 0xff;
        assert_eq!(
            outline_row(&bytes).unwrap_err(),
            "task \"t-1\": the title column holds text that is not UTF-8: \
             invalid utf-8 sequence of 1 bytes from index 0"
        );
        // In a later column, told with the index within that column, as the full load
        // tells it; in the id, without a task to name.
        let mut bytes = packed(plain()).into_bytes();
        let deps = bytes.windows(5).position(|w| w == b"t-0\"]").unwrap();
        bytes[deps + 1] = 0xc3;
        assert_eq!(
            outline_row(&bytes).unwrap_err(),
            "task \"t-1\": the dependencies column holds text that is not UTF-8: \
             invalid utf-8 sequence of 1 bytes from index 3"
        );
        let mut bytes = packed(plain()).into_bytes();
        bytes[3] = 0xff;
        assert_eq!(
            outline_row(&bytes).unwrap_err(),
            "the id column holds text that is not UTF-8: \
             invalid utf-8 sequence of 1 bytes from index 1"
        );
    }
}

//! A task's own limits: `timeout`, `idle_timeout`, `budget_usd`, `budget_tokens`.
//!
//! Each is optional; unset, the setting applies (`task_timeout`, `idle_timeout`) or there
//! is no task budget. The one way to read a limit from text is [`parse_value`], shared by
//! the workflow file and `weft task add/edit`, so a bad value is refused with the same
//! words (the key, the value, what is wrong) wherever it is typed. Pure: no clock, no I/O.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::spend::Budget;

/// A task's limits. Budgets are checked finite and positive by [`parse_value`] and every
/// other entry point, so equality is total (hence `Eq`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskLimits {
    /// Wall-clock limit of each attempt; replaces the `task_timeout` setting.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "text_duration"
    )]
    pub timeout: Option<Duration>,
    /// No output, stream event or file change for this long ends an attempt; replaces
    /// the `idle_timeout` setting (zero: never, for this task).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "text_duration"
    )]
    pub idle_timeout: Option<Duration>,
    /// Dollars the task may spend over all its attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// Tokens the task may spend over all its attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
}

impl Eq for TaskLimits {}

impl TaskLimits {
    pub fn is_empty(&self) -> bool {
        *self == TaskLimits::default()
    }

    /// The task's budget (both parts may be unset).
    pub fn budget(&self) -> Budget {
        Budget {
            usd: self.budget_usd,
            tokens: self.budget_tokens,
        }
    }
}

/// Changes to a task's limits (`weft task edit`): `None` leaves one alone, `Some(None)`
/// clears it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitChanges {
    pub timeout: Option<Option<Duration>>,
    pub idle_timeout: Option<Option<Duration>>,
    pub budget_usd: Option<Option<f64>>,
    pub budget_tokens: Option<Option<u64>>,
}

impl Eq for LimitChanges {}

impl LimitChanges {
    pub fn is_empty(&self) -> bool {
        *self == LimitChanges::default()
    }

    /// Set the change of `key` from its text as typed (`""`: clear it); a bad value is
    /// refused with the key, the value and what is wrong.
    pub fn set_text(&mut self, key: &str, text: &str) -> Result<(), String> {
        let value = if text.trim().is_empty() {
            None
        } else {
            Some(parse_value(key, text).map_err(|p| format!("`{key}` = {text:?}: {p}"))?)
        };
        match (key, value) {
            (KEY_TIMEOUT, v) => self.timeout = Some(v.and_then(LimitValue::duration)),
            (KEY_IDLE_TIMEOUT, v) => self.idle_timeout = Some(v.and_then(LimitValue::duration)),
            (KEY_BUDGET_USD, v) => self.budget_usd = Some(v.and_then(LimitValue::usd)),
            (KEY_BUDGET_TOKENS, v) => self.budget_tokens = Some(v.and_then(LimitValue::tokens)),
            (other, _) => return Err(format!("{other:?} is not a task limit")),
        }
        Ok(())
    }

    /// The limits a new task gets from these changes (what `weft task add` uses).
    pub fn applied_to(&self, mut limits: TaskLimits) -> TaskLimits {
        if let Some(v) = self.timeout {
            limits.timeout = v;
        }
        if let Some(v) = self.idle_timeout {
            limits.idle_timeout = v;
        }
        if let Some(v) = self.budget_usd {
            limits.budget_usd = v;
        }
        if let Some(v) = self.budget_tokens {
            limits.budget_tokens = v;
        }
        limits
    }
}

/// The keys, as the workflow file and the flags (`--budget-usd`) spell them.
pub const KEY_TIMEOUT: &str = "timeout";
pub const KEY_IDLE_TIMEOUT: &str = "idle_timeout";
pub const KEY_BUDGET_USD: &str = "budget_usd";
pub const KEY_BUDGET_TOKENS: &str = "budget_tokens";

/// A limit's value as typed: a duration (`30m`), dollars (`0.5`) or tokens (`200000`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LimitValue {
    Duration(Duration),
    Usd(f64),
    Tokens(u64),
}

impl LimitValue {
    fn duration(self) -> Option<Duration> {
        match self {
            LimitValue::Duration(d) => Some(d),
            _ => None,
        }
    }

    fn usd(self) -> Option<f64> {
        match self {
            LimitValue::Usd(u) => Some(u),
            _ => None,
        }
    }

    fn tokens(self) -> Option<u64> {
        match self {
            LimitValue::Tokens(t) => Some(t),
            _ => None,
        }
    }
}

/// `30m`, `1h 30m`, `90s`, `500ms` (as the settings write durations).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{e}; write a duration such as \"30m\", \"90s\" or \"1h 30m\""))
}

/// A duration as [`parse_duration`] reads it back (`30m`, `1h 30m`).
pub fn format_duration(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// Read the value of `key` from `text`: what the workflow file and the flags share.
/// A duration must be positive (an `idle_timeout` may be `0`: off for this task); a
/// budget positive and finite.
pub fn parse_value(key: &str, text: &str) -> Result<LimitValue, String> {
    match key {
        KEY_TIMEOUT | KEY_IDLE_TIMEOUT => {
            let duration = parse_duration(text)?;
            if duration.is_zero() && key == KEY_TIMEOUT {
                return Err("a timeout must be longer than zero".into());
            }
            Ok(LimitValue::Duration(duration))
        }
        KEY_BUDGET_USD => {
            let usd: f64 = text
                .trim()
                .trim_start_matches('$')
                .parse()
                .map_err(|_| "write an amount of dollars such as 0.5".to_owned())?;
            check_usd(usd).map(LimitValue::Usd)
        }
        KEY_BUDGET_TOKENS => {
            let digits: String = text.trim().chars().filter(|c| *c != '_').collect();
            let tokens: i128 = digits
                .parse()
                .map_err(|_| "write a whole number of tokens such as 200000".to_owned())?;
            check_tokens(tokens).map(LimitValue::Tokens)
        }
        other => Err(format!("{other:?} is not a task limit")),
    }
}

/// Dollars must be a positive, finite amount.
pub fn check_usd(usd: f64) -> Result<f64, String> {
    if usd.is_finite() && usd > 0.0 {
        Ok(usd)
    } else {
        Err("a budget must be a positive amount of dollars".into())
    }
}

/// Tokens must be a positive whole number.
pub fn check_tokens(tokens: i128) -> Result<u64, String> {
    match u64::try_from(tokens) {
        Ok(tokens) if tokens > 0 => Ok(tokens),
        _ => Err("a budget must be a positive number of tokens".into()),
    }
}

/// Durations in JSON and TOML as text (`"30m"`), never as `{secs, nanos}`.
mod text_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_str(&super::format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| super::parse_duration(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_the_flags_and_the_file_write_them() {
        assert_eq!(
            parse_value("timeout", "30m"),
            Ok(LimitValue::Duration(Duration::from_secs(1800)))
        );
        assert_eq!(
            parse_value("idle_timeout", "0"),
            Ok(LimitValue::Duration(Duration::ZERO))
        );
        assert_eq!(parse_value("budget_usd", "$0.5"), Ok(LimitValue::Usd(0.5)));
        assert_eq!(
            parse_value("budget_tokens", "200_000"),
            Ok(LimitValue::Tokens(200_000))
        );
    }

    #[test]
    fn bad_values_say_what_to_write() {
        assert!(parse_value("timeout", "soon").unwrap_err().contains("30m"));
        assert!(parse_value("timeout", "0s").unwrap_err().contains("zero"));
        for bad in ["-1", "0", "NaN", "inf", "lots"] {
            assert!(parse_value("budget_usd", bad).is_err(), "{bad}");
        }
        for bad in ["-5", "0", "1.5"] {
            assert!(parse_value("budget_tokens", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_serialize_durations_as_text() {
        let limits = TaskLimits {
            timeout: Some(Duration::from_secs(90)),
            budget_tokens: Some(7),
            ..TaskLimits::default()
        };
        let json = serde_json::to_string(&limits).unwrap();
        assert_eq!(json, r#"{"timeout":"1m 30s","budget_tokens":7}"#);
        assert_eq!(serde_json::from_str::<TaskLimits>(&json).unwrap(), limits);
    }
}

//! What an attempt costs: tokens, a per-model price table, and budgets.
//!
//! No agent CLI reports its cost before it ends (Claude Code prints `total_cost_usd` in its
//! last line, OpenCode a cost per step, Codex none at all), so weft counts spend live: each
//! model message's usage, as the stream reports it, times the price of its model
//! ([`PriceTable`]); when the CLI ends with its own total, that total replaces the estimate
//! ([`Meter::final_total`]).
//!
//! Contract:
//!
//! - Pure: no I/O, no clock. The engine feeds a [`Meter`] per attempt and asks it for the
//!   [`Spend`] so far; the plan's spend is the sum of its attempts' ([`Spend::add`]), so
//!   spend across retries adds up.
//! - Honest: a model the table does not price still has its tokens counted, and its cost
//!   is *unknown* ([`Spend::cost_usd`] is `None`, [`Spend::unpriced`] names the model),
//!   never 0. A budget in dollars is judged on the priced part (a lower bound), so an
//!   unknown price never stops an attempt by itself; a token budget always applies.
//! - Monotone while an attempt runs: a message's repeated usage (Claude Code repeats
//!   `message.usage` on every line of a message) replaces that message's figures, never
//!   adds to them, and never lowers them. Only the CLI's own final total may be lower than
//!   the estimate (it is the better figure).
//! - Bounded: a meter keeps the sum of finished messages and the one message in progress.
//!
//! Token budgets count every token the model processed: input, output, cache reads and
//! cache writes ([`Tokens::total`]), as the providers' usage pages and ccusage count them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Tokens of one message, one attempt or one plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input not read from the cache (Claude's `input_tokens`; OpenAI's input minus its
    /// cached part).
    #[serde(default)]
    pub input: u64,
    /// Output, reasoning included (OpenAI counts reasoning as output).
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

impl Tokens {
    /// Every token the model processed: what a token budget counts.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Input-side tokens (input and both cache figures), as weft stores them per attempt.
    pub fn all_input(&self) -> u64 {
        self.total().saturating_sub(self.output)
    }

    pub fn add(&mut self, other: &Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
    }

    /// The larger of each figure.
    fn max(&self, other: &Tokens) -> Tokens {
        Tokens {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cache_read: self.cache_read.max(other.cache_read),
            cache_write: self.cache_write.max(other.cache_write),
        }
    }
}

/// What a model costs, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
        Price {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    /// The cost of `tokens` at this price, in dollars.
    pub fn cost(&self, tokens: &Tokens) -> f64 {
        let per = |count: u64, price: f64| count as f64 * price / 1_000_000.0;
        per(tokens.input, self.input)
            + per(tokens.output, self.output)
            + per(tokens.cache_read, self.cache_read)
            + per(tokens.cache_write, self.cache_write)
    }
}

/// The default prices, per million tokens: (model, input, output, cache read, cache write).
///
/// Where the figures come from (list prices, standard tier, as published in late 2025):
/// - Anthropic: <https://docs.anthropic.com/en/docs/about-claude/pricing> (cache writes are
///   the 5-minute ones, 1.25 × input; cache reads 0.1 × input).
/// - OpenAI (Codex's models): <https://platform.openai.com/docs/pricing> (cached input is
///   the cache read; OpenAI charges nothing extra for writing the cache).
/// - Google (common through OpenCode): <https://ai.google.dev/gemini-api/docs/pricing>
///   (the prompt tier up to 200k tokens; no cache write charge counted).
///
/// They are defaults: a `prices` setting in weft.toml overrides or adds models
/// ([`parse_prices`]). A model missing here is shown as "price unknown", never as free.
/// Names are matched after [`normalize_model`] (provider prefix, `[1m]`-style suffix and
/// a trailing `-YYYYMMDD` date removed), and only exactly: `gpt-5` does not price
/// `gpt-5.5`.
pub const DEFAULT_PRICES: &[(&str, f64, f64, f64, f64)] = &[
    // Anthropic
    ("claude-opus-4-5", 5.0, 25.0, 0.50, 6.25),
    ("claude-opus-4-1", 15.0, 75.0, 1.50, 18.75),
    ("claude-opus-4", 15.0, 75.0, 1.50, 18.75),
    ("claude-sonnet-4-5", 3.0, 15.0, 0.30, 3.75),
    ("claude-sonnet-4", 3.0, 15.0, 0.30, 3.75),
    ("claude-3-7-sonnet", 3.0, 15.0, 0.30, 3.75),
    ("claude-haiku-4-5", 1.0, 5.0, 0.10, 1.25),
    ("claude-3-5-haiku", 0.80, 4.0, 0.08, 1.0),
    // OpenAI / Codex
    ("gpt-5", 1.25, 10.0, 0.125, 0.0),
    ("gpt-5-codex", 1.25, 10.0, 0.125, 0.0),
    ("gpt-5.1", 1.25, 10.0, 0.125, 0.0),
    ("gpt-5.1-codex", 1.25, 10.0, 0.125, 0.0),
    ("gpt-5.1-codex-mini", 0.25, 2.0, 0.025, 0.0),
    ("gpt-5-mini", 0.25, 2.0, 0.025, 0.0),
    ("gpt-5-nano", 0.05, 0.40, 0.005, 0.0),
    ("gpt-4.1", 2.0, 8.0, 0.50, 0.0),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, 0.0),
    ("gpt-4o", 2.50, 10.0, 1.25, 0.0),
    ("o3", 2.0, 8.0, 0.50, 0.0),
    ("o4-mini", 1.10, 4.40, 0.275, 0.0),
    // Google (OpenCode)
    ("gemini-2.5-pro", 1.25, 10.0, 0.31, 0.0),
    ("gemini-2.5-flash", 0.30, 2.50, 0.075, 0.0),
];

/// Most characters of a model name weft keeps (names come from agents' streams).
const MODEL_MAX: usize = 100;

/// `model` as the price table knows it: lower case, without a provider prefix
/// (`anthropic/`, `openrouter/openai/`), a bracketed suffix (`[1m]`) or a trailing date
/// (`-20250929`).
pub fn normalize_model(model: &str) -> String {
    let mut name = model.trim().to_ascii_lowercase();
    if let Some(open) = name.find('[') {
        name.truncate(open);
    }
    if let Some(slash) = name.rfind('/') {
        name.drain(..=slash);
    }
    if let Some(dash) = name.rfind('-') {
        let tail = &name[dash + 1..];
        if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
            name.truncate(dash);
        }
    }
    name
}

/// Prices by normalized model name.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

impl Default for PriceTable {
    fn default() -> Self {
        let prices = DEFAULT_PRICES
            .iter()
            .map(|&(model, input, output, read, write)| {
                (model.to_owned(), Price::new(input, output, read, write))
            })
            .collect();
        PriceTable { prices }
    }
}

impl PriceTable {
    /// The defaults with `overrides` on top (a named model replaced or added).
    pub fn with_overrides(mut self, overrides: impl IntoIterator<Item = (String, Price)>) -> Self {
        for (model, price) in overrides {
            self.prices.insert(normalize_model(&model), price);
        }
        self
    }

    /// The price of `model`, if the table has one.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.prices.get(&normalize_model(model)).copied()
    }

    /// Every priced model, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Price)> {
        self.prices.iter().map(|(m, p)| (m.as_str(), p))
    }
}

/// A `prices` setting that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("price entry {entry:?} {problem}")]
pub struct PriceError {
    pub entry: String,
    pub problem: String,
}

impl crate::Hint for PriceError {
    fn hint(&self) -> Option<String> {
        Some(
            "write prices as MODEL=INPUT/OUTPUT[/CACHE_READ[/CACHE_WRITE]] in dollars per million tokens, entries separated by commas (e.g. \"my-model=3/15/0.3/3.75\")"
                .into(),
        )
    }
}

/// The `prices` setting: `MODEL=INPUT/OUTPUT[/CACHE_READ[/CACHE_WRITE]]`, dollars per
/// million tokens, entries separated by commas; a missing cache price is 0.
pub fn parse_prices(text: &str) -> Result<Vec<(String, Price)>, PriceError> {
    let mut out = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let fail = |problem: &str| PriceError {
            entry: entry.to_owned(),
            problem: problem.to_owned(),
        };
        let (model, figures) = entry
            .split_once('=')
            .ok_or_else(|| fail("has no `=` between the model and its prices"))?;
        let model = model.trim();
        if model.is_empty() {
            return Err(fail("names no model"));
        }
        let numbers: Vec<f64> = figures
            .split('/')
            .map(|f| f.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| fail("has a price that is not a number"))?;
        if !(2..=4).contains(&numbers.len()) {
            return Err(fail(
                "needs 2 to 4 prices (input/output[/cache read[/cache write]])",
            ));
        }
        if numbers.iter().any(|n| !n.is_finite() || *n < 0.0) {
            return Err(fail("has a negative or infinite price"));
        }
        let at = |i: usize| numbers.get(i).copied().unwrap_or(0.0);
        out.push((model.to_owned(), Price::new(at(0), at(1), at(2), at(3))));
    }
    Ok(out)
}

/// Spend so far: tokens always, dollars where a price (or the CLI's own figure) is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    pub tokens: Tokens,
    /// Dollars of the priced part (all of it unless `unpriced` is set).
    pub usd: f64,
    /// A model that had no price: the dollars are then a lower bound, shown as unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpriced: Option<String>,
}

impl Spend {
    /// The cost, when every part of it was priced.
    pub fn cost_usd(&self) -> Option<f64> {
        self.unpriced.is_none().then_some(self.usd)
    }

    /// Spend of a stored attempt: tokens as stored (input-side and output), dollars as
    /// stored (`None`: unknown).
    pub fn stored(input: Option<u64>, output: Option<u64>, cost_usd: Option<f64>) -> Spend {
        let unpriced = match (cost_usd, input.unwrap_or(0) + output.unwrap_or(0)) {
            (None, n) if n > 0 => Some("an earlier attempt's model".to_owned()),
            _ => None,
        };
        Spend {
            tokens: Tokens {
                input: input.unwrap_or(0),
                output: output.unwrap_or(0),
                ..Tokens::default()
            },
            usd: cost_usd.unwrap_or(0.0),
            unpriced,
        }
    }

    /// `other` added: spend across attempts and retries adds up; unknown stays unknown.
    pub fn add(&mut self, other: &Spend) {
        self.tokens.add(&other.tokens);
        self.usd += other.usd;
        if self.unpriced.is_none() {
            self.unpriced = other.unpriced.clone();
        }
    }

    fn priced(table: &PriceTable, model: Option<&str>, tokens: Tokens, cli: Option<f64>) -> Spend {
        let (usd, unpriced) = match (cli, model.and_then(|m| table.price(m))) {
            (Some(usd), _) => (usd, None),
            (None, Some(price)) => (price.cost(&tokens), None),
            (None, None) if tokens.total() == 0 => (0.0, None),
            (None, None) => (
                0.0,
                Some(bounded_model(
                    model.unwrap_or("(the runner's default model)"),
                )),
            ),
        };
        Spend {
            tokens,
            usd,
            unpriced,
        }
    }
}

impl fmt::Display for Spend {
    /// `$0.42, 12345 tokens` or `cost unknown (no price for model x), 12345 tokens`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.unpriced {
            None => write!(f, "{}", usd(self.usd))?,
            Some(model) => write!(f, "cost unknown (no price for model {model})")?,
        }
        write!(f, ", {} tokens", self.tokens.total())
    }
}

fn bounded_model(model: &str) -> String {
    model.chars().take(MODEL_MAX).collect()
}

/// Dollars as weft shows them: cents from a dime up, four decimals below.
pub fn usd(amount: f64) -> String {
    if amount >= 0.1 || amount == 0.0 {
        format!("${amount:.2}")
    } else {
        format!("${amount:.4}")
    }
}

/// The message in progress: its id, model, tokens, the CLI's cost for it, and the most
/// dollars it was already shown to cost (so a repeat never lowers it).
#[derive(Debug, Clone)]
struct Current {
    id: Option<String>,
    model: Option<String>,
    tokens: Tokens,
    cost: Option<f64>,
    floor: f64,
}

/// One attempt's live spend.
#[derive(Debug, Clone)]
pub struct Meter {
    table: PriceTable,
    /// The attempt's model as weft launched it, for messages that name none.
    model: Option<String>,
    /// Messages that ended (a later message arrived).
    done: Spend,
    /// The message in progress.
    current: Option<Current>,
    /// The CLI's own total, once it reported one.
    reported: Option<Spend>,
}

impl Meter {
    pub fn new(table: PriceTable, model: Option<String>) -> Meter {
        Meter {
            table,
            model: model.map(|m| bounded_model(&m)),
            done: Spend::default(),
            current: None,
            reported: None,
        }
    }

    /// The usage of one message so far. A message that repeats the id of the one in
    /// progress updates it (each figure only grows); any other id, or none, starts a new
    /// one. `cost_usd` is the CLI's own cost of it (OpenCode's per step), when it says.
    pub fn message(
        &mut self,
        id: Option<&str>,
        model: Option<&str>,
        tokens: Tokens,
        cost_usd: Option<f64>,
    ) {
        if self.reported.is_some() {
            return;
        }
        let model = model.map(bounded_model);
        if let Some(seen) = &self.current
            && seen.id.is_some()
            && id == seen.id.as_deref()
        {
            let shown = self.priced(seen).usd;
            let Some(current) = &mut self.current else {
                return;
            };
            current.floor = current.floor.max(shown);
            current.tokens = current.tokens.max(&tokens);
            current.cost = match (current.cost, cost_usd) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            return;
        }
        self.fold_current();
        self.current = Some(Current {
            id: id.map(str::to_owned),
            model,
            tokens,
            cost: cost_usd,
            floor: 0.0,
        });
    }

    /// What the message in progress costs so far.
    fn priced(&self, current: &Current) -> Spend {
        let model = current.model.as_deref().or(self.model.as_deref());
        let mut spend = Spend::priced(&self.table, model, current.tokens, current.cost);
        spend.usd = spend.usd.max(current.floor);
        spend
    }

    fn fold_current(&mut self) {
        if let Some(current) = self.current.take() {
            let spend = self.priced(&current);
            self.done.add(&spend);
        }
    }

    /// The CLI's own total at its end (Claude's `result`, Codex's `turn.completed`): it
    /// replaces the estimate. Without a cost (Codex) its tokens are priced by the model;
    /// so are they when the CLI says 0 for tokens it counted (Claude Code prices a model
    /// it does not know at 0, which is not "free").
    pub fn final_total(&mut self, tokens: Tokens, cost_usd: Option<f64>) {
        let cost_usd = cost_usd.filter(|c| *c > 0.0 || tokens.total() == 0);
        let model = self
            .current
            .as_ref()
            .and_then(|c| c.model.clone())
            .or_else(|| self.model.clone());
        self.reported = Some(Spend::priced(
            &self.table,
            model.as_deref(),
            tokens,
            cost_usd,
        ));
    }

    /// Whether the CLI's own total replaced the estimate.
    pub fn is_final(&self) -> bool {
        self.reported.is_some()
    }

    /// The spend so far: the CLI's total once reported, else the estimate.
    pub fn spend(&self) -> Spend {
        if let Some(reported) = &self.reported {
            return reported.clone();
        }
        let mut spend = self.done.clone();
        if let Some(current) = &self.current {
            spend.add(&self.priced(current));
        }
        spend
    }
}

/// A spending limit: dollars, tokens, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// Which limit of a budget was passed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Usd(f64),
    Tokens(u64),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Usd(amount) => write!(f, "budget_usd = {}", usd(*amount)),
            Limit::Tokens(count) => write!(f, "budget_tokens = {count}"),
        }
    }
}

impl Budget {
    pub fn is_set(&self) -> bool {
        self.usd.is_some() || self.tokens.is_some()
    }

    /// The first limit `spend` is strictly over: what stops an attempt.
    pub fn exceeded(&self, spend: &Spend) -> Option<Limit> {
        self.check(spend, |spent, limit| spent > limit)
    }

    /// The first limit `spend` has reached: what stops new starts in a plan.
    pub fn reached(&self, spend: &Spend) -> Option<Limit> {
        self.check(spend, |spent, limit| spent >= limit)
    }

    fn check(&self, spend: &Spend, over: impl Fn(f64, f64) -> bool) -> Option<Limit> {
        if let Some(limit) = self.usd
            && over(spend.usd, limit)
        {
            return Some(Limit::Usd(limit));
        }
        if let Some(limit) = self.tokens
            && over(spend.tokens.total() as f64, limit as f64)
        {
            return Some(Limit::Tokens(limit));
        }
        None
    }

    /// `spend` against this budget, for display: `$0.12 of $0.50, 3400 of 10000 tokens`.
    pub fn against(&self, spend: &Spend) -> String {
        let cost = match &spend.unpriced {
            None => usd(spend.usd),
            Some(_) => format!("≥ {} (price unknown)", usd(spend.usd)),
        };
        let mut parts = Vec::new();
        match self.usd {
            Some(limit) => parts.push(format!("{cost} of {}", usd(limit))),
            None => parts.push(cost),
        }
        match self.tokens {
            Some(limit) => parts.push(format!("{} of {limit} tokens", spend.tokens.total())),
            None => parts.push(format!("{} tokens", spend.tokens.total())),
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64) -> Tokens {
        Tokens {
            input,
            output,
            ..Tokens::default()
        }
    }

    #[test]
    fn model_names_are_matched_without_provider_suffix_or_date() {
        assert_eq!(
            normalize_model("claude-sonnet-4-5-20250929"),
            "claude-sonnet-4-5"
        );
        assert_eq!(normalize_model("claude-opus-4-5[1m]"), "claude-opus-4-5");
        assert_eq!(normalize_model("openrouter/openai/GPT-5"), "gpt-5");
        let table = PriceTable::default();
        assert!(
            table
                .price("anthropic/claude-sonnet-4-5-20250929")
                .is_some()
        );
        assert_eq!(table.price("gpt-5.5"), None, "no prefix matching");
    }

    #[test]
    fn a_claude_sonnet_million_in_and_out_costs_its_list_price() {
        let price = PriceTable::default().price("claude-sonnet-4-5").unwrap();
        let cost = price.cost(&Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_read: 1_000_000,
            cache_write: 1_000_000,
        });
        assert!((cost - (3.0 + 15.0 + 0.30 + 3.75)).abs() < 1e-9);
    }

    #[test]
    fn an_unknown_model_counts_its_tokens_and_says_its_cost_is_unknown() {
        let mut meter = Meter::new(PriceTable::default(), None);
        meter.message(Some("m1"), Some("mystery-9"), tokens(100, 10), None);
        let spend = meter.spend();
        assert_eq!(spend.tokens.total(), 110);
        assert_eq!(spend.cost_usd(), None);
        assert_eq!(spend.unpriced.as_deref(), Some("mystery-9"));
        assert_eq!(
            spend.to_string(),
            "cost unknown (no price for model mystery-9), 110 tokens"
        );
    }

    #[test]
    fn repeated_usage_of_one_message_is_counted_once() {
        let mut meter = Meter::new(PriceTable::default(), None);
        for _ in 0..3 {
            meter.message(Some("m1"), Some("claude-haiku-4-5"), tokens(1000, 1), None);
        }
        meter.message(Some("m2"), Some("claude-haiku-4-5"), tokens(1000, 1), None);
        assert_eq!(meter.spend().tokens.total(), 2002);
    }

    #[test]
    fn the_clis_total_replaces_the_estimate() {
        let mut meter = Meter::new(PriceTable::default(), Some("claude-sonnet-4-5".into()));
        meter.message(Some("m1"), None, tokens(1_000_000, 0), None);
        assert!((meter.spend().usd - 3.0).abs() < 1e-9);
        meter.final_total(tokens(900_000, 100), Some(2.5));
        assert_eq!(meter.spend().usd, 2.5);
        assert_eq!(meter.spend().tokens.total(), 900_100);
        meter.message(Some("m9"), None, tokens(5, 5), None);
        assert_eq!(meter.spend().usd, 2.5, "nothing after the total counts");
    }

    #[test]
    fn a_total_without_cost_is_priced_by_the_model() {
        let mut meter = Meter::new(PriceTable::default(), Some("gpt-5".into()));
        meter.final_total(tokens(1_000_000, 0), None);
        assert!((meter.spend().usd - 1.25).abs() < 1e-9);
    }

    #[test]
    fn budgets_stop_over_and_halt_at() {
        let budget = Budget {
            usd: Some(0.5),
            tokens: None,
        };
        let at = Spend {
            usd: 0.5,
            ..Spend::default()
        };
        assert_eq!(budget.exceeded(&at), None);
        assert_eq!(budget.reached(&at), Some(Limit::Usd(0.5)));
        let tokens_budget = Budget {
            usd: None,
            tokens: Some(100),
        };
        let spend = Spend {
            tokens: tokens(90, 11),
            ..Spend::default()
        };
        assert_eq!(tokens_budget.exceeded(&spend), Some(Limit::Tokens(100)));
        assert_eq!(
            tokens_budget.against(&spend),
            "$0.00, 101 of 100 tokens".to_owned()
        );
    }

    #[test]
    fn prices_parse_and_bad_entries_are_named() {
        let prices = parse_prices("my-model=3/15/0.3/3.75, other=1/2").unwrap();
        assert_eq!(prices.len(), 2);
        assert_eq!(prices[1].1.cache_read, 0.0);
        let table = PriceTable::default().with_overrides(prices);
        assert_eq!(table.price("my-model").unwrap().cache_write, 3.75);
        let error = parse_prices("x=1").unwrap_err();
        assert_eq!(error.entry, "x=1");
        assert!(parse_prices("x=-1/2").is_err());
        assert!(parse_prices("=1/2").is_err());
        assert!(parse_prices("x 1/2").is_err());
    }
}

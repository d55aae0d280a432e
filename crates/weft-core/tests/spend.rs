//! Invariants of live spend: it only grows as messages arrive, the CLI's own total
//! replaces the estimate, spend across retries adds up, and an unknown price is never 0.

use proptest::prelude::*;
use weft_core::spend::{Meter, PriceTable, Spend, Tokens};

/// One usage record as a stream reports it: which message (few ids, so repeats happen),
/// which model (one unpriced), and the figures so far.
fn record() -> impl Strategy<Value = (Option<u8>, u8, Tokens, Option<u32>)> {
    (
        prop::option::of(0u8..4),
        0u8..3,
        (0u64..50_000, 0u64..5_000, 0u64..50_000, 0u64..5_000),
        prop::option::of(0u32..1_000),
    )
        .prop_map(|(id, model, (input, output, read, write), cost)| {
            (
                id,
                model,
                Tokens {
                    input,
                    output,
                    cache_read: read,
                    cache_write: write,
                },
                cost,
            )
        })
}

const MODELS: [&str; 3] = ["claude-sonnet-4-5", "gpt-5", "no-such-model"];

fn feed(meter: &mut Meter, (id, model, tokens, cost): &(Option<u8>, u8, Tokens, Option<u32>)) {
    let id = id.map(|i| format!("msg{i}"));
    meter.message(
        id.as_deref(),
        Some(MODELS[*model as usize]),
        *tokens,
        cost.map(|c| f64::from(c) / 1000.0),
    );
}

proptest! {
    #[test]
    fn spend_never_shrinks_as_messages_arrive(records in prop::collection::vec(record(), 1..40)) {
        let mut meter = Meter::new(PriceTable::default(), None);
        let mut before = Spend::default();
        for record in &records {
            feed(&mut meter, record);
            let now = meter.spend();
            prop_assert!(now.tokens.total() >= before.tokens.total());
            prop_assert!(now.usd + 1e-9 >= before.usd, "{} after {}", now.usd, before.usd);
            before = now;
        }
    }

    #[test]
    fn the_clis_final_total_replaces_whatever_was_estimated(
        records in prop::collection::vec(record(), 0..20),
        input in 0u64..1_000_000,
        output in 0u64..100_000,
        cost in 0u32..100_000,
    ) {
        let mut meter = Meter::new(PriceTable::default(), None);
        for record in &records {
            feed(&mut meter, record);
        }
        let total = Tokens { input, output, ..Tokens::default() };
        let usd = f64::from(cost) / 1000.0;
        meter.final_total(total, Some(usd));
        let spend = meter.spend();
        prop_assert_eq!(spend.tokens, total);
        prop_assert_eq!(spend.cost_usd(), Some(usd));
        for record in &records {
            feed(&mut meter, record);
        }
        prop_assert_eq!(meter.spend(), spend);
    }

    #[test]
    fn spend_across_retries_is_the_sum_of_the_attempts(
        attempts in prop::collection::vec(prop::collection::vec(record(), 0..10), 1..5),
    ) {
        let mut plan = Spend::default();
        let mut tokens = 0u64;
        let mut usd = 0f64;
        let mut unknown = false;
        for records in &attempts {
            let mut meter = Meter::new(PriceTable::default(), None);
            for record in records {
                feed(&mut meter, record);
            }
            let spend = meter.spend();
            tokens += spend.tokens.total();
            usd += spend.usd;
            unknown |= spend.unpriced.is_some();
            plan.add(&spend);
        }
        prop_assert_eq!(plan.tokens.total(), tokens);
        prop_assert!((plan.usd - usd).abs() < 1e-6);
        prop_assert_eq!(plan.cost_usd().is_none(), unknown);
    }

    #[test]
    fn an_unpriced_model_with_tokens_is_never_shown_as_free(input in 1u64..1_000_000) {
        let mut meter = Meter::new(PriceTable::default(), None);
        meter.message(Some("m"), Some("no-such-model"), Tokens { input, ..Tokens::default() }, None);
        let spend = meter.spend();
        prop_assert_eq!(spend.cost_usd(), None);
        prop_assert!(spend.to_string().contains("cost unknown"));
        prop_assert_eq!(spend.tokens.total(), input);
    }
}

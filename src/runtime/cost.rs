//! Dollars: a price table per model in dollars per million tokens (input, cached input,
//! cache write, output), with defaults for public OpenAI and Anthropic models (list prices as
//! of 2026-12) that `[prices."MODEL"]` tables in `config.toml` override or extend.
//! A model with no price has no cost: neocode shows its tokens only, never a made-up dollar.

use serde::Deserialize;

use super::provider::model_family;
use crate::session::TokenDetail;
use crate::session::Usage;

/// One model's prices in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Price {
    /// Prompt tokens not read from a cache.
    pub input: f64,
    /// Prompt tokens read from the cache (default: `input`).
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Prompt tokens written to the cache (default: `input`).
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Output tokens (reasoning included).
    pub output: f64,
}

impl Price {
    const fn new(input: f64, cached_input: f64, cache_write: f64, output: f64) -> Price {
        Price {
            input,
            cached_input: Some(cached_input),
            cache_write: Some(cache_write),
            output,
        }
    }

    /// What one model call cost in dollars.
    pub(crate) fn cost(&self, usage: Usage, detail: TokenDetail) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.input_tokens, self.input)
            + per(
                detail.cached_input_tokens,
                self.cached_input.unwrap_or(self.input),
            )
            + per(
                detail.cache_write_tokens,
                self.cache_write.unwrap_or(self.input),
            )
            + per(usage.output_tokens, self.output)
    }
}

/// Default prices by model family (a dated snapshot name takes its family's price): input,
/// cached input, cache write, output. Checked 2026-12 (rows marked otherwise were not).
/// Models priced by prompt length (Claude Haiku 5.5) are left out: configure them.
const DEFAULTS: &[(&str, Price)] = &[
    // Anthropic (platform.claude.com/docs/en/about-claude/pricing and the models' overview
    // pages): 5-minute cache writes at 1.25x input.
    ("claude-fable-5-1", Price::new(10.0, 0.25, 12.5, 50.0)),
    ("claude-fable-5", Price::new(10.0, 1.0, 12.5, 50.0)),
    // Opus 5.5: input and output from its overview page; cache rates from a third-party
    // copy of the pricing page (0.05x reads), not read on Anthropic's own page.
    ("claude-opus-5-5", Price::new(4.0, 0.2, 5.0, 20.0)),
    ("claude-opus-5", Price::new(5.0, 0.5, 6.25, 25.0)),
    ("claude-opus-4-8", Price::new(5.0, 0.5, 6.25, 25.0)),
    ("claude-opus-4-7", Price::new(5.0, 0.5, 6.25, 25.0)),
    ("claude-opus-4-6", Price::new(5.0, 0.5, 6.25, 25.0)),
    ("claude-opus-4-5", Price::new(5.0, 0.5, 6.25, 25.0)),
    ("claude-opus-4-1", Price::new(15.0, 1.5, 18.75, 75.0)),
    ("claude-opus-4", Price::new(15.0, 1.5, 18.75, 75.0)),
    ("claude-sonnet-5-5", Price::new(2.0, 0.2, 2.5, 10.0)),
    ("claude-sonnet-5", Price::new(2.0, 0.2, 2.5, 10.0)),
    ("claude-sonnet-4-6", Price::new(3.0, 0.3, 3.75, 15.0)),
    ("claude-sonnet-4-5", Price::new(3.0, 0.3, 3.75, 15.0)),
    ("claude-sonnet-4", Price::new(3.0, 0.3, 3.75, 15.0)),
    ("claude-haiku-4-5", Price::new(1.0, 0.1, 1.25, 5.0)),
    ("claude-3-5-haiku", Price::new(0.8, 0.08, 1.0, 4.0)),
    // OpenAI: no charge for cache writes. gpt-5.5 and gpt-5.4*: OpenAI's pricing page as
    // quoted by two independent copies (2026-06); the older rows as of 2025-10, unchanged.
    ("gpt-5.5", Price::new(5.0, 0.5, 5.0, 30.0)),
    ("gpt-5.4", Price::new(2.5, 0.25, 2.5, 15.0)),
    ("gpt-5.4-mini", Price::new(0.75, 0.075, 0.75, 4.5)),
    ("gpt-5.4-nano", Price::new(0.2, 0.02, 0.2, 1.25)),
    ("gpt-5", Price::new(1.25, 0.125, 1.25, 10.0)),
    ("gpt-5-codex", Price::new(1.25, 0.125, 1.25, 10.0)),
    ("gpt-5-mini", Price::new(0.25, 0.025, 0.25, 2.0)),
    ("gpt-5-nano", Price::new(0.05, 0.005, 0.05, 0.4)),
    ("gpt-4.1", Price::new(2.0, 0.5, 2.0, 8.0)),
    ("gpt-4.1-mini", Price::new(0.4, 0.1, 0.4, 1.6)),
    ("gpt-4o", Price::new(2.5, 1.25, 2.5, 10.0)),
    ("gpt-4o-mini", Price::new(0.15, 0.075, 0.15, 0.6)),
    ("o3", Price::new(2.0, 0.5, 2.0, 8.0)),
    ("o4-mini", Price::new(1.1, 0.275, 1.1, 4.4)),
];

/// The prices neocode knows: the configured ones first, then the defaults.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriceTable {
    configured: Vec<(String, Price)>,
}

impl PriceTable {
    /// The defaults with `configured` (model name to price) over them.
    pub(crate) fn new(configured: impl IntoIterator<Item = (String, Price)>) -> PriceTable {
        PriceTable {
            configured: configured.into_iter().collect(),
        }
    }

    /// The price of `model` (an `api:` prefix ignored): a configured one for the name or its
    /// family, else a default for its family; `None` when neocode knows none.
    pub(crate) fn price(&self, model: &str) -> Option<Price> {
        let model = match model.split_once(':') {
            Some(("chat" | "responses" | "anthropic", m)) => m,
            _ => model,
        }
        .trim();
        let family = model_family(model);
        let find = |name: &str| {
            self.configured
                .iter()
                .find(|(m, _)| m == name)
                .map(|(_, p)| *p)
        };
        find(model)
            .or_else(|| find(family))
            .or_else(|| DEFAULTS.iter().find(|(m, _)| *m == family).map(|(_, p)| *p))
    }

    /// What one call of `model` cost, if it has a price.
    pub(crate) fn cost(&self, model: &str, usage: Usage, detail: TokenDetail) -> Option<f64> {
        self.price(model).map(|p| p.cost(usage, detail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_priced_by_its_family_and_an_unknown_model_has_no_price() {
        let t = PriceTable::default();
        let usage = Usage {
            input_tokens: 100_000,
            output_tokens: 10_000,
        };
        let detail = TokenDetail {
            cached_input_tokens: 1_000_000,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        };
        let c = t.cost("claude-sonnet-4-5-20250929", usage, detail).unwrap();
        assert!((c - (0.3 + 0.15 + 0.3)).abs() < 1e-9, "{c}");
        assert_eq!(t.cost("qwen2.5-coder:7b", usage, detail), None);
        // Rows checked 2026-12: Opus 4.5 is a third of Opus 4.1, gpt-5.5 reads its cache at 0.1x.
        assert_eq!(
            t.price("claude-opus-4-5-20251101").map(|p| p.input),
            Some(5.0)
        );
        assert_eq!(t.price("gpt-5.5").and_then(|p| p.cached_input), Some(0.5));
        assert_eq!(t.cost("test-model", usage, detail), None);
        assert!(
            t.cost("anthropic:claude-haiku-4-5", usage, detail)
                .is_some()
        );
        let t = PriceTable::new([("test-model".to_string(), Price::new(1.0, 1.0, 1.0, 2.0))]);
        let c = t.cost("test-model", usage, TokenDetail::default()).unwrap();
        assert!((c - 0.12).abs() < 1e-9, "{c}");
    }
}

//! The structured-output option (`run --output-schema`) where a server refuses it: the
//! provider and model are remembered for the process, so the request goes without it from
//! then on, and the user is told once.

use std::sync::Mutex;

use crate::runtime::provider::{ErrorKind, ProviderError};

/// Providers and models of this process that refused the option, as `provider/model`.
static REFUSED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn key(provider: &str, model: &str) -> String {
    format!("{provider}/{model}")
}

/// Whether `provider`'s `model` refused the option before (this process).
pub(super) fn refused(provider: &str, model: &str) -> bool {
    let k = key(provider, model);
    REFUSED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .contains(&k)
}

/// Whether the failed call looks like a refusal of the request's shape (a 4xx other than
/// auth, rate or size, or a 5xx: llama.cpp answers a grammar it cannot combine with tools
/// with a 400 or 500) rather than of the network or the key, and nothing was streamed yet.
pub(super) fn refusal(e: &ProviderError) -> bool {
    e.partial.is_none() && matches!(e.kind, ErrorKind::BadRequest | ErrorKind::Server)
}

/// Remembers that `provider`'s `model` refused the option; the warning's words.
pub(super) fn remember(provider: &str, model: &str, why: &str) -> String {
    let k = key(provider, model);
    let mut l = REFUSED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !l.contains(&k) {
        l.push(k);
    }
    format!(
        "the server refused the structured-output option for --output-schema ({why}); asked again without it, and sent without it for the rest of this run: the schema stays in the prompt and neocode still validates the answer"
    )
}

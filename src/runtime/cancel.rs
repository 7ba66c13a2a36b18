//! The cancel flag of a running turn: raised by a front end (or a turn's command sender),
//! polled by the turn loop, the provider stream and the tools, which kill what they started.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A flag a front end raises to cancel the running turn; tools poll it and kill what they
/// started.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// Raises the flag.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the flag is raised.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

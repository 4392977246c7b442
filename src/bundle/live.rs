//! The newest good bundle, shared between whoever downloads bundles (a poller thread) and the
//! gates that judge with them. A new bundle is published whole; a gate that sees a newer
//! generation at the start of an admission compiles it for its workspace and swaps its compiled
//! policy, so every call is judged by exactly one revision and none waits for a download.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::Bundle;

/// The newest good bundle and its generation (1 for the first, +1 per publish).
#[derive(Debug)]
pub struct LiveBundle {
    current: RwLock<Arc<Bundle>>,
    generation: AtomicU64,
}

impl LiveBundle {
    /// Starts with a loaded bundle.
    pub fn new(bundle: Bundle) -> LiveBundle {
        LiveBundle {
            current: RwLock::new(Arc::new(bundle)),
            generation: AtomicU64::new(1),
        }
    }

    /// The newest bundle and its generation, read together.
    pub fn current(&self) -> (Arc<Bundle>, u64) {
        // A poisoned lock only means a publisher panicked between two whole values: the value
        // inside is still a whole bundle.
        let guard = self.current.read().unwrap_or_else(|p| p.into_inner());
        (Arc::clone(&guard), self.generation.load(Ordering::Acquire))
    }

    /// The generation now: a gate compares it with the one it compiled.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Publishes a newer bundle.
    pub fn publish(&self, bundle: Bundle) {
        let mut guard = self.current.write().unwrap_or_else(|p| p.into_inner());
        *guard = Arc::new(bundle);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

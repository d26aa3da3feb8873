//! Delegation slots for asynchronous operations ([`crate::on_async`]).
//!
//! A worker running an async executor may have several operations in flight to the
//! same owner, so each ordered (caller, owner) pair has `ASYNC_SLOTS` slots, each with
//! the waker the owner wakes once it has answered. Owners must not scan all of them at
//! every poll (the synchronous path polls on every operation), so a caller rings the
//! owner's doorbell — a counter — after posting, and the owner scans only when the
//! count moved.
//!
//! A worker parked in an executor serves nobody. Two workers each awaiting the other
//! would hang, so whoever posts to an owner that has async requests of its own in
//! flight wakes one of them: that future's poll serves the owner's incoming requests.

use crate::mailbox::Slot;
use crossbeam_utils::CachePadded;
use futures::task::AtomicWaker;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Async slots per ordered pair of workers: operations one worker can have in flight
/// to one owner at a time (more wait for a free slot).
pub(crate) const ASYNC_SLOTS: usize = 8;

/// A slot and the waker of the future waiting for its answer (its own line: the owner
/// wakes it after publishing the answer).
#[repr(C, align(128))]
pub(crate) struct AsyncSlot {
    pub(crate) slot: Slot,
    pub(crate) waker: AtomicWaker,
}

/// All async slots of one run.
pub(crate) struct AsyncMail {
    cores: usize,
    /// `slots[(caller * cores + owner) * ASYNC_SLOTS + i]`.
    slots: Vec<AsyncSlot>,
    /// Per owner: async requests ever posted to it.
    doorbells: Vec<CachePadded<AtomicU64>>,
    /// Per worker: its own async requests in flight (single writer: that worker).
    in_flight: Vec<CachePadded<AtomicU32>>,
}

impl AsyncMail {
    pub(crate) fn new(cores: usize) -> Self {
        AsyncMail {
            cores,
            slots: (0..cores * cores * ASYNC_SLOTS)
                .map(|_| AsyncSlot {
                    slot: Slot::new(),
                    waker: AtomicWaker::new(),
                })
                .collect(),
            doorbells: (0..cores).map(|_| Default::default()).collect(),
            in_flight: (0..cores).map(|_| Default::default()).collect(),
        }
    }

    pub(crate) fn slot(&self, caller: usize, owner: usize, i: usize) -> &AsyncSlot {
        &self.slots[(caller * self.cores + owner) * ASYNC_SLOTS + i]
    }

    /// Caller side, after posting: tells `owner` to scan. Ends with a full fence: a
    /// parked owner registers its waker, fences, then serves; we post, fence, then
    /// look for its waker ([`AsyncMail::wake_parked`]), so one of us sees the other.
    pub(crate) fn ring(&self, owner: usize) {
        self.doorbells[owner].fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Owner side: the doorbell count (acquire: the posts it counts are visible).
    pub(crate) fn rung(&self, owner: usize) -> u64 {
        self.doorbells[owner].load(Ordering::Acquire)
    }

    /// Counts one more (`+1`) or one fewer (`-1`) async request of `worker` in flight.
    pub(crate) fn add_in_flight(&self, worker: usize, delta: i32) {
        let c = &self.in_flight[worker];
        let n = c.load(Ordering::Relaxed).wrapping_add_signed(delta);
        c.store(n, Ordering::Relaxed);
    }

    /// Wakes one future of `worker` whose request is in flight, if it has any: the
    /// worker may be parked in its executor while someone waits for it to serve.
    pub(crate) fn wake_parked(&self, worker: usize) {
        if self.in_flight[worker].load(Ordering::Relaxed) == 0 {
            return;
        }
        let mine = &self.slots[worker * self.cores * ASYNC_SLOTS..][..self.cores * ASYNC_SLOTS];
        if let Some(a) = mine.iter().find(|a| a.slot.posted()) {
            a.waker.wake();
        }
    }
}

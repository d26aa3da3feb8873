//! One delegation slot per ordered pair of cores: how an operation moves to its owner.
//!
//! A worker has at most one operation in flight (it waits for the answer), so one slot
//! per (caller, owner) pair suffices and never needs a queue or an allocation. The
//! request is a type-erased pointer to the closure and its result slot: inside the
//! slot's own cache line when they fit (most operations: a few captured references and
//! a small result), so a round trip moves that one line back and forth; otherwise on
//! the caller's stack, which is valid because the caller does not return before the
//! owner answers.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes of closure + result that travel inside the slot's cache line.
const INLINE_WORDS: usize = 3;

// The state is a sequence number: odd = a request is waiting, even = answered (or
// never used). The caller never writes it back after an answer, which saves a cache
// line ownership transfer per round trip.

/// Runs the operation stored at `env` on the object at `object`.
pub(crate) type CallFn = unsafe fn(env: *mut (), object: *const ());

#[derive(Clone, Copy)]
struct Request {
    call: CallFn,
    env: *mut (),
    object: u32,
    /// Filled by the owner: how long the operation itself took, and whether it panicked.
    op_ns: u32,
    panicked: bool,
}

fn noop(_: *mut (), _: *const ()) {}

/// A single-request mailbox from one caller core to one owner core: one cache line.
#[repr(C, align(64))]
pub(crate) struct Slot {
    /// Sequence number (see above).
    state: AtomicU32,
    request: UnsafeCell<Request>,
    inline: UnsafeCell<[MaybeUninit<u64>; INLINE_WORDS]>,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);

// SAFETY: `request` and `inline` are written only by the caller while the state is even (after it
// observed the answer) and by the owner only between observing an odd state and
// publishing the next even one; the state's acquire/release orders those accesses.
unsafe impl Sync for Slot {}
unsafe impl Send for Slot {}

/// What the owner found when it looked at a slot.
pub(crate) enum Served {
    Nothing,
    Ran { object: u32, op_ns: u64 },
}

/// What the caller finds when it checks its request.
pub(crate) enum Answer {
    Pending,
    Done { op_ns: u64 },
    Panicked,
}

impl Slot {
    pub(crate) fn new() -> Self {
        Slot {
            state: AtomicU32::new(0),
            request: UnsafeCell::new(Request {
                call: noop,
                env: std::ptr::null_mut(),
                object: 0,
                op_ns: 0,
                panicked: false,
            }),
            inline: UnsafeCell::new([MaybeUninit::uninit(); INLINE_WORDS]),
        }
    }

    /// Room for an `E` inside the slot's line, if it fits. Caller side, between
    /// requests only (the same rule as for the request).
    pub(crate) fn inline_env<E>(&self) -> Option<*mut E> {
        let fits = std::mem::size_of::<E>() <= INLINE_WORDS * 8 && std::mem::align_of::<E>() <= 8;
        fits.then(|| self.inline.get() as *mut E)
    }

    /// Caller side: posts a request and returns its ticket for [`Slot::answer`]. The
    /// previous request must have been answered (one request in flight).
    ///
    /// # Safety
    /// `env` must stay valid, and `call` must accept it, until [`Slot::answer`] returns
    /// something other than `Pending`.
    pub(crate) unsafe fn post(&self, call: CallFn, env: *mut (), object: u32) -> u32 {
        let seq = self.state.load(Ordering::Relaxed);
        debug_assert_eq!(seq & 1, 0, "a request is already in flight");
        // SAFETY: an even state means no owner reads the request now (see the Sync impl).
        unsafe {
            *self.request.get() = Request {
                call,
                env,
                object,
                op_ns: 0,
                panicked: false,
            }
        };
        let ticket = seq.wrapping_add(1);
        self.state.store(ticket, Ordering::Release);
        ticket
    }

    /// Caller side: the answer to request `ticket` so far.
    pub(crate) fn answer(&self, ticket: u32) -> Answer {
        if self.state.load(Ordering::Acquire) == ticket {
            return Answer::Pending;
        }
        // SAFETY: the even state was published after the owner's last write.
        let req = unsafe { *self.request.get() };
        if req.panicked {
            Answer::Panicked
        } else {
            Answer::Done {
                op_ns: req.op_ns as u64,
            }
        }
    }

    /// Owner side: runs a pending request, if any, on `objects(object)`.
    pub(crate) fn serve(&self, object_ptr: impl FnOnce(u32) -> *const ()) -> Served {
        let seq = self.state.load(Ordering::Acquire);
        if seq & 1 == 0 {
            return Served::Nothing;
        }
        // SAFETY: an odd state hands the request to us until we publish the next one.
        let req = unsafe { *self.request.get() };
        let start = std::time::Instant::now();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the caller guaranteed `env` and `call` match and stay valid.
            unsafe { (req.call)(req.env, object_ptr(req.object)) }
        }));
        let op_ns = start.elapsed().as_nanos() as u64;
        // SAFETY: still ours until the store below.
        unsafe {
            (*self.request.get()).op_ns = op_ns.min(u32::MAX as u64) as u32;
            (*self.request.get()).panicked = ran.is_err();
        }
        self.state.store(seq.wrapping_add(1), Ordering::Release);
        if ran.is_err() {
            return Served::Nothing;
        }
        Served::Ran {
            object: req.object,
            op_ns,
        }
    }
}

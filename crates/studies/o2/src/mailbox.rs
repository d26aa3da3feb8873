//! One delegation slot per ordered pair of cores: how an operation moves to its owner.
//!
//! A worker has at most one operation in flight (it waits for the answer), so one slot
//! per (caller, owner) pair suffices and never needs a queue or an allocation. The
//! request is a type-erased pointer to the closure, whose result replaces it in the same
//! place: inside the slot's own cache line when they fit (most operations: a few
//! captured references and a small result), so a round trip moves that one line to the
//! owner and back; otherwise on the caller's stack, which is valid because the caller
//! does not return before the owner answers.
//!
//! The owner writes the line once per request, right before it publishes the answer
//! (the result, then the state): every extra write while the caller polls the line
//! would cost another ownership transfer between the cores. Nothing else is written
//! back — timing happens outside, after the answer is out.

use std::cell::UnsafeCell;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::sync::atomic::{AtomicU32, Ordering};

/// Words of closure-or-result that travel inside the slot's cache line.
const INLINE_WORDS: usize = 4;

// The state is a sequence number: odd = a request is waiting, even = answered (or
// never used). The caller never writes it back after an answer, which saves a cache
// line ownership transfer per round trip.

/// Runs the operation stored at `env` on the object at `object`, leaving its result
/// at `env`.
pub(crate) type CallFn = unsafe fn(env: *mut (), object: *const ());

/// An operation before it runs, its result after: they never coexist, so they share
/// their bytes (more closures fit in the slot's line).
pub(crate) union Env<F, R> {
    op: ManuallyDrop<F>,
    result: ManuallyDrop<R>,
}

impl<F, R> Env<F, R> {
    pub(crate) fn new(op: F) -> Self {
        Env {
            op: ManuallyDrop::new(op),
        }
    }

    /// The result the owner left (caller side, after a `Done` answer).
    ///
    /// # Safety
    /// The operation must have run to completion on this env, exactly once.
    pub(crate) unsafe fn take_result(this: *mut Self) -> R {
        // SAFETY: `call_op` replaced the operation with its result.
        unsafe { ManuallyDrop::into_inner(std::ptr::read(&(*this).result)) }
    }
}

/// The [`CallFn`] for operations `F` on objects `T`.
///
/// # Safety
/// `env` must point at a live `Env<F, R>` holding an operation, `object` at a `T`.
pub(crate) unsafe fn call_op<T, F, R>(env: *mut (), object: *const ())
where
    F: FnOnce(&T) -> R,
{
    let env = env as *mut Env<F, R>;
    // SAFETY: per the contract; the operation is moved out (consumed even if it panics).
    let op = unsafe { ManuallyDrop::into_inner(std::ptr::read(&(*env).op)) };
    let result = op(unsafe { &*(object as *const T) });
    // SAFETY: the operation's bytes are free now.
    unsafe { std::ptr::write(&mut (*env).result, ManuallyDrop::new(result)) };
}

#[derive(Clone, Copy)]
struct Request {
    call: CallFn,
    env: *mut (),
    object: u32,
    /// Written by the owner only when the operation panicked.
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
    /// Ran the operation on `object`, starting at `start` (ticks); the answer is out.
    Ran {
        object: u32,
        start: u64,
    },
    Panicked,
}

/// What the caller finds when it checks its request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Pending,
    Done,
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
                panicked: false,
            }
        };
        let ticket = seq.wrapping_add(1);
        self.state.store(ticket, Ordering::Release);
        ticket
    }

    /// Caller side: the answer to request `ticket` so far.
    #[inline]
    pub(crate) fn answer(&self, ticket: u32) -> Answer {
        if self.state.load(Ordering::Acquire) == ticket {
            return Answer::Pending;
        }
        // SAFETY: the even state was published after the owner's last write.
        if unsafe { (*self.request.get()).panicked } {
            Answer::Panicked
        } else {
            Answer::Done
        }
    }

    /// Whether a request waits here for its owner.
    pub(crate) fn posted(&self) -> bool {
        self.state.load(Ordering::Acquire) & 1 == 1
    }

    /// Owner side: runs a pending request, if any, on `object_ptr(object)`.
    #[inline]
    pub(crate) fn serve(&self, object_ptr: impl FnOnce(u32) -> *const ()) -> Served {
        let seq = self.state.load(Ordering::Acquire);
        if seq & 1 == 0 {
            return Served::Nothing;
        }
        // SAFETY: an odd state hands the request to us until we publish the next one.
        let req = unsafe { *self.request.get() };
        let start = crate::clock::ticks();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the caller guaranteed `env` and `call` match and stay valid.
            unsafe { (req.call)(req.env, object_ptr(req.object)) }
        }));
        if ran.is_err() {
            // SAFETY: still ours until the store below.
            unsafe { (*self.request.get()).panicked = true };
        }
        self.state.store(seq.wrapping_add(1), Ordering::Release);
        match ran {
            Ok(()) => Served::Ran {
                object: req.object,
                start,
            },
            Err(_) => Served::Panicked,
        }
    }
}

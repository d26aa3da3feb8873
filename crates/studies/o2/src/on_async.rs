//! `Worker::on_async(obj, f)`: the asynchronous form of `Worker::on`, for a worker that
//! runs an async executor on its thread (e.g. `futures::executor::block_on` over many
//! lookups joined together).
//!
//! The future runs `f` in place when the object has no other owner; otherwise it posts
//! `f` to one of the (caller, owner) pair's async slots and returns `Pending` with its
//! waker in the slot; the owner wakes it after answering, so the executor's thread can
//! park instead of spinning. The closure and its result live in the (pinned) future
//! itself: nothing is allocated per operation. Each poll first serves the operations
//! other workers posted to this one, which a parked worker cannot do otherwise (see
//! `async_mailbox.rs` for how a parked worker is woken to serve).

use crate::async_mailbox::{AsyncSlot, ASYNC_SLOTS};
use crate::clock::ticks;
use crate::mailbox::{call_op, Answer, Env};
use crate::runtime::{ObjId, Worker};
use std::future::Future;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::atomic::{fence, Ordering};
use std::task::{Context, Poll};

/// Where an [`OnAsync`] is.
#[derive(Clone, Copy)]
enum Stage {
    /// Not posted yet (its operation is in `op`).
    Start,
    /// Posted to `owner`'s slot `slot` at `start` ticks; its env is in the future.
    Posted {
        owner: usize,
        slot: usize,
        ticket: u32,
        start: u64,
    },
    /// The result was handed out (or the operation panicked).
    Finished,
}

/// The future of [`Worker::on_async`]: completes with the operation's result once it
/// has run on the object's owner (or here).
#[must_use = "futures do nothing unless polled"]
pub struct OnAsync<'w, 'a, T: Sync, F, R> {
    worker: &'w Worker<'a, T>,
    obj: ObjId,
    op: Option<F>,
    stage: Stage,
    /// The operation, then its result, while posted: the owner reads and writes it
    /// here, so the future must not move (it is `!Unpin`).
    env: MaybeUninit<Env<F, R>>,
    _pinned: PhantomPinned,
}

impl<'a, T: Sync> Worker<'a, T> {
    /// Runs operation `f` on object `obj` on the core that owns it (here if none), as a
    /// future: the asynchronous form of [`Worker::on`]. Poll it on this worker's
    /// thread (the future borrows the worker, so it cannot leave it).
    pub fn on_async<'w, R, F>(&'w self, obj: ObjId, f: F) -> OnAsync<'w, 'a, T, F, R>
    where
        F: FnOnce(&T) -> R + Send,
        R: Send,
    {
        OnAsync {
            worker: self,
            obj,
            op: Some(f),
            stage: Stage::Start,
            env: MaybeUninit::uninit(),
            _pinned: PhantomPinned,
        }
    }

    /// Claims a free async slot to `owner`, if any.
    fn claim_async_slot(&self, owner: usize) -> Option<usize> {
        let claimed = &self.async_claimed[owner];
        let free = (!claimed.get()).trailing_zeros() as usize;
        (free < ASYNC_SLOTS).then(|| {
            claimed.set(claimed.get() | 1 << free);
            free
        })
    }

    /// Frees an async slot and wakes the futures that found none free.
    fn release_async_slot(&self, owner: usize, slot: usize) {
        let claimed = &self.async_claimed[owner];
        claimed.set(claimed.get() & !(1 << slot));
        self.run.async_mail.add_in_flight(self.index, -1);
        let waiters: Vec<_> = self.slot_waiters.borrow_mut().drain(..).collect();
        waiters.into_iter().for_each(|w| w.wake());
    }

    fn async_slot(&self, owner: usize, slot: usize) -> &AsyncSlot {
        self.run.async_mail.slot(self.index, owner, slot)
    }
}

impl<T: Sync, F, R> Future for OnAsync<'_, '_, T, F, R>
where
    F: FnOnce(&T) -> R + Send,
    R: Send,
{
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        // SAFETY: nothing is moved out of the pinned future; `env` stays where it is.
        let this = unsafe { self.get_unchecked_mut() };
        let w = this.worker;
        w.serve();
        loop {
            match this.stage {
                Stage::Start => {
                    let Some(owner) = w.delegate_to(this.obj) else {
                        let op = this.op.take().expect("OnAsync polled after completion");
                        this.stage = Stage::Finished;
                        return Poll::Ready(w.run_here(this.obj, op));
                    };
                    let Some(slot) = w.claim_async_slot(owner) else {
                        // Joined futures share one waker: keep it once.
                        let mut waiters = w.slot_waiters.borrow_mut();
                        if !waiters.iter().any(|k| k.will_wake(cx.waker())) {
                            waiters.push(cx.waker().clone());
                        }
                        return Poll::Pending;
                    };
                    let op = this.op.take().expect("OnAsync polled after completion");
                    let env = this.env.as_mut_ptr();
                    // SAFETY: the env is unused until posted.
                    unsafe { env.write(Env::new(op)) };
                    let a = w.async_slot(owner, slot);
                    a.waker.register(cx.waker());
                    w.run.async_mail.add_in_flight(w.index, 1);
                    let start = ticks();
                    // SAFETY: the future is pinned and waits for the answer before it
                    // completes or drops, so `env` outlives the request; `call_op`
                    // matches it.
                    let ticket =
                        unsafe { a.slot.post(call_op::<T, F, R>, env as *mut (), this.obj) };
                    w.run.async_mail.ring(owner);
                    w.run.async_mail.wake_parked(owner);
                    this.stage = Stage::Posted {
                        owner,
                        slot,
                        ticket,
                        start,
                    };
                }
                Stage::Posted {
                    owner,
                    slot,
                    ticket,
                    start,
                } => {
                    let a = w.async_slot(owner, slot);
                    match a.slot.answer(ticket) {
                        Answer::Done => {
                            this.stage = Stage::Finished;
                            w.run
                                .counters
                                .record_delegation(w.index, ticks().wrapping_sub(start));
                            // SAFETY: answered: the operation ran once and left its result.
                            let r = unsafe { Env::take_result(this.env.as_mut_ptr()) };
                            w.release_async_slot(owner, slot);
                            return Poll::Ready(r);
                        }
                        Answer::Panicked => {
                            this.stage = Stage::Finished;
                            w.release_async_slot(owner, slot);
                            panic!(
                                "o2: operation on object {} panicked on core {owner}",
                                this.obj
                            );
                        }
                        Answer::Pending => {
                            a.waker.register(cx.waker());
                            // Before parking: whoever posts to us from now on sees our
                            // waker (see `AsyncMail::ring`); what came before, we serve.
                            fence(Ordering::SeqCst);
                            if w.serve() || a.slot.answer(ticket) != Answer::Pending {
                                continue;
                            }
                            return Poll::Pending;
                        }
                    }
                }
                Stage::Finished => panic!("OnAsync polled after completion"),
            }
        }
    }
}

impl<T: Sync, F, R> Drop for OnAsync<'_, '_, T, F, R> {
    /// A future dropped while its request is out waits for the answer (serving
    /// meanwhile): the owner writes into the future until then.
    fn drop(&mut self) {
        let Stage::Posted {
            owner,
            slot,
            ticket,
            ..
        } = self.stage
        else {
            return;
        };
        let w = self.worker;
        let a = w.run.async_mail.slot(w.index, owner, slot);
        let mut spins = 0u32;
        let answer = loop {
            match a.slot.answer(ticket) {
                Answer::Pending => w.wait_serving(&mut spins, owner),
                answer => break answer,
            }
        };
        if answer == Answer::Done {
            // SAFETY: answered: the result is there and nobody else takes it.
            drop(unsafe { Env::take_result(self.env.as_mut_ptr()) });
        }
        w.release_async_slot(owner, slot);
    }
}

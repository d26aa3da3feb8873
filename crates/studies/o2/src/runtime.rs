//! The O² runtime: pinned workers, the object table, and operations that move to the
//! core whose cache holds their object.
//!
//! `Worker::on(obj, f)` is CORETIME's `ct_start(obj)` … `ct_end()`: if `obj` has no
//! owner (or the caller owns it) `f` runs right here; otherwise the operation is posted
//! to the owner's slot for this caller and the caller waits, serving operations posted
//! to itself meanwhile (so two cores delegating to each other never deadlock). Workers
//! poll their incoming slots at every operation and while waiting, as CORETIME's cores
//! poll a flag. Nothing on this path allocates.

use crate::async_mailbox::{AsyncMail, ASYNC_SLOTS};
use crate::capacity::CacheCapacity;
use crate::clock::{ticks, Clock};
use crate::mailbox::{call_op, Answer, Env, Served, Slot};
use crate::rebalance::{CostSource, Policy, Rebalancer, Step};
use crate::stats::{Counters, Snapshot};
use crossbeam_utils::CachePadded;
use hetsched_core::{Error, Result};
use hetsched_util::host::pin_current_thread;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Identifies an object registered with a runtime.
pub type ObjId = u32;

const UNASSIGNED: u32 = u32::MAX;

/// How a runtime runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// OS CPU of each worker (worker i is pinned to `cpus[i]`).
    pub cpus: Vec<usize>,
    /// Cache bytes per worker core; must describe `cpus.len()` cores.
    pub capacity: CacheCapacity,
    /// Monitoring period; `None` = no automatic placement (use `assign`).
    pub rebalance_every: Option<Duration>,
    pub policy: Policy,
}

/// An object-affine operation runtime over objects of type `T`.
pub struct Runtime<T> {
    config: Config,
    objects: Vec<T>,
    bytes: Vec<u64>,
    owner: Vec<AtomicU32>,
    rebalancer: Mutex<Rebalancer>,
    last_run: Option<Snapshot>,
}

/// What `run` needs while workers are alive.
pub(crate) struct RunState {
    cores: usize,
    /// `slots[caller * cores + owner]`.
    slots: Vec<CachePadded<Slot>>,
    pub(crate) counters: Counters,
    pub(crate) async_mail: AsyncMail,
    finished: AtomicUsize,
    clock: Clock,
}

/// A worker's handle inside `Runtime::run`: the way to start operations.
pub struct Worker<'a, T> {
    rt: &'a Runtime<T>,
    pub(crate) run: &'a RunState,
    pub(crate) index: usize,
    /// Per owner: the async slots this worker holds (bit i = slot i).
    pub(crate) async_claimed: Vec<Cell<u32>>,
    /// Futures that found no free async slot.
    pub(crate) slot_waiters: RefCell<Vec<std::task::Waker>>,
    /// The doorbell count up to which async requests to this worker were served.
    async_seen: Cell<u64>,
    /// A worker is bound to its thread.
    _not_send: PhantomData<*const ()>,
}

/// The state left by a rebalancing period and by a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    pub snapshot: Snapshot,
    pub steps: Vec<Step>,
}

impl<T: Sync> Runtime<T> {
    /// A runtime with no objects yet.
    pub fn new(config: Config) -> Result<Self> {
        if config.cpus.is_empty() {
            return Err(Error::input("o2 runtime: at least one cpu is needed"));
        }
        if config.capacity.cores() != config.cpus.len() {
            return Err(Error::input(format!(
                "o2 runtime: cache capacity describes {} cores but {} cpus were given",
                config.capacity.cores(),
                config.cpus.len()
            )));
        }
        config.capacity.validate()?;
        Ok(Runtime {
            rebalancer: Mutex::new(Rebalancer::new(config.policy.clone(), 0)),
            config,
            objects: Vec::new(),
            bytes: Vec::new(),
            owner: Vec::new(),
            last_run: None,
        })
    }

    /// Registers an object of `bytes` bytes (what it occupies in a cache).
    pub fn add_object(&mut self, data: T, bytes: u64) -> ObjId {
        self.objects.push(data);
        self.bytes.push(bytes);
        self.owner.push(AtomicU32::new(UNASSIGNED));
        *self.rebalancer.get_mut().unwrap_or_else(|e| e.into_inner()) =
            Rebalancer::new(self.config.policy.clone(), self.objects.len());
        (self.objects.len() - 1) as ObjId
    }

    /// Number of workers (one per CPU given).
    pub fn cores(&self) -> usize {
        self.config.cpus.len()
    }

    /// Number of registered objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object is registered.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The data of object `id` (panics on an unknown id, like indexing).
    pub fn object(&self, id: ObjId) -> &T {
        &self.objects[id as usize]
    }

    /// The cache footprint object `id` was registered with.
    pub fn bytes(&self, id: ObjId) -> u64 {
        self.bytes[id as usize]
    }

    /// The core (worker index) that owns `id`, if any.
    pub fn owner(&self, id: ObjId) -> Option<usize> {
        let o = self.owner[id as usize].load(Ordering::Relaxed);
        (o != UNASSIGNED).then_some(o as usize)
    }

    /// Sets or clears the owner of `id` (safe while a run is in progress).
    pub fn assign(&self, id: ObjId, core: Option<usize>) -> Result<()> {
        if id as usize >= self.objects.len() {
            return Err(Error::input(format!("o2: no object {id}")));
        }
        let v = match core {
            Some(c) if c < self.cores() => c as u32,
            Some(c) => {
                return Err(Error::input(format!(
                    "o2: core {c} out of range (runtime has {})",
                    self.cores()
                )))
            }
            None => UNASSIGNED,
        };
        self.owner[id as usize].store(v, Ordering::Relaxed);
        Ok(())
    }

    /// Which source the monitoring takes fetch costs from.
    pub fn cost_source(&self) -> CostSource {
        CostSource::OperationTime
    }

    /// Counters of the last finished run.
    pub fn last_run(&self) -> Option<&Snapshot> {
        self.last_run.as_ref()
    }

    /// Runs `body` once on every worker, each pinned to its CPU, and returns their
    /// results in worker order. Rebalancing runs every `rebalance_every` meanwhile.
    /// A panic in `body` or in an operation is re-raised here after all workers stop.
    pub fn run<R, F>(&mut self, body: F) -> Result<(Vec<R>, RunReport)>
    where
        R: Send,
        F: Fn(&Worker<'_, T>) -> R + Sync,
    {
        let cores = self.cores();
        let state = RunState {
            cores,
            slots: (0..cores * cores)
                .map(|_| CachePadded::new(Slot::new()))
                .collect(),
            counters: Counters::new(cores, self.objects.len()),
            async_mail: AsyncMail::new(cores),
            finished: AtomicUsize::new(0),
            clock: Clock::new(),
        };
        self.rebalancer
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .new_run();
        let rt: &Runtime<T> = self;
        let stop_monitor = AtomicBool::new(false);
        let (results, steps) = std::thread::scope(|s| {
            let monitor = rt.config.rebalance_every.map(|period| {
                let (state, stop) = (&state, &stop_monitor);
                s.spawn(move || rt.monitor(state, period, stop))
            });
            let workers: Vec<_> = (0..cores)
                .map(|index| {
                    let (state, body) = (&state, &body);
                    s.spawn(move || rt.worker_main(state, index, body))
                })
                .collect();
            let results: Vec<_> = workers.into_iter().map(|h| h.join()).collect();
            stop_monitor.store(true, Ordering::Relaxed);
            let steps = monitor.map(|m| m.join()).unwrap_or(Ok(Vec::new()));
            (results, steps)
        });
        let snapshot = state.counters.snapshot(&state.clock);
        self.last_run = Some(snapshot.clone());
        let mut out = Vec::with_capacity(cores);
        for r in results {
            match r {
                Ok(Ok(v)) => out.push(v),
                Ok(Err(e)) => return Err(e),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        let steps = steps.unwrap_or_else(|p| std::panic::resume_unwind(p));
        Ok((out, RunReport { snapshot, steps }))
    }

    /// One monitoring period now, on the last finished run's counters (for callers
    /// that drive placement themselves between runs).
    pub fn rebalance_once(&self, snapshot: &Snapshot) -> Step {
        self.apply(snapshot)
    }

    fn apply(&self, snapshot: &Snapshot) -> Step {
        let owners: Vec<Option<usize>> = (0..self.len() as ObjId).map(|o| self.owner(o)).collect();
        let step = self
            .rebalancer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .step(snapshot, &owners, &self.bytes, &self.config.capacity);
        for &(o, c) in &step.moves {
            let v = c.map_or(UNASSIGNED, |c| c as u32);
            self.owner[o as usize].store(v, Ordering::Relaxed);
        }
        step
    }

    fn monitor(&self, state: &RunState, period: Duration, stop: &AtomicBool) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut next = Instant::now() + period;
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now < next {
                std::thread::sleep((next - now).min(Duration::from_millis(5)));
                continue;
            }
            next += period;
            let snap = state.counters.snapshot(&state.clock);
            steps.push(self.apply(&snap));
        }
        steps
    }

    fn worker_main<R, F>(&self, state: &RunState, index: usize, body: &F) -> Result<R>
    where
        F: Fn(&Worker<'_, T>) -> R,
    {
        let pinned = pin_current_thread(&[self.config.cpus[index]]);
        let w = Worker {
            rt: self,
            run: state,
            index,
            async_claimed: (0..state.cores).map(|_| Cell::new(0)).collect(),
            slot_waiters: RefCell::new(Vec::with_capacity(ASYNC_SLOTS)),
            async_seen: Cell::new(0),
            _not_send: PhantomData,
        };
        let out = match pinned {
            Ok(()) => Some(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                || body(&w),
            ))),
            Err(_) => None,
        };
        // Keep serving until every worker is done: others may still delegate to us.
        state.finished.fetch_add(1, Ordering::AcqRel);
        let mut spins = 0u32;
        while state.finished.load(Ordering::Acquire) < state.cores {
            if w.serve() {
                spins = 0;
            } else {
                backoff(&mut spins);
            }
        }
        match out {
            None => pinned.map(|()| unreachable!("pinning failed but returned Ok")),
            Some(Ok(v)) => Ok(v),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        }
    }
}

/// Spin briefly, then give the CPU away: on a shared or oversubscribed machine the
/// owner we wait for may need our core to run at all.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 2048 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

impl<T: Sync> Worker<'_, T> {
    /// This worker's index (0..cores).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Number of workers in this run.
    pub fn cores(&self) -> usize {
        self.run.cores
    }

    /// The runtime this worker belongs to (e.g. to `assign` objects during a run).
    pub fn runtime(&self) -> &Runtime<T> {
        self.rt
    }

    /// Runs operation `f` on object `obj` on the core that owns it (here if none).
    /// `f` and its result cross to the owner's thread, hence `Send`.
    pub fn on<R, F>(&self, obj: ObjId, f: F) -> R
    where
        F: FnOnce(&T) -> R + Send,
        R: Send,
    {
        self.serve();
        match self.delegate_to(obj) {
            None => self.run_here(obj, f),
            Some(owner) => self.delegate(obj, owner, f),
        }
    }

    /// The core an operation on `obj` must move to; `None` if it runs here.
    pub(crate) fn delegate_to(&self, obj: ObjId) -> Option<usize> {
        let owner = self.rt.owner[obj as usize].load(Ordering::Relaxed) as usize;
        (owner != self.index && owner < self.run.cores).then_some(owner)
    }

    /// Runs `f` on `obj` on this core, timed for the monitoring.
    pub(crate) fn run_here<R, F: FnOnce(&T) -> R>(&self, obj: ObjId, f: F) -> R {
        let start = ticks();
        let r = f(&self.rt.objects[obj as usize]);
        let owned = self.rt.owner(obj) == Some(self.index);
        self.run
            .counters
            .record_op(self.index, obj, owned, ticks().wrapping_sub(start));
        r
    }

    fn delegate<R, F>(&self, obj: ObjId, owner: usize, f: F) -> R
    where
        F: FnOnce(&T) -> R + Send,
        R: Send,
    {
        let slot = &self.run.slots[self.index * self.run.cores + owner];
        // The closure and its result travel in the slot's line when they fit.
        let mut on_stack = MaybeUninit::<Env<F, R>>::uninit();
        let env: *mut Env<F, R> = slot.inline_env().unwrap_or(on_stack.as_mut_ptr());
        // SAFETY: no request is in flight, so the inline area is ours; `on_stack` is
        // ours anyway.
        unsafe { env.write(Env::new(f)) };
        let start = ticks();
        // SAFETY: `env` (inline or on this frame) stays valid until the slot is
        // answered, which happens before this function returns or unwinds;
        // `call_op::<T, F, R>` is the matching trampoline.
        let ticket = unsafe { slot.post(call_op::<T, F, R>, env as *mut (), obj) };
        let mut spins = 0u32;
        loop {
            match slot.answer(ticket) {
                Answer::Done => break,
                // The operation was consumed by its unwinding; nothing is left to drop.
                Answer::Panicked => {
                    panic!("o2: operation on object {obj} panicked on core {owner}")
                }
                Answer::Pending => self.wait_serving(&mut spins, owner),
            }
        }
        self.run
            .counters
            .record_delegation(self.index, ticks().wrapping_sub(start));
        // SAFETY: answered without a panic: the operation ran once and left its result.
        unsafe { Env::take_result(env) }
    }

    /// One round of waiting for `owner`'s answer: serve what others posted here, else
    /// back off. Now and then, wake `owner` in case it is parked in an executor
    /// awaiting answers of its own (it serves only when polled then).
    pub(crate) fn wait_serving(&self, spins: &mut u32, owner: usize) {
        if self.serve() {
            *spins = 0;
            return;
        }
        if *spins % 64 == 63 {
            self.run.async_mail.wake_parked(owner);
        }
        backoff(spins);
    }

    /// Runs every operation other cores posted to this one; true if there was any.
    pub fn serve(&self) -> bool {
        let cores = self.run.cores;
        let mut any = false;
        for caller in 0..cores {
            if caller == self.index {
                continue;
            }
            let slot = &self.run.slots[caller * cores + self.index];
            let objects = &self.rt.objects;
            if let Served::Ran { object, start } =
                slot.serve(|o| &objects[o as usize] as *const T as *const ())
            {
                // Timed after the answer is out: the caller does not wait for this.
                let op = ticks().wrapping_sub(start);
                let owned = self.rt.owner(object) == Some(self.index);
                self.run
                    .counters
                    .record_served(self.index, object, owned, op);
                any = true;
            }
        }
        any | self.serve_async()
    }

    /// Runs the async requests posted to this worker, if its doorbell rang since the
    /// last scan, and wakes their futures; true if there was any.
    fn serve_async(&self) -> bool {
        let mail = &self.run.async_mail;
        let rung = mail.rung(self.index);
        if rung == self.async_seen.get() {
            return false;
        }
        self.async_seen.set(rung);
        let objects = &self.rt.objects;
        let mut any = false;
        for caller in (0..self.run.cores).filter(|&c| c != self.index) {
            for i in 0..ASYNC_SLOTS {
                let a = mail.slot(caller, self.index, i);
                match a
                    .slot
                    .serve(|o| &objects[o as usize] as *const T as *const ())
                {
                    Served::Nothing => continue,
                    Served::Ran { object, start } => {
                        a.waker.wake();
                        let op = ticks().wrapping_sub(start);
                        let owned = self.rt.owner(object) == Some(self.index);
                        self.run
                            .counters
                            .record_served(self.index, object, owned, op);
                    }
                    Served::Panicked => a.waker.wake(),
                }
                any = true;
            }
        }
        any
    }
}

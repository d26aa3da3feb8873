//! The progress line and Ctrl-C of a long command (`hetsched simulate`): a thread that
//! draws the runs' [`Progress`] on a terminal and turns a Ctrl-C into a stop request.

use hetsched_core::{Error, Result};
use hetsched_sim::engine::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the watcher looks for Ctrl-C and redraws the progress line.
const WATCH_PERIOD: Duration = Duration::from_millis(100);

/// After how long the progress line appears (on a terminal only).
const SHOW_AFTER: Duration = Duration::from_secs(2);

/// Ctrl-C and the progress line, on a thread of their own while the runs go.
///
/// SIGINT is blocked in this thread before the watcher starts (so in every thread the
/// process starts after it) and taken by the watcher with `sigtimedwait`: no handler
/// runs at an arbitrary point, and the run sees the request at its next look at
/// [`Progress`] (every `WATCH_EVERY` engine events, about a millisecond), then fails
/// with `Error::Interrupted`, which removes its temporary CSV on the way out. A second
/// Ctrl-C (a run that does not look, e.g. stuck writing) ends the process at once, exit
/// 130.
pub struct Watcher {
    pub progress: Arc<Progress>,
    /// The run going on: its index and policy.
    current: Arc<Mutex<(usize, String)>>,
    /// Tasks of the runs before the current one (the progress line counts them all).
    before: Arc<AtomicU64>,
    tasks: u64,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    pub fn start(tasks: u64, runs: usize) -> Result<Watcher> {
        block_sigint()?;
        let progress = Arc::new(Progress::default());
        let current = Arc::new(Mutex::new((0, String::new())));
        let before = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (progress, current, before, done) = (
                progress.clone(),
                current.clone(),
                before.clone(),
                done.clone(),
            );
            let total = tasks.saturating_mul(runs as u64);
            std::thread::Builder::new()
                .name("simulate-watch".into())
                .spawn(move || watch(&progress, &current, &before, &done, total, runs))
                .map_err(|e| Error::runtime(format!("cannot start the progress thread: {e}")))?
        };
        Ok(Watcher {
            progress,
            current,
            before,
            tasks,
            done,
            thread: Some(thread),
        })
    }

    /// Run `i` (policy `p`) starts: the line counts the tasks of the runs before it,
    /// and none of this one yet.
    pub fn running(&self, i: usize, p: &str) {
        self.before
            .store(self.tasks.saturating_mul(i as u64), Ordering::Relaxed);
        for n in [
            &self.progress.events,
            &self.progress.now_ns,
            &self.progress.submitted,
            &self.progress.completed,
            &self.progress.rejected,
        ] {
            n.store(0, Ordering::Relaxed);
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = (i, p.to_string());
    }

    /// The runs are over: the line goes (SIGINT stays blocked: a late Ctrl-C is seen
    /// through [`Progress::stopped`]).
    pub fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// Blocks SIGINT in this thread (and the threads it starts from now on).
fn block_sigint() -> Result<()> {
    // SAFETY: a sigset_t on the stack, initialised by sigemptyset before use.
    let rc = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    match rc {
        0 => Ok(()),
        e => Err(Error::runtime(format!(
            "cannot block SIGINT: {}",
            std::io::Error::from_raw_os_error(e)
        ))),
    }
}

/// Waits up to `timeout` for a SIGINT (blocked in this thread); whether one came.
fn sigint_within(timeout: Duration) -> bool {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a sigset_t on the stack, initialised by sigemptyset; a valid timespec.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) == libc::SIGINT
    }
}

/// The watcher's loop (see [`Watcher`]): `total` tasks over `runs` runs.
fn watch(
    progress: &Progress,
    current: &Mutex<(usize, String)>,
    before: &AtomicU64,
    done: &AtomicBool,
    total: u64,
    runs: usize,
) {
    let started = Instant::now();
    // Hidden until shown; stderr draws only on a terminal.
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:20}] {pos}/{len} tasks done, eta {eta}")
    {
        bar.set_style(style);
    }
    let mut shown = false;
    while !done.load(Ordering::Relaxed) {
        if sigint_within(WATCH_PERIOD) {
            if progress.stopped() {
                bar.finish_and_clear();
                eprintln!("hetsched: interrupted twice: stopped at once (a temporary output file may be left)");
                std::process::exit(130);
            }
            progress.stop();
        }
        if !shown && started.elapsed() >= SHOW_AFTER {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
        let (i, policy) = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let ended =
            progress.completed.load(Ordering::Relaxed) + progress.rejected.load(Ordering::Relaxed);
        bar.set_position(before.load(Ordering::Relaxed) + ended);
        bar.set_message(format!(
            "{policy} ({}/{runs}): {:.0} s sim, {:.1} M events",
            i + 1,
            progress.now_ns.load(Ordering::Relaxed) as f64 * 1e-9,
            progress.events.load(Ordering::Relaxed) as f64 * 1e-6
        ));
    }
    bar.finish_and_clear();
}

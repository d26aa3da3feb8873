//! The paper's applications as simulator tasks.
//!
//! - **MD5 cracking**: brute force over `alphabet^length` words until the target hash
//!   is found; the target's position is drawn uniformly (seeded), so a task's work is
//!   the words up to it. Checkpoints every 500 words on a CPU and 10^9 on the GPU (the
//!   paper's "500 strings" and "1 billion"); meta info affinity CUDA 2, CPU 1;
//!   practically no memory to copy.
//! - **Prime factorisation**: trial division up to √n with (remainder, divisor) as
//!   checkpoint, 1000 divisors per checkpoint; affinity CUDA 1, CPU 1. The numbers are
//!   semiprimes p·q with p < q, so the work is the divisors up to p; p is drawn
//!   log-uniformly (seeded).
//!
//! Rates: CPU rates are this project's measurements (`hetsched bench apps`,
//! docs/apps.md). The GPU has no measurement here (no GPU on this machine): MD5 runs
//! [`MD5_GPU_RATIO`]× a CPU core on the GTX 480 (a published CUDA MD5 search ran 36× a
//! CPU core on an 8800 Ultra, and the GTX 480 has ~2.8× its integer throughput) and
//! prime trial division at an *assumed* [`PRIME_GPU_RATIO`] = 1× a CPU core (64-bit `%`
//! is emulated on that GPU; the paper gives no speed, only affinities, so Fig. 5 sweeps
//! it). One GPU checkpoint of prime = 1000 divisors per thread processor × 480.
//!
//! Checkpoint size: the paper's checkpoint "is copied to the newly allocated
//! accelerator and copied back" at the end of a time slice, and its size "may be used to
//! re-determine the scheduling granularity". A task's `bytes_out` is its checkpoint size
//! (the same number the live workers send as `MetaInfo::bytes_out`), and the
//! `affinity` policy adds the time to copy it over the unit's link to the granularity.
//! A GPU re-request costs [`GPU_CHECKPOINT_COST_NS`]; switching tasks on the GPU
//! re-transfers the kernel and state, modelled as [`GPU_SWITCH_BYTES`] copied in.

use hetsched_apps::md5::Md5Checkpoint;
use hetsched_apps::prime::{PrimeConfig, PrimeFactoriser};
use hetsched_core::machine::UnitType;
use hetsched_core::task::{Affinity, PerUnitType, TaskId};
use hetsched_sim::SimTask as Task;
use hetsched_worker::Worker as _;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

hetsched_study::assumptions! { "beisel";
    /// MD5 words per second on one CPU core: this project's measurement (`hetsched bench
    /// apps`, docs/apps.md); the paper gives no rate.
    pub const MD5_CPU_WORDS_PER_S: f64 = 2.03e6;
    /// Prime divisors per second on one CPU core: this project's measurement (`hetsched
    /// bench apps`, docs/apps.md); the paper gives no rate.
    pub const PRIME_CPU_DIVISORS_PER_S: f64 = 1.75e8;
    /// GTX 480 speed over one CPU core for MD5: our choice from published figures (a CUDA
    /// MD5 search ran 36x a CPU core on an 8800 Ultra, and the GTX 480 has ~2.8x its
    /// integer throughput); the paper gives only the affinities (CUDA 2, CPU 1).
    pub const MD5_GPU_RATIO: f64 = 100.0;
    /// GTX 480 speed over one CPU core for 64-bit trial division (emulated `%` on that
    /// GPU): the paper gives affinities 1:1, not speeds; Fig. 5 sweeps it from 1x to 128x.
    pub const PRIME_GPU_RATIO: f64 = 1.0;
    /// Cost of one re-request on the GPU (kernel launch, checkpoint copy, system call),
    /// ns; the paper gives none. It sets the size of Fig. 6's overhead.
    pub const GPU_CHECKPOINT_COST_NS: u64 = 200_000;
    /// Bytes copied to the GPU when a task (re)starts there, kernel image and state
    /// (1 ms at the preset's 8 GB/s); the paper gives none. It sets the size of Fig. 6's
    /// overhead.
    pub const GPU_SWITCH_BYTES: u64 = 8_000_000;
    /// Smallest number of divisors a prime task tests (its smaller factor; log-uniform,
    /// 6 ms on a CPU core): the paper does not give its numbers.
    pub const PRIME_MIN_DIVISORS: f64 = 1e6;
    /// Largest number of divisors a prime task tests (2 min on a CPU core): the paper
    /// does not give its numbers; the work of factorising random numbers by trial
    /// division is heavy-tailed.
    pub const PRIME_MAX_DIVISORS: f64 = 2e10;
    /// MD5 words a CPU thread searches between two checkpoints: the paper's setup, §V-1
    /// ("500 strings").
    pub const MD5_CPU_CHECKPOINT_WORDS: f64 = 500.0;
    /// MD5 words the GPU searches between two checkpoints: the paper's setup, §V-1
    /// ("1 billion").
    pub const MD5_GPU_CHECKPOINT_WORDS: f64 = 1e9;
    /// Prime divisors tested between two checkpoints on a CPU core, and per thread
    /// processor on the GPU: our choice (the paper gives no interval for prime
    /// factorisation).
    pub const PRIME_CHECKPOINT_DIVISORS: f64 = 1000.0;
    /// GTX 480 thread processors: the paper's setup, §VI (test system: "480
    /// thread-processors"); a GPU prime checkpoint covers `PRIME_CHECKPOINT_DIVISORS` on
    /// each.
    pub const GPU_THREADS: f64 = 480.0;
    /// MD5's affinity to the GPU in its meta info: the paper's setup, §V (MD5: "CUDA 2,
    /// CPU 1").
    pub const MD5_GPU_AFFINITY: f64 = 2.0;
    /// Prime factorisation's affinity to the GPU in its meta info: the paper's setup, §V
    /// (prime factorisation: CUDA 1, CPU 1).
    pub const PRIME_GPU_AFFINITY: f64 = 1.0;
    /// Both applications' affinity to a CPU core when they offer a CPU implementation:
    /// the paper's setup, §V (CPU 1 for both).
    pub const CPU_AFFINITY: f64 = 1.0;
    /// Letters of the MD5 search alphabet (a–z0–9): our choice; the paper does not give
    /// the alphabet of its searches.
    pub const MD5_ALPHABET: u32 = 36;
    /// Length of the MD5 search words (36^6 words: up to 18 min on a CPU core): our
    /// choice; the paper does not give the length of its searches.
    pub const MD5_LENGTH: u32 = 6;
}

/// The applications.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum App {
    Md5,
    Prime,
}

/// Which implementations a task offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Devices {
    /// CPU and GPU (the paper's default).
    Both,
    /// GPU only (CPU affinity 0): the paper's "on the GPU" runs (Figures 5–7).
    GpuOnly,
}

fn secs_to_ns(s: f64) -> u64 {
    (s * 1e9).round().max(1.0) as u64
}

/// Checkpoint size of `app` in bytes: what the live worker declares in its meta info.
pub fn checkpoint_bytes(app: App) -> u64 {
    match app {
        App::Md5 => std::mem::size_of::<Md5Checkpoint>() as u64,
        App::Prime => {
            PrimeFactoriser::new(PrimeConfig::default()).map_or(0, |w| w.meta_info().bytes_out)
        }
    }
}

/// A task of `app` doing `items` words (MD5) or divisors (prime), at the default GPU
/// speeds.
pub fn task(id: TaskId, app: App, items: f64, devices: Devices) -> Task {
    let ratio = match app {
        App::Md5 => MD5_GPU_RATIO,
        App::Prime => PRIME_GPU_RATIO,
    };
    task_with_gpu_ratio(id, app, items, devices, ratio)
}

/// [`task`] with the GPU running `ratio`× one CPU core.
pub fn task_with_gpu_ratio(id: TaskId, app: App, items: f64, devices: Devices, ratio: f64) -> Task {
    let (cpu_rate, cpu_cp, gpu_cp, aff_gpu) = match app {
        App::Md5 => (
            MD5_CPU_WORDS_PER_S,
            MD5_CPU_CHECKPOINT_WORDS,
            MD5_GPU_CHECKPOINT_WORDS,
            MD5_GPU_AFFINITY,
        ),
        App::Prime => (
            PRIME_CPU_DIVISORS_PER_S,
            PRIME_CHECKPOINT_DIVISORS,
            PRIME_CHECKPOINT_DIVISORS * GPU_THREADS,
            PRIME_GPU_AFFINITY,
        ),
    };
    let mut t = Task::cpu(id, items / cpu_rate, 0);
    t.kind = match app {
        App::Md5 => "md5".into(),
        App::Prime => "prime".into(),
    };
    let mut affinity = Affinity::default();
    affinity.set(UnitType::Gpu, aff_gpu);
    if devices == Devices::Both {
        affinity.set(UnitType::Cpu, CPU_AFFINITY);
    }
    t.affinity = affinity;
    let mut speed = PerUnitType::default();
    speed.set(UnitType::Gpu, ratio);
    t.model.speed = speed;
    let mut cp = PerUnitType::default();
    cp.set(UnitType::Cpu, secs_to_ns(cpu_cp / cpu_rate));
    cp.set(UnitType::Gpu, secs_to_ns(gpu_cp / (cpu_rate * ratio)));
    t.checkpoint_ns = cp;
    t.bytes_in = GPU_SWITCH_BYTES;
    t.bytes_out = checkpoint_bytes(app);
    t
}

/// Sizes of a batch, drawn from a seeded stream.
pub struct Sizes(ChaCha8Rng);

impl Sizes {
    pub fn new(seed: u64) -> Sizes {
        Sizes(ChaCha8Rng::seed_from_u64(seed))
    }
    /// Words searched until the target of a uniformly placed hash over `alphabet^length`.
    pub fn md5_words(&mut self, alphabet: u32, length: u32) -> f64 {
        let space = (alphabet as f64).powi(length as i32);
        (self.0.random::<f64>() * space).max(1.0)
    }
    /// Divisors tested for a semiprime whose smaller factor is log-uniform in [lo, hi].
    pub fn prime_divisors(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.0.random::<f64>() * (hi.ln() - lo.ln())).exp()
    }
}

/// The Fig. 4 / demo mix: `md5` MD5 tasks (length 6, 36 letters) and `prime` prime
/// tasks (smaller factor log-uniform in [`PRIME_MIN_DIVISORS`, `PRIME_MAX_DIVISORS`]), interleaved in a
/// seeded order, all arriving at 0. `scale` shrinks every task (tests).
pub fn mix(md5: usize, prime: usize, devices: Devices, seed: u64, scale: f64) -> Vec<Task> {
    let mut sizes = Sizes::new(seed);
    let mut apps: Vec<App> = std::iter::repeat_n(App::Md5, md5)
        .chain(std::iter::repeat_n(App::Prime, prime))
        .collect();
    // Deterministic interleaving: Fisher–Yates with the same stream.
    for i in (1..apps.len()).rev() {
        let j = sizes.0.random_range(0..=i);
        apps.swap(i, j);
    }
    apps.into_iter()
        .enumerate()
        .map(|(i, app)| {
            let items = match app {
                App::Md5 => sizes.md5_words(MD5_ALPHABET, MD5_LENGTH),
                App::Prime => sizes.prime_divisors(PRIME_MIN_DIVISORS, PRIME_MAX_DIVISORS),
            };
            task(i as TaskId, app, items * scale, devices)
        })
        .collect()
}

/// Fig. 3: `n` MD5 tasks (length 6, 36 letters), all at 0.
pub fn md5_batch(n: usize, seed: u64, scale: f64) -> Vec<Task> {
    let mut sizes = Sizes::new(seed);
    (0..n)
        .map(|i| {
            task(
                i as TaskId,
                App::Md5,
                sizes.md5_words(MD5_ALPHABET, MD5_LENGTH) * scale,
                Devices::Both,
            )
        })
        .collect()
}

/// Fig. 5: `n` prime tasks, all at 0, the GPU running `gpu_ratio`× a CPU core.
pub fn prime_batch(n: usize, devices: Devices, seed: u64, scale: f64, gpu_ratio: f64) -> Vec<Task> {
    let mut sizes = Sizes::new(seed);
    (0..n)
        .map(|i| {
            let items = sizes.prime_divisors(PRIME_MIN_DIVISORS, PRIME_MAX_DIVISORS) * scale;
            task_with_gpu_ratio(i as TaskId, App::Prime, items, devices, gpu_ratio)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_task_follows_the_measured_rates_and_intervals() {
        let t = task(0, App::Md5, 2.03e6 * 10.0, Devices::Both);
        assert!((t.model.work_s - 10.0).abs() < 1e-9);
        // 500 words at 2.03e6/s on a CPU; 1e9 words at 2.03e8/s on the GPU.
        assert_eq!(t.checkpoint_ns.get(UnitType::Cpu), 246_305);
        assert_eq!(t.checkpoint_ns.get(UnitType::Gpu), 4_926_108_374);
        // The checkpoint travels back: its size is the task's bytes out.
        assert_eq!(t.bytes_out, 32);
        assert_eq!(task(2, App::Prime, 1e9, Devices::Both).bytes_out, 800);
        assert_eq!(t.affinity.get(UnitType::Gpu), 2.0);
        let g = task(1, App::Prime, 1e9, Devices::GpuOnly);
        assert!(!g.affinity.runs_on(UnitType::Cpu));
        assert_eq!(g.affinity.get(UnitType::Gpu), 1.0);
    }

    #[test]
    fn mixes_are_seeded_and_interleaved() {
        let a = mix(25, 50, Devices::Both, 7, 1.0);
        assert_eq!(a, mix(25, 50, Devices::Both, 7, 1.0));
        assert_ne!(a, mix(25, 50, Devices::Both, 8, 1.0));
        assert_eq!(a.iter().filter(|t| &*t.kind == "md5").count(), 25);
        assert!(a[..25].iter().any(|t| &*t.kind == "prime"));
    }
}

//! Scenario files (`scenarios/*.toml`): a machine, tasks (an explicit list and/or
//! generators), the policies to compare, a seed and an end condition. Users' reference,
//! every key with its unit, default and range: `docs/scenarios.md` (its examples run in
//! `crates/tools/cli/tests/docs_examples.rs`).
//!
//! ```toml
//! machine = "ding"              # any machine spec; relative paths from this file's dir
//! units = "pu"                  # or "core"
//! seed = 1
//! policies = ["fcfs", "cfs", "dmda"]
//! checkpoint_cost_ms = 0.1      # per accelerator checkpoint
//! end = { max_time_s = 60 }     # optional; default: until every task ended
//!                               # (also max_events: an event limit; default none)
//!
//! [[task]]                      # explicit tasks
//! type = "gemm"                 # task type (performance models learn per type)
//! work = 1.0                    # reference seconds (on a capacity-1024 CPU)
//! arrival = 0.0                 # seconds
//! affinity = { cpu = 1, gpu = 4 }   # 0 or absent = no implementation; default cpu = 1
//! speed = { gpu = 8 }           # explicit speed-up over a 1024 CPU (else affinity ratio)
//! bytes_in = 0                  # copied to an accelerator before each run there
//! bytes_out = 0
//! memory_bound = 0.0            # fraction of the work bound by memory, [0, 1]
//! mem_bandwidth_gbs = 0.0       # GB/s its memory-bound part draws alone (0: no sharing)
//! numa_home = 0
//! io_device = "md-n0-0"         # an I/O device of the machine (`hetsched topology`)
//! io_bound = 0.0                # fraction of the work on its I/O path, [0, 1 - memory_bound]
//! first_touch = false           # without numa_home: memory on the first CPU's node
//! memory_bytes = 0              # what a page migration copies (policy `migrate_memory`)
//! instructions_per_s = 0.0      # per reference second: the modelled counters (0: none)
//! llc_mpki = 0.0                # LLC misses per 1,000 instructions (needs the above)
//! weight = 1024
//! checkpoint_ms = { gpu = 10 }  # checkpoint interval per unit type
//! signature = "sig.json"        # or { class, elasticity, miss_rate } (`task_signature`)
//! count = 1                     # copies of this task
//!
//! [[generator]]                 # Poisson arrivals
//! count = 1000
//! rate = 50.0                   # tasks per second
//! start = 0.0
//! size = { dist = "exponential", mean = 0.1 }   # or fixed { value }, uniform { min, max }
//! [[generator.mix]]             # task types, drawn by share
//! type = "gemm"
//! share = 1.0
//! affinity = { cpu = 1, gpu = 4 }
//! ```
//! Or a task graph instead of tasks (`crate::graphs`): its tasks arrive as their
//! predecessors complete, their data moves between memory nodes, and performance models
//! time them.
//! ```toml
//! machine = "starpu:idgraf"     # a StarPU calibration: its machine and its models
//! [graph]
//! algorithm = "cholesky"        # or "lu": StarPU's examples, task for task; "qr": Chameleon's
//! tiles = 8                     # tiles a side
//! tile = 960                    # elements a tile side
//! precision = "single"          # or "double"
//! models = "starpu:idgraf"      # default: the machine's calibration (starpu:HOST machines)
//! durations = "mean"            # or "normal" (seeded by `seed`)
//! fetch = "prefetch"            # or "start": when a task's input copies are issued
//! ```
//! or `[graph] file = "montage.json"`: a WfFormat workflow (`crate::graphs::wfformat`),
//! its tasks timed by the runtimes it measured, or `"pipeline.dot"`, a graph written in
//! DOT (`crate::graphs::dot`); or a workflow written in place:
//! `[graph] tasks = [{ id = "a", name = "k", runtime = 1.0, parents = [], inputs = [],
//! outputs = ["f"] }]`, `files = [{ id = "f", bytes = 1000 }]`.
//! Exponential sizes and inter-arrival times are drawn by inverse-transform sampling
//! from a seeded ChaCha8 stream (one per generator), so same file + seed = same tasks.
//!
//! Every number is checked against a range ([`limits`], listed in `docs/scenarios.md`)
//! before a run starts, so that no file makes the simulator
//! overflow its nanosecond clock, spin on nanosecond slices or allocate without bound:
//! tasks are streamed (a `count` is not expanded into a list).
//!
//! # What bounds a run
//!
//! A run is bounded where it costs, not by a count of engine events. An event limit is
//! a proxy that fits no workload: a task under fcfs takes two events, under cfs or
//! eevdf one per slice (a 1 ms slice: a thousand per second of work) plus the balance
//! ticks of the whole run, so a limit loose enough for a long preemptive run lets a
//! burst of arrivals fill the memory, and one tight enough for memory stops ordinary
//! studies (10^6 events stopped a 50,000-task Poisson run under cfs after 0.05 s). So:
//!
//! - **memory** grows with the tasks live at once (arrived, not ended: the engine's
//!   task store and queues, a recorder's outcome in the making) and with a record kept
//!   whole (`--trace`, Python's `simulate`): [`limits::MAX_LIVE_TASKS`] and
//!   [`limits::MAX_KEPT_EVENTS`], checked as the run goes (the engine's
//!   `Config::max_live_tasks`, `Config::max_kept_events`); finished tasks are dropped, so
//!   a long run of few live tasks costs no more than a short one;
//! - **what is generated** (the tasks, the per-task CSV rows, the wall time they take)
//!   grows with the run's tasks: [`limits::MAX_RUN_TASKS`], checked before the run
//!   from the counts, or, with `end.max_time_s`, from the tasks expected to arrive by
//!   then ([`Scenario::check_limits`]);
//! - **wall time** is left to the user, who sees it: `hetsched simulate` draws a progress
//!   line on a terminal after 2 s and stops cleanly on Ctrl-C (nothing truncated left,
//!   exit 130), through the engine's `Config::watch`. A limit on wall time would make
//!   the same scenario succeed on one machine and fail on another.
//!
//! `end.max_events` and `--max-events` remain, as limits a user states; there is no
//! default.

use crate::task::SimTask as Task;
use hetsched_core::error::{in_range, num};
use hetsched_core::machine::{Machine, UnitGranularity, UnitType};
use hetsched_core::task::PerUnitType;
use hetsched_core::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    machine: String,
    #[serde(default)]
    units: Option<UnitGranularity>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    policies: Vec<String>,
    #[serde(default)]
    checkpoint_cost_ms: f64,
    #[serde(default)]
    end: Option<End>,
    #[serde(default, rename = "task")]
    tasks: Vec<TaskSpec>,
    #[serde(default, rename = "generator")]
    generators: Vec<GeneratorSpec>,
    #[serde(default)]
    graph: Option<GraphSpec>,
}

/// A scenario's task graph (see the module documentation).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphSpec {
    #[serde(default)]
    algorithm: Option<Algorithm>,
    #[serde(default)]
    tiles: Option<u32>,
    #[serde(default)]
    tile: Option<u32>,
    #[serde(default)]
    file: Option<String>,
    /// A workflow written inline (`crate::graphs::wfformat::build`).
    #[serde(default)]
    tasks: Option<Vec<crate::graphs::wfformat::WorkflowTask>>,
    #[serde(default)]
    files: Vec<crate::graphs::wfformat::WorkflowFile>,
    #[serde(default)]
    precision: Option<PrecisionSpec>,
    #[serde(default)]
    models: Option<String>,
    #[serde(default)]
    durations: DurationsSpec,
    #[serde(default)]
    fetch: Fetch,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Algorithm {
    Cholesky,
    Lu,
    Qr,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PrecisionSpec {
    #[default]
    Single,
    Double,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum DurationsSpec {
    #[default]
    Mean,
    Normal,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Fetch {
    #[default]
    Prefetch,
    Start,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct End {
    #[serde(default)]
    max_time_s: Option<f64>,
    #[serde(default)]
    max_events: Option<u64>,
}

/// Per-unit-type numbers in a file: `{ cpu = 1, gpu = 4 }`.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PerType {
    cpu: Option<f64>,
    gpu: Option<f64>,
    opencl: Option<f64>,
    coprocessor: Option<f64>,
}

impl PerType {
    fn values(&self) -> [(UnitType, Option<f64>); 4] {
        [
            (UnitType::Cpu, self.cpu),
            (UnitType::Gpu, self.gpu),
            (UnitType::OpenCl, self.opencl),
            (UnitType::CoProcessor, self.coprocessor),
        ]
    }
}

/// What a task and a generator's mix entry share.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kind {
    #[serde(default, rename = "type")]
    name: Option<String>,
    #[serde(default)]
    affinity: Option<PerType>,
    #[serde(default)]
    speed: Option<PerType>,
    #[serde(default)]
    bytes_in: u64,
    #[serde(default)]
    bytes_out: u64,
    #[serde(default)]
    memory_bound: f64,
    #[serde(default)]
    mem_bandwidth_gbs: f64,
    #[serde(default)]
    numa_home: Option<u32>,
    #[serde(default)]
    io_device: Option<String>,
    #[serde(default)]
    io_bound: f64,
    #[serde(default)]
    first_touch: bool,
    #[serde(default)]
    memory_bytes: u64,
    #[serde(default)]
    instructions_per_s: f64,
    #[serde(default)]
    llc_mpki: f64,
    #[serde(default)]
    weight: Option<u32>,
    #[serde(default)]
    checkpoint_ms: Option<PerType>,
    /// A signature file's path or an inline prediction ([`crate::task_signature`]).
    #[serde(default)]
    signature: Option<toml::Value>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSpec {
    work: f64,
    #[serde(default)]
    arrival: f64,
    #[serde(default = "one")]
    count: u64,
    #[serde(flatten)]
    kind: Kind,
}

fn one() -> u64 {
    1
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeneratorSpec {
    count: u64,
    rate: f64,
    #[serde(default)]
    start: f64,
    size: Size,
    mix: Vec<MixSpec>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MixSpec {
    share: f64,
    #[serde(flatten)]
    kind: Kind,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
enum Size {
    Fixed { value: f64 },
    Uniform { min: f64, max: f64 },
    Exponential { mean: f64 },
}

/// A task template after validation (everything but id, work and arrival).
#[derive(Clone, Debug)]
struct Template(Task);

/// A validated scenario, ready to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The file it came from (names it in errors and outputs).
    pub origin: String,
    pub name: String,
    pub machine: Machine,
    pub seed: u64,
    pub policies: Vec<String>,
    pub config: crate::Config,
    /// Explicit tasks in arrival order, each with its number of copies.
    explicit: Vec<(Task, u64)>,
    generators: Vec<Generator>,
    /// A task graph, its tasks timed by performance models.
    pub graph: Option<std::sync::Arc<crate::graphs::GraphTasks>>,
}

/// The accepted ranges of scenario fields. Times stay below the simulator's horizon
/// ([`crate::engine::HORIZON_NS`]) and sizes keep its arithmetic finite.
pub mod limits {
    /// A scenario file, bytes (the examples take 1–3 KiB; tasks in bulk are a `count`
    /// or a generator, not a list).
    pub const MAX_FILE_BYTES: u64 = 16 << 20;
    /// Arrivals, generator starts and `end.max_time_s`, in seconds (about 31 years).
    pub const MAX_TIME_S: f64 = 1e9;
    /// A task's work, in reference seconds (about 11 days on a capacity-1024 CPU).
    pub const MAX_WORK_S: f64 = 1e6;
    /// Affinities, speed-ups and mix shares.
    pub const MAX_FACTOR: f64 = 1e6;
    /// `mem_bandwidth_gbs` (1 PB/s).
    pub const MAX_BANDWIDTH_GBS: f64 = 1e6;
    /// `bytes_in`, `bytes_out` and `memory_bytes` (1 PB).
    pub const MAX_BYTES: u64 = 1_000_000_000_000_000;
    /// `instructions_per_s` per reference second (10^12: a thousand 1 GHz cores' worth).
    pub const MAX_INSTRUCTIONS_PER_S: f64 = 1e12;
    /// `llc_mpki`: at most one miss per instruction.
    pub const MAX_LLC_MPKI: f64 = 1000.0;
    /// Accelerator checkpoint intervals (0 = none) in ms: 1 µs to 1000 s.
    pub const CHECKPOINT_MS: (f64, f64) = (1e-3, 1e6);
    /// `checkpoint_cost_ms`.
    pub const MAX_CHECKPOINT_COST_MS: f64 = 1e6;
    /// Generator rates, tasks per second.
    pub const RATE: (f64, f64) = (1e-6, 1e9);
    /// Copies of a task or tasks of a generator (a generator that `end.max_time_s` cuts
    /// short may count more than a run takes: [`MAX_RUN_TASKS`]).
    pub const MAX_COUNT: u64 = 1_000_000_000_000;
    /// The tasks of one run: the sum of the counts, or with `end.max_time_s` those
    /// expected to arrive by then. What is generated grows with it: a row of the
    /// per-task CSV each (about 120 bytes: 12 GB a run at the limit) and the wall time
    /// (a release build runs 1–5 M tasks a second under fcfs and cfs, so the limit is
    /// half a minute to a few minutes a policy). 500 times the largest study in
    /// `docs/` (the 200,000-task M/G/1 runs), 100 times `bench sim`'s runs.
    pub const MAX_RUN_TASKS: u64 = 100_000_000;
    /// Tasks live at once (arrived, not ended), what a run's memory grows with: at most
    /// [`crate::engine::LIVE_TASK_BYTES`] each, so about 1.2 GiB at the limit. Ten times
    /// the burst of `scenarios/bench/wait1m.toml` (10^6 tasks waiting at once); a machine
    /// that keeps up with its arrivals holds a few per unit.
    pub const MAX_LIVE_TASKS: u64 = 10_000_000;
    /// Events a run record kept whole may hold, all the runs of one command together
    /// (`hetsched simulate --trace` keeps every run's record to write the trace): 48
    /// bytes each in the record, so about 460 MiB; four events a task under fcfs (about
    /// 2.5 × 10^6 tasks), more under preemptive policies (a stop and a start a slice).
    pub const MAX_KEPT_EVENTS: u64 = 10_000_000;
    /// The largest event limit one may ask for (`end.max_events`, `--max-events`).
    pub const MAX_EVENTS: u64 = 1_000_000_000_000;
}

#[derive(Clone, Debug)]
struct Generator {
    count: u64,
    rate: f64,
    start: f64,
    size: Size,
    mix: Vec<(f64, Template)>,
}

/// toml's messages span several lines (with a source excerpt); keep them to one.
fn one_line(msg: &str) -> String {
    let lines: Vec<&str> = msg
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with('|') && !l.chars().all(|c| c == '^' || c == ' ')
        })
        .filter(|l| !l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    lines.join(": ")
}

impl Scenario {
    /// Reads and validates a scenario file: a regular file (a FIFO or a device is
    /// refused at once) of at most [`limits::MAX_FILE_BYTES`].
    pub fn load(path: &Path) -> Result<Scenario> {
        let text = hetsched_util::files::read_text(path, "a scenario", limits::MAX_FILE_BYTES)?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let name = path
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        Self::parse(&text, &path.display().to_string(), &name, &base)
    }

    /// Parses scenario text; `origin` names it in errors, `base` resolves relative paths.
    pub fn parse(text: &str, origin: &str, name: &str, base: &Path) -> Result<Scenario> {
        let file: File = toml::from_str(text)
            .map_err(|e| Error::input(format!("{origin}: {}", one_line(&e.to_string()))))?;
        let bad = |key: String, what: String| Error::input(format!("{origin}: {key}: {what}"));

        let spec = resolve(&file.machine, base);
        let machine = hetsched_topology::load(&spec, file.units.unwrap_or_default())
            .map_err(|e| bad("machine".into(), e.to_string()))?;
        for (i, p) in file.policies.iter().enumerate() {
            hetsched_policies::check(p)
                .map_err(|e| bad(format!("policies[{i}]"), e.to_string()))?;
        }
        let field = |key: &str| format!("{origin}: {key}");
        let range = |key: &str, v: f64, lo: f64, hi: f64| in_range(field(key), v, lo, hi);
        let count = |key: &str, n: u64| {
            if n <= limits::MAX_COUNT {
                Ok(n)
            } else {
                Err(Error::input(format!(
                    "{}: expected an integer in [0, {}], got {n}",
                    field(key),
                    limits::MAX_COUNT
                )))
            }
        };
        range(
            "checkpoint_cost_ms",
            file.checkpoint_cost_ms,
            0.0,
            limits::MAX_CHECKPOINT_COST_MS,
        )?;
        let end = file.end.clone().unwrap_or(End {
            max_time_s: None,
            max_events: None,
        });
        let max_time_ns = match end.max_time_s {
            Some(t) => Some(secs(range("end.max_time_s", t, 0.0, limits::MAX_TIME_S)?)),
            None => None,
        };
        if let Some(n) = end.max_events {
            if !(1..=limits::MAX_EVENTS).contains(&n) {
                return Err(Error::input(format!(
                    "{}: expected an integer in [1, {}], got {n}",
                    field("end.max_events"),
                    limits::MAX_EVENTS
                )));
            }
        }

        let mut explicit = Vec::new();
        for (i, t) in file.tasks.iter().enumerate() {
            let key = format!("task[{i}]");
            range(&format!("{key}.work"), t.work, 0.0, limits::MAX_WORK_S)?;
            range(
                &format!("{key}.arrival"),
                t.arrival,
                0.0,
                limits::MAX_TIME_S,
            )?;
            let n = count(&format!("{key}.count"), t.count)?;
            let mut task = template(&t.kind, origin, &key, &machine, base)?.0;
            task.model.work_s = t.work;
            task.arrival_ns = secs(t.arrival);
            explicit.push((task, n));
        }
        explicit.sort_by_key(|t| t.0.arrival_ns); // stable: file order among equals

        let mut generators = Vec::new();
        for (i, g) in file.generators.iter().enumerate() {
            let key = format!("generator[{i}]");
            count(&format!("{key}.count"), g.count)?;
            let (lo, hi) = limits::RATE;
            range(&format!("{key}.rate"), g.rate, lo, hi)?;
            range(&format!("{key}.start"), g.start, 0.0, limits::MAX_TIME_S)?;
            let work =
                |k: &str, v: f64| range(&format!("{key}.size.{k}"), v, 0.0, limits::MAX_WORK_S);
            match g.size {
                Size::Fixed { value } => {
                    work("value", value)?;
                }
                Size::Uniform { min, max } => {
                    work("min", min)?;
                    range(&format!("{key}.size.max"), max, min, limits::MAX_WORK_S)?;
                }
                Size::Exponential { mean } => {
                    work("mean", mean)?;
                }
            }
            if g.mix.is_empty() {
                return Err(bad(
                    format!("{key}.mix"),
                    "expected at least one [[generator.mix]] entry".into(),
                ));
            }
            let mut mix = Vec::new();
            for (j, m) in g.mix.iter().enumerate() {
                let mkey = format!("{key}.mix[{j}]");
                let share = range(&format!("{mkey}.share"), m.share, 0.0, limits::MAX_FACTOR)?;
                mix.push((share, template(&m.kind, origin, &mkey, &machine, base)?));
            }
            if mix.iter().map(|m| m.0).sum::<f64>() <= 0.0 {
                return Err(bad(format!("{key}.mix"), "shares must not all be 0".into()));
            }
            generators.push(Generator {
                count: g.count,
                rate: g.rate,
                start: g.start,
                size: g.size,
                mix,
            });
        }
        let (graph, models) = match &file.graph {
            // Graph tasks are numbered from 0 as the graph's, and arrive as it says.
            Some(_) if !file.tasks.is_empty() || !file.generators.is_empty() => {
                return Err(bad(
                    "graph".into(),
                    "a scenario with a [graph] has no [[task]] or [[generator]] entries".into(),
                ))
            }
            Some(g) => {
                let (tasks, models) = graph(g, &file.machine, &machine, file.seed, base)
                    .map_err(|e| e.map_message(|m| format!("{origin}: graph: {m}")))?;
                (Some(std::sync::Arc::new(tasks)), models)
            }
            None => (None, Default::default()),
        };
        if explicit.iter().all(|t| t.1 == 0)
            && generators.iter().all(|g| g.count == 0)
            && graph.is_none()
        {
            return Err(Error::input(format!(
                "{origin}: no tasks: expected [[task]] or [[generator]] entries, or a [graph]"
            )));
        }
        Ok(Scenario {
            origin: origin.to_string(),
            name: name.to_string(),
            machine,
            seed: file.seed,
            policies: file.policies,
            config: crate::Config {
                checkpoint_cost_ns: (file.checkpoint_cost_ms * 1e6).round() as u64,
                max_time_ns,
                max_events: end.max_events,
                max_live_tasks: Some(limits::MAX_LIVE_TASKS),
                max_kept_events: Some(limits::MAX_KEPT_EVENTS),
                fetch_at_start: file
                    .graph
                    .as_ref()
                    .is_some_and(|g| matches!(g.fetch, Fetch::Start)),
                // A graph's models are where a policy that reads models starts.
                models,
                ..crate::Config::default()
            },
            explicit,
            generators,
            graph,
        })
    }

    /// The scenario's tasks in arrival order with ids 0, 1, ... (generated as the run
    /// asks for them; the iterator knows how many are left).
    pub fn tasks(&self) -> Tasks<'_> {
        let explicit = self
            .explicit
            .iter()
            .flat_map(|(t, n)| std::iter::repeat_n(t, *n as usize).cloned());
        let mut streams: Vec<Box<dyn Iterator<Item = Task> + '_>> = Vec::new();
        if self.explicit.iter().any(|t| t.1 > 0) {
            streams.push(Box::new(explicit));
        }
        for (i, g) in self.generators.iter().enumerate() {
            let seed = self.seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1));
            if g.count > 0 {
                streams.push(Box::new(GeneratorStream {
                    g,
                    rng: ChaCha8Rng::seed_from_u64(seed),
                    left: g.count,
                    t: g.start,
                }));
            }
        }
        // One stream needs no merge (the usual case: one generator or one list).
        let heads = if streams.len() > 1 {
            streams.iter_mut().map(|s| s.next()).collect()
        } else {
            Vec::new()
        };
        Tasks {
            streams,
            heads,
            next_id: 0,
            left: self.streamed_count(),
        }
    }

    /// Total number of tasks (a graph's included).
    pub fn task_count(&self) -> u64 {
        let graph = self.graph.iter().map(|g| g.graph().tasks.len() as u64);
        graph.fold(self.streamed_count(), u64::saturating_add)
    }

    /// The explicit and generated tasks ([`Scenario::tasks`]).
    fn streamed_count(&self) -> u64 {
        let explicit = self.explicit.iter().map(|t| t.1);
        let generated = self.generators.iter().map(|g| g.count);
        explicit.chain(generated).fold(0, u64::saturating_add)
    }

    /// Overrides the file's end condition (`end.max_time_s`, `end.max_events`) after
    /// checking the values against [`limits`]; `name` spells an override in errors as
    /// its caller takes it (`--max-time-s` on the command line, `max_time_s` in Python).
    pub fn override_end(
        &mut self,
        max_time_s: Option<f64>,
        max_events: Option<u64>,
        name: impl Fn(&str) -> String,
    ) -> Result<()> {
        if let Some(t) = max_time_s {
            let t = in_range(name("max_time_s"), t, 0.0, limits::MAX_TIME_S)?;
            self.config.max_time_ns = Some((t * 1e9).round() as u64);
        }
        if let Some(n) = max_events {
            if !(1..=limits::MAX_EVENTS).contains(&n) {
                return Err(Error::input(format!(
                    "{}: expected an integer in [1, {}], got {n}",
                    name("max_events"),
                    limits::MAX_EVENTS
                )));
            }
            self.config.max_events = Some(n);
        }
        self.check_limits()
    }

    /// The tasks a run takes: all of them, or with `end.max_time_s` about those expected
    /// to arrive by then (see [`Scenario::check_limits`]); at most [`Scenario::task_count`].
    pub fn expected_tasks(&self) -> u64 {
        let total: f64 = self.run_entries().iter().map(|e| e.0).sum();
        (total.round() as u64).min(self.task_count())
    }

    /// Each entry's tasks in a run (expected, with an end time: the explicit tasks
    /// arriving before it, a generator's rate times the time from its start, at most its
    /// count), and the entry as an error names it.
    fn run_entries(&self) -> Vec<(f64, String)> {
        let end_ns = self.config.max_time_ns;
        let mut entries: Vec<(f64, String)> = Vec::new();
        for (i, (t, n)) in self.explicit.iter().enumerate() {
            if end_ns.is_none_or(|e| t.arrival_ns <= e) {
                entries.push((*n as f64, format!("task[{i}].count = {n}")));
            }
        }
        for (i, g) in self.generators.iter().enumerate() {
            let n = match end_ns {
                None => g.count as f64,
                Some(e) => ((e as f64 / 1e9 - g.start).max(0.0) * g.rate).min(g.count as f64),
            };
            let key = match end_ns {
                None => format!("generator[{i}].count = {}", g.count),
                Some(e) => format!(
                    "generator[{i}]: rate {}/s from {} s to end.max_time_s = {} s, count {}",
                    num(g.rate),
                    num(g.start),
                    num(e as f64 / 1e9),
                    g.count
                ),
            };
            entries.push((n, key));
        }
        if let Some(g) = &self.graph {
            let n = g.graph().tasks.len();
            entries.push((n as f64, format!("graph: {n} tasks")));
        }
        entries
    }

    /// Checks what a run of the scenario will generate before it starts: its tasks at
    /// most [`limits::MAX_RUN_TASKS`] (all the counts; with `end.max_time_s`, those
    /// expected to arrive by then: the explicit tasks arriving before it and each
    /// generator's rate times the time from its start, at most its count); and, with an
    /// explicit event limit and no `end.max_time_s`, at most as many tasks as events
    /// (each arrival is one). The error names the entry that weighs most.
    pub fn check_limits(&self) -> Result<()> {
        let origin = &self.origin;
        let end_ns = self.config.max_time_ns;
        let entries = self.run_entries();
        let total: f64 = entries.iter().map(|e| e.0).sum();
        if total > limits::MAX_RUN_TASKS as f64 {
            let (_, key) = entries
                .iter()
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .expect("a scenario has tasks");
            let what = match end_ns {
                None => format!(
                    "{} tasks in the run (all counts together)",
                    self.task_count()
                ),
                Some(_) => format!("about {} tasks arrive in the run", num(total.round())),
            };
            return Err(Error::input(format!(
                "{origin}: {key}: {what}, expected at most {} (each one a row of the per-task CSV and its share of the wall time): lower the counts or the rates, or set end.max_time_s",
                limits::MAX_RUN_TASKS
            )));
        }
        let (n, limit) = (self.task_count(), self.config.max_events);
        match limit {
            Some(limit) if end_ns.is_none() && n > limit => Err(Error::input(format!(
                "{origin}: {n} tasks (the counts of task and generator) exceed the event limit of {limit} events: set end.max_time_s, or raise end.max_events or --max-events (at most {})",
                limits::MAX_EVENTS
            ))),
            _ => Ok(()),
        }
    }
}

/// The tasks of a scenario in arrival order (see [`Scenario::tasks`]): the streams with
/// tasks (explicit tasks first, then each generator's) and, when there are several, the
/// next task of each.
pub struct Tasks<'a> {
    streams: Vec<Box<dyn Iterator<Item = Task> + 'a>>,
    heads: Vec<Option<Task>>,
    next_id: u64,
    left: u64,
}

impl Iterator for Tasks<'_> {
    type Item = Task;
    #[inline]
    fn next(&mut self) -> Option<Task> {
        // The task stays in its `Option`, numbered in place: unwrapped and wrapped again,
        // its 150 bytes were copied twice more on the way to the engine.
        let mut task = if self.heads.is_empty() {
            self.streams.first_mut()?.next()
        } else {
            // The earliest head; ties: the first stream (explicit tasks, then generators).
            let heads = &self.heads;
            let i = (0..heads.len())
                .filter(|&i| heads[i].is_some())
                .min_by_key(|&i| heads[i].as_ref().map(|t| t.arrival_ns))?;
            std::mem::replace(&mut self.heads[i], self.streams[i].next())
        };
        if let Some(task) = &mut task {
            task.id = self.next_id;
            self.next_id += 1;
            self.left -= 1;
        }
        task
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

struct GeneratorStream<'a> {
    g: &'a Generator,
    rng: ChaCha8Rng,
    left: u64,
    t: f64,
}

impl Iterator for GeneratorStream<'_> {
    type Item = Task;
    fn next(&mut self) -> Option<Task> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let g = self.g;
        // 1 - u is in (0, 1]: ln is finite.
        let exp = |rng: &mut ChaCha8Rng, mean: f64| -(1.0 - rng.random::<f64>()).ln() * mean;
        self.t += exp(&mut self.rng, 1.0 / g.rate);
        let work = match g.size {
            Size::Fixed { value } => value,
            Size::Uniform { min, max } => min + (max - min) * self.rng.random::<f64>(),
            Size::Exponential { mean } => exp(&mut self.rng, mean),
        };
        let total: f64 = g.mix.iter().map(|m| m.0).sum();
        let mut x = self.rng.random::<f64>() * total;
        let mut pick = &g.mix[g.mix.len() - 1].1;
        for (share, tpl) in &g.mix {
            if x < *share {
                pick = tpl;
                break;
            }
            x -= share;
        }
        let mut task = pick.0.clone();
        task.model.work_s = work;
        task.arrival_ns = secs(self.t);
        Some(task)
    }
}

/// A `[graph]`'s tasks and the models that time them; `spec` is the scenario's machine
/// as written (its calibration's models are the default for a generated graph), `base`
/// the directory a relative `file` is read from.
fn graph(
    g: &GraphSpec,
    spec: &str,
    machine: &Machine,
    seed: u64,
    base: &Path,
) -> Result<(
    crate::graphs::GraphTasks,
    hetsched_core::perf_model::PerfModels,
)> {
    use crate::graphs::{wfformat, Durations, GraphTasks, Precision, Tiled};
    let durations = match g.durations {
        DurationsSpec::Mean => Durations::Mean,
        DurationsSpec::Normal => Durations::Normal { seed },
    };
    let sources = [
        g.file.is_some(),
        g.tasks.is_some(),
        g.algorithm.is_some() || g.tiles.is_some() || g.tile.is_some(),
    ];
    if sources.iter().filter(|&&s| s).count() > 1 {
        return Err(Error::input(
            "a graph is one of a workflow file (`file`), a workflow written here (`tasks`, `files`) or an algorithm (`algorithm`, `tiles`, `tile`)",
        ));
    }
    let workflow = if let Some(f) = &g.file {
        // Beside the scenario first, then from the working directory (as `machine`).
        let path = PathBuf::from(resolve(f, base));
        Some(crate::graphs::read_file(&path)?)
    } else if let Some(tasks) = &g.tasks {
        if tasks.is_empty() {
            return Err(Error::input("tasks: an empty workflow"));
        }
        Some(wfformat::build(tasks, &g.files, "", "")?)
    } else {
        None
    };
    if !g.files.is_empty() && g.tasks.is_none() {
        return Err(Error::input("files: only with `tasks`"));
    }
    if let Some(w) = workflow {
        if g.models.is_some()
            || matches!(g.durations, DurationsSpec::Normal)
            || g.precision.is_some()
        {
            return Err(Error::input(
                "a workflow's tasks take the runtimes it gives, and its models are its own: no `models`, `durations = \"normal\"` or `precision`",
            ));
        }
        let runtimes = w
            .runtimes
            .iter()
            .zip(&w.ids)
            .map(|(r, id)| {
                r.ok_or_else(|| {
                    Error::input(format!(
                        "task {id:?} gives a command but no runtime: simulating needs its runtime"
                    ))
                })
            })
            .collect::<Result<Vec<f64>>>()?;
        let tasks = GraphTasks::new(std::sync::Arc::new(w.graph), machine, &w.models, durations)?
            .with_cpu_times(runtimes)?;
        return Ok((tasks, crate::graphs::tasks::models_for(machine, &w.models)));
    }
    let (Some(algorithm), Some(tiles), Some(tile)) = (g.algorithm, g.tiles, g.tile) else {
        return Err(Error::input(
            "expected `file` (a WfFormat workflow), `tasks` (a workflow) or `algorithm`, `tiles` and `tile`",
        ));
    };
    let tiled = Tiled {
        tiles,
        tile,
        precision: match g.precision.unwrap_or_default() {
            PrecisionSpec::Single => Precision::Single,
            PrecisionSpec::Double => Precision::Double,
        },
    };
    let graph = match algorithm {
        Algorithm::Cholesky => crate::graphs::cholesky(&tiled)?,
        Algorithm::Lu => crate::graphs::lu(&tiled)?,
        Algorithm::Qr => crate::graphs::qr(&tiled)?,
    };
    let models = match g.models.as_deref().unwrap_or(spec) {
        m if m.starts_with("starpu:") => {
            hetsched_topology::starpu::Sampling::parse(&m["starpu:".len()..])?.models()?
        }
        m => {
            return Err(Error::input(format!(
                "models: {m:?}: expected starpu:HOST or starpu:DIR:HOST (a StarPU calibration); \
                 without `models`, the machine must be one"
            )))
        }
    };
    let tasks = GraphTasks::new(std::sync::Arc::new(graph), machine, &models, durations)?;
    Ok((tasks, crate::graphs::tasks::models_for(machine, &models)))
}

fn secs(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

fn resolve(spec: &str, base: &Path) -> String {
    let p = PathBuf::from(spec);
    let looks_like_path = spec.contains('/') || spec.contains('.');
    if looks_like_path && p.is_relative() && base.join(&p).exists() {
        base.join(p).display().to_string()
    } else {
        spec.to_string()
    }
}

/// Validates a task's (or a mix entry's) fields; `key` names it in `origin`.
fn template(k: &Kind, origin: &str, key: &str, machine: &Machine, base: &Path) -> Result<Template> {
    let field = |f: &str| format!("{origin}: {key}.{f}");
    let bad = |f: &str, what: String| Error::input(format!("{}: {what}", field(f)));
    let range = |f: &str, v: f64, lo: f64, hi: f64| in_range(field(f), v, lo, hi);
    let mut task = Task::cpu(0, 0.0, 0);
    task.kind = k.name.as_deref().unwrap_or("task").into();
    if let Some(a) = k.affinity {
        task.affinity = PerUnitType::default();
        for (kind, v) in a.values() {
            let v = range(
                &format!("affinity.{kind}"),
                v.unwrap_or(0.0),
                0.0,
                limits::MAX_FACTOR,
            )?;
            task.affinity.set(kind, v);
        }
        if UnitType::ALL.iter().all(|&t| !task.affinity.runs_on(t)) {
            return Err(bad(
                "affinity",
                "all affinities are 0: the task has no implementation for any unit type".into(),
            ));
        }
    }
    if let Some(s) = k.speed {
        for (kind, v) in s.values() {
            let v = range(
                &format!("speed.{kind}"),
                v.unwrap_or(0.0),
                0.0,
                limits::MAX_FACTOR,
            )?;
            task.model.speed.set(kind, v);
        }
    }
    if let Some(c) = k.checkpoint_ms {
        let (lo, hi) = limits::CHECKPOINT_MS;
        for (kind, v) in c.values() {
            let v = v.unwrap_or(0.0);
            if v != 0.0 && !(lo..=hi).contains(&v) {
                return Err(bad(
                    &format!("checkpoint_ms.{kind}"),
                    format!(
                        "expected 0 (none) or a number in [{}, {}], got {}",
                        num(lo),
                        num(hi),
                        num(v)
                    ),
                ));
            }
            task.checkpoint_ns.set(kind, (v * 1e6).round() as u64);
        }
    }
    task.model.memory_bound = range("memory_bound", k.memory_bound, 0.0, 1.0)?;
    task.model.mem_bandwidth = range(
        "mem_bandwidth_gbs",
        k.mem_bandwidth_gbs,
        0.0,
        limits::MAX_BANDWIDTH_GBS,
    )? * 1e9;
    task.model.instructions_per_s = range(
        "instructions_per_s",
        k.instructions_per_s,
        0.0,
        limits::MAX_INSTRUCTIONS_PER_S,
    )?;
    task.model.llc_mpki = range("llc_mpki", k.llc_mpki, 0.0, limits::MAX_LLC_MPKI)?;
    if task.model.llc_mpki > 0.0 && task.model.instructions_per_s == 0.0 {
        return Err(bad(
            "llc_mpki",
            "needs instructions_per_s > 0 (without it the task's samples carry no counters)".into(),
        ));
    }
    for (name, bytes) in [
        ("bytes_in", k.bytes_in),
        ("bytes_out", k.bytes_out),
        ("memory_bytes", k.memory_bytes),
    ] {
        if bytes > limits::MAX_BYTES {
            return Err(bad(
                name,
                format!(
                    "expected an integer in [0, {}], got {bytes}",
                    limits::MAX_BYTES
                ),
            ));
        }
    }
    task.bytes_in = k.bytes_in;
    task.bytes_out = k.bytes_out;
    task.model.memory_bytes = k.memory_bytes as f64;
    task.model.first_touch = k.first_touch;
    if let Some(node) = k.numa_home {
        if node == u32::MAX {
            return Err(bad(
                "numa_home",
                format!("NUMA node {node} out of range (0 to {})", u32::MAX - 1),
            ));
        }
        if !machine.numa_nodes.iter().any(|n| n.os_index == node) {
            let nodes: Vec<u32> = machine.numa_nodes.iter().map(|n| n.os_index).collect();
            return Err(bad(
                "numa_home",
                format!("NUMA node {node} does not exist (the machine has {nodes:?})"),
            ));
        }
    }
    task.set_numa_home(k.numa_home);
    if let Some(name) = &k.io_device {
        let Some(d) = machine.io_devices.iter().position(|d| &d.name == name) else {
            let names: Vec<&str> = machine.io_devices.iter().map(|d| d.name.as_str()).collect();
            return Err(bad(
                "io_device",
                format!("no I/O device {name:?} (the machine has {names:?})"),
            ));
        };
        task.io_device = Some(d as u32);
    }
    task.model.io_bound = range("io_bound", k.io_bound, 0.0, 1.0 - task.model.memory_bound)?;
    if let Some(sig) = &k.signature {
        task.signature = Some(crate::task_signature::load(sig, &field("signature"), base)?);
    }
    task.weight = k.weight.unwrap_or(1024);
    if task.weight == 0 {
        return Err(bad(
            "weight",
            "expected an integer in [1, 4294967295], got 0".into(),
        ));
    }
    Ok(Template(task))
}

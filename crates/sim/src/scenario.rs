//! Scenario files (`scenarios/*.toml`): a machine, tasks (an explicit list and/or
//! generators), the policies to compare, a seed and an end condition.
//!
//! ```toml
//! machine = "ding"              # any machine spec; relative paths from this file's dir
//! units = "pu"                  # or "core"
//! seed = 1
//! policies = ["fcfs", "cfs", "dmda"]
//! checkpoint_cost_ms = 0.1      # per accelerator checkpoint
//! end = { max_time_s = 60 }     # optional; default: until every task ended
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
//! weight = 1024
//! checkpoint_ms = { gpu = 10 }  # checkpoint interval per unit type
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
//! Exponential sizes and inter-arrival times are drawn by inverse-transform sampling
//! from a seeded ChaCha8 stream (one per generator), so same file + seed = same tasks.

use crate::task::SimTask as Task;
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
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct End {
    max_time_s: f64,
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
    weight: Option<u32>,
    #[serde(default)]
    checkpoint_ms: Option<PerType>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSpec {
    work: f64,
    #[serde(default)]
    arrival: f64,
    #[serde(default = "one")]
    count: u32,
    #[serde(flatten)]
    kind: Kind,
}

fn one() -> u32 {
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
    explicit: Vec<Task>,
    generators: Vec<Generator>,
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
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::input(format!("{origin}: cannot read: {e}")))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let name = path
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        Self::parse(&text, &origin, &name, &base)
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
            hetsched_policies::build(p, file.seed)
                .map_err(|e| bad(format!("policies[{i}]"), e.to_string()))?;
        }
        let nonneg = |key: String, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(bad(key, format!("expected a non-negative number, got {v}")))
            }
        };
        nonneg("checkpoint_cost_ms".into(), file.checkpoint_cost_ms)?;
        let max_time_ns = match &file.end {
            Some(e) => Some(secs(nonneg("end.max_time_s".into(), e.max_time_s)?)),
            None => None,
        };

        let mut explicit = Vec::new();
        for (i, t) in file.tasks.iter().enumerate() {
            let key = format!("task[{i}]");
            nonneg(format!("{key}.work"), t.work)?;
            nonneg(format!("{key}.arrival"), t.arrival)?;
            let tpl = template(&t.kind, &key, &bad)?;
            for _ in 0..t.count {
                let mut task = tpl.0.clone();
                task.model.work_s = t.work;
                task.arrival_ns = secs(t.arrival);
                explicit.push(task);
            }
        }
        explicit.sort_by_key(|t| t.arrival_ns); // stable: file order among equals

        let mut generators = Vec::new();
        for (i, g) in file.generators.iter().enumerate() {
            let key = format!("generator[{i}]");
            if !(g.rate.is_finite() && g.rate > 0.0) {
                return Err(bad(
                    format!("{key}.rate"),
                    format!("expected a positive number, got {}", g.rate),
                ));
            }
            nonneg(format!("{key}.start"), g.start)?;
            match g.size {
                Size::Fixed { value } => {
                    nonneg(format!("{key}.size.value"), value)?;
                }
                Size::Uniform { min, max } => {
                    nonneg(format!("{key}.size.min"), min)?;
                    if !(max >= min && max.is_finite()) {
                        return Err(bad(
                            format!("{key}.size.max"),
                            format!("expected a number >= min ({min}), got {max}"),
                        ));
                    }
                }
                Size::Exponential { mean } => {
                    nonneg(format!("{key}.size.mean"), mean)?;
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
                let share = nonneg(format!("{mkey}.share"), m.share)?;
                mix.push((share, template(&m.kind, &mkey, &bad)?));
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
        if explicit.is_empty() && generators.iter().all(|g| g.count == 0) {
            return Err(Error::input(format!(
                "{origin}: no tasks: expected [[task]] or [[generator]] entries"
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
            },
            explicit,
            generators,
        })
    }

    /// The scenario's tasks in arrival order with ids 0, 1, ... (lazily generated).
    pub fn tasks(&self) -> impl Iterator<Item = Task> + '_ {
        let mut streams: Vec<Box<dyn Iterator<Item = Task> + '_>> =
            vec![Box::new(self.explicit.iter().cloned())];
        for (i, g) in self.generators.iter().enumerate() {
            let seed = self.seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1));
            streams.push(Box::new(GeneratorStream {
                g,
                rng: ChaCha8Rng::seed_from_u64(seed),
                left: g.count,
                t: g.start,
            }));
        }
        let mut heads: Vec<Option<Task>> = streams.iter_mut().map(|s| s.next()).collect();
        let mut next_id = 0u64;
        std::iter::from_fn(move || {
            // The earliest head; ties: the first stream (explicit tasks, then generators).
            let i = (0..heads.len())
                .filter(|&i| heads[i].is_some())
                .min_by_key(|&i| heads[i].as_ref().unwrap().arrival_ns)?;
            let mut task = std::mem::replace(&mut heads[i], streams[i].next()).unwrap();
            task.id = next_id;
            next_id += 1;
            Some(task)
        })
    }

    /// Total number of tasks.
    pub fn task_count(&self) -> u64 {
        self.explicit.len() as u64 + self.generators.iter().map(|g| g.count).sum::<u64>()
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

fn template(k: &Kind, key: &str, bad: &dyn Fn(String, String) -> Error) -> Result<Template> {
    let mut task = Task::cpu(0, 0.0, 0);
    task.kind = k.name.as_deref().unwrap_or("task").into();
    if let Some(a) = k.affinity {
        task.affinity = PerUnitType::default();
        for (kind, v) in a.values() {
            let v = v.unwrap_or(0.0);
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(
                    format!("{key}.affinity.{kind}"),
                    format!("expected a non-negative number, got {v}"),
                ));
            }
            task.affinity.set(kind, v);
        }
        if UnitType::ALL.iter().all(|&t| !task.affinity.runs_on(t)) {
            return Err(bad(
                format!("{key}.affinity"),
                "all affinities are 0: the task has no implementation for any unit type".into(),
            ));
        }
    }
    if let Some(s) = k.speed {
        for (kind, v) in s.values() {
            let v = v.unwrap_or(0.0);
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(
                    format!("{key}.speed.{kind}"),
                    format!("expected a non-negative number, got {v}"),
                ));
            }
            task.model.speed.set(kind, v);
        }
    }
    if let Some(c) = k.checkpoint_ms {
        for (kind, v) in c.values() {
            let v = v.unwrap_or(0.0);
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(
                    format!("{key}.checkpoint_ms.{kind}"),
                    format!("expected a non-negative number, got {v}"),
                ));
            }
            task.checkpoint_ns.set(kind, (v * 1e6).round() as u64);
        }
    }
    if !(0.0..=1.0).contains(&k.memory_bound) {
        return Err(bad(
            format!("{key}.memory_bound"),
            format!("expected a fraction in [0, 1], got {}", k.memory_bound),
        ));
    }
    task.model.memory_bound = k.memory_bound;
    if !(k.mem_bandwidth_gbs.is_finite() && k.mem_bandwidth_gbs >= 0.0) {
        return Err(bad(
            format!("{key}.mem_bandwidth_gbs"),
            format!(
                "expected a non-negative number, got {}",
                k.mem_bandwidth_gbs
            ),
        ));
    }
    task.model.mem_bandwidth = k.mem_bandwidth_gbs * 1e9;
    task.bytes_in = k.bytes_in;
    task.bytes_out = k.bytes_out;
    task.numa_home = k.numa_home;
    task.weight = k.weight.unwrap_or(1024);
    if task.weight == 0 {
        return Err(bad(
            format!("{key}.weight"),
            "expected a positive integer, got 0".into(),
        ));
    }
    Ok(Template(task))
}

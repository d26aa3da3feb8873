//! Performance models: how long a kernel runs on a class of unit, learned from the runs
//! an engine observes, kept across runs in a file.
//!
//! Why the engine and not a policy learns them: as in StarPU, where the runtime (not the
//! scheduler) updates a codelet's history model after each execution, the observation
//! is a fact about the run, and every policy that reads estimates (dmda now; heft and
//! the calibration of `hetsched calibrate` later) should read the same ones. A policy
//! that wants them says so ([`crate::policy::Policy::wants_models`]); the engine then
//! records each task that ran uninterrupted on one unit, and policies read the models
//! through the view. For other policies nothing is recorded (it costs the engine
//! nothing).
//!
//! A model is keyed by the kernel (the task's kind), the unit type and capacity (its
//! "architecture", as StarPU's perf-arch: units of the same type and speed share a
//! model) and a footprint (StarPU's: what the task's data size makes it; 0 for tasks
//! without data). It holds StarPU's history statistics: the number of samples, their
//! mean and deviation (Welford's running form), and the most recent [`RECENT`]
//! samples, from which a policy can estimate how much longer a running task has.
//!
//! The file (one per machine, `<machine>.json` in a directory) is versioned JSON:
//!
//! ```json
//! {"format": "hetsched perfmodels", "version": 1, "machine": "beisel",
//!  "models": [{"kernel": "md5", "unit_type": "gpu", "capacity": 1024, "footprint": 0,
//!              "samples": 12, "mean_s": 1.25, "dev_s": 0.03, "recent_s": [1.24, 1.27]}]}
//! ```
//!
//! Reading one checks every field (a corrupt file, one of another machine, or of a newer
//! version is a one-line input error naming the file and the field), under a size cap.

use crate::machine::UnitType;
use crate::{Error, Result};
use hetsched_util::files::{self, OutDir};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Recent samples kept per model.
pub const RECENT: usize = 64;

/// The version of the file format this reads and writes.
pub const VERSION: u32 = 1;

/// The largest model file read.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// What a model is for, besides its kernel: the unit class and the footprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    pub unit_type: UnitType,
    pub capacity: u32,
    pub footprint: u64,
}

/// A kernel's history on one [`Arch`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    samples: u64,
    mean: f64,
    /// Sum of squared deviations from the mean (Welford).
    m2: f64,
    recent: VecDeque<f64>,
}

impl History {
    /// Adds a run of `seconds`.
    pub fn add(&mut self, seconds: f64) {
        self.samples += 1;
        let delta = seconds - self.mean;
        self.mean += delta / self.samples as f64;
        self.m2 += delta * (seconds - self.mean);
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(seconds);
    }

    /// A history known only by its statistics, as another tool kept it: `samples` runs
    /// of mean `mean` and population deviation `dev` (the root of the mean squared
    /// deviation from the mean, StarPU's `deviation`), no recent runs. Exact: the same
    /// state as adding runs with those statistics. `None` unless `samples` ≥ 1 and
    /// `mean` and `dev` are finite and ≥ 0.
    pub fn from_stats(samples: u64, mean: f64, dev: f64) -> Option<History> {
        let m2 = dev * dev * samples as f64;
        (samples >= 1 && mean.is_finite() && mean >= 0.0 && dev.is_finite() && dev >= 0.0)
            .then_some(History {
                samples,
                mean,
                m2,
                recent: VecDeque::new(),
            })
    }

    /// Adds the runs of `other` (Chan et al.'s pairwise combination: exact, the same
    /// counts, mean and squared deviations as adding both histories' runs to one). The
    /// recent runs are this history's then `other`'s, the last [`RECENT`] kept.
    pub fn pool(&mut self, other: &History) {
        if other.samples == 0 {
            return;
        }
        let n = self.samples + other.samples;
        let delta = other.mean - self.mean;
        let (na, nb) = (self.samples as f64, other.samples as f64);
        self.mean += delta * nb / n as f64;
        self.m2 += other.m2 + delta * delta * na * nb / n as f64;
        self.samples = n;
        self.recent.extend(other.recent.iter().copied());
        while self.recent.len() > RECENT {
            self.recent.pop_front();
        }
    }

    /// The same runs, each `factor` times as long (a history carried to a unit class
    /// that many times slower).
    pub fn scaled(&self, factor: f64) -> History {
        History {
            samples: self.samples,
            mean: self.mean * factor,
            m2: self.m2 * factor * factor,
            recent: self.recent.iter().map(|t| t * factor).collect(),
        }
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Mean seconds (0 without samples).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation, seconds (0 below two samples).
    pub fn dev(&self) -> f64 {
        if self.samples < 2 {
            0.0
        } else {
            (self.m2 / (self.samples - 1) as f64).sqrt()
        }
    }

    /// The most recent samples, oldest first.
    pub fn recent(&self) -> &VecDeque<f64> {
        &self.recent
    }

    /// Expected seconds left of a run that has lasted `elapsed`: the mean excess of the
    /// recent samples longer than that, or, when none is, the mean (it overran them all:
    /// the estimate must not say it is about to end, or work would queue behind it).
    pub fn remaining(&self, elapsed: f64) -> f64 {
        let (sum, n) = self
            .recent
            .iter()
            .filter(|&&t| t > elapsed)
            .fold((0.0, 0), |(s, n), &t| (s + t - elapsed, n + 1));
        if n > 0 {
            sum / n as f64
        } else {
            self.mean
        }
    }
}

/// Every kernel's models on one machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PerfModels {
    kernels: FxHashMap<Arc<str>, FxHashMap<Arch, History>>,
}

impl PerfModels {
    /// The history of `kernel` on `arch`, if it ran there.
    #[inline]
    pub fn get(&self, kernel: &str, arch: &Arch) -> Option<&History> {
        self.kernels.get(kernel)?.get(arch)
    }

    /// Records a run of `seconds` of `kernel` on `arch`.
    pub fn observe(&mut self, kernel: &Arc<str>, arch: Arch, seconds: f64) {
        if !(seconds.is_finite() && seconds >= 0.0) {
            return;
        }
        match self.kernels.get_mut(kernel) {
            Some(m) => m.entry(arch).or_default().add(seconds),
            None => {
                let mut m = FxHashMap::default();
                m.entry(arch).or_insert_with(History::default).add(seconds);
                self.kernels.insert(kernel.clone(), m);
            }
        }
    }

    /// Adds `history` to `kernel`'s model on `arch` (pooled with what is there).
    pub fn pool(&mut self, kernel: &str, arch: Arch, history: &History) {
        match self.kernels.get_mut(kernel) {
            Some(m) => m.entry(arch).or_default().pool(history),
            None => {
                let mut m = FxHashMap::default();
                m.insert(arch, history.clone());
                self.kernels.insert(kernel.into(), m);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// The kernels with a model, sorted.
    pub fn kernels(&self) -> Vec<&str> {
        let mut k: Vec<&str> = self.kernels.keys().map(|k| &**k).collect();
        k.sort_unstable();
        k
    }

    /// Every model, sorted by kernel then arch.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Arch, &History)> {
        let mut all: Vec<(&str, &Arch, &History)> = self
            .kernels
            .iter()
            .flat_map(|(k, m)| m.iter().map(move |(a, h)| (&**k, a, h)))
            .collect();
        all.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        all.into_iter()
    }

    /// The file of `machine`'s models in `dir`.
    pub fn file(dir: &Path, machine: &str) -> PathBuf {
        dir.join(file_name(machine))
    }

    /// The models of `machine` kept in `dir`, or none when it has no file yet.
    pub fn load(dir: &Path, machine: &str) -> Result<PerfModels> {
        let path = Self::file(dir, machine);
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(PerfModels::default());
        }
        let text = files::read_text(&path, "a performance-model file", MAX_FILE_BYTES)?;
        Self::parse(&text, &path.display().to_string(), machine)
    }

    /// Models from a file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str, machine: &str) -> Result<PerfModels> {
        let bad = |what: String| Error::input(format!("{origin}: {what}"));
        let file: File = serde_json::from_str(text)
            .map_err(|e| bad(format!("not a performance-model file: {e}")))?;
        if file.format != FORMAT {
            return Err(bad(format!(
                "format: {:?}, expected {FORMAT:?}",
                file.format
            )));
        }
        if file.version != VERSION {
            return Err(bad(format!(
                "version {}: this hetsched reads version {VERSION}",
                file.version
            )));
        }
        if file.machine != machine {
            return Err(bad(format!(
                "machine: the models of {:?}, not of {machine:?}",
                file.machine
            )));
        }
        let mut models = PerfModels::default();
        for (i, m) in file.models.into_iter().enumerate() {
            let field = |f: &str| format!("models[{i}].{f}");
            let number = |f: &str, v: f64| {
                if v.is_finite() && v >= 0.0 {
                    Ok(v)
                } else {
                    Err(bad(format!("{}: {v}, expected a number >= 0", field(f))))
                }
            };
            if m.samples == 0 {
                return Err(bad(format!("{}: 0, expected 1 or more", field("samples"))));
            }
            if m.capacity == 0 {
                return Err(bad(format!("{}: 0, expected 1 or more", field("capacity"))));
            }
            if m.recent_s.len() > RECENT || m.recent_s.len() as u64 > m.samples {
                return Err(bad(format!(
                    "{}: {} samples, expected at most {RECENT} and at most `samples`",
                    field("recent_s"),
                    m.recent_s.len()
                )));
            }
            let mean = number("mean_s", m.mean_s)?;
            let dev = number("dev_s", m.dev_s)?;
            for (j, &r) in m.recent_s.iter().enumerate() {
                number(&format!("recent_s[{j}]"), r)?;
            }
            let arch = Arch {
                unit_type: m.unit_type,
                capacity: m.capacity,
                footprint: m.footprint,
            };
            let kernel: Arc<str> = m.kernel.as_str().into();
            let map = models.kernels.entry(kernel).or_default();
            if map.contains_key(&arch) {
                return Err(bad(format!(
                    "models[{i}]: {:?} on {} capacity {} footprint {} twice",
                    m.kernel, m.unit_type, m.capacity, m.footprint
                )));
            }
            map.insert(
                arch,
                History {
                    samples: m.samples,
                    mean,
                    m2: dev * dev * (m.samples.saturating_sub(1)) as f64,
                    recent: m.recent_s.into(),
                },
            );
        }
        Ok(models)
    }

    /// The file's text for `machine`.
    pub fn to_json(&self, machine: &str) -> String {
        let file = File {
            format: FORMAT.into(),
            version: VERSION,
            machine: machine.into(),
            models: self
                .iter()
                .map(|(k, a, h)| Model {
                    kernel: k.into(),
                    unit_type: a.unit_type,
                    capacity: a.capacity,
                    footprint: a.footprint,
                    samples: h.samples,
                    mean_s: h.mean,
                    dev_s: h.dev(),
                    recent_s: h.recent.iter().copied().collect(),
                })
                .collect(),
        };
        serde_json::to_string_pretty(&file).expect("models serialize") + "\n"
    }

    /// Writes `machine`'s models into `dir` (created only for its owner, like
    /// StarPU's sampling directory); returns the file.
    pub fn save(&self, dir: &Path, machine: &str) -> Result<PathBuf> {
        let out = OutDir::create_private(dir)?;
        out.write(&file_name(machine), self.to_json(machine))
    }
}

const FORMAT: &str = "hetsched perfmodels";

/// Where a user's models live unless told otherwise: `$HETSCHED_HOME/perfmodels`, else
/// `~/.hetsched/perfmodels` (as StarPU's `$STARPU_HOME/.starpu/sampling`); `None`
/// without either variable.
pub fn default_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HETSCHED_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".hetsched")))?;
    Some(home.join("perfmodels"))
}

/// A file name of a machine's name: letters, digits, `-`, `_` and `.` kept, the rest
/// `_`.
fn file_name(machine: &str) -> String {
    let safe: String = machine
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.json", safe.trim_start_matches('.'))
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: String,
    version: u32,
    machine: String,
    models: Vec<Model>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Model {
    kernel: String,
    unit_type: UnitType,
    capacity: u32,
    footprint: u64,
    samples: u64,
    mean_s: f64,
    dev_s: f64,
    recent_s: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(unit_type: UnitType) -> Arch {
        Arch {
            unit_type,
            capacity: 1024,
            footprint: 0,
        }
    }

    #[test]
    fn a_history_keeps_welfords_mean_and_deviation_and_the_recent_runs() {
        let mut h = History::default();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            h.add(x);
        }
        assert_eq!(h.samples(), 8);
        assert!((h.mean() - 5.0).abs() < 1e-12);
        // Sample deviation of that classic set: sqrt(32 / 7).
        assert!((h.dev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        // Two runs longer than 5 s: 7 and 9, so 3 s left on average.
        assert!((h.remaining(5.0) - 3.0).abs() < 1e-12);
        // Longer than all: the mean, not zero.
        assert_eq!(h.remaining(100.0), h.mean());
        for _ in 0..RECENT {
            h.add(1.0);
        }
        assert_eq!(h.recent().len(), RECENT);
        assert!(h.recent().iter().all(|&x| x == 1.0));
    }

    #[test]
    fn a_history_from_statistics_or_pooled_equals_the_one_of_the_runs() {
        let runs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let mut all = History::default();
        runs.iter().for_each(|&x| all.add(x));
        // Population deviation of that set: 2.
        let h = History::from_stats(8, 5.0, 2.0).unwrap();
        assert_eq!((h.samples(), h.mean()), (8, 5.0));
        assert!((h.dev() - all.dev()).abs() < 1e-12);
        assert!(h.recent().is_empty());
        let (mut a, mut b) = (History::default(), History::default());
        runs[..3].iter().for_each(|&x| a.add(x));
        runs[3..].iter().for_each(|&x| b.add(x));
        a.pool(&b);
        assert_eq!(a.samples(), 8);
        assert!((a.mean() - all.mean()).abs() < 1e-12);
        assert!((a.dev() - all.dev()).abs() < 1e-12);
        assert_eq!(a.recent(), all.recent());
        let mut empty = History::default();
        empty.pool(&h);
        assert_eq!(empty, h);
        for (n, mean, dev) in [(0, 1.0, 0.0), (1, -1.0, 0.0), (1, 1.0, f64::NAN)] {
            assert!(History::from_stats(n, mean, dev).is_none());
        }
    }

    #[test]
    fn models_survive_their_file_exactly() {
        let mut m = PerfModels::default();
        let md5: Arc<str> = "md5".into();
        for x in [1.25, 1.5, 1.0] {
            m.observe(&md5, arch(UnitType::Gpu), x);
        }
        m.observe(&md5, arch(UnitType::Cpu), 9.0);
        m.observe(&"prime".into(), arch(UnitType::Cpu), 3.0);
        m.observe(&md5, arch(UnitType::Cpu), f64::NAN); // not a run: ignored
        let dir = tempfile::tempdir().unwrap();
        let file = m.save(&dir.path().join("models"), "beisel").unwrap();
        assert_eq!(file, dir.path().join("models/beisel.json"));
        let back = PerfModels::load(&dir.path().join("models"), "beisel").unwrap();
        let h = back.get("md5", &arch(UnitType::Gpu)).unwrap();
        assert_eq!((h.samples(), h.mean()), (3, 1.25));
        assert!((h.dev() - 0.25).abs() < 1e-12);
        assert_eq!(back.get("md5", &arch(UnitType::Cpu)).unwrap().samples(), 1);
        assert_eq!(back.to_json("beisel"), m.to_json("beisel"));
        // No file yet: no models.
        assert!(PerfModels::load(dir.path(), "other").unwrap().is_empty());
    }

    #[test]
    fn a_corrupt_foreign_or_newer_file_is_one_line_naming_it() {
        let mut m = PerfModels::default();
        m.observe(&"md5".into(), arch(UnitType::Gpu), 1.0);
        let good = m.to_json("beisel");
        let cases = [
            ("{", "f.json: not a performance-model file: "),
            (
                &good.replace("\"version\": 1", "\"version\": 2")[..],
                "f.json: version 2: this hetsched reads version 1",
            ),
            (
                &good.replace("hetsched perfmodels", "starpu")[..],
                "f.json: format: \"starpu\", expected",
            ),
            (
                &good.replace("\"samples\": 1", "\"samples\": 0")[..],
                "f.json: models[0].samples: 0, expected 1 or more",
            ),
            (
                &good.replace("\"mean_s\": 1.0", "\"mean_s\": -1.0")[..],
                "f.json: models[0].mean_s: -1, expected a number >= 0",
            ),
        ];
        for (text, want) in cases {
            let e = PerfModels::parse(text, "f.json", "beisel").unwrap_err();
            assert!(e.to_string().starts_with(want), "{e}");
            assert_eq!(e.exit_code(), 2);
            assert_eq!(e.to_string().lines().count(), 1);
        }
        let e = PerfModels::parse(&good, "f.json", "ding").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.json: machine: the models of \"beisel\", not of \"ding\""
        );
    }

    #[test]
    fn a_machines_name_becomes_a_safe_file_name() {
        assert_eq!(file_name("beisel"), "beisel.json");
        assert_eq!(file_name("../../etc/x y"), "_.._etc_x_y.json");
        assert_eq!(file_name(".hidden"), "hidden.json");
    }
}

//! A calibration: what `hetsched calibrate` measured on a machine, the one input from
//! which `hetsched validate` builds the simulated machine and the simulated tasks.
//!
//! It is a file (`calibration.toml`) so that a calibration is taken once and reused, read
//! and compared between machines, and because a file a user may edit is input like any
//! other: every figure is checked against a stated range, and an error names the file,
//! the field and the range.

use hetsched_core::machine::{Machine, OnHost, UnitGranularity, UnitType, CAPACITY_SCALE};
use hetsched_core::{Error, Result};
use hetsched_util::stats::Spread;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The format this build writes and reads.
pub const FORMAT: u32 = 1;

/// The kernels the validation workloads run (the worker-model applications).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// MD5 search: items are words hashed.
    Md5,
    /// Trial division: items are divisors tested.
    Prime,
}

impl Kernel {
    pub const ALL: [Kernel; 2] = [Kernel::Md5, Kernel::Prime];

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Md5 => "md5",
            Kernel::Prime => "prime",
        }
    }

    /// What one item of its work is.
    pub fn items(self) -> &'static str {
        match self {
            Kernel::Md5 => "words",
            Kernel::Prime => "divisors",
        }
    }
}

/// One CPU: its speed relative to the fastest, from its rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// The PU's OS index.
    pub os_index: u32,
    /// 1024 × its rate over the fastest CPU's, the geometric mean over the kernels.
    pub capacity: u32,
    /// Items per second of one thread pinned to it, per kernel (in [`Kernel::ALL`]'s
    /// order).
    pub md5_per_s: Spread,
    pub prime_per_s: Spread,
}

impl Cpu {
    pub fn rate(&self, k: Kernel) -> &Spread {
        match k {
            Kernel::Md5 => &self.md5_per_s,
            Kernel::Prime => &self.prime_per_s,
        }
    }
}

/// One kernel on one unit type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFigures {
    pub kernel: Kernel,
    /// `cpu` or `opencl`.
    pub unit: String,
    /// Items per second alone (no daemon): on a CPU of capacity 1024, or the whole
    /// device.
    pub rate: Spread,
    /// Items between two checkpoints (the application's interval).
    pub interval: u64,
    /// Items per second of a process under the daemon, which re-requests its unit at
    /// every checkpoint, at capacity 1024: what a simulated task's work is made of.
    /// Absent for an accelerator (its checkpoints are rare).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_daemon: Option<Spread>,
}

/// The OpenCL device's costs beyond its rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenCl {
    /// The device's name.
    pub device: String,
    /// Seconds to set the device up for a grant and free it (PoCL builds the kernel at
    /// every `init`), per kernel in [`Kernel::ALL`]'s order.
    pub md5_setup_s: Spread,
    pub prime_setup_s: Spread,
    /// A CPU thread's md5 rate while the device computes md5, every CPU busy, over its
    /// rate alone: how much a device that computes on the CPUs' cores (PoCL) takes from
    /// them.
    pub cpu_share: Spread,
    /// The device's md5 rate while every CPU computes md5, over its rate alone.
    pub device_share: Spread,
    /// What a process's first grant of the device costs beyond the set-up (the OpenCL
    /// platform starting), seconds: not in the simulator, which charges every grant the
    /// same set-up.
    pub first_grant_s: Spread,
}

impl OpenCl {
    /// The device's set-up a grant, whatever the kernel: the mean of the kernels'
    /// medians (the machine has one figure per device).
    pub fn setup_s_all(&self) -> f64 {
        Kernel::ALL
            .iter()
            .map(|&k| self.setup_s(k).median)
            .sum::<f64>()
            / Kernel::ALL.len() as f64
    }

    /// The shares as the machine describes a device on the host's CPUs (each at most 1:
    /// a share measured above 1 is noise).
    pub fn on_host(&self) -> OnHost {
        OnHost {
            cpu_share: self.cpu_share.median.clamp(0.001, 1.0),
            device_share: self.device_share.median.clamp(0.001, 1.0),
        }
    }

    pub fn setup_s(&self, k: Kernel) -> &Spread {
        match k {
            Kernel::Md5 => &self.md5_setup_s,
            Kernel::Prime => &self.prime_setup_s,
        }
    }
}

/// Everything `hetsched calibrate` measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub format: u32,
    /// The host it was taken on and the load average then (1, 5, 15 min): figures from
    /// a loaded machine are slower and noisier.
    pub host: String,
    pub load: String,
    /// The machine's memory, bytes (for the machine file).
    pub memory_bytes: u64,
    /// Seconds from spawning a client process that does no work to its exit, under the
    /// daemon: start-up, connecting, one grant, exit.
    pub startup_s: Spread,
    pub cpus: Vec<Cpu>,
    pub kernels: Vec<KernelFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opencl: Option<OpenCl>,
}

/// The most bytes a calibration file may have.
const MAX_BYTES: u64 = 1 << 20;
/// The most CPUs a calibration may list.
const MAX_CPUS: usize = 4096;

impl Calibration {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Calibration> {
        let text = hetsched_util::files::read_text(path, "a calibration", MAX_BYTES)?;
        let c: Calibration = toml::from_str(&text)
            .map_err(|e| Error::input(format!("{}: {}", path.display(), e.to_string().trim())))?;
        c.check()
            .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
        Ok(c)
    }

    /// The file's text.
    pub fn to_toml(&self) -> Result<String> {
        let body = toml::to_string(self).map_err(Error::runtime)?;
        Ok(format!(
            "# hetsched calibrate: this machine's measured speeds and costs. Each figure is\n\
             # a spread over repeated runs (mean, sd, median, min, max, n); rates are items\n\
             # per second (md5: words hashed; prime: divisors tested).\n{body}"
        ))
    }

    /// Every figure within its range; the error names the field and the range.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "format: {}, this hetsched reads format {FORMAT} (run hetsched calibrate again)",
                self.format
            ));
        }
        spread("startup_s", &self.startup_s, 0.0, 60.0)?;
        if self.cpus.is_empty() || self.cpus.len() > MAX_CPUS {
            return Err(format!(
                "cpus: {} CPUs, accepted 1..={MAX_CPUS}",
                self.cpus.len()
            ));
        }
        for (i, c) in self.cpus.iter().enumerate() {
            if !(1..=CAPACITY_SCALE).contains(&c.capacity) {
                return Err(format!(
                    "cpus[{i}].capacity: {}, accepted 1..={CAPACITY_SCALE}",
                    c.capacity
                ));
            }
            if self.cpus[..i].iter().any(|d| d.os_index == c.os_index) {
                return Err(format!(
                    "cpus[{i}].os_index: CPU {} listed twice",
                    c.os_index
                ));
            }
            for k in Kernel::ALL {
                spread(
                    &format!("cpus[{i}].{}_per_s", k.name()),
                    c.rate(k),
                    1.0,
                    1e15,
                )?;
            }
        }
        if !self.cpus.iter().any(|c| c.capacity == CAPACITY_SCALE) {
            return Err(format!(
                "cpus: no CPU has capacity {CAPACITY_SCALE} (the fastest is the reference)"
            ));
        }
        for (i, k) in self.kernels.iter().enumerate() {
            if !matches!(k.unit.as_str(), "cpu" | "opencl") {
                return Err(format!(
                    "kernels[{i}].unit: {:?}, accepted \"cpu\" or \"opencl\"",
                    k.unit
                ));
            }
            if self.kernels[..i]
                .iter()
                .any(|o| o.kernel == k.kernel && o.unit == k.unit)
            {
                return Err(format!(
                    "kernels[{i}]: {} on {} listed twice",
                    k.kernel.name(),
                    k.unit
                ));
            }
            spread(&format!("kernels[{i}].rate"), &k.rate, 1.0, 1e15)?;
            if !(1..=1 << 40).contains(&k.interval) {
                return Err(format!(
                    "kernels[{i}].interval: {}, accepted 1..={}",
                    k.interval,
                    1u64 << 40
                ));
            }
            if let Some(d) = &k.under_daemon {
                spread(&format!("kernels[{i}].under_daemon"), d, 1.0, 1e15)?;
            }
        }
        for k in Kernel::ALL {
            let cpu = self
                .kernels
                .iter()
                .find(|f| f.kernel == k && f.unit == "cpu")
                .ok_or_else(|| format!("kernels: no figures for {} on cpu", k.name()))?;
            if cpu.under_daemon.is_none() {
                return Err(format!(
                    "kernels: {} on cpu has no under_daemon rate",
                    k.name()
                ));
            }
        }
        if let Some(cl) = &self.opencl {
            for k in Kernel::ALL {
                spread(
                    &format!("opencl.{}_setup_s", k.name()),
                    cl.setup_s(k),
                    0.0,
                    60.0,
                )?;
                if !self
                    .kernels
                    .iter()
                    .any(|f| f.kernel == k && f.unit == "opencl")
                {
                    return Err(format!("kernels: no figures for {} on opencl", k.name()));
                }
            }
            spread("opencl.cpu_share", &cl.cpu_share, 0.001, 2.0)?;
            spread("opencl.device_share", &cl.device_share, 0.001, 2.0)?;
            spread("opencl.first_grant_s", &cl.first_grant_s, 0.0, 60.0)?;
        }
        Ok(())
    }

    /// The figures of `kernel` on `unit` (`cpu`, `opencl`).
    pub fn kernel(&self, kernel: Kernel, unit: &str) -> Option<&KernelFigures> {
        self.kernels
            .iter()
            .find(|f| f.kernel == kernel && f.unit == unit)
    }

    /// This machine as the calibration describes it: the live machine's CPUs (one unit
    /// per PU) with the calibrated capacities, and with `accelerators` its OpenCL and
    /// CUDA devices (their indices for the daemon beside it). A CPU the calibration
    /// lists that this machine lacks, or one it does not list, means the calibration is
    /// of another machine: an input error.
    pub fn machine(&self, accelerators: bool) -> Result<(Machine, Vec<Option<u32>>)> {
        use hetsched_live::devices;
        let mut m = hetsched_topology::load("live", UnitGranularity::Pu)?;
        let cpus: Vec<u32> = m
            .units
            .iter()
            .filter(|u| u.kind == UnitType::Cpu)
            .flat_map(|u| u.cpus.iter().copied())
            .collect();
        if cpus.len() != self.cpus.len() || !self.cpus.iter().all(|c| cpus.contains(&c.os_index)) {
            return Err(Error::input(format!(
                "the calibration lists CPUs {:?} but this machine has {cpus:?}: calibrate this \
                 machine (hetsched calibrate)",
                self.cpus.iter().map(|c| c.os_index).collect::<Vec<_>>()
            )));
        }
        for c in &self.cpus {
            m.set_cpu_capacity(c.os_index, c.capacity)?;
        }
        let index = if accelerators {
            let mut found = devices::opencl_devices();
            found.extend(devices::cuda_devices());
            devices::attach(&mut m, &found)
        } else {
            devices::described(&m)
        };
        if let (true, Some(cl)) = (accelerators, &self.opencl) {
            // The calibrated device is OpenCL device 0, the first attached: the live
            // machine's device units have no accelerator entry, so it gets one that
            // carries the calibrated set-up and shares.
            if let Some(u) = m.units.iter().position(|u| u.kind == UnitType::OpenCl) {
                let a = m.accelerator_entry(u);
                a.model = Some(cl.device.clone());
                a.setup_s = Some(cl.setup_s_all());
                a.on_host = Some(cl.on_host());
            }
        }
        Ok((m, index))
    }

    /// The calibrated CPUs as a machine file (`hetsched simulate --machine FILE`): one
    /// CPU kind per distinct capacity, one package, and the OpenCL device where one was
    /// calibrated (its per-kernel speeds are in the calibration, not in the file).
    pub fn machine_file(&self) -> String {
        let mut kinds: Vec<u32> = self.cpus.iter().map(|c| c.capacity).collect();
        kinds.sort_unstable_by(|a, b| b.cmp(a));
        kinds.dedup();
        let kind = |cap: u32| format!("capacity-{cap}");
        let mut s = format!(
            "# This machine as `hetsched calibrate` measured it on {}: each CPU's capacity\n\
             # is its measured speed relative to the fastest.\n\
             name = \"calibrated\"\n\
             description = \"{} CPUs as calibrated on {}\"\n",
            self.host,
            self.cpus.len(),
            self.host
        );
        for &cap in &kinds {
            s += &format!(
                "\n[[cpu_kind]]\nname = \"{}\"\ncapacity = {cap}\n",
                kind(cap)
            );
        }
        let list: Vec<String> = self
            .cpus
            .iter()
            .map(|c| format!("\"{}\"", kind(c.capacity)))
            .collect();
        s += &format!(
            "\n[[package]]\ncores = {}\nkind = [{}]\n\n[[numa_node]]\nmemory = \"{} KiB\"\n",
            self.cpus.len(),
            list.join(", "),
            (self.memory_bytes / 1024).max(1)
        );
        if let Some(cl) = &self.opencl {
            let h = cl.on_host();
            s += &format!(
                "\n# Its speed differs by kernel: see calibration.toml.\n[[accelerator]]\n\
                 type = \"opencl\"\nname = \"opencl0\"\nmodel = {:?}\nsetup_ms = {:.3}\n\
                 on_host = {{ cpu_share = {:.3}, device_share = {:.3} }}\n",
                cl.device,
                cl.setup_s_all() * 1e3,
                h.cpu_share,
                h.device_share
            );
        }
        s
    }
}

/// A spread's figures are finite, its mean and median within [lo, hi], its sd ≥ 0, and
/// it has at least one value.
fn spread(field: &str, s: &Spread, lo: f64, hi: f64) -> std::result::Result<(), String> {
    let all = [s.mean, s.sd, s.median, s.min, s.max];
    if all.iter().any(|v| !v.is_finite()) || s.sd < 0.0 {
        return Err(format!("{field}: figures must be finite and sd >= 0"));
    }
    for (name, v) in [("mean", s.mean), ("median", s.median)] {
        if !(lo..=hi).contains(&v) {
            return Err(format!("{field}.{name}: {v}, accepted [{lo}, {hi}]"));
        }
    }
    if s.n == 0 || s.n > 1_000_000 {
        return Err(format!("{field}.n: {}, accepted 1..=1000000", s.n));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(v: f64) -> Spread {
        Spread::of(&[v * 0.99, v, v * 1.01])
    }

    /// A calibration of this machine's CPUs, the second at half speed.
    pub(crate) fn sample() -> Calibration {
        let m = hetsched_topology::load("live", UnitGranularity::Pu).unwrap();
        let pus: Vec<u32> = m.pus.iter().map(|p| p.os_index).collect();
        Calibration {
            format: FORMAT,
            host: "test".into(),
            load: "0.00 0.00 0.00".into(),
            memory_bytes: 1 << 30,
            startup_s: figure(0.005),
            cpus: pus
                .iter()
                .enumerate()
                .map(|(i, &p)| Cpu {
                    os_index: p,
                    capacity: if i == 1 { 512 } else { 1024 },
                    md5_per_s: figure(if i == 1 { 1e6 } else { 2e6 }),
                    prime_per_s: figure(if i == 1 { 1e8 } else { 2e8 }),
                })
                .collect(),
            kernels: Kernel::ALL
                .iter()
                .map(|&kernel| KernelFigures {
                    kernel,
                    unit: "cpu".into(),
                    rate: figure(if kernel == Kernel::Md5 { 2e6 } else { 2e8 }),
                    interval: 1000,
                    under_daemon: Some(figure(if kernel == Kernel::Md5 { 1.9e6 } else { 1.95e8 })),
                })
                .collect(),
            opencl: None,
        }
    }

    fn write(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
        let p = dir.path().join("calibration.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_calibration_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let c = sample();
        let p = write(&dir, &c.to_toml().unwrap());
        assert_eq!(Calibration::load(&p).unwrap(), c);
    }

    #[test]
    fn out_of_range_figures_are_refused_naming_file_field_and_range() {
        let dir = tempfile::tempdir().unwrap();
        type Break = fn(&mut Calibration);
        let cases: Vec<(Break, &str)> = vec![
            (
                |c| c.cpus[0].capacity = 2000,
                "cpus[0].capacity: 2000, accepted 1..=1024",
            ),
            (
                |c| c.cpus[0].capacity = 0,
                "cpus[0].capacity: 0, accepted 1..=1024",
            ),
            (|c| c.startup_s.median = 1e9, "startup_s.median"),
            (
                |c| c.kernels[1].rate.mean = -3.0,
                "kernels[1].rate.mean: -3, accepted [1, 1000000000000000]",
            ),
            (|c| c.kernels[0].interval = 0, "kernels[0].interval: 0"),
            (
                |c| c.kernels[0].unit = "fpga".into(),
                "kernels[0].unit: \"fpga\"",
            ),
            (
                |c| c.kernels[0].under_daemon = None,
                "md5 on cpu has no under_daemon rate",
            ),
            (|c| c.cpus.clear(), "cpus: 0 CPUs"),
            (|c| c.format = 9, "format: 9"),
            (
                |c| c.cpus.iter_mut().for_each(|x| x.capacity = 700),
                "no CPU has capacity 1024",
            ),
        ];
        for (break_it, expected) in cases {
            let mut c = sample();
            break_it(&mut c);
            let p = write(&dir, &c.to_toml().unwrap());
            let e = Calibration::load(&p).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let e = e.to_string();
            assert!(
                e.contains("calibration.toml") && e.contains(expected),
                "{e}"
            );
        }
        // Not TOML, an unknown field, a directory: refused too.
        for text in ["format = ", "format = 1\nsurprise = 2\n"] {
            let e = Calibration::load(&write(&dir, text)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
        }
        assert_eq!(Calibration::load(dir.path()).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn the_machine_has_the_calibrated_capacities_in_both_forms() {
        let c = sample();
        let (m, _) = c.machine(false).unwrap();
        for cpu in &c.cpus {
            let unit = m.units.iter().find(|u| u.cpus == [cpu.os_index]).unwrap();
            assert_eq!(unit.capacity, cpu.capacity);
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("machine.toml");
        std::fs::write(&p, c.machine_file()).unwrap();
        let f = hetsched_topology::load(p.to_str().unwrap(), UnitGranularity::Pu).unwrap();
        let mut caps: Vec<u32> = f.units.iter().map(|u| u.capacity).collect();
        let mut want: Vec<u32> = c.cpus.iter().map(|x| x.capacity).collect();
        caps.sort_unstable();
        want.sort_unstable();
        assert_eq!(caps, want);
    }

    #[test]
    fn the_calibrated_device_carries_its_set_up_and_shares() {
        let mut c = sample();
        let f = figure(0.5);
        c.opencl = Some(OpenCl {
            device: "d".into(),
            md5_setup_s: figure(0.02),
            prime_setup_s: figure(0.04),
            cpu_share: f,
            device_share: figure(0.4),
            first_grant_s: figure(0.03),
        });
        let (m, _) = c.machine(true).unwrap();
        let Some(u) = m.units.iter().find(|u| u.kind == UnitType::OpenCl) else {
            eprintln!("skipped: no OpenCL device here");
            return;
        };
        let a = &m.accelerators[u.accelerator.unwrap() as usize];
        assert!((a.setup_s.unwrap() - 0.03).abs() < 1e-12);
        let h = a.on_host.unwrap();
        assert_eq!((h.cpu_share, h.device_share), (0.5, 0.4));
        // Without the accelerators, none.
        assert!(c.machine(false).unwrap().0.accelerators.is_empty());
    }

    #[test]
    fn a_calibration_of_another_machine_is_refused() {
        let mut c = sample();
        c.cpus[0].os_index = 4000;
        let e = c.machine(false).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("calibrate this machine"), "{e}");
    }
}

//! A validation workload: a set of jobs, each one real client process for the live run
//! and one task for the simulator, both made from the same description.
//!
//! A job is sized in seconds on a capacity-1024 CPU and turned into work through the
//! calibration (so the workload takes as long on any machine), then into an exact input:
//! an MD5 hash whose word is the `items`-th of the search, a semiprime whose trial
//! division tests `items` divisors. The simulated task is built from the same item count,
//! the calibrated rates, and the application's own meta information (affinities,
//! checkpoint sizes): nothing of it is fitted to the live result.

use crate::calibration::{Calibration, Kernel};
use hetsched_apps::md5::{Md5Config, Md5Cracker, Md5Job};
use hetsched_apps::prime::{PrimeConfig, PrimeFactoriser};
use hetsched_core::machine::UnitType;
use hetsched_core::task::{PerUnitType, TaskId};
use hetsched_core::{Error, Result};
use hetsched_live::session::Job;
use hetsched_sim::SimTask;
use hetsched_worker::{MetaInfo, Worker as _};
use std::path::Path;

/// The MD5 search's alphabet: the application's default.
const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz";

/// One job of a workload.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub kernel: Kernel,
    /// Items of work (words hashed, divisors tested) the job does in full.
    pub items: u64,
    /// What the application is given: the MD5 (hex) and the word length, or the number.
    input: Input,
}

#[derive(Clone, Debug, PartialEq)]
enum Input {
    Md5 { hash: String, length: u32 },
    Prime { n: u64 },
}

impl JobSpec {
    /// An MD5 search that hashes `items` words (at least 1): the target is the word of
    /// index `items − 1` of the shortest word length whose space holds it.
    pub fn md5(items: u64) -> Result<JobSpec> {
        let items = items.max(1);
        let n = ALPHABET.len() as u64;
        let mut length = 1;
        while n.checked_pow(length).is_some_and(|space| space < items) {
            length += 1;
        }
        let job = Md5Job::new(&"0".repeat(32), ALPHABET, length)?;
        let word = job.word(items - 1);
        let hash = hetsched_apps::md5::md5_hex(&word);
        // A word earlier in the order with the same hash would end the search early;
        // MD5 collisions among short words are not known, but the job says what it does.
        Ok(JobSpec {
            kernel: Kernel::Md5,
            items,
            input: Input::Md5 { hash, length },
        })
    }

    /// A factorisation that tests about `items` divisors: p·q for the primes p, the
    /// first above `items + 1`, and q, the next. Trial division tests the divisors 2 ..= p
    /// and stops, as q > p is then below the next divisor's square.
    pub fn prime(items: u64) -> Result<JobSpec> {
        let p = next_prime(items.max(2) + 1);
        let q = next_prime(p + 1);
        let n = p.checked_mul(q).ok_or_else(|| {
            Error::input(format!(
                "a factorisation of {items} divisors: its number would not fit in 64 bits (at most about 4.29e9 divisors: a smaller --scale)"
            ))
        })?;
        // Divisors 2..=p are tested; then the next divisor p + 1 has (p + 1)² > q.
        Ok(JobSpec {
            kernel: Kernel::Prime,
            items: p - 1,
            input: Input::Prime { n },
        })
    }

    /// Its name in reports.
    pub fn name(&self, index: usize) -> String {
        format!("{index}:{}", self.kernel.name())
    }

    /// The live job: `APPS app md5|prime ... --daemon` (the daemon found through
    /// `HETSCHED_SOCKET`).
    pub fn live(&self, index: usize, apps: &Path) -> Job {
        let args: Vec<String> = match &self.input {
            Input::Md5 { hash, length } => vec![
                "md5".into(),
                "--hash".into(),
                hash.clone(),
                "--length".into(),
                length.to_string(),
            ],
            Input::Prime { n } => vec!["prime".into(), n.to_string()],
        };
        Job {
            name: self.name(index),
            program: apps.to_path_buf(),
            args: std::iter::once("app".to_string())
                .chain(args)
                .chain(std::iter::once("--daemon".to_string()))
                .map(Into::into)
                .collect(),
        }
    }

    /// The simulated task: its work is its items at the calibrated rate under the
    /// daemon on a capacity-1024 CPU; on the OpenCL device (where calibrated) it runs at
    /// the device's measured rate; its checkpoints come every interval of items; it
    /// arrives when a process has started (the calibrated start-up); its affinities and
    /// checkpoint size are the application's.
    pub fn task(&self, id: TaskId, cal: &Calibration) -> Result<SimTask> {
        let cpu = cal.kernel(self.kernel, "cpu").ok_or_else(|| {
            Error::input(format!(
                "the calibration has no {} on cpu",
                self.kernel.name()
            ))
        })?;
        let cpu_rate = cpu.under_daemon.as_ref().unwrap_or(&cpu.rate).median;
        let arrival = (cal.startup_s.median * 1e9).round() as u64;
        let mut t = SimTask::cpu(id, self.items as f64 / cpu_rate, arrival);
        t.kind = self.kernel.name().into();
        let meta = meta_info(self.kernel)?;
        t.affinity = meta.affinity;
        t.bytes_out = meta.bytes_out;
        let mut checkpoint = PerUnitType::default();
        checkpoint.set(UnitType::Cpu, secs_ns(cpu.interval as f64 / cpu_rate));
        let mut speed = PerUnitType::default();
        if let Some(cl) = cal.kernel(self.kernel, "opencl") {
            speed.set(UnitType::OpenCl, cl.rate.median / cpu_rate);
            checkpoint.set(
                UnitType::OpenCl,
                secs_ns(cl.interval as f64 / cl.rate.median),
            );
        }
        t.model.speed = speed;
        t.checkpoint_ns = checkpoint;
        Ok(t)
    }
}

/// The application's meta information (what its live process sends the daemon).
pub fn meta_info(kernel: Kernel) -> Result<MetaInfo> {
    Ok(match kernel {
        Kernel::Md5 => {
            let job = Md5Job::new(&"0".repeat(32), ALPHABET, 1)?;
            Md5Cracker::new(job, Md5Config::default())?.meta_info()
        }
        Kernel::Prime => PrimeFactoriser::new(PrimeConfig::default())?.meta_info(),
    })
}

fn secs_ns(s: f64) -> u64 {
    (s * 1e9).round().max(1.0) as u64
}

/// The least prime ≥ `n` (n ≤ 2^32: the jobs' factors).
fn next_prime(mut n: u64) -> u64 {
    while !hetsched_apps::prime::is_prime(n) {
        n += 1;
    }
    n
}

/// A workload `hetsched validate` knows: jobs sized in seconds on a capacity-1024 CPU.
pub struct Workload {
    pub key: &'static str,
    pub about: &'static str,
    /// Whether the machine includes the accelerators (else CPUs only).
    pub accelerators: bool,
    /// Each job: its kernel and its seconds on a capacity-1024 CPU, in start order.
    pub jobs: &'static [(Kernel, f64)],
}

impl Workload {
    /// The jobs, sized through `cal` and multiplied by `scale`.
    pub fn jobs(&self, cal: &Calibration, scale: f64) -> Result<Vec<JobSpec>> {
        self.jobs
            .iter()
            .map(|&(k, secs)| {
                let f = cal.kernel(k, "cpu").ok_or_else(|| {
                    Error::input(format!("the calibration has no {} on cpu", k.name()))
                })?;
                let items = (secs * scale * f.rate.median).round() as u64;
                match k {
                    Kernel::Md5 => JobSpec::md5(items),
                    Kernel::Prime => JobSpec::prime(items),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_apps::md5::{Md5Checkpoint, Md5Cracker};
    use hetsched_apps::prime::PrimeCheckpoint;
    use hetsched_worker::{run, Fixed, Grant};

    fn fixed() -> Fixed {
        let cpu = hetsched_util::host::cpu_or_first(None).unwrap();
        Fixed::new(Grant::cpu(0, vec![cpu]))
    }

    #[test]
    fn an_md5_job_hashes_exactly_its_items() {
        for items in [1, 26, 27, 5_000, 123_457] {
            let spec = JobSpec::md5(items).unwrap();
            let Input::Md5 { hash, length } = &spec.input else {
                panic!()
            };
            let worker = Md5Cracker::new(
                Md5Job::new(hash, ALPHABET, *length).unwrap(),
                Md5Config {
                    cpu_interval: 1,
                    opencl_interval: 1,
                },
            )
            .unwrap();
            let r = run(&worker, &mut fixed(), Md5Checkpoint::default()).unwrap();
            assert_eq!(r.checkpoint.words_hashed, items, "items {items}");
            assert_eq!(r.output.unwrap().index, items - 1);
        }
    }

    #[test]
    fn a_prime_job_tests_exactly_its_items() {
        for items in [10, 1_000, 200_000] {
            let spec = JobSpec::prime(items).unwrap();
            assert!(
                spec.items >= items && spec.items < items + 2_000,
                "{}",
                spec.items
            );
            let Input::Prime { n } = spec.input else {
                panic!()
            };
            let worker = PrimeFactoriser::new(PrimeConfig::default()).unwrap();
            let r = run(&worker, &mut fixed(), PrimeCheckpoint::start(n).unwrap()).unwrap();
            assert_eq!(r.checkpoint.divisors_tested, spec.items);
            assert_eq!(r.output.len(), 2);
        }
    }
}

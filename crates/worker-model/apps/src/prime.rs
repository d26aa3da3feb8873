//! Trial-division prime factorisation (the paper's PF): test divisors 2, 3, 4, ...
//! up to the square root of the current remainder, dividing each hit out as often
//! as possible. A checkpoint is (remainder, next divisor) plus the factors so far.

use crate::prime_cl::OpenClPrime;
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_worker::{Grant, Implementation, MetaInfo, Step, UnitState, Worker};

/// Divisors between two checkpoints on the CPU (the paper's 1000).
pub const CPU_INTERVAL: u64 = 1000;
/// Divisors per OpenCL launch / checkpoint by default.
pub const OPENCL_INTERVAL: u32 = 1 << 16;

/// The state any implementation resumes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimeCheckpoint {
    /// The number to factorise.
    pub n: u64,
    /// `n` divided by all factors found so far.
    pub remainder: u64,
    /// The next divisor to test.
    pub next_divisor: u64,
    /// Prime factors found so far with multiplicity, ascending.
    pub factors: Vec<(u64, u32)>,
    /// Divisors actually tested so far by all implementations (for accounting: a
    /// correct run has `divisors_tested == next_divisor - 2`).
    pub divisors_tested: u64,
}

impl PrimeCheckpoint {
    /// The start of factorising `n` (n >= 2).
    pub fn start(n: u64) -> Result<Self> {
        if n < 2 {
            return Err(Error::input(format!(
                "N: expected an integer >= 2 to factorise, got {n}"
            )));
        }
        Ok(PrimeCheckpoint {
            n,
            remainder: n,
            next_divisor: 2,
            factors: Vec::new(),
            divisors_tested: 0,
        })
    }

    /// True when no divisor below the remainder's square root is left.
    pub(crate) fn exhausted(&self) -> bool {
        (self.next_divisor as u128) * (self.next_divisor as u128) > self.remainder as u128
    }

    /// Divide `d` out of the remainder as often as it goes; record it.
    pub(crate) fn divide_out(&mut self, d: u64) {
        let mut k = 0;
        while self.remainder.is_multiple_of(d) {
            self.remainder /= d;
            k += 1;
        }
        self.factors.push((d, k));
    }
}

/// Deterministic Miller–Rabin for u64 (the first 12 primes as bases suffice below
/// 3.3e24). Hand-written: a dozen lines, used only to verify results.
pub fn is_prime(n: u64) -> bool {
    const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if n < 2 {
        return false;
    }
    if let Some(&p) = BASES.iter().find(|&&p| n.is_multiple_of(p)) {
        return n == p;
    }
    let mul = |a: u64, b: u64| ((a as u128 * b as u128) % n as u128) as u64;
    let pow = |mut b: u64, mut e: u64| {
        let mut r = 1;
        while e > 0 {
            if e & 1 == 1 {
                r = mul(r, b);
            }
            b = mul(b, b);
            e >>= 1;
        }
        r
    };
    let s = (n - 1).trailing_zeros();
    let d = (n - 1) >> s;
    BASES.iter().all(|&a| {
        let mut x = pow(a, d);
        if x == 1 || x == n - 1 {
            return true;
        }
        (1..s).any(|_| {
            x = mul(x, x);
            x == n - 1
        })
    })
}

/// The factorisation a finished checkpoint stands for, verified: the factors
/// multiply to `n` and each is prime.
pub(crate) fn finish(cp: &mut PrimeCheckpoint) -> Result<Step<Vec<(u64, u32)>>> {
    if cp.remainder > 1 {
        let r = cp.remainder;
        cp.factors.push((r, 1));
        cp.remainder = 1;
    }
    let mut product: u128 = 1;
    for &(p, k) in &cp.factors {
        if !is_prime(p) {
            return Err(Error::runtime(format!(
                "factorising {}: factor {p} is not prime",
                cp.n
            )));
        }
        product *= (p as u128).pow(k);
    }
    if product != cp.n as u128 {
        return Err(Error::runtime(format!(
            "factorising {}: factors {:?} multiply to {product}",
            cp.n, cp.factors
        )));
    }
    Ok(Step::Done(cp.factors.clone()))
}

/// Interval settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrimeConfig {
    pub cpu_interval: u64,
    pub opencl_interval: u32,
}

impl Default for PrimeConfig {
    fn default() -> Self {
        PrimeConfig {
            cpu_interval: CPU_INTERVAL,
            opencl_interval: OPENCL_INTERVAL,
        }
    }
}

/// The factorisation worker: affinity CPU 1, OpenCL 1 (the paper's 1 and 1).
pub struct PrimeFactoriser {
    cpu: CpuPrime,
    opencl: OpenClPrime,
}

impl PrimeFactoriser {
    pub fn new(config: PrimeConfig) -> Result<Self> {
        if config.cpu_interval == 0 || config.opencl_interval == 0 {
            return Err(Error::input(
                "--cpu-interval / --opencl-interval: expected at least 1",
            ));
        }
        Ok(PrimeFactoriser {
            cpu: CpuPrime {
                interval: config.cpu_interval,
            },
            opencl: OpenClPrime {
                interval: config.opencl_interval,
            },
        })
    }
}

impl Worker for PrimeFactoriser {
    type Checkpoint = PrimeCheckpoint;
    type Output = Vec<(u64, u32)>;

    fn meta_info(&self) -> MetaInfo {
        MetaInfo {
            kind: "prime".into(),
            affinity: [(UnitType::OpenCl, 1.0), (UnitType::Cpu, 1.0)]
                .into_iter()
                .collect(),
            // N is the only input.
            bytes_in: 8,
            // n, remainder, next divisor, count; the factor list is at most 64 pairs.
            bytes_out: 4 * 8 + 64 * 12,
            ..MetaInfo::default()
        }
    }

    fn implementation_for(
        &self,
        unit: UnitType,
    ) -> Option<&dyn Implementation<PrimeCheckpoint, Vec<(u64, u32)>>> {
        match unit {
            UnitType::Cpu => Some(&self.cpu),
            UnitType::OpenCl => Some(&self.opencl),
            UnitType::Gpu | UnitType::CoProcessor => None,
        }
    }
}

struct CpuPrime {
    interval: u64,
}

impl Implementation<PrimeCheckpoint, Vec<(u64, u32)>> for CpuPrime {
    fn init(
        &self,
        checkpoint: &PrimeCheckpoint,
        _grant: &Grant,
    ) -> Result<Box<dyn UnitState<PrimeCheckpoint, Vec<(u64, u32)>>>> {
        Ok(Box::new(CpuPrimeState {
            interval: self.interval,
            cp: checkpoint.clone(),
        }))
    }
}

struct CpuPrimeState {
    interval: u64,
    cp: PrimeCheckpoint,
}

impl UnitState<PrimeCheckpoint, Vec<(u64, u32)>> for CpuPrimeState {
    fn main(&mut self) -> Result<Step<Vec<(u64, u32)>>> {
        let cp = &mut self.cp;
        for _ in 0..self.interval {
            if cp.exhausted() {
                break;
            }
            let d = cp.next_divisor;
            cp.divisors_tested += 1;
            if cp.remainder.is_multiple_of(d) {
                cp.divide_out(d);
            }
            cp.next_divisor += 1;
        }
        if cp.exhausted() {
            return finish(cp);
        }
        Ok(Step::Checkpoint)
    }

    fn free(self: Box<Self>) -> Result<PrimeCheckpoint> {
        Ok(self.cp)
    }
}

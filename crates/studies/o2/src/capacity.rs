//! How many bytes of on-chip cache each core can hold objects in.
//!
//! Filled from the machine model ([`CacheCapacity::from_machine`], hwloc on a live
//! machine) or given explicitly. A core's capacity is its private cache plus an equal
//! share of every shared cache it belongs to, which is how CORETIME counts the AMD
//! machine's 16 MB (16 × 512 KB L2 + 4 × 2 MB L3).

use hetsched_core::{Error, Result};

/// A cache shared by several cores (e.g. a per-chip L3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedCache {
    pub bytes: u64,
    /// Indices of the runtime's cores (not OS CPU ids) that share it.
    pub cores: Vec<usize>,
}

/// Cache capacities of the cores a runtime runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheCapacity {
    /// Bytes of the private cache level of each core (e.g. its L2), one entry per core.
    pub private_bytes: Vec<u64>,
    pub shared: Vec<SharedCache>,
}

impl CacheCapacity {
    /// The caches of the cores holding the PUs `cpus` (one runtime core per PU): per
    /// core its largest private data cache, and the largest cache shared by more than
    /// one of the runtime's cores (e.g. a per-chip L3), if any.
    pub fn from_machine(machine: &hetsched_core::machine::Machine, cpus: &[usize]) -> Result<Self> {
        use hetsched_core::machine::CacheKind;
        let core_of = |cpu: usize| -> Result<Vec<u32>> {
            let pu = machine.pu(cpu as u32).ok_or_else(|| {
                Error::input(format!("CPU {cpu} is not in machine {}", machine.name))
            })?;
            Ok(pu
                .core
                .and_then(|c| machine.cores.get(c as usize))
                .map_or_else(|| vec![cpu as u32], |c| c.cpus.clone()))
        };
        let data = || {
            machine
                .caches
                .iter()
                .filter(|c| c.kind != CacheKind::Instruction)
        };
        let mut private_bytes = Vec::new();
        for &cpu in cpus {
            let own = core_of(cpu)?;
            let best = data()
                .filter(|c| {
                    c.cpus.contains(&(cpu as u32)) && c.cpus.iter().all(|p| own.contains(p))
                })
                .map(|c| c.size_bytes)
                .max()
                .unwrap_or(0);
            private_bytes.push(best);
        }
        let mut shared = Vec::new();
        if let Some(level) = data()
            .filter(|c| {
                cpus.iter()
                    .filter(|&&p| c.cpus.contains(&(p as u32)))
                    .count()
                    > 1
            })
            .map(|c| c.level)
            .max()
        {
            for c in data().filter(|c| c.level == level) {
                let cores: Vec<usize> = (0..cpus.len())
                    .filter(|&i| c.cpus.contains(&(cpus[i] as u32)))
                    .collect();
                if cores.len() > 1 {
                    shared.push(SharedCache {
                        bytes: c.size_bytes,
                        cores,
                    });
                }
            }
        }
        Ok(CacheCapacity {
            private_bytes,
            shared,
        })
    }

    /// `cores` identical cores with `private` bytes each, all sharing one `shared` cache.
    pub fn uniform(cores: usize, private: u64, shared: u64) -> Self {
        CacheCapacity {
            private_bytes: vec![private; cores],
            shared: if shared > 0 {
                vec![SharedCache {
                    bytes: shared,
                    cores: (0..cores).collect(),
                }]
            } else {
                Vec::new()
            },
        }
    }

    /// Number of cores described.
    pub fn cores(&self) -> usize {
        self.private_bytes.len()
    }

    /// Checks that every shared cache names existing cores, each at most once.
    pub fn validate(&self) -> Result<()> {
        for (i, s) in self.shared.iter().enumerate() {
            if s.cores.is_empty() {
                return Err(Error::input(format!("shared cache {i}: no cores share it")));
            }
            let mut seen = vec![false; self.cores()];
            for &c in &s.cores {
                if c >= self.cores() || seen[c] {
                    return Err(Error::input(format!(
                        "shared cache {i}: core {c} is out of range (0..{}) or repeated",
                        self.cores()
                    )));
                }
                seen[c] = true;
            }
        }
        Ok(())
    }

    /// Bytes core `core` may hold: its private cache plus its share of shared caches.
    pub fn per_core(&self, core: usize) -> u64 {
        let shares: u64 = self
            .shared
            .iter()
            .filter(|s| s.cores.contains(&core))
            .map(|s| s.bytes / s.cores.len() as u64)
            .sum();
        self.private_bytes[core] + shares
    }

    /// Total on-chip bytes the packing may fill.
    pub fn total(&self) -> u64 {
        (0..self.cores()).map(|c| self.per_core(c)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_machine_totals_16_mb() {
        // 16 cores with 512 KB L2; four chips, each a 2 MB L3 shared by its 4 cores.
        let cap = CacheCapacity {
            private_bytes: vec![512 << 10; 16],
            shared: (0..4)
                .map(|chip| SharedCache {
                    bytes: 2 << 20,
                    cores: (chip * 4..chip * 4 + 4).collect(),
                })
                .collect(),
        };
        cap.validate().unwrap();
        assert_eq!(cap.per_core(5), (512 << 10) + (512 << 10));
        assert_eq!(cap.total(), 16 << 20);
    }

    #[test]
    fn rejects_bad_sharing() {
        let mut cap = CacheCapacity::uniform(2, 1, 2);
        cap.shared[0].cores = vec![0, 0];
        assert!(cap.validate().is_err());
        cap.shared[0].cores = vec![2];
        assert!(cap.validate().is_err());
    }
}

#[cfg(test)]
mod from_machine_tests {
    use super::*;

    #[test]
    fn the_coretime_preset_gives_the_papers_16_mb() {
        let mut m =
            hetsched_topology::load("coretime", hetsched_core::machine::UnitGranularity::Pu)
                .unwrap();
        m.derive_units(hetsched_core::machine::UnitGranularity::Pu);
        let cpus: Vec<usize> = (0..16).collect();
        let c = CacheCapacity::from_machine(&m, &cpus).unwrap();
        assert_eq!(c.private_bytes, vec![512 << 10; 16]);
        assert_eq!(c.shared.len(), 4);
        assert!(c
            .shared
            .iter()
            .all(|s| s.bytes == 2 << 20 && s.cores.len() == 4));
        let total: u64 =
            c.private_bytes.iter().sum::<u64>() + c.shared.iter().map(|s| s.bytes).sum::<u64>();
        assert_eq!(total, 16 << 20);
        assert!(CacheCapacity::from_machine(&m, &[99]).is_err());
    }
}

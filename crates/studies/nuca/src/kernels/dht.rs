//! Distributed hash tables (the paper's in-house dht_lp and dht_sc): a table split into
//! one partition per thread; a key's hash picks its partition and its bucket there. Each
//! thread first builds its own partition (inserting the keys that hash to it), then all
//! threads look up random keys across all partitions and increment their counters.
//! Checks that every lookup found its key and the counters sum to the lookups made.
//!
//! Linear probing keeps (key, counter) slots and probes forward within the partition;
//! separate chaining keeps bucket heads and a pool of (key, counter, next) nodes.

use super::{mix, run_threads, verify, Space};
use crate::trace::Trace;
use hetsched_core::Result;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Barrier;

#[derive(Clone, Copy)]
pub enum Kind {
    LinearProbing,
    SeparateChaining,
}

const KEYS_PER_PARTITION: usize = 256;

pub fn run(p: usize, lookups: usize, kind: Kind) -> Result<Vec<Trace>> {
    let total = p * KEYS_PER_PARTITION;
    let keys: Vec<u64> = (0..total as u64).map(|k| mix(k) | 1).collect(); // 0 = empty
    let part = |k: u64| ((k >> 8) % p as u64) as usize;
    // Slots at load ~0.5; chains of 2 keys on average.
    let cap = (2 * KEYS_PER_PARTITION).next_power_of_two();
    let bucket = |k: u64, size: usize| ((k >> 24) as usize) & (size - 1);
    let space = Space::default();
    let tables: Vec<_> = (0..p).map(|_| space.array(2 * cap)).collect();
    let heads: Vec<_> = (0..p)
        .map(|_| space.array(KEYS_PER_PARTITION / 2))
        .collect();
    let pools: Vec<_> = (0..p).map(|_| space.array(3 * cap)).collect();
    let missing = AtomicU64::new(0);
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        match kind {
            Kind::LinearProbing => {
                let tab = &tables[id];
                for s in 0..2 * cap {
                    tab.set_u(t, line!(), s, 0);
                }
                for &k in keys.iter().filter(|&&k| part(k) == id) {
                    let mut s = bucket(k, cap);
                    t.ops(6);
                    while tab.get_u(t, line!(), 2 * s) != 0 {
                        s = (s + 1) & (cap - 1);
                        t.ops(2);
                    }
                    tab.set_u(t, line!(), 2 * s, k);
                }
            }
            Kind::SeparateChaining => {
                let (h, pool) = (&heads[id], &pools[id]);
                for b in 0..h.len() {
                    h.set_u(t, line!(), b, 0);
                }
                let mut next = 0;
                for &k in keys.iter().filter(|&&k| part(k) == id) {
                    let b = bucket(k, h.len());
                    t.ops(6);
                    let old = h.get_u(t, line!(), b);
                    pool.set_u(t, line!(), 3 * next, k);
                    pool.set_u(t, line!(), 3 * next + 1, 0);
                    pool.set_u(t, line!(), 3 * next + 2, old);
                    next += 1;
                    h.set_u(t, line!(), b, next as u64); // node index + 1; 0 = end
                }
            }
        }
        barrier.wait();
        for i in 0..lookups {
            let k = keys[(mix((id * lookups + i) as u64 ^ 0xd47) % total as u64) as usize];
            let q = part(k);
            t.ops(12);
            let found = match kind {
                Kind::LinearProbing => {
                    let tab = &tables[q];
                    let mut s = bucket(k, cap);
                    loop {
                        let here = tab.get_u(t, line!(), 2 * s);
                        t.ops(2);
                        if here == k {
                            tab.add_u(t, line!(), 2 * s + 1, 1);
                            break true;
                        }
                        if here == 0 {
                            break false;
                        }
                        s = (s + 1) & (cap - 1);
                    }
                }
                Kind::SeparateChaining => {
                    let (h, pool) = (&heads[q], &pools[q]);
                    let mut node = h.get_u(t, line!(), bucket(k, h.len()));
                    loop {
                        if node == 0 {
                            break false;
                        }
                        let at = 3 * (node as usize - 1);
                        t.ops(2);
                        if pool.get_u(t, line!(), at) == k {
                            pool.add_u(t, line!(), at + 1, 1);
                            break true;
                        }
                        node = pool.get_u(t, line!(), at + 2);
                    }
                }
            };
            if !found {
                missing.fetch_add(1, Relaxed);
            }
        }
    });
    let missing = missing.into_inner();
    verify(missing == 0, || {
        format!("dht: {missing} lookups missed an inserted key")
    })?;
    let counted: u64 = match kind {
        Kind::LinearProbing => tables
            .iter()
            .map(|a| (0..cap).map(|s| a.peek_u(2 * s + 1)).sum::<u64>())
            .sum(),
        Kind::SeparateChaining => pools
            .iter()
            .map(|a| (0..cap).map(|s| a.peek_u(3 * s + 1)).sum::<u64>())
            .sum(),
    };
    verify(counted == (p * lookups) as u64, || {
        format!("dht: counters sum to {counted}, expected {}", p * lookups)
    })?;
    Ok(traces)
}

//! CORETIME's greedy first-fit "cache packing": expensive objects into cores' caches.
//!
//! Objects are taken most expensive first (one sort: Θ(n log n)) and each goes to the
//! first core with room for its bytes. Like CORETIME we also bound each core's
//! operation load: a core holding several popular objects saturates and its callers
//! wait, so an object whose load would push a core past the cap tries the next core
//! (and stays unassigned if no core can take it).

/// An object the packing may place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Item {
    pub object: u32,
    pub bytes: u64,
    /// Share of one core its operations keep busy (operation time / wall time).
    pub load: f64,
    /// How much placing it saves (fetch time per second); the packing order.
    pub benefit: f64,
}

/// A core's room for more objects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bin {
    pub free_bytes: u64,
    /// Load of the objects it already holds.
    pub load: f64,
}

/// The per-core load cap: the fair share of `total_load` with `slack`, but never below
/// the largest single item (which must fit somewhere).
pub fn load_cap(total_load: f64, cores: usize, slack: f64, items: &[Item]) -> f64 {
    let largest = items.iter().map(|i| i.load).fold(0.0, f64::max);
    (total_load / cores.max(1) as f64 * (1.0 + slack)).max(largest)
}

/// Places `items` into `bins` first fit in decreasing benefit; returns (object, core)
/// for the placed ones and updates the bins. Items that fit nowhere are left out.
pub fn pack(items: &[Item], bins: &mut [Bin], load_cap: f64) -> Vec<(u32, usize)> {
    let mut order: Vec<&Item> = items.iter().collect();
    order.sort_by(|a, b| {
        b.benefit
            .total_cmp(&a.benefit)
            .then(a.object.cmp(&b.object))
    });
    let mut placed = Vec::with_capacity(items.len());
    for item in order {
        let fits = |b: &Bin| b.free_bytes >= item.bytes && b.load + item.load <= load_cap;
        if let Some(core) = bins.iter().position(fits) {
            bins[core].free_bytes -= item.bytes;
            bins[core].load += item.load;
            placed.push((item.object, core));
        }
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(object: u32, bytes: u64, load: f64, benefit: f64) -> Item {
        Item {
            object,
            bytes,
            load,
            benefit,
        }
    }

    fn bins(free: &[u64]) -> Vec<Bin> {
        free.iter()
            .map(|&f| Bin {
                free_bytes: f,
                load: 0.0,
            })
            .collect()
    }

    #[test]
    fn first_fit_fills_the_first_core_before_the_next() {
        let items: Vec<Item> = (0..5).map(|i| item(i, 10, 0.01, 5.0 - i as f64)).collect();
        let mut b = bins(&[30, 30]);
        let placed = pack(&items, &mut b, 1.0);
        assert_eq!(placed, vec![(0, 0), (1, 0), (2, 0), (3, 1), (4, 1)]);
        assert_eq!(b[0].free_bytes, 0);
        assert_eq!(b[1].free_bytes, 10);
    }

    #[test]
    fn capacity_is_respected_and_misfits_stay_unassigned() {
        // Benefit order: 0 (25 B), 1 (20 B), 2 (10 B), 3 (40 B).
        let items = [
            item(0, 25, 0.0, 4.0),
            item(1, 20, 0.0, 3.0),
            item(2, 10, 0.0, 2.0),
            item(3, 40, 0.0, 1.0),
        ];
        let mut b = bins(&[30, 30]);
        let placed = pack(&items, &mut b, 1.0);
        // 0 → core 0 (5 left); 1 → core 1 (10 left); 2 → core 1 (first with room); 3 fits nowhere.
        assert_eq!(placed, vec![(0, 0), (1, 1), (2, 1)]);
        let mut used = [0u64; 2];
        for &(o, c) in &placed {
            used[c] += items[o as usize].bytes;
        }
        assert!(used[0] <= 30 && used[1] <= 30);
    }

    #[test]
    fn popular_objects_spread_when_a_core_would_saturate() {
        // Three hot objects, each keeping 60% of a core busy; bytes are no constraint.
        let items: Vec<Item> = (0..3).map(|i| item(i, 1, 0.6, 1.0)).collect();
        let cap = load_cap(1.8, 2, 0.1, &items);
        assert!((cap - 0.99).abs() < 1e-9);
        let mut b = bins(&[1 << 20, 1 << 20]);
        let placed = pack(&items, &mut b, cap);
        assert_eq!(placed, vec![(0, 0), (1, 1)]);
        assert!(b.iter().all(|b| b.load <= cap));
        // Without the load bound first fit would have put all three on core 0.
        let mut b = bins(&[1 << 20, 1 << 20]);
        assert!(pack(&items, &mut b, f64::INFINITY)
            .iter()
            .all(|&(_, c)| c == 0));
    }

    #[test]
    fn already_held_load_counts() {
        let items = [item(7, 1, 0.5, 1.0)];
        let mut b = vec![
            Bin {
                free_bytes: 10,
                load: 0.8,
            },
            Bin {
                free_bytes: 10,
                load: 0.1,
            },
        ];
        assert_eq!(pack(&items, &mut b, 1.0), vec![(7, 1)]);
    }

    proptest::proptest! {
        #[test]
        fn never_exceeds_any_bound(
            sizes in proptest::collection::vec((1u64..100, 0.0f64..0.5, 0.0f64..10.0), 0..60),
            free in proptest::collection::vec(0u64..400, 1..5),
        ) {
            let items: Vec<Item> = sizes.iter().enumerate()
                .map(|(i, &(s, l, b))| item(i as u32, s, l, b)).collect();
            let mut b = bins(&free);
            let cap = load_cap(items.iter().map(|i| i.load).sum(), free.len(), 0.1, &items);
            let placed = pack(&items, &mut b, cap);
            let mut used = vec![0u64; free.len()];
            let mut load = vec![0f64; free.len()];
            for &(o, c) in &placed {
                used[c] += items[o as usize].bytes;
                load[c] += items[o as usize].load;
            }
            for c in 0..free.len() {
                proptest::prop_assert!(used[c] <= free[c]);
                proptest::prop_assert!(load[c] <= cap + 1e-9);
            }
            // First fit: an unplaced item fits no bin in the final state either.
            for it in &items {
                if !placed.iter().any(|&(o, _)| o == it.object) {
                    proptest::prop_assert!(b.iter().all(|b| b.free_bytes < it.bytes || b.load + it.load > cap));
                }
            }
        }
    }
}

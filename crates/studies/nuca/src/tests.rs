//! Scenario tests of the simulator: the paper's Figure 3, hand-computed latencies,
//! guest eviction, and deadlock freedom on random traces.

use crate::{Access, Chip, Program, Scheme, Sim, Stats};
use proptest::prelude::*;

const PAGE: u64 = 4096;

fn rd(pc: u32, page: u64, gap: u16) -> Access {
    Access {
        addr: page * PAGE,
        pc,
        gap,
        write: false,
    }
}

fn run(chip: &Chip, traces: &[Vec<Access>], scheme: Scheme) -> Stats {
    run_skewed(chip, traces, scheme, 0)
}

fn run_skewed(chip: &Chip, traces: &[Vec<Access>], scheme: Scheme, skew: u64) -> Stats {
    let program = Program::new(traces, chip.placement.page_bytes).unwrap();
    Sim::new(chip, &program, scheme)
        .unwrap()
        .with_skew(skew)
        .run(true)
        .unwrap()
}

/// Pages homed at cores A, B and C in the Figure 2 / 3 example.
const PAGE_A: u64 = 10;
const PAGE_B: u64 = 11;
const PAGE_C: u64 = 12;

/// The paper's Figure 2 sequence as (PC, page): homes A B C C C C A A.
fn figure_two_sequence() -> [(u32, u64); 8] {
    let (a, b, c) = (PAGE_A, PAGE_B, PAGE_C);
    [
        (1, a),
        (2, b),
        (3, c),
        (4, c),
        (5, c),
        (6, c),
        (7, a),
        (8, a),
    ]
}

/// Figure 2 / 3 on a 2 × 2 mesh: cores A = 0, B = 1, C = 2. Threads 1 and 2 first-touch
/// pages B and C; thread 0 (native to A) runs the 8-access sequence `reps` times.
fn figure_three(reps: usize, scheme: Scheme) -> Stats {
    let chip = Chip::shim_64().with_cores(4).unwrap();
    let (b, c) = (PAGE_B, PAGE_C);
    let seq = figure_two_sequence();
    let mut t0 = Vec::new();
    for r in 0..reps {
        for (k, &(pc, page)) in seq.iter().enumerate() {
            let gap = if r == 0 && k == 0 { 100 } else { 0 };
            t0.push(rd(pc, page, gap));
        }
    }
    run(
        &chip,
        &[t0, vec![rd(100, b, 0)], vec![rd(101, c, 0)]],
        scheme,
    )
}

#[test]
fn migrations_are_attributed_to_their_access_sites() {
    let chip = Chip::shim_64().with_cores(4).unwrap();
    let (b, c) = (PAGE_B, PAGE_C);
    let seq = figure_two_sequence();
    let t0: Vec<_> = (0..3)
        .flat_map(|r| seq.map(|(pc, page)| rd(pc, page, if r == 0 { 100 } else { 0 })))
        .collect();
    let traces = [t0, vec![rd(100, b, 0)], vec![rd(101, c, 0)]];
    let program = Program::new(&traces, PAGE).unwrap();
    let (stats, by_pc) = Sim::new(&chip, &program, Scheme::Hybrid { theta: 2 })
        .unwrap()
        .run_detailed(true)
        .unwrap();
    // Executions 2 and 3 each migrate at PC3 and PC7.
    let sites: Vec<(u32, u64, u64)> = by_pc
        .iter()
        .map(|s| (s.pc, s.migrations, s.single_access))
        .collect();
    // Each migration is followed by local accesses (I4-I6 at C, I8 at A).
    assert_eq!(sites, [(3, 2, 0), (7, 2, 0)]);
    assert_eq!((stats.migrations, stats.single_access_migrations), (4, 0));
}

fn minus(x: Stats, y: Stats) -> (u64, u64, u64) {
    (
        x.local - y.local,
        x.remote - y.remote,
        x.migrations - y.migrations,
    )
}

#[test]
fn figure_three_second_execution() {
    let hybrid = Scheme::Hybrid { theta: 2 };
    let once = figure_three(1, hybrid);
    let twice = figure_three(2, hybrid);
    // First execution behaves as remote-only NUCA: 3 core hits (I1, I7, I8), 5 remote.
    assert_eq!((once.local - 2, once.remote, once.migrations), (3, 5, 0));
    // Second execution: migrate at I3 and I7, one remote access (I2), 5 of 8 local.
    assert_eq!(minus(twice, once), (5, 1, 2));
    // Remote-only keeps making 5 remote accesses per execution.
    let r1 = figure_three(1, Scheme::RemoteOnly);
    let r2 = figure_three(2, Scheme::RemoteOnly);
    assert_eq!(minus(r2, r1), (3, 5, 0));
}

/// Thread 1 (native to core 18) first-touches a page; thread 0 (core 0) then reads the
/// same line, which is in core 18's L1. Core 0 → core 18 on the 8 × 8 mesh is 4 hops.
fn one_access(scheme: Scheme) -> Stats {
    let chip = Chip::shim_64();
    assert_eq!(chip.hops(0, 18), 4);
    let mut traces = vec![Vec::new(); 19];
    traces[18] = vec![rd(1, 7, 0)];
    traces[0] = vec![rd(2, 7, 100)];
    run(&chip, &traces, scheme)
}

#[test]
fn hand_computed_latencies() {
    // The first touch at core 18: L1 miss (1) + L2 miss (7) + DRAM (75) = 83 cycles.
    let first_touch = 83;
    // Remote access over 4 hops: request 4·3 + 1 flit, reply 4·3 + 1 flit, L1 hit 1.
    let remote = one_access(Scheme::RemoteOnly);
    assert_eq!(remote.remote, 1);
    assert_eq!(remote.memory_cycles - first_touch, (12 + 1) + (12 + 1) + 1);
    // Migration over 4 hops: 4·3 + 26 context flits + 3 pipeline insertion, L1 hit 1.
    let migrate = one_access(Scheme::AlwaysMigrate);
    assert_eq!(migrate.migrations, 1);
    assert_eq!(migrate.memory_cycles - first_touch, 12 + 26 + 3 + 1);
    // Thread 0 started at cycle 100.
    assert_eq!(remote.completion_cycles, 100 + 27);
}

/// Thread 0 (core 0) alternates between page B (homed at core 1) and its own page A:
/// always-migrate bounces it between the two cores, every migration but the last
/// serving a single access.
#[test]
fn bouncing_migrations_serve_single_accesses() {
    let chip = Chip::shim_64().with_cores(4).unwrap();
    let (a, b) = (30, 31);
    let traces = vec![
        vec![
            rd(1, a, 0),
            rd(2, b, 100),
            rd(3, a, 0),
            rd(2, b, 0),
            rd(3, a, 0),
        ],
        vec![rd(4, b, 0)],
    ];
    let s = run(&chip, &traces, Scheme::AlwaysMigrate);
    assert_eq!((s.migrations, s.single_access_migrations), (4, 3));
    // Cores 0 and 1 are 1 hop apart: each trip is 3 + 26 + 3 cycles.
    assert_eq!(s.migration_cycles, 4 * 32);
    // Two trips into core 1 (b's home) and two back into core 0.
    assert_eq!(s.busiest_core_migrations, 2);
    let r = run(&chip, &traces, Scheme::RemoteOnly);
    // Two remote round trips over 1 hop: (3 + 1) + (3 + 1) each.
    assert_eq!((r.remote, r.remote_cycles), (2, 2 * 8));
}

#[test]
fn addresses_wider_than_48_bits_are_rejected() {
    let ok = rd(1, (1 << 48) / PAGE - 1, 0);
    let wide = Access {
        addr: 1 << 48,
        ..ok
    };
    assert!(Program::new(&[vec![ok]], PAGE).is_ok());
    let e = Program::new(&[vec![ok, wide]], PAGE)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("thread 0, access 1") && e.contains("48 bits"),
        "{e}"
    );
}

/// The predictor entry is part of the context: a guest eviction moves the thread home
/// but neither ends nor restarts its run, so the instruction that started the run
/// stays migratory (Section III-A: the entry travels with the thread).
#[test]
fn eviction_keeps_the_run_and_its_migratory_bit() {
    let chip = Chip::shim_64().with_cores(4).unwrap();
    let (a, b, c) = (40, 41, 42); // pages homed at cores 0, 1, 2
    let traces = vec![
        vec![
            rd(1, a, 0),
            // First pass: remote accesses; the run C, C reaches θ = 2 and marks PC3.
            rd(3, c, 100),
            rd(4, c, 0),
            rd(1, a, 0),
            // PC3 migrates thread 0 to core 2, where thread 1 evicts it meanwhile.
            rd(3, c, 0),
            rd(4, c, 2000),
            rd(1, a, 0),
            // Had the eviction ended the run (depth 1 < θ), PC3 would be cleared here.
            rd(3, c, 0),
        ],
        vec![rd(7, b, 0), rd(3, c, 1000)],
        vec![rd(100, c, 0)],
    ];
    let s = run(&chip, &traces, Scheme::Hybrid { theta: 2 });
    assert_eq!(s.evictions, 1);
    // Thread 0: PC1 ×3 local, PC3/PC4 ×2 remote before the marking, PC4 remote after
    // the eviction, PC3 migrates twice; thread 1 migrates once; two more local.
    assert_eq!((s.local, s.remote, s.migrations), (5, 3, 3));
}

#[test]
fn guest_eviction_returns_the_thread_home() {
    let chip = Chip::shim_64().with_cores(4).unwrap();
    let (q, p) = (20, 21);
    let traces = vec![
        // Thread 0: touch Q at home, migrate to P's core 2, later touch Q again.
        vec![rd(1, q, 0), rd(2, p, 100), rd(3, q, 5000)],
        // Thread 1 migrates to core 2 after thread 0 got there: evicts thread 0.
        vec![rd(4, p, 1000)],
        vec![rd(5, p, 0)],
    ];
    let s = run(&chip, &traces, Scheme::AlwaysMigrate);
    assert_eq!(s.evictions, 1);
    // Thread 0's last access is local only because eviction sent it back to core 0.
    assert_eq!((s.local, s.migrations), (3, 2));
    // The eviction trip core 2 → core 0 is 1 hop: 3 + 26 + 3.
    assert_eq!(s.eviction_cycles, 32);
}

fn random_traces(threads: usize, len: usize, pages: u64, seed: u64) -> Vec<Vec<Access>> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..threads)
        .map(|_| {
            (0..len)
                .map(|_| Access {
                    addr: rng.random_range(0..pages * PAGE),
                    pc: rng.random_range(0..16),
                    gap: rng.random_range(0..4),
                    write: rng.random_bool(0.3),
                })
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Every scheme finishes every trace with the context invariants intact after every
    /// access (native contexts reserved, one guest per core): no deadlock, nothing lost.
    #[test]
    fn no_deadlock_on_random_traces(
        side in 2u32..=8, seed in any::<u64>(), fill in 1usize..=4, skew in 0u64..200
    ) {
        let cores = side * side;
        let chip = Chip::shim_64().with_cores(cores).unwrap();
        let threads = (cores as usize * fill / 4).max(1);
        let traces = random_traces(threads, 60, 3 * cores as u64, seed);
        for scheme in [Scheme::RemoteOnly, Scheme::AlwaysMigrate, Scheme::Hybrid { theta: 2 }] {
            let s = run_skewed(&chip, &traces, scheme, skew);
            prop_assert_eq!(s.accesses, (threads * 60) as u64);
            prop_assert_eq!(s.local + s.remote + s.migrations, s.accesses);
            if scheme == Scheme::RemoteOnly {
                prop_assert_eq!(s.migrations + s.evictions, 0);
            }
        }
    }

    /// The tournament-tree scheduling (with its cached bound and in-place updates of
    /// evicted threads) picks exactly the threads a linear scan picks.
    #[test]
    fn issue_order_matches_a_linear_scan(
        side in 2u32..=4, seed in any::<u64>(), skew in prop_oneof![Just(0u64), 0u64..100]
    ) {
        let cores = side * side;
        let chip = Chip::shim_64().with_cores(cores).unwrap();
        // Few pages: many migrations to the same cores, so many guest evictions.
        let traces = random_traces(cores as usize, 80, cores as u64, seed);
        let program = Program::new(&traces, PAGE).unwrap();
        for scheme in [Scheme::AlwaysMigrate, Scheme::Hybrid { theta: 2 }] {
            let sim = || Sim::new(&chip, &program, scheme).unwrap().with_skew(skew);
            prop_assert_eq!(sim().run(false).unwrap(), sim().run_by_linear_scan());
        }
    }
}

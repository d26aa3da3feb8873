//! The paper's claim as `hetsched_ding::reproduce::claims` grades it, and the
//! evaluation's own properties: its runs, that the memory bandwidth binds in the
//! simulation, that numa-amp's NUMA half acts (and only on memory-intensive programs),
//! and that the policy knows the programs only through their counters.

use hetsched_core::policy::{
    CheckpointDecision, PickDecision, Policy, Sample, SubmitDecision, TickAction, UnitId, View,
};
use hetsched_core::record::Record;
use hetsched_core::task::TaskId;
use hetsched_ding::experiment::{
    evaluate, numa_amp, runs, simulate, simulate_numa_amp, tasks, Report, PAPER_SPEEDUP, POLICIES,
    SENSITIVITY,
};
use hetsched_ding::workload::{machine, Memory, WorkingSet, PROGRAMS, THREADS};
use hetsched_policies::amp_factors::TURTLE_MPKI;
use hetsched_sim::{Config, Simulation};
use hetsched_study::{assert_verdict, Judged, Verdict};
use std::sync::OnceLock;

fn report() -> &'static Report {
    static R: OnceLock<Report> = OnceLock::new();
    R.get_or_init(|| {
        let r = evaluate().expect("the evaluation runs");
        eprintln!("{}", r.table());
        r
    })
}

fn program(name: &str) -> hetsched_ding::workload::Program {
    *PROGRAMS.iter().find(|p| p.name == name).unwrap()
}

/// The claim reports the evaluation's own average, graded by the one rule: 1.264×
/// against the paper's 1.36× is a gain of 0.26 against 0.36, within half of it but not
/// within 10 % (docs/ding.md: the sensitivity runs stay inside the same band). Pinned, as
/// every claim test pins its claim's verdict (docs/reproduce.md).
#[test]
fn speedup_over_cfs_is_near_the_papers() {
    let r = report();
    let claims = hetsched_ding::reproduce::claims(r);
    let judged: Vec<Judged> = claims.iter().map(Into::into).collect();
    let ids: Vec<&str> = judged.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["speedup-over-cfs"]);
    let c = assert_verdict(&judged, "speedup-over-cfs", Verdict::Partly);
    assert_eq!(c.checks[0].ours, Some(r.numa_amp_over_cfs), "{}", c.claim);
    assert!(
        c.ours.starts_with(&format!("{:.3}×", r.numa_amp_over_cfs)),
        "{}",
        c.claim
    );
    assert_eq!(r.paper_numa_amp_over_cfs, PAPER_SPEEDUP);
}

/// Each program alone and in a mix with every other; every time positive and finite.
#[test]
fn every_program_runs_alone_and_with_every_other() {
    let r = report();
    let n = PROGRAMS.len();
    assert_eq!(runs().len(), n + n * (n - 1) / 2);
    assert_eq!(r.rows.len(), n + n * (n - 1));
    for p in PROGRAMS {
        let mine: Vec<_> = r.rows.iter().filter(|row| row.program == p.name).collect();
        assert_eq!(mine.len(), n, "{}", p.name);
        assert_eq!(mine.iter().filter(|row| row.run == "alone").count(), 1);
    }
    assert!(r.rows.iter().all(|row| row
        .seconds
        .iter()
        .chain([&row.numa_amp_no_pages_seconds])
        .all(|&s| s.is_finite() && s > 0.0)));
    assert_eq!(r.policies, POLICIES);
    assert_eq!(
        (r.alone.pairs, r.mixes.pairs, r.all.pairs),
        (n, n * (n - 1), r.rows.len())
    );
    // Each sensitivity run is a full evaluation of its own memory.
    assert_eq!(r.sensitivity.len(), SENSITIVITY.len());
    for v in &r.sensitivity {
        assert_eq!(v.averages.pairs, r.rows.len(), "{}", v.variant);
        assert!(v.averages.numa_amp_over_cfs.is_finite(), "{}", v.variant);
        assert_ne!(v.memory, Memory::ASSUMED, "{}", v.variant);
        assert_ne!(v.averages, r.all, "{}", v.variant);
    }
    let json = serde_json::to_value(r).unwrap();
    assert!(json["numa_amp_over_cfs"].as_f64().is_some());
    assert_eq!(json["programs"].as_array().unwrap().len(), n);
}

/// The node's bandwidth binds in the simulation: canneal alone (its data on node 0)
/// under cfs takes longer on the machine with [`NODE_BANDWIDTH`] than on the same
/// machine without a bandwidth limit; blackscholes, a turtle, takes the same.
#[test]
fn memory_bandwidth_binds_in_the_simulation() {
    let run = |name: &str, limited: bool| {
        let mut m = machine().unwrap();
        if !limited {
            m.numa_nodes
                .iter_mut()
                .for_each(|n| n.bandwidth_bytes_per_s = None);
        }
        let mut policy = hetsched_policies::build("cfs", 1).unwrap();
        let mut rec = Record::new(
            "cfs",
            m.units.iter().map(|u| u.kind).collect(),
            m.units.iter().map(|u| u.name.clone()).collect(),
        );
        Simulation::new(&m, tasks(&[program(name)]), &Config::default())
            .run(policy.as_mut(), &mut rec)
            .unwrap();
        rec.outcomes()
            .iter()
            .map(|o| o.end_ns.unwrap())
            .max()
            .unwrap()
    };
    let (limited, free) = (run("canneal", true), run("canneal", false));
    assert!(limited as f64 > free as f64 * 1.02, "{limited} vs {free}");
    assert_eq!(run("blackscholes", true), run("blackscholes", false));
}

/// numa-amp's NUMA half acts: over the evaluation its NUMA-list moves threads and
/// their pages. A turtle's pages (below DINO's 2 MPKI) move only before its first
/// profile (an unprofiled task's memory follows it, as live without counters): at
/// most once a thread in a run of turtles only; canneal's keep moving after, so more
/// of them move than blackscholes'.
#[test]
fn the_numa_half_acts_on_memory_intensive_programs() {
    let r = report();
    let [_, _, numa, pages] = r.numa_amp_triggers;
    assert!(numa > 0 && pages > 0, "{:?}", r.numa_amp_triggers);
    for row in &r.rows {
        let partner = row.run.strip_prefix("with ").map(program);
        let run: Vec<_> = std::iter::once(program(row.program))
            .chain(partner)
            .collect();
        if run.iter().all(|p| p.working_set.mpki() < TURTLE_MPKI) {
            assert!(
                row.numa_amp_triggers[3] <= (run.len() * THREADS) as u64,
                "{row:?}"
            );
        }
    }
    let moves = |name: &str| {
        simulate_numa_amp("numa-amp", &[program(name)])
            .unwrap()
            .1
            .page_moves
    };
    let (canneal, blackscholes) = (moves("canneal"), moves("blackscholes"));
    assert!(canneal > blackscholes, "{canneal} vs {blackscholes}");
}

/// numa-amp learns a program only from the counters it samples: after a short run of
/// canneal beside blackscholes, the MPKI on its NUMA-list are the programs' (LLC
/// misses over instructions), while its speed-up factors are its own estimates from
/// its own miss latency, not the machine's factors (which the workload computes with
/// the machine's stall per miss).
#[test]
fn numa_amp_knows_the_programs_from_their_counters_only() {
    let programs = [program("canneal"), program("blackscholes")];
    let m = machine().unwrap();
    let mut policy = numa_amp("numa-amp").unwrap();
    let mut rec = Record::new(
        "numa-amp",
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    );
    let config = Config {
        max_time_ns: Some(50_000_000),
        ..Config::default()
    };
    Simulation::new(&m, tasks(&programs), &config)
        .run(&mut policy, &mut rec)
        .unwrap();
    let lists = policy.lists();
    assert!(!lists.numa.is_empty());
    for &(task, mpki, _) in &lists.numa {
        let p = programs[task as usize / THREADS];
        assert!(
            (mpki - p.working_set.mpki()).abs() < 0.01,
            "{}: {mpki}",
            p.name
        );
    }
    for &(task, sf) in &lists.amp {
        let p = programs[task as usize / THREADS];
        if p.working_set == WorkingSet::Unbounded {
            assert!(
                (sf - p.speedup()).abs() > 0.05,
                "{}: estimated {sf}, machine {}",
                p.name,
                p.speedup()
            );
        }
    }
    // It still ranks them in the machine's order: blackscholes gains more.
    let sf = |name: &str| {
        lists
            .amp
            .iter()
            .find(|&&(t, _)| programs[t as usize / THREADS].name == name)
            .map(|&(_, sf)| sf)
            .unwrap()
    };
    assert!(sf("blackscholes") > sf("canneal"));
    assert!(program("blackscholes").speedup() > program("canneal").speedup());
}

/// A run's times do not depend on the order of the policies run before it (each run
/// builds its policy afresh) and match a direct simulation.
#[test]
fn a_row_is_a_direct_simulation() {
    let r = report();
    let row = r
        .rows
        .iter()
        .find(|row| row.program == "dedup" && row.run == "alone")
        .unwrap();
    let cfs = simulate("cfs", &[program("dedup")]).unwrap();
    assert_eq!(row.seconds[0], cfs[0]);
}

/// numa-amp with the samples' model-derived field (`memory_bound`, which the simulator
/// fills from the task's model and a live engine leaves empty) removed or not: the
/// policy reads only the counters, so the runs are the same to the nanosecond.
struct WithoutModelField {
    inner: hetsched_policies::numa_amp::NumaAmp,
    strip: bool,
    /// Samples seen with the field filled.
    seen: usize,
}

impl Policy for WithoutModelField {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn submit(&mut self, view: &View, task: TaskId) -> SubmitDecision {
        self.inner.submit(view, task)
    }
    fn pick(&mut self, view: &View, unit: UnitId) -> PickDecision {
        self.inner.pick(view, unit)
    }
    fn time_slice(&mut self, view: &View, unit: UnitId, task: TaskId) -> Option<u64> {
        self.inner.time_slice(view, unit, task)
    }
    fn checkpoint(&mut self, view: &View, task: TaskId, unit: UnitId) -> CheckpointDecision {
        self.inner.checkpoint(view, task, unit)
    }
    fn complete(&mut self, view: &View, task: TaskId, unit: UnitId) {
        self.inner.complete(view, task, unit)
    }
    fn tick_interval(&self) -> Option<u64> {
        self.inner.tick_interval()
    }
    fn tick(&mut self, view: &View, samples: &[Sample]) -> Vec<TickAction> {
        let mut samples = samples.to_vec();
        if self.strip {
            samples.iter_mut().for_each(|s| s.memory_bound = None);
        } else {
            self.seen += samples.iter().filter(|s| s.memory_bound.is_some()).count();
        }
        self.inner.tick(view, &samples)
    }
    fn migrate_memory(&mut self, view: &View, task: TaskId, unit: UnitId) -> bool {
        self.inner.migrate_memory(view, task, unit)
    }
    fn wants_samples(&self) -> bool {
        self.inner.wants_samples()
    }
    fn wants_models(&self) -> bool {
        self.inner.wants_models()
    }
}

#[test]
fn numa_amp_ignores_the_models_field_in_its_samples() {
    let run = |strip: bool| {
        let mut policy = WithoutModelField {
            inner: numa_amp("numa-amp").unwrap(),
            strip,
            seen: 0,
        };
        let m = machine().unwrap();
        let mut rec = Record::new(
            "numa-amp",
            m.units.iter().map(|u| u.kind).collect(),
            m.units.iter().map(|u| u.name.clone()).collect(),
        );
        let programs = [program("canneal"), program("x264")];
        Simulation::new(&m, tasks(&programs), &Config::default())
            .run(&mut policy, &mut rec)
            .unwrap();
        let ends: Vec<_> = rec.outcomes().iter().map(|o| (o.task, o.end_ns)).collect();
        if !strip {
            assert!(policy.seen > 0, "the simulator fills the field");
        }
        (ends, policy.inner.triggers())
    };
    let (kept, stripped) = (run(false), run(true));
    assert!(kept.1.lazy > 0 && kept.1.page_moves > 0, "{:?}", kept.1);
    assert_eq!(kept, stripped);
}

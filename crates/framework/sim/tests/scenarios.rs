//! The example scenarios in scenarios/, run through the library.

use hetsched_sim::scenario::Scenario;
use std::path::PathBuf;

fn load(name: &str) -> Scenario {
    Scenario::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../scenarios")
            .join(name),
    )
    .unwrap()
}

fn mean_turnaround(sc: &Scenario, policy: &str) -> f64 {
    let (rec, summary) = hetsched_sim::Simulation::of(sc)
        .record_spec(policy, sc.seed)
        .unwrap();
    assert_eq!(summary.unfinished, 0);
    rec.check().unwrap();
    rec.metrics().turnaround_s.mean
}

/// Ding's machine has 4 cores of capacity 1024 and 4 of 512. At half load most tasks
/// find several idle cores. cfs places a task on the core with the fewest tasks,
/// lowest id first, whatever its speed (ids 2, 3, 6, 7 are slow), and its balancer and
/// idle pulls count tasks too: compute-bound tasks regularly land on slow cores and take
/// twice as long. dmda compares expected completion times learned from the run times it
/// observed: an idle fast core beats an idle slow one. It knows only the mean of a type's
/// exponential sizes, not each task's, so its margin is small (it was 14 % when it could
/// read each task's true work).
#[test]
fn dmda_beats_cfs_on_fast_and_slow_cores() {
    let sc = load("fast-slow-mixed.toml");
    let caps: Vec<u32> = sc.machine.units.iter().map(|u| u.capacity).collect();
    assert_eq!(caps, vec![1024, 1024, 512, 512, 1024, 1024, 512, 512]);
    let cfs = mean_turnaround(&sc, "cfs");
    let dmda = mean_turnaround(&sc, "dmda");
    assert!(dmda < 0.99 * cfs, "dmda {dmda} s vs cfs {cfs} s");
}

#[test]
fn scenario_tasks_are_deterministic_and_in_arrival_order() {
    let sc = load("beisel-gpu.toml");
    let a: Vec<_> = sc.tasks().collect();
    let b: Vec<_> = sc.tasks().collect();
    assert_eq!(a, b);
    assert_eq!(a.len() as u64, sc.task_count());
    assert!(a.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
    assert!(a.iter().enumerate().all(|(i, t)| t.id == i as u64));
    let kinds: std::collections::BTreeSet<&str> = a.iter().map(|t| &*t.kind).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        vec!["cpu-only", "gemm", "md5"]
    );
}

/// `scenarios/numa-amp.toml` carries the workload fields numa-amp reads (the modelled
/// counters, memory size, first touch) into each task's model, and on Ding's machine
/// numa-amp, which ranks threads by the speed-up its counters imply, ends the two
/// programs before capacity-aware CFS, which ends them before CFS (deterministic run).
#[test]
fn the_numa_amp_scenario_feeds_the_counters_and_numa_amp_wins() {
    let sc = load("numa-amp.toml");
    assert_eq!(sc.machine.numa_nodes.len(), 2);
    let canneal = sc.tasks().find(|t| &*t.kind == "canneal").unwrap();
    assert_eq!(
        (
            canneal.model.instructions_per_s,
            canneal.model.llc_mpki,
            canneal.model.memory_bytes,
            canneal.model.first_touch
        ),
        (5e8, 15.0, 125e6, true)
    );
    let makespan = |policy: &str| {
        let (rec, summary) = hetsched_sim::Simulation::of(&sc)
            .record_spec(policy, sc.seed)
            .unwrap();
        assert_eq!(summary.unfinished, 0, "{policy}");
        rec.check().unwrap();
        rec.metrics().makespan_s
    };
    let (cfs, cap, amp) = (makespan("cfs"), makespan("cfs-cap"), makespan("numa-amp"));
    assert!(
        amp < cap && cap < cfs,
        "numa-amp {amp} s, cfs-cap {cap} s, cfs {cfs} s"
    );
}

/// The workload fields are range-checked like the others: the error names the file,
/// the field and the accepted range (an input error: exit 2 from the CLI).
#[test]
fn the_workload_fields_are_range_checked_by_name() {
    let cases = [
        (
            "instructions_per_s = 1e13",
            vec!["task[0].instructions_per_s", "[0, 1e12]", "1e13"],
        ),
        (
            "instructions_per_s = 1e9\nllc_mpki = 1001",
            vec!["task[0].llc_mpki", "[0, 1000]", "1001"],
        ),
        ("llc_mpki = -1", vec!["task[0].llc_mpki", "[0, 1000]", "-1"]),
        ("llc_mpki = nan", vec!["task[0].llc_mpki", "NaN"]),
        (
            "llc_mpki = 5",
            vec!["task[0].llc_mpki", "needs instructions_per_s > 0"],
        ),
        (
            "memory_bytes = 18446744073709551615",
            vec!["task[0].memory_bytes", "[0, 1000000000000000]"],
        ),
        // A type error is TOML's: it gives the line.
        ("first_touch = 1", vec!["line 2", "expected a boolean"]),
    ];
    for (fields, needles) in cases {
        let text = format!("machine = \"ding\"\n[[task]]\nwork = 1\n{fields}\n");
        let e = Scenario::parse(&text, "s.toml", "s", std::path::Path::new(".")).unwrap_err();
        assert!(matches!(e, hetsched_core::Error::Input(_)), "{fields}: {e}");
        let message = e.to_string();
        assert!(message.contains("s.toml"), "{message}");
        for n in needles {
            assert!(message.contains(n), "{fields}: {n:?} not in {message}");
        }
    }
}

/// Where each task type ran: the capacities of the units of its run segments.
fn capacities_by_type(
    sc: &Scenario,
    policy: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<u32>> {
    use hetsched_core::record::EventKind;
    let (rec, summary) = hetsched_sim::Simulation::of(sc)
        .record_spec(policy, sc.seed)
        .unwrap();
    assert_eq!(summary.unfinished, 0);
    let mut kinds = std::collections::HashMap::new();
    let mut out = std::collections::BTreeMap::<String, std::collections::BTreeSet<u32>>::new();
    for e in &rec.events {
        match &e.kind {
            EventKind::Submit { kind, .. } => {
                kinds.insert(e.task, kind.to_string());
            }
            EventKind::Start { unit, .. } => {
                let cap = sc.machine.units[*unit as usize].capacity;
                out.entry(kinds[&e.task].clone()).or_default().insert(cap);
            }
            _ => {}
        }
    }
    out
}

/// Issue #17: signatures in scenario files (a file and the three inline forms). The
/// sensitive types (gzip's profiled signature, `class = "high"`) run only on the fast
/// cores under `signature`, the insensitive ones (`miss_rate = 0.01`, `elasticity =
/// -0.6`) only on the slow ones; cfs, which ignores signatures, does not separate them.
#[test]
fn signatures_in_a_scenario_bind_sensitive_tasks_to_fast_cores() {
    let sc = load("signature-fast-slow.toml");
    let classes: Vec<_> = sc
        .tasks()
        .map(|t| {
            let sig = hetsched_sig::signature::Signature::from_json(
                t.signature.as_deref().expect("every task has a signature"),
                &t.kind,
            )
            .unwrap();
            (t.kind.to_string(), sig.configs[0].class)
        })
        .collect();
    use hetsched_sig::elasticity::Class::{High, Insensitive};
    for (kind, class) in &classes {
        let want = if ["gzip", "compute"].contains(&kind.as_str()) {
            High
        } else {
            Insensitive
        };
        assert_eq!(*class, want, "{kind}");
    }
    let fast = std::collections::BTreeSet::from([1024]);
    let slow = std::collections::BTreeSet::from([512]);
    let sig = capacities_by_type(&sc, "signature");
    for kind in ["gzip", "compute"] {
        assert_eq!(sig[kind], fast, "{kind}: {sig:?}");
    }
    for kind in ["stream", "walk"] {
        assert_eq!(sig[kind], slow, "{kind}: {sig:?}");
    }
    let cfs = capacities_by_type(&sc, "cfs");
    assert!(
        ["gzip", "compute"].iter().any(|k| cfs[*k].contains(&512)),
        "{cfs:?}"
    );
}

/// Bad signatures in a scenario are input errors naming the field and the range.
#[test]
fn bad_scenario_signatures_name_the_field_and_range() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("not.json"), "{").unwrap();
    let cases: [(&str, &[&str]); 8] = [
        (
            r#"{ elasticity = 0.5 }"#,
            &["task[0].signature.elasticity", "[-10, 0]"],
        ),
        (
            r#"{ miss_rate = -1 }"#,
            &["task[0].signature.miss_rate", "[0, 1]"],
        ),
        (r#"{ class = "fast" }"#, &["task[0].signature", "high"]),
        (
            r#"{ class = "high", elasticity = -0.5 }"#,
            &["task[0].signature.class", "contradicts"],
        ),
        (r#"{ speed = 1 }"#, &["task[0].signature", "unknown field"]),
        (r#"{ }"#, &["task[0].signature", "at least one of class"]),
        (
            r#""missing.json""#,
            &["task[0].signature", "cannot read", "missing.json"],
        ),
        (
            r#""not.json""#,
            &["task[0].signature", "not.json", "not JSON"],
        ),
    ];
    for (value, needles) in cases {
        let text = format!("machine = \"ding\"\n[[task]]\nwork = 1.0\nsignature = {value}\n");
        let e = Scenario::parse(&text, "s.toml", "s", dir.path()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{value}: {e}");
        let msg = e.to_string();
        assert!(msg.starts_with("s.toml: "), "{msg}");
        for n in needles {
            assert!(msg.contains(n), "{value}: {n:?} not in {msg:?}");
        }
    }
}

/// A registry policy runs in an engine compiled for its type (`Simulation::record_spec`, through
/// `hetsched_policies::Built`); the same policy behind `dyn Policy` (`Simulation::record`, as a
/// Python policy runs) must make the same run, event for event: on every example
/// scenario, with every registered test spec. Both are built by the same builder, so
/// this checks the typed path's plumbing (seed, label, configuration, task stream) and
/// that the two instances of the generic engine agree, not the builders (the outputs'
/// own tests do).
#[test]
fn typed_and_dyn_policies_make_the_same_runs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../scenarios");
    let mut runs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = match path.extension() {
            Some(e) if e == "toml" => std::fs::read_to_string(&path).unwrap(),
            _ => continue,
        };
        if !text.lines().any(|l| l.starts_with("machine")) {
            continue; // a machine file
        }
        let sc = Scenario::load(&path).unwrap();
        for spec in hetsched_policies::test_specs() {
            let typed = hetsched_sim::Simulation::of(&sc).record_spec(spec, sc.seed);
            let mut policy = hetsched_policies::build(spec, sc.seed).unwrap();
            let boxed = hetsched_sim::Simulation::of(&sc).record(spec, policy.as_mut());
            let show = |r: &hetsched_core::Result<(hetsched_core::record::Record, _)>| {
                format!("{:?}", r.as_ref().map(|(rec, s)| (&rec.events, s)))
            };
            assert_eq!(show(&typed), show(&boxed), "{} {spec}", path.display());
            runs += typed.is_ok() as usize;
        }
    }
    assert!(runs >= 50, "only {runs} runs completed");
}

/// A scenario or a signature file that is a FIFO or a device is refused at once (not
/// waited on, not read without end), and one over its cap names the cap: what `hetsched
/// simulate` and Python's `hetsched.simulate(path)` read through `Scenario::load`.
#[test]
fn a_fifo_a_device_or_an_oversized_file_is_refused_at_once() {
    use hetsched_sim::scenario::limits::MAX_FILE_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let start = std::time::Instant::now();
    let e = Scenario::load(&fifo).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("is a FIFO; a scenario must be a regular file"),
        "{e}"
    );
    let e = Scenario::load(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(e.to_string().contains("is a character device"), "{e}");
    let sig = dir.path().join("sig.json");
    nix::unistd::mkfifo(&sig, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let text = "machine = \"ding\"\n[[task]]\nwork = 1.0\nsignature = \"sig.json\"\n";
    let e = Scenario::parse(text, "s.toml", "s", dir.path()).unwrap_err();
    assert!(
        e.to_string().starts_with("s.toml: task[0].signature: "),
        "{e}"
    );
    assert!(e.to_string().contains("is a FIFO"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));

    let big = dir.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
    let e = Scenario::load(&big).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("a scenario may have at most 16 MiB"),
        "{e}"
    );
}

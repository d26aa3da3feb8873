//! `hetsched experiment starpu-machines --quick` on Debian's five calibrations (skipped,
//! saying so, where `starpu-examples` is not installed): every machine, algorithm, size
//! and policy runs once, no run beats its bound, the models' gaps are said, the GPU
//! machines reward the model-based policies, and the files are written.

use hetsched_graphs::starpu_machines::{run, Algorithm, Options, Report, MACHINES, POLICIES};
use hetsched_topology::starpu::Sampling;
use hetsched_util::files::OutDir;

/// Whether every default machine's calibration is found, as `starpu:HOST` looks it up.
fn installed() -> bool {
    let missing: Vec<&str> = MACHINES
        .into_iter()
        .filter(|h| Sampling::parse(h).is_err())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "skipped: no StarPU calibration of {} (Debian's starpu-examples is not installed)",
            missing.join(", ")
        );
    }
    missing.is_empty()
}

fn quick(dir: &std::path::Path) -> (Report, String) {
    let out = OutDir::create(dir).unwrap();
    let mut printed = Vec::new();
    let o = Options {
        quick: true,
        ..Options::default()
    };
    let report = run(&o, &out, &mut printed).unwrap();
    (report, String::from_utf8(printed).unwrap())
}

#[test]
fn the_quick_run_covers_every_machine_and_no_run_beats_its_bound() {
    if !installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (report, printed) = quick(dir.path());
    let tiles = Options {
        quick: true,
        ..Options::default()
    }
    .tiles();
    assert_eq!(tiles, [4, 8, 12]);
    // Every machine, algorithm, size and policy: one row each.
    assert_eq!(
        report
            .machines
            .iter()
            .map(|m| &m.machine)
            .collect::<Vec<_>>(),
        MACHINES
    );
    for m in &report.machines {
        assert!(m.error.is_none() && m.skipped.is_empty(), "{m:?}");
        assert_eq!(m.kernels.len(), 7, "{m:?}");
        assert!(printed.contains(&format!("{}: ", m.machine)), "{printed}");
    }
    assert_eq!(
        report.rows.len(),
        MACHINES.len() * 2 * tiles.len() * POLICIES.len()
    );
    for host in MACHINES {
        for a in Algorithm::ALL {
            for &n in &tiles {
                for p in POLICIES {
                    let found = report.rows.iter().filter(|r| {
                        r.machine == host && r.algorithm == a && r.tiles == n && r.policy == p
                    });
                    assert_eq!(found.count(), 1, "{host} {a:?} {n} {p}");
                }
            }
        }
    }
    for r in &report.rows {
        let what = format!("{} {:?} {} {}", r.machine, r.algorithm, r.tiles, r.policy);
        // No schedule beats the bound, which is the larger of its two parts.
        assert!(r.makespan_s >= r.bound_s * (1.0 - 1e-9), "{what}: {r:?}");
        assert!(r.over_bound >= 1.0 - 1e-9 && r.gflops <= r.bound_gflops * (1.0 + 1e-9));
        let area = r.area_s.expect("the area bound");
        assert!(r.bound_s == r.critical_path_s.max(area), "{what}: {r:?}");
        assert!(
            (r.gflops - r.gflop / r.makespan_s).abs() < 1e-6 * r.gflops,
            "{what}"
        );
        assert!((0.0..=1.0 + 1e-9).contains(&r.gpu_share), "{what}: {r:?}");
        assert!((0.0..=1.0 + 1e-9).contains(&r.gpu_util), "{what}: {r:?}");
        assert_eq!(r.n, u64::from(r.tiles) * 960);
        // The flops: LU's sum to StarPU's 2n³/3; Cholesky's are its example's.
        let n = r.n as f64;
        match r.algorithm {
            Algorithm::Lu => {
                assert!((r.gflop * 1e9 - 2.0 * n * n * n / 3.0).abs() < 1e-9 * n * n * n)
            }
            Algorithm::Cholesky => assert!(r.gflop * 1e9 > n * n * n / 3.0, "{what}"),
        }
    }
    let row = |host: &str, a: Algorithm, n: u32, p: &str| {
        report
            .rows
            .iter()
            .find(|r| r.machine == host && r.algorithm == a && r.tiles == n && r.policy == p)
            .unwrap()
    };
    // idgraf's 8 GPUs are 30 times a CPU at GEMM: the model-based policies use them and
    // beat random and eager (whose idle CPUs take tasks) by far at 12 tiles.
    for a in Algorithm::ALL {
        for p in ["heft", "dmda", "dmdas"] {
            for worse in ["random", "eager"] {
                let (good, bad) = (row("idgraf", a, 12, p), row("idgraf", a, 12, worse));
                assert!(
                    good.gflops > 2.0 * bad.gflops,
                    "{a:?}: {p} {good:?}, {worse} {bad:?}"
                );
            }
        }
    }
    // hannibal's models time no kernel on its CPUs: every flop runs on its GPUs, and the
    // output says why.
    let hannibal = &report.machines[1];
    assert_eq!(hannibal.machine, "hannibal");
    assert!(hannibal.kernels.iter().all(|k| k.ms["cpu"].is_none()));
    assert!(
        hannibal
            .notes
            .iter()
            .any(|n| n.contains("8 cpu units have no model")),
        "{:?}",
        hannibal.notes
    );
    assert!(
        printed.contains("note: its 8 cpu units have no model"),
        "{printed}"
    );
    for r in report.rows.iter().filter(|r| r.machine == "hannibal") {
        assert!(
            (r.gpu_share - 1.0).abs() < 1e-9 && r.cpu_util == 0.0,
            "{r:?}"
        );
    }
    // The OpenCL devices (the CUDA GPUs again, under another driver) have no model.
    for m in report
        .machines
        .iter()
        .filter(|m| m.units.contains_key("opencl"))
    {
        assert!(m
            .notes
            .iter()
            .any(|n| n.contains("opencl units have no model")));
    }
    // The files.
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    let csv = String::from_utf8(read("results.csv")).unwrap();
    assert!(csv.starts_with(
        "machine,algorithm,tiles,tile,n,tasks,gflop,policy,makespan_s,gflops,bound_s,bound_gflops,"
    ));
    assert_eq!(csv.lines().count(), report.rows.len() + 1);
    let json: serde_json::Value = serde_json::from_slice(&read("results.json")).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), report.rows.len());
    let summary = String::from_utf8(read("summary.md")).unwrap();
    for host in MACHINES {
        assert!(summary.contains(&format!("\n## {host}\n")), "{summary}");
        assert!(read(&format!("{host}.png")).starts_with(b"\x89PNG\r\n\x1a\n"));
    }
}

#[test]
fn a_tile_size_no_model_times_is_said_and_nothing_made_up() {
    if !installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = OutDir::create(dir.path()).unwrap();
    let mut printed = Vec::new();
    let o = Options {
        tiles: vec![2],
        tile: 1000,
        machines: vec!["idgraf".into()],
        ..Options::default()
    };
    let e = run(&o, &out, &mut printed).unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    let printed = String::from_utf8(printed).unwrap();
    assert!(
        printed.contains("not run: cholesky: task 0 of the graph (chol_model_11, footprint"),
        "{printed}"
    );
    assert!(printed.contains("not run: lu: "), "{printed}");
}

#[test]
fn a_machine_not_found_is_said_and_the_others_run() {
    if !installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = OutDir::create(dir.path()).unwrap();
    let mut printed = Vec::new();
    let o = Options {
        tiles: vec![2],
        machines: vec!["no-such-host".into(), "mirage".into()],
        policies: vec!["heft".into()],
        ..Options::default()
    };
    let report = run(&o, &out, &mut printed).unwrap();
    let printed = String::from_utf8(printed).unwrap();
    assert!(
        printed.starts_with("no-such-host: not run: starpu:no-such-host: no StarPU calibration"),
        "{printed}"
    );
    assert!(report.machines[0].error.is_some());
    assert_eq!(report.rows.len(), 2);
    assert!(std::fs::read_to_string(dir.path().join("summary.md"))
        .unwrap()
        .contains("## no-such-host\n\nNot run: "));
}

#[test]
fn too_many_tiles_is_bad_input_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = OutDir::create(dir.path()).unwrap();
    let mut printed = Vec::new();
    let o = Options {
        tiles: vec![4, 400],
        ..Options::default()
    };
    let e = run(&o, &out, &mut printed).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().contains("--tiles: 400 tiles a side make"),
        "{e}"
    );
    assert!(printed.is_empty());
}

//! The task-graph generators: StarPU's tiled Cholesky and LU (and Chameleon's QR), their task counts and
//! critical paths, their footprints against the hashes in Debian's StarPU model files,
//! and every task found in the idgraf calibration's models (skipped, saying so, where
//! Debian's `starpu-examples` is not installed).

use hetsched_core::graph::{Mode, TaskGraph};
use hetsched_core::machine::UnitType;
use hetsched_core::perf_model::{Arch, PerfModels};
use hetsched_sim::graphs::{cholesky, lu, qr, Precision, Tiled};
use hetsched_topology::starpu::{Sampling, DEBIAN_DIR};
use std::collections::BTreeMap;
use std::path::Path;

fn tiled(tiles: u32, tile: u32, precision: Precision) -> Tiled {
    Tiled {
        tiles,
        tile,
        precision,
    }
}

/// Tasks per kernel.
fn counts(g: &TaskGraph) -> BTreeMap<&str, usize> {
    let mut c = BTreeMap::new();
    for t in &g.tasks {
        *c.entry(&*t.kernel).or_default() += 1;
    }
    c
}

#[test]
fn cholesky_task_counts_and_critical_path() {
    for n in 1..=9usize {
        let g = cholesky(&tiled(n as u32, 64, Precision::Single)).unwrap();
        let pairs = n * (n - 1) / 2;
        let triples = n * (n - 1) * n.saturating_sub(2) / 6;
        assert_eq!(g.tasks.len(), n + pairs + pairs + triples, "N = {n}");
        let c = counts(&g);
        assert_eq!(c["chol_model_11"], n);
        assert_eq!(c.get("chol_model_21").copied().unwrap_or(0), pairs);
        assert_eq!(
            c.get("chol_model_22").copied().unwrap_or(0),
            pairs + triples
        );
        assert_eq!(g.data.len(), n * (n + 1) / 2);
        let d = g.dependencies().unwrap();
        assert_eq!(d.critical_path(), 3 * n - 2, "N = {n}");
    }
}

#[test]
fn cholesky_of_two_tiles_is_a_chain() {
    // POTRF A00; TRSM R A00, RW A10; GEMM R A10, R A10, RW A11; POTRF A11.
    let g = cholesky(&tiled(2, 64, Precision::Single)).unwrap();
    let modes: Vec<Vec<Mode>> = g
        .tasks
        .iter()
        .map(|t| t.accesses.iter().map(|a| a.mode).collect())
        .collect();
    use Mode::{R, RW};
    assert_eq!(modes, vec![vec![RW], vec![R, RW], vec![R, R, RW], vec![RW]]);
    let d = g.dependencies().unwrap();
    let preds: Vec<&[u32]> = (0..4).map(|t| d.of(t)).collect();
    assert_eq!(preds, vec![&[][..], &[0], &[1], &[2]]);
}

#[test]
fn cholesky_footprints_sizes_and_flops_are_debians() {
    // chol_model_11/21/22.idgraf: (hash, size, flops) for 960×960 float tiles.
    let g = cholesky(&tiled(3, 960, Precision::Single)).unwrap();
    let expected = [
        ("chol_model_11", 0x617e_5fe6, 3_686_400, 2.953730e+08),
        ("chol_model_21", 0xff82_dda0, 7_372_800, 8.856576e+08),
        ("chol_model_22", 0x24c8_4a50, 11_059_200, 1.769472e+09),
    ];
    for (kernel, hash, size, flops) in expected {
        for t in g.tasks.iter().filter(|t| &*t.kernel == kernel) {
            assert_eq!(t.footprint, hash, "{kernel}");
            let bytes: u64 = t
                .accesses
                .iter()
                .map(|a| g.data[a.handle as usize].bytes)
                .sum();
            assert_eq!(bytes, size, "{kernel}");
            assert!(
                (t.flops - flops).abs() <= 1e-6 * flops,
                "{kernel}: {}",
                t.flops
            );
        }
    }
    // 320 and 640 tiles: the files' other rows.
    for (b, hashes) in [
        (320, [0xcea3_7d6d, 0x2c19_22b7, 0xd464_31bb]),
        (640, [0xafdd_228b, 0xd39b_ff17, 0xf0ac_7beb]),
    ] {
        let g = cholesky(&tiled(3, b, Precision::Single)).unwrap();
        for (kernel, hash) in ["chol_model_11", "chol_model_21", "chol_model_22"]
            .into_iter()
            .zip(hashes)
        {
            assert!(g
                .tasks
                .iter()
                .filter(|t| &*t.kernel == kernel)
                .all(|t| t.footprint == hash));
        }
    }
}

#[test]
fn lu_task_counts_critical_path_and_footprints() {
    for n in 1..=9usize {
        let g = lu(&tiled(n as u32, 960, Precision::Double)).unwrap();
        let squares: usize = (1..n).map(|i| i * i).sum();
        assert_eq!(g.tasks.len(), n + n * (n - 1) + squares, "N = {n}");
        let c = counts(&g);
        assert_eq!(c["starpu_dlu_lu_model_11"], n);
        assert_eq!(
            c.get("starpu_dlu_lu_model_12").copied().unwrap_or(0),
            n * (n - 1) / 2
        );
        assert_eq!(
            c.get("starpu_dlu_lu_model_21").copied().unwrap_or(0),
            n * (n - 1) / 2
        );
        assert_eq!(
            c.get("starpu_dlu_lu_model_22").copied().unwrap_or(0),
            squares
        );
        assert_eq!(
            g.dependencies().unwrap().critical_path(),
            3 * n - 2,
            "N = {n}"
        );
        // starpu_dlu_lu_model_22.idgraf: 24c84a50 with size 22118400 (3 × 960² × 8).
        for t in &g.tasks {
            let bytes: u64 = t
                .accesses
                .iter()
                .map(|a| g.data[a.handle as usize].bytes)
                .sum();
            let hash = match t.accesses.len() {
                1 => 0x617e_5fe6,
                2 => 0xff82_dda0,
                _ => 0x24c8_4a50,
            };
            assert_eq!(t.footprint, hash);
            assert_eq!(bytes, t.accesses.len() as u64 * 7_372_800);
        }
    }
}

#[test]
fn bad_sizes_are_refused() {
    for p in [
        tiled(0, 960, Precision::Single),
        tiled(4, 0, Precision::Single),
        tiled(4, 1 << 17, Precision::Single),
        tiled(1 << 17, 4, Precision::Single),
        tiled(1000, 4, Precision::Single), // 167 million tasks
    ] {
        let e = cholesky(&p).unwrap_err().to_string();
        assert!(e.starts_with("cholesky: "), "{e}");
        let e = lu(&p).unwrap_err().to_string();
        assert!(e.starts_with("lu: "), "{e}");
    }
}

fn idgraf() -> Option<PerfModels> {
    if !Path::new(DEBIAN_DIR).join("bus/idgraf.config").exists() {
        println!("skipped: {DEBIAN_DIR} is not installed (Debian package starpu-examples)");
        return None;
    }
    Some(
        Sampling::parse(&format!("{DEBIAN_DIR}:idgraf"))
            .unwrap()
            .models()
            .unwrap(),
    )
}

/// Every task of `g` has a model on idgraf's CPUs and on its CUDA GPUs.
fn all_found(models: &PerfModels, g: &TaskGraph) {
    for t in &g.tasks {
        for unit_type in [UnitType::Cpu, UnitType::Gpu] {
            let arch = Arch {
                unit_type,
                capacity: 1024,
                footprint: t.footprint,
            };
            let h = models.get(&t.kernel, &arch);
            assert!(
                h.is_some_and(|h| h.samples() > 0),
                "{} {:08x} on {unit_type:?}",
                t.kernel,
                t.footprint
            );
        }
    }
}

#[test]
fn every_task_of_debians_tile_sizes_has_an_idgraf_model() {
    let Some(models) = idgraf() else { return };
    for b in [320, 640, 960] {
        all_found(&models, &cholesky(&tiled(6, b, Precision::Single)).unwrap());
        all_found(&models, &lu(&tiled(6, b, Precision::Single)).unwrap());
        all_found(&models, &lu(&tiled(6, b, Precision::Double)).unwrap());
    }
    // A tile size StarPU never ran finds nothing.
    let g = cholesky(&tiled(2, 1000, Precision::Single)).unwrap();
    let arch = Arch {
        unit_type: UnitType::Cpu,
        capacity: 1024,
        footprint: g.tasks[0].footprint,
    };
    assert!(models.get("chol_model_11", &arch).is_none());
}

/// The priorities of StarPU 1.3's examples, by hand from their sources: Cholesky's
/// unbounded ones (`2N − 2k − m − n`), LU's `STARPU_MAX_PRIO` (`INT_MAX` under dmdas)
/// next to the diagonal and 0 elsewhere.
#[test]
fn priorities_are_the_examples() {
    let prios = |g: &TaskGraph| g.tasks.iter().map(|t| t.priority).collect::<Vec<_>>();
    // POTRF 0: 4; TRSM m=1: 3; GEMM m=n=1: 2; POTRF 1: 2.
    let g = cholesky(&tiled(2, 64, Precision::Single)).unwrap();
    assert_eq!(prios(&g), vec![4, 3, 2, 2]);
    // k=0: GETRF, then (TRSM12, TRSM21) for i=1 and i=2, then GEMM (i, j) for i, j in
    // 1..3; k=1: GETRF, TRSMs for i=2, GEMM (2, 2); k=2: GETRF.
    let max = i32::MAX;
    let g = lu(&tiled(3, 64, Precision::Double)).unwrap();
    assert_eq!(
        prios(&g),
        vec![max, max, max, 0, 0, max, 0, 0, 0, max, max, max, max, max]
    );
}

#[test]
fn qr_task_counts_flops_and_the_first_steps_dependencies() {
    for n in 1..=9usize {
        let g = qr(&tiled(n as u32, 480, Precision::Single)).unwrap();
        let pairs = n * (n - 1) / 2;
        let squares: usize = (1..n).map(|i| i * i).sum();
        let c = counts(&g);
        assert_eq!(c["sgeqrt"], n);
        assert_eq!(c.get("sunmqr").copied().unwrap_or(0), pairs);
        assert_eq!(c.get("stsqrt").copied().unwrap_or(0), pairs);
        assert_eq!(c.get("stsmqr").copied().unwrap_or(0), squares);
        assert_eq!(g.tasks.len(), n + 2 * pairs + squares);
        // A tiles then T tiles (ib × b: 48 × 480 floats).
        assert_eq!(g.data.len(), 2 * n * n);
        assert_eq!(g.data[n * n].bytes, 48 * 480 * 4);
        // Each step: GEQRT, one UNMQR, then the TSQRTs in turn; the last TSMQR of a
        // column feeds the next step's GEQRT.
        assert_eq!(
            g.dependencies().unwrap().critical_path(),
            4 * n - 3,
            "N = {n}"
        );
    }
    // Two tiles: GEQRT A00 → UNMQR (A01, after it) → TSQRT (A00 again, after the
    // UNMQR read it) → TSMQR (A01, A11) → GEQRT A11: one chain.
    let g = qr(&tiled(2, 480, Precision::Double)).unwrap();
    let kernels: Vec<&str> = g.tasks.iter().map(|t| &*t.kernel).collect();
    assert_eq!(kernels, ["dgeqrt", "dunmqr", "dtsqrt", "dtsmqr", "dgeqrt"]);
    let d = g.dependencies().unwrap();
    assert_eq!(
        (0..5).map(|t| d.of(t).to_vec()).collect::<Vec<_>>(),
        [vec![], vec![0], vec![0, 1], vec![1, 2], vec![3]]
    );
    assert_eq!(d.critical_path(), 5);
    // The four kernels' footprints differ (their buffers differ), and a kernel's is the
    // same on every task.
    let mut footprints: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let g = qr(&tiled(6, 960, Precision::Double)).unwrap();
    for t in &g.tasks {
        footprints.entry(&t.kernel).or_default().push(t.footprint);
    }
    let distinct: std::collections::BTreeSet<u64> = footprints.values().map(|v| v[0]).collect();
    assert_eq!(distinct.len(), 4);
    assert!(footprints.values().all(|v| v.iter().all(|&f| f == v[0])));
    // Householder QR of a square n × n matrix: 4n³/3 flops, to O(n²b).
    let g = qr(&tiled(32, 256, Precision::Single)).unwrap();
    let flops: f64 = g.tasks.iter().map(|t| t.flops).sum();
    let n = 32.0 * 256.0;
    let ratio = flops / (4.0 * n * n * n / 3.0);
    assert!((1.0..1.1).contains(&ratio), "{ratio}");
}

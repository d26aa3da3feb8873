//! §3.3 and §4 as one [`Reproduction`]: the signatures' accuracy against cachegrind,
//! the three experiments and the frequency-range projection, each claim graded by the
//! one rule (the claim tests, `tests/claims.rs`, pin the verdicts), the bar chart beside
//! the paper's numbers.

use crate::accuracy::{mean_abs_error, Accuracy};
use crate::experiments::{run_all, table, Options, Outcome};
use crate::programs::Pipeline;
use hetsched_core::Result;
use hetsched_sig::elasticity::Class;
use hetsched_study::{Baseline, Check, Claim, Figure, Measure, Paper, Reproduction, Table};
use hetsched_util::files::OutDir;

/// The paper's per-program numbers, printed beside ours and read by no workload, machine
/// or policy.
pub mod paper {
    use hetsched_sig::elasticity::Class;
    use serde::Serialize;

    /// What the paper states about each program, for the tables only: Table 2's measured
    /// elasticity on machine 3 (where given), Table 3's predicted class and its actual class.
    #[derive(Clone, Copy, Debug, Serialize)]
    pub struct PaperProgram {
        pub name: &'static str,
        pub table2: Option<f64>,
        pub predicted: Class,
        pub actual: Class,
    }

    const fn pp(
        name: &'static str,
        table2: Option<f64>,
        predicted: Class,
        actual: Class,
    ) -> PaperProgram {
        PaperProgram {
            name,
            table2,
            predicted,
            actual,
        }
    }

    use Class::{High, Insensitive, Moderate};

    /// The paper's numbers beside ours (never given to the scheduler or the time model).
    pub const PAPER: &[PaperProgram] = &[
        pp("eon", Some(-1.000), High, High),
        pp("crafty", Some(-1.004), High, High),
        pp("gcc", Some(-0.937), High, High),
        pp("gap", Some(-0.858), Moderate, Moderate),
        pp("mcf", Some(-0.512), Insensitive, Insensitive),
        pp("equake", Some(-0.499), Insensitive, Insensitive),
        pp("fma3d", None, Insensitive, Moderate),
        pp("lucas", None, Moderate, Insensitive),
        pp("wupwise", None, Moderate, Moderate),
        pp("mgrid", None, Moderate, Moderate),
        pp("apsi", None, High, Moderate),
        pp("facerec", None, High, Moderate),
    ];

    /// The paper's row for `name`.
    pub fn program(name: &str) -> &'static PaperProgram {
        PAPER
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no program {name}"))
    }
}

/// The table of both paths beside the paper's numbers.
pub fn programs_table(p: &Pipeline) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "signatures (4MB/16): regression E = {:.3} {:+.1} x miss rate over the 12 stand-ins, R^2 {:.3}, mean |error| {:.3}",
        p.fit.model.intercept, p.fit.model.slope, p.fit.r_squared, p.fit.mean_abs_error
    );
    let _ = writeln!(
        s,
        "  {:<8} {:>7} {:>7} {:>5} {:>10} {:>10} {:>7} {:>12} {:>7} {:>12} {:>12} {:>8}",
        "program",
        "data",
        "pattern",
        "APKI",
        "est. MPKI",
        "true MPKI",
        "true E",
        "true class",
        "pred. E",
        "pred. class",
        "Table 3",
        "Table 2"
    );
    let word = |c: Class| format!("{c:?}").to_lowercase();
    for q in &p.programs {
        let pap = paper::program(q.name);
        let t3 = if pap.predicted == pap.actual {
            word(pap.predicted)
        } else {
            format!("{} ({})", word(pap.predicted), word(pap.actual))
        };
        let _ = writeln!(
            s,
            "  {:<8} {:>5}MB {:>7} {:>5.1} {:>10.3} {:>10.3} {:>7.3} {:>12} {:>7.3} {:>12} {:>12} {:>8}",
            q.name,
            format!("{:.1}", q.model.data_bytes as f64 / (1u64 << 20) as f64),
            format!("{:?}", q.model.pattern).to_lowercase(),
            q.model.apki,
            q.estimated_miss_rate * 1000.0,
            q.true_miss_rate * 1000.0,
            q.elasticity,
            word(q.true_class),
            q.predicted_elasticity,
            word(q.predicted),
            t3,
            pap.table2.map_or("-".into(), |v| format!("{v:.3}")),
        );
    }
    s
}

/// Start orders per configuration in a quick run (the full run: the default 16).
pub const QUICK_SEEDS: u64 = 8;

/// The options of a run: the defaults, or [`QUICK_SEEDS`] start orders.
pub fn options(quick: bool) -> Options {
    Options {
        seeds: if quick {
            QUICK_SEEDS
        } else {
            Options::default().seeds
        },
        ..Options::default()
    }
}

/// Runs §4 with `opts` and writes its outputs into `out` (`shelepov.txt`, the table it
/// returns, and `shelepov.png`): what `hetsched experiment shelepov` and the report share.
pub fn run_into(out: &OutDir, opts: &Options) -> Result<(Vec<Outcome>, String)> {
    let outcomes = run_all(opts)?;
    let text = format!(
        "{}\n{}",
        programs_table(crate::programs::stand_ins()),
        table(&outcomes)
    );
    out.write("shelepov.txt", &text)?;
    crate::plot::bars(out, "shelepov.png", &outcomes)?;
    Ok((outcomes, text))
}

/// Runs §3.3's accuracy (quick: a small set of programs, see [`crate::accuracy`]) and
/// writes its table into `out` as `shelepov-accuracy.txt`.
pub fn accuracy_into(out: &OutDir, quick: bool) -> Result<Accuracy> {
    let acc = crate::accuracy::run(quick)?;
    out.write("shelepov-accuracy.txt", crate::accuracy::table(&acc))?;
    Ok(acc)
}

/// Runs §3.3's accuracy and §4 into `out` (`shelepov-accuracy.txt`, `shelepov.txt`,
/// `shelepov.png`) and judges their claims.
pub fn reproduce(out: &OutDir, quick: bool) -> Result<Reproduction> {
    let opts = options(quick);
    // valgrind (§3.3) and the simulator (§4) each take one core: side by side.
    let (acc, outcomes) = std::thread::scope(|scope| {
        let acc = scope.spawn(|| accuracy_into(out, quick));
        let outcomes = run_into(out, &opts).map(|(o, _)| o);
        let acc = acc.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        (acc, outcomes)
    });
    let (acc, outcomes) = (acc?, outcomes?);
    let header =
        |what: &str| -> Vec<String> { vec!["configuration".into(), "program".into(), what.into()] };
    let (mut paper_rows, mut our_rows) = (Vec::new(), Vec::new());
    for o in &outcomes {
        for p in &o.programs {
            if let Some(v) = p.paper_pct {
                paper_rows.push(vec![o.setup.name.into(), p.name.into(), format!("{v:+.1}")]);
            }
            our_rows.push(vec![
                o.setup.name.into(),
                p.name.into(),
                format!("{:+.1}", p.change_pct),
                format!("{:+.1}", p.change_vs_eevdf_pct),
            ]);
        }
        paper_rows.push(vec![
            o.setup.name.into(),
            "aggregate".into(),
            o.setup.paper.says.into(),
        ]);
        our_rows.push(vec![
            o.setup.name.into(),
            "aggregate".into(),
            format!("{:+.1}", o.aggregate_pct),
            format!("{:+.1}", o.aggregate_vs_eevdf_pct),
        ]);
    }
    Ok(Reproduction {
        paper: "shelepov",
        reference: "Shelepov, Fedorova: Scheduling on Heterogeneous Multicore Processors Using Architectural Signatures, WIOSCA 2008".into(),
        commands: vec![
            "hetsched experiment shelepov --seeds 16".into(),
            "hetsched experiment shelepov-accuracy".into(),
        ],
        baseline: Baseline {
            paper: "Linux 2.6.18's default scheduler (the O(1) scheduler, 100 ms time slices for nice-0 programs), on the same machine and programs".into(),
            ours: format!("`{}` (CFS with a 100 ms slice for each of the two programs sharing a core), on which every claim is judged; beside it `{}` (Linux since 6.6 at its defaults, as it schedules today), signature's change against which is the figure's \"vs eevdf\" column", crate::experiments::BASELINE, crate::experiments::EEVDF),
        },
        figures: vec![accuracy_figure(&acc), Figure {
            paper: "shelepov",
            id: "s4",
            title: "§4 (Figs. 5–7): change in completion time under the signature scheduler vs the default scheduler, per program and aggregate".into(),
            images: vec!["shelepov.png".into()],
            paper_numbers: Table { header: header("change [%]"), rows: paper_rows },
            ours: Table {
                header: [header("change [%]"), vec!["vs eevdf [%]".into()]].concat(),
                rows: our_rows,
            },
            note: format!(
                "Ours: {} start orders per configuration and policy, {} simulated seconds per run; the paper gives per-program numbers only for §4.1 in its text. \"vs eevdf\": signature against `{}` (Linux 6.6+ at its defaults), shown beside the default scheduler, not judged.",
                opts.seeds, opts.horizon_s, crate::experiments::EEVDF
            ),
        }],
        claims: [vec![accuracy_claim(&acc)], claims(&outcomes)].concat(),
        assumptions: assumptions(),
    })
}

/// §3.3's numbers beside ours: per program, both elasticities and classes.
fn accuracy_figure(acc: &Accuracy) -> Figure {
    let word = |c: hetsched_sig::elasticity::Class| format!("{c:?}").to_lowercase();
    Figure {
        paper: "shelepov",
        id: "s3",
        title: "§3.3 (Fig. 4, Table 3): estimated vs measured elasticity at a 4 MB 16-way cache".into(),
        images: vec![],
        paper_numbers: Table {
            header: vec!["measure".into(), "paper".into()],
            rows: vec![
                vec!["mean absolute error of the estimated elasticities".into(), "about 0.075 (25 SPEC CPU2000 benchmarks)".into()],
                vec!["benchmarks in the wrong class".into(), "6 of 25 (Table 3: apsi, facerec, fma3d, lucas, vortex, vpr)".into()],
            ],
        },
        ours: Table {
            header: ["program", "est. MPKI", "cachegrind MPKI", "measured E", "predicted E", "measured class", "predicted class"]
                .iter()
                .map(|h| h.to_string())
                .collect(),
            rows: acc
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.name.clone(),
                        format!("{:.3}", r.estimated * 1000.0),
                        format!("{:.3}", r.measured * 1000.0),
                        format!("{:.3}", r.measured_elasticity),
                        format!("{:.3}", r.predicted_elasticity),
                        word(r.measured_class),
                        word(r.predicted_class),
                    ]
                })
                .collect(),
        },
        note: "Ours: programs that run here, not SPEC CPU2000; the measured elasticity is cachegrind's last-level data misses per instruction through §4's time model (this machine's clock cannot be changed), so the error is the miss-rate model's share of the paper's.".into(),
    }
}

/// §3.3: the signatures' elasticities against the measured ones, graded by the one rule
/// ([`hetsched_study::grade`]): the paper's error and its share of misclassified
/// benchmarks are bounds ours should not exceed (a smaller error contradicts nothing).
pub fn accuracy_claim(acc: &Accuracy) -> Claim {
    let mae = mean_abs_error(acc);
    let (wrong, n) = (acc.misclassified.len(), acc.rows.len());
    let share = 100.0 * wrong as f64 / n.max(1) as f64;
    let stand_ins = crate::programs::stand_ins();
    let sw = stand_ins
        .programs
        .iter()
        .filter(|p| p.true_class != p.predicted)
        .count();
    claim(
        "s3-prediction-accuracy",
        "§3.3, Fig. 4, Table 3",
        "at a 4 MB 16-way cache the elasticities estimated from signatures are close to the measured ones, and most programs get their measured class",
    )
    .measured(
        "mean absolute error about 0.075; 6 of 25 benchmarks in the wrong class",
        format!(
            "mean absolute error {mae:.3}; {wrong} of {n} programs in the wrong class ({}) (cachegrind as the measured side); §4's 12 stand-ins against their LRU simulation: {:.3}, {sw} of 12",
            if wrong == 0 { "none".into() } else { acc.misclassified.join(", ") },
            stand_ins.fit.mean_abs_error
        ),
    )
    .graded(
        vec![
            Check::number("mean absolute error", Paper::AtMost(0.075), Measure::Quantity, mae),
            Check::number(
                "programs in the wrong class, %",
                Paper::AtMost(100.0 * 6.0 / 25.0),
                Measure::Quantity,
                share,
            ),
        ],
        format!(
            "the line through our programs is E = {:.3} + {:.1}·m; equation 6 sets the misses of a working set smaller than the cache to zero, so short runs whose start-up and first-touch misses dominate are estimated as insensitive, and streams larger than the cache are underestimated by (W−N)/W (docs/shelepov.md)",
            acc.fit.model.intercept, acc.fit.model.slope
        ),
    )
}

/// Every assumption of the reproduction: the programs' models and time model, then the
/// experiments'.
pub fn assumptions() -> Vec<hetsched_study::Assumption> {
    [
        crate::programs::assumptions(),
        crate::experiments::assumptions(),
    ]
    .concat()
}

fn setup<'a>(outcomes: &'a [Outcome], name: &str) -> Option<&'a Outcome> {
    outcomes.iter().find(|o| o.setup.name == name)
}

fn claim(id: &'static str, source: &'static str, statement: &str) -> Claim {
    Claim::new("shelepov", id, source, statement)
}

/// Why an aggregate differs from the paper's: its per-program changes, from the numbers.
fn differs(o: Option<&Outcome>) -> String {
    match o {
        Some(o) => format!(
            "our per-program changes: {} (the paper's programs are SPEC CPU2000 binaries on its Xeons; ours are the stand-ins of docs/shelepov.md)",
            o.programs
                .iter()
                .map(|p| format!("{} {:+.1} %", p.name, p.change_pct))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "the configuration did not run".into(),
    }
}

/// An aggregate change against the paper's `paper` %.
fn aggregate(c: Claim, o: Option<&Outcome>, paper: f64) -> Claim {
    let ours = o.map_or(f64::NAN, |o| o.aggregate_pct);
    c.measured(format!("{paper:+.1} %"), format!("{ours:+.1} %"))
        .graded(
            vec![Check::number(
                "aggregate change, %",
                Paper::Value(paper),
                Measure::Percent,
                ours,
            )],
            differs(o),
        )
}

/// §4's claims, graded by the one rule ([`hetsched_study::grade`]).
pub fn claims(outcomes: &[Outcome]) -> Vec<Claim> {
    let het = setup(outcomes, "heterogeneous");
    let mut out = Vec::new();

    let mut checks = Vec::new();
    let mut ours = Vec::new();
    if let Some(h) = het {
        for &(program, paper) in h.setup.paper.programs {
            let v = h
                .programs
                .iter()
                .find(|p| p.name == program)
                .map_or(f64::NAN, |p| p.change_pct);
            checks.push(Check::number(
                format!("{program}, %"),
                Paper::Value(paper),
                Measure::Percent,
                v,
            ));
            ours.push(format!("{program} {v:+.1} %"));
        }
    }
    out.push(
        claim(
            "s4.1-per-program-changes",
            "§4.1",
            "highly sensitive programs (eon, crafty) gain on the fast cores, insensitive ones (mcf, equake) lose on the slow ones",
        )
        .measured("eon −19.4 %, crafty −19.9 %, mcf +15.6 %, equake +12.3 %", ours.join(", "))
        .graded(checks, differs(het)),
    );

    out.push(aggregate(
        claim(
            "s4.1-heterogeneous-aggregate",
            "§4.1",
            "on two 2 GHz and two 3 GHz cores the aggregate completion time falls",
        ),
        het,
        -4.3,
    ));

    let balanced = setup(outcomes, "balanced");
    out.push(aggregate(
        claim(
            "s4.2-balanced-aggregate",
            "§4.2",
            "with one core at each of 2.0, 2.33, 2.67, 3.0 GHz and eight different programs the aggregate falls",
        ),
        balanced,
        -2.7,
    ));

    let uniform = setup(outcomes, "uniform");
    let u = uniform.map_or(f64::NAN, |o| o.aggregate_pct);
    out.push(
        claim(
            "s4.3-uniform-barely-changes",
            "§4.3",
            "with programs of one class the scheduler is unlikely to seriously hurt performance (the paper measured +0.4 %: no worse than that)",
        )
        .measured("+0.4 %", format!("{u:+.1} %"))
        .graded(
            vec![Check::number("aggregate change, %", Paper::AtMost(0.4), Measure::Percent, u)],
            differs(uniform),
        ),
    );

    let base = het.map_or(f64::NAN, |o| o.aggregate_pct);
    let ratio = |name| setup(outcomes, name).map_or(f64::NAN, |o| o.aggregate_pct) / base;
    for (id, setup_name, statement, paper_value, paper) in [
        (
            "s4.1-projection-1.5-ghz-almost-doubles",
            "projection 1.5-3 GHz",
            "with cores of 1.5 and 3 GHz the decrease could almost double",
            "almost 2× the 2–3 GHz decrease",
            Paper::Value(2.0),
        ),
        (
            "s4.1-projection-1.0-ghz-more-than-triples",
            "projection 1.0-3 GHz",
            "with cores of 1.0 and 3 GHz the decrease could more than triple",
            "more than 3× the 2–3 GHz decrease",
            Paper::AtLeast(3.0),
        ),
    ] {
        let r = ratio(setup_name);
        out.push(
            claim(id, "§4.1", statement)
                .measured(paper_value, format!("{r:.2}× the 2–3 GHz decrease"))
                .graded(
                    vec![Check::number("× the 2–3 GHz decrease", paper, Measure::Ratio, r)],
                    format!(
                        "the projection scales our 2–3 GHz decrease ({base:+.1} %), itself {} the paper's −4.3 %",
                        if base < -4.3 { "larger than" } else { "smaller than" }
                    ),
                ),
        );
    }
    out
}

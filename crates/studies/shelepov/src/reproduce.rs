//! §4 as one [`Reproduction`]: the three experiments and the frequency-range projection,
//! each claim judged with the tolerance the claim tests (`tests/claims.rs`) pin, the
//! bar chart beside the paper's numbers.

use crate::experiments::{run_all, table, Options, Outcome};
use hetsched_core::Result;
use hetsched_study::{Baseline, Check, Claim, Figure, Measure, Paper, Reproduction, Table};
use hetsched_util::files::OutDir;

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
    let text = table(&outcomes);
    out.write("shelepov.txt", &text)?;
    crate::plot::bars(out, "shelepov.png", &outcomes)?;
    Ok((outcomes, text))
}

/// Runs §4 into `out` (`shelepov.txt`, `shelepov.png`) and judges its claims.
pub fn reproduce(out: &OutDir, quick: bool) -> Result<Reproduction> {
    let opts = options(quick);
    let (outcomes, _) = run_into(out, &opts)?;
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
        commands: vec!["hetsched experiment shelepov --seeds 16".into()],
        baseline: Baseline {
            paper: "Linux 2.6.18's default scheduler (the O(1) scheduler, 100 ms time slices for nice-0 programs), on the same machine and programs".into(),
            ours: format!("`{}` (CFS with a 100 ms slice for each of the two programs sharing a core), on which every claim is judged; beside it `{}` (Linux since 6.6 at its defaults, as it schedules today), signature's change against which is the figure's \"vs eevdf\" column", crate::experiments::BASELINE, crate::experiments::EEVDF),
        },
        figures: vec![Figure {
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
        claims: claims(&outcomes),
        assumptions: crate::experiments::assumptions(),
    })
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

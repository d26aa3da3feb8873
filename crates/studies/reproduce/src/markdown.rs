//! `report.md`: the same content as `index.html`, for a terminal or a code forge.

use crate::{command, Report};
use hetsched_study::Table;
use std::fmt::Write as _;

/// A table cell: one line, `|` escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn row(cells: impl IntoIterator<Item = String>) -> String {
    let cells: Vec<String> = cells.into_iter().map(|c| cell(&c)).collect();
    format!("| {} |\n", cells.join(" | "))
}

fn table(m: &mut String, caption: &str, t: &Table) {
    let _ = writeln!(m, "{caption}:\n");
    if t.header.is_empty() {
        m.push_str("(no numbers)\n\n");
        return;
    }
    m.push_str(&row(t.header.iter().cloned()));
    m.push_str(&row(t.header.iter().map(|_| "---".to_string())));
    for r in &t.rows {
        m.push_str(&row(r.iter().cloned()));
    }
    m.push('\n');
}

/// The document.
pub fn render(report: &Report) -> String {
    let mut m = format!(
        "# hetsched: how far the papers reproduce\n\n`{}`, {:.0} s. {}.\n\n**Grading.** {}\n\n",
        command(report),
        report.seconds,
        report.counts(),
        hetsched_study::grade::RULE
    );
    for s in &report.sections {
        let r = match &s.result {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(
                    m,
                    "## {}\n\n**Failed** after {:.1} s: {e}\n",
                    s.paper, s.seconds
                );
                continue;
            }
        };
        let _ = writeln!(
            m,
            "## {}\n\n{} ({:.1} s)\n",
            r.reference,
            s.counts(),
            s.seconds
        );
        if let Some(label) = s.quick_label(report) {
            let _ = writeln!(m, "**{label}**\n");
        }
        let _ = writeln!(
            m,
            "**Baseline.** The paper's: {}. Ours: {}.\n\n### Claims\n",
            r.baseline.paper, r.baseline.ours
        );
        m.push_str(&row([
            "claim",
            "where",
            "the paper says",
            "paper",
            "ours",
            "tolerance",
            "verdict",
            "why ours differs",
        ]
        .map(String::from)));
        m.push_str(&row((0..8).map(|_| "---".to_string())));
        for c in &r.claims {
            m.push_str(&row([
                format!("`{}`", c.id),
                c.source.to_string(),
                c.statement.clone(),
                c.paper_value.clone(),
                c.ours.clone(),
                c.tolerance.clone(),
                format!("**{}**", c.verdict.word()),
                c.explanation.clone(),
            ]));
        }
        m.push_str("\n### Figures\n\n");
        for f in &r.figures {
            let _ = writeln!(m, "#### {}\n", f.title);
            for img in &f.images {
                let _ = writeln!(m, "![{}]({}/{})\n", f.id, s.paper, img.display());
            }
            table(&mut m, "Paper", &f.paper_numbers);
            table(&mut m, "Ours", &f.ours);
            if !f.note.is_empty() {
                let _ = writeln!(m, "{}\n", f.note);
            }
        }
        m.push_str("### Assumptions (values the paper does not state)\n\n");
        for a in &r.assumptions {
            let _ = writeln!(
                m,
                "- `{}` = `{}`: {} (`{}`)",
                a.name, a.value, a.doc, a.source
            );
        }
        m.push_str("\n### Commands\n\n```\n");
        for c in &r.commands {
            let _ = writeln!(m, "{c}");
        }
        m.push_str("```\n\n");
    }
    m
}

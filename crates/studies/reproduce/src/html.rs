//! `index.html`: one static page (inline style, no script), the PNGs beside it in each
//! experiment's folder. Claim rows carry `data-paper`, `data-claim` and
//! `data-verdict`, so a reader program (the render test) finds them without parsing
//! prose.

use crate::{command, Report, Section};
use hetsched_study::{Figure, Reproduction, Table};
use std::fmt::Write as _;

const STYLE: &str = "body{font-family:sans-serif;max-width:78em;margin:1em auto;padding:0 1em;line-height:1.4}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .5em;vertical-align:top;text-align:left}
th{background:#eee}.holds{background:#d7f5d7}.partly{background:#fdf1c7}.does-not-hold{background:#f8d0d0}
.failed{background:#f8d0d0;padding:.5em}.quick{background:#fdf1c7;padding:.5em}img{max-width:100%;border:1px solid #ddd}
.pair{display:flex;gap:1.5em;flex-wrap:wrap}code,pre{background:#f4f4f4}pre{padding:.5em;overflow-x:auto}";

/// HTML-escapes text.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn table(h: &mut String, caption: &str, t: &Table) {
    let _ = write!(h, "<div><b>{}</b>", esc(caption));
    if t.header.is_empty() && t.rows.is_empty() {
        h.push_str("<p><i>no numbers</i></p></div>");
        return;
    }
    h.push_str("<table><tr>");
    for c in &t.header {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>");
    for r in &t.rows {
        h.push_str("<tr>");
        for c in r {
            let _ = write!(h, "<td>{}</td>", esc(c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table></div>");
}

fn figure(h: &mut String, paper: &str, f: &Figure) {
    let _ = write!(
        h,
        "<figure id=\"{}-{}\"><h4>{}</h4>",
        esc(paper),
        esc(f.id),
        esc(&f.title)
    );
    for img in &f.images {
        let src = format!("{paper}/{}", img.display());
        let _ = write!(
            h,
            "<img src=\"{}\" alt=\"{}\">",
            esc(&src),
            esc(&format!("{}: {}", f.id, img.display()))
        );
    }
    h.push_str("<div class=\"pair\">");
    table(h, "Paper", &f.paper_numbers);
    table(h, "Ours", &f.ours);
    h.push_str("</div>");
    if !f.note.is_empty() {
        let _ = write!(h, "<p>{}</p>", esc(&f.note));
    }
    h.push_str("</figure>");
}

fn reproduction(h: &mut String, r: &Reproduction) {
    let _ = write!(
        h,
        "<p class=\"baseline\"><b>Baseline.</b> The paper's: {}. Ours: {}.</p>",
        esc(&r.baseline.paper),
        esc(&r.baseline.ours)
    );
    let _ = write!(
        h,
        "<h3>Claims</h3><table class=\"claims\"><tr><th>claim</th><th>where</th><th>the paper says</th><th>paper</th><th>ours</th><th>tolerance</th><th>verdict</th><th>why ours differs</th></tr>"
    );
    for c in &r.claims {
        let v = serde_json::to_value(c.verdict).expect("a verdict serialises");
        let class = v.as_str().unwrap_or_default();
        let _ = write!(
            h,
            "<tr data-paper=\"{}\" data-claim=\"{}\" data-verdict=\"{class}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"verdict {class}\">{}</td><td>{}</td></tr>",
            esc(c.paper),
            esc(c.id),
            esc(c.id),
            esc(c.source),
            esc(&c.statement),
            esc(&c.paper_value),
            esc(&c.ours),
            esc(&c.tolerance),
            c.verdict.word(),
            esc(&c.explanation)
        );
    }
    h.push_str("</table><h3>Figures</h3>");
    for f in &r.figures {
        figure(h, r.paper, f);
    }
    h.push_str("<h3>Assumptions (values the paper does not state)</h3><ul>");
    for a in &r.assumptions {
        let _ = write!(
            h,
            "<li><code>{}</code> = <code>{}</code>: {} <small>(<code>{}</code>)</small></li>",
            esc(a.name),
            esc(&a.value),
            esc(&a.doc),
            esc(a.source)
        );
    }
    h.push_str("</ul><h3>Commands</h3><pre>");
    for c in &r.commands {
        let _ = writeln!(h, "{}", esc(c));
    }
    h.push_str("</pre>");
}

fn section(h: &mut String, s: &Section, report: &Report) {
    let _ = write!(h, "<section id=\"{}\">", esc(s.paper));
    match &s.result {
        Ok(r) => {
            let _ = write!(
                h,
                "<h2>{}</h2><p>{} ({:.1} s)</p>",
                esc(&r.reference),
                s.counts(),
                s.seconds
            );
            if let Some(label) = s.quick_label(report) {
                let _ = write!(h, "<p class=\"quick\"><b>{}</b></p>", esc(&label));
            }
            reproduction(h, r);
        }
        Err(e) => {
            let _ = write!(
                h,
                "<h2>{}</h2><p class=\"failed\" data-failed=\"{}\">failed after {:.1} s: {}</p>",
                esc(s.paper),
                esc(s.paper),
                s.seconds,
                esc(e)
            );
        }
    }
    h.push_str("</section>");
}

/// The page.
pub fn render(report: &Report) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>hetsched: how far the papers reproduce</title><style>{STYLE}</style></head><body>\n<h1>hetsched: how far the papers reproduce</h1><p>Produced by <code>{}</code> in {:.0} s{}. {}.</p><p class=\"rule\"><b>Grading.</b> {}</p>",
        esc(&command(report)),
        report.seconds,
        if report.quick {
            " (quick: fewer seeds, scaled-down runs)"
        } else {
            ""
        },
        report.counts(),
        esc(hetsched_study::grade::RULE)
    );
    h.push_str("<table><tr><th>paper</th><th>claims</th><th>holds</th><th>partly</th><th>does not hold</th><th>status</th></tr>");
    for s in &report.sections {
        let c = s.counts();
        let _ = write!(
            h,
            "<tr><td><a href=\"#{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td></tr>",
            esc(s.paper),
            c.total(),
            c.holds,
            c.partly,
            c.does_not_hold,
            if s.result.is_ok() { "ran" } else { "failed" }
        );
    }
    h.push_str("</table>\n");
    for s in &report.sections {
        section(&mut h, s, report);
        h.push('\n');
    }
    h.push_str("</body></html>\n");
    h
}

//! No experiment passes a value typed from the paper to the scheduler or to the workload
//! model unless the report lists it as an assumption.
//!
//! Two checks over every study of the registry ([`STUDIES`]):
//!
//! 1. **The assumptions registry**: every study with a reproduction lists assumptions (the
//!    very list its `reproduce()` returns, which the report prints); each assumption's
//!    doc says where its value comes from (the paper's setup with its section, table or
//!    figure, or our choice), and names are unique per paper.
//! 2. **The paper's results stay out of the models**: a scan of each study crate's
//!    `src/`: the paper's result constants (items named `PAPER_*`, or inside a
//!    `mod paper`) are referenced only from grading and reporting files (`reproduce.rs`,
//!    `plot.rs`) or from the lines of [`ALLOWED`], each with its reason; never from a
//!    file that builds a workload, a machine or a policy.
//!
//! Which values of the paper's setup reach a model is a review, not a scan (each found
//! is declared in an `assumptions!` block); this test keeps the registry honest and the
//! paper's answers out of the inputs.

use hetsched_reproduce::STUDIES;
use hetsched_study::Assumption;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A study with a reproduction: its key, its crate's folder beside this crate, and its
/// assumptions as its `reproduce()` returns them.
struct Entry {
    key: &'static str,
    dir: &'static str,
    assumptions: fn() -> Vec<Assumption>,
}

/// Every study with a reproduction. `ding` and `shelepov` have no `reproduce::assumptions`:
/// their `reproduce()` returns the one block named here.
const ENTRIES: &[Entry] = &[
    Entry {
        key: "beisel",
        dir: "beisel",
        assumptions: hetsched_beisel::reproduce::assumptions,
    },
    Entry {
        key: "shelepov",
        dir: "shelepov",
        assumptions: hetsched_shelepov::reproduce::assumptions,
    },
    Entry {
        key: "ding",
        dir: "ding",
        assumptions: hetsched_ding::workload::assumptions,
    },
    Entry {
        key: "akram",
        dir: "akram",
        assumptions: hetsched_akram::reproduce::assumptions,
    },
    Entry {
        key: "shim",
        dir: "nuca",
        assumptions: hetsched_nuca::reproduce::assumptions,
    },
    Entry {
        key: "coretime",
        dir: "o2",
        assumptions: hetsched_o2::reproduce::assumptions,
    },
];

/// Lines outside the grading files that may name a result of the paper, each with why.
/// (study folder, file under `src/`, a part of the line, reason). An entry no line uses
/// fails the test, so the list cannot go stale.
const ALLOWED: &[(&str, &str, &str, &str)] = &[
    (
        "ding",
        "experiment.rs",
        "paper_numa_amp_over_cfs: PAPER_SPEEDUP,",
        "the report's field that prints the paper's speed-up beside ours (read by no policy or workload)",
    ),
    (
        "ding",
        "experiment.rs",
        "(\"paper: numa-amp's mean speed-up, 1.36x\", PAPER_SPEEDUP),",
        "the reference line of the speed-up plot",
    ),
    (
        "nuca",
        "experiment.rs",
        "paper::CORE_MISS_REMOTE,",
        "the \"ours vs the paper\" rows of `shim-theta`'s table (experiment::table)",
    ),
    (
        "nuca",
        "experiment.rs",
        "paper::CORE_MISS_HYBRID3,",
        "the \"ours vs the paper\" rows of `shim-theta`'s table (experiment::table)",
    ),
    (
        "nuca",
        "experiment.rs",
        "paper::MIGRATION_RATE_HYBRID3,",
        "the \"ours vs the paper\" rows of `shim-theta`'s table (experiment::table)",
    ),
    (
        "nuca",
        "experiment.rs",
        "for (theta, gain) in paper::GAIN {",
        "the \"ours vs the paper\" rows of `shim-theta`'s table (experiment::table)",
    ),
];

/// Assumptions whose doc states its source in words [`provenance`] does not read, each
/// with why it is left so: (paper, name, reason). An entry that now passes, or that no
/// assumption has, fails the test, so the list only shrinks.
const PENDING: &[(&str, &str, &str)] = &[];

/// Files that grade the paper's claims or print its numbers beside ours.
const GRADING_FILES: &[&str] = &["reproduce.rs", "plot.rs"];

/// Where an assumption's doc says its value comes from, or `None` if it does not.
/// The paper's setup: the paper named with a section (§), table or figure. Our choice: a
/// phrase saying the value is ours or that the paper does not give it.
fn provenance(doc: &str) -> Option<&'static str> {
    const PLACES: &[&str] = &["§", "Table ", "Fig. ", "Figs. ", "Figure ", "section "];
    const OURS: &[&str] = &[
        "our choice",
        "our assumption",
        "our mapping",
        "our source",
        "this project's measurement",
        "assumed",
        "gives no",
        "give no",
        "not given",
        "the paper does not",
        "the paper says only",
        "not in the paper",
        "not in table",
        "not taken from the paper",
        "not from the paper",
    ];
    let lower = doc.to_lowercase();
    let says_ours = lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w == "ours");
    if lower.contains("paper") && PLACES.iter().any(|p| doc.contains(p)) {
        Some("the paper's setup")
    } else if says_ours || OURS.iter().any(|p| lower.contains(p)) {
        Some("our choice")
    } else {
        None
    }
}

#[test]
fn the_provenance_rule_tells_a_stated_source_from_none() {
    assert_eq!(
        provenance("Chips: the paper's setup, §Preliminary evidence (four chips)."),
        Some("the paper's setup")
    );
    assert_eq!(
        provenance("GPU queue limit: the paper's setup, Fig. 3."),
        Some("the paper's setup")
    );
    assert_eq!(
        provenance("Request bytes: our choice (1 MiB)."),
        Some("our choice")
    );
    assert_eq!(
        provenance("Line bytes. Not in Table I."),
        Some("our choice")
    );
    assert_eq!(
        provenance("Misses in flight: 4, ours. Stall 40 ns."),
        Some("our choice")
    );
    assert_eq!(provenance("GPU queue limit: 5."), None);
    assert_eq!(provenance("Hours of the detours: 5."), None);
    assert_eq!(provenance("As in the paper."), None);
}

#[test]
fn every_reproduction_lists_its_assumptions_with_where_they_come_from() {
    let known: BTreeSet<&str> = ENTRIES.iter().map(|e| e.key).collect();
    assert_eq!(known.len(), ENTRIES.len(), "a study is listed twice");
    let mut problems = Vec::new();
    let mut checked = 0;
    let mut pending_seen = vec![false; PENDING.len()];
    for study in STUDIES.iter().filter(|s| s.reproduce.is_some()) {
        let Some(entry) = ENTRIES.iter().find(|e| e.key == study.key) else {
            problems.push(format!(
                "{}: a reproduction this test does not know: add it to ENTRIES",
                study.key
            ));
            continue;
        };
        checked += 1;
        let list = (entry.assumptions)();
        if list.is_empty() {
            problems.push(format!("{}: lists no assumption", study.key));
        }
        let mut names = BTreeSet::new();
        for a in &list {
            let at = format!("{}: {} ({})", study.key, a.name, a.source);
            if a.paper != study.key {
                problems.push(format!("{at}: declared for paper {:?}", a.paper));
            }
            if !names.insert(a.name) {
                problems.push(format!("{at}: the name is listed twice"));
            }
            if a.value.is_empty() {
                problems.push(format!("{at}: no value"));
            }
            let pending = PENDING.iter().position(|p| p.0 == a.paper && p.1 == a.name);
            if let Some(k) = pending {
                pending_seen[k] = true;
                if provenance(&a.doc).is_some() {
                    problems.push(format!(
                        "{at}: now states its source: remove it from PENDING"
                    ));
                }
            } else if provenance(&a.doc).is_none() {
                problems.push(format!(
                    "{at}: its doc does not say where the value comes from (the paper's \
                     setup with its §, table or figure, or our choice): {:?}",
                    a.doc
                ));
            }
        }
    }
    for (p, seen) in PENDING.iter().zip(pending_seen) {
        if !seen {
            problems.push(format!("PENDING names no assumption: {}: {}", p.0, p.1));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        checked,
        ENTRIES.len(),
        "ENTRIES names a study the registry has no reproduction for"
    );
}

/// A Rust source with the contents of comments, strings and character literals blanked
/// (newlines kept), so that identifiers and braces can be read off it.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
            && matches!(next, Some('"') | Some('#'))
            && {
                let mut j = i + 1;
                while c.get(j) == Some(&'#') {
                    j += 1;
                }
                c.get(j) == Some(&'"')
            }
        {
            // A raw string: r"…" or r#"…"#.
            let mut hashes = 0;
            i += 1;
            out.push(' ');
            while c[i] == '#' {
                hashes += 1;
                i += 1;
                out.push(' ');
            }
            out.push('"');
            i += 1;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    out.push('"');
                    out.extend(std::iter::repeat_n(' ', hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(c[i]));
                i += 1;
            }
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' && next == Some('\\') {
            // An escaped character literal: '\n', '\'', '\u{7b}'.
            out.push(' ');
            i += 2;
            out.push(' ');
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The tokens of blanked code: identifiers, `::`, and single punctuation, with their line
/// (1-based).
fn tokens(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let c: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < c.len() {
            if c[i].is_alphanumeric() || c[i] == '_' {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push((c[start..i].iter().collect(), n + 1));
            } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
                out.push(("::".into(), n + 1));
                i += 2;
            } else {
                if !c[i].is_whitespace() {
                    out.push((c[i].to_string(), n + 1));
                }
                i += 1;
            }
        }
    }
    out
}

/// Index of the token after the `}` that closes the first `{` at or after `from` (or
/// after the `;` that comes first: an item without a body).
fn skip_item(t: &[(String, usize)], from: usize) -> usize {
    let mut i = from;
    while i < t.len() && t[i].0 != "{" {
        if t[i].0 == ";" {
            return i + 1;
        }
        i += 1;
    }
    let mut depth = 0;
    while i < t.len() {
        match t[i].0.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// What a scan of one file found.
#[derive(Default)]
struct Scan {
    /// Lines that name a result of the paper: (line, what).
    references: Vec<(usize, String)>,
    /// Result items it defines (`PAPER_*` constants, `mod paper`).
    definitions: usize,
    /// Modules it declares under `#[cfg(test)]` without a body (`mod tests;`).
    test_modules: Vec<String>,
}

fn scan(src: &str) -> Scan {
    let t = tokens(&code_only(src));
    let mut s = Scan::default();
    let mut i = 0;
    while i < t.len() {
        let word = t[i].0.as_str();
        let next = t.get(i + 1).map(|x| x.0.as_str());
        let is = |k: usize, w: &str| t.get(i + k).is_some_and(|x| x.0 == w);
        // `#[cfg(test)]`: tests may compare with the paper; skip the item.
        if word == "#"
            && is(1, "[")
            && is(2, "cfg")
            && is(3, "(")
            && is(4, "test")
            && is(5, ")")
            && is(6, "]")
        {
            let item = i + 7;
            if let Some(m) = (item..t.len().min(item + 4)).find(|&k| t[k].0 == "mod") {
                if t.get(m + 2).is_some_and(|x| x.0 == ";") {
                    s.test_modules.push(t[m + 1].0.clone());
                }
            }
            i = skip_item(&t, item);
            continue;
        }
        // `mod paper { … }`: the paper's numbers, defined where they are transcribed.
        if word == "mod" && next == Some("paper") {
            s.definitions += 1;
            i = skip_item(&t, i);
            continue;
        }
        if word.starts_with("PAPER_") {
            let defined = i > 0 && matches!(t[i - 1].0.as_str(), "const" | "static");
            if defined {
                s.definitions += 1;
            } else {
                s.references.push((t[i].1, word.to_string()));
            }
        } else if word == "paper" && next == Some("::") {
            s.references.push((t[i].1, "paper::".into()));
        } else if word == "use" {
            // `use …::{paper, …}` or `use …::paper as p;` brings the module in by name.
            let end = (i..t.len()).find(|&k| t[k].0 == ";").unwrap_or(t.len());
            if let Some(k) =
                (i..end).find(|&k| t[k].0 == "paper" && t.get(k + 1).is_none_or(|x| x.0 != "::"))
            {
                s.references.push((t[k].1, "use of `paper`".into()));
            }
        }
        i += 1;
    }
    s
}

/// The `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The references to the paper's results in the crate folder `dir` (beside this crate)
/// outside grading files and test modules: (file under `src/`, line, the line, what).
fn references_outside_grading(dir: &str) -> (Vec<(String, usize, String, String)>, usize) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src");
    let files = rust_files(&src);
    assert!(!files.is_empty(), "{}: no sources", src.display());
    let texts: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|f| (f.clone(), std::fs::read_to_string(f).unwrap()))
        .collect();
    let scans: BTreeMap<&PathBuf, Scan> = texts.iter().map(|(f, s)| (f, scan(s))).collect();
    // The files of `#[cfg(test)] mod x;`: beside a lib.rs / mod.rs, else in its folder.
    let mut test_files = BTreeSet::new();
    for (f, s) in &scans {
        let stem = f.file_stem().unwrap().to_string_lossy();
        let base = if stem == "lib" || stem == "mod" || stem == "main" {
            f.parent().unwrap().to_path_buf()
        } else {
            f.with_extension("")
        };
        for m in &s.test_modules {
            test_files.insert(base.join(format!("{m}.rs")));
            test_files.insert(base.join(m).join("mod.rs"));
        }
    }
    let mut found = Vec::new();
    let mut definitions = 0;
    for (f, s) in &scans {
        definitions += s.definitions;
        let name = f.file_name().unwrap().to_string_lossy();
        if GRADING_FILES.contains(&name.as_ref()) || test_files.contains(*f) {
            continue;
        }
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let lines: Vec<&str> = texts[*f].lines().collect();
        for (line, what) in &s.references {
            found.push((
                rel.clone(),
                *line,
                lines[line - 1].trim().to_string(),
                what.clone(),
            ));
        }
    }
    (found, definitions)
}

#[test]
fn the_papers_results_reach_only_grading_and_reporting_code() {
    assert_eq!(
        ENTRIES.len(),
        STUDIES.iter().filter(|s| s.reproduce.is_some()).count(),
        "every study with a reproduction is scanned"
    );
    let mut used = vec![false; ALLOWED.len()];
    let mut problems = Vec::new();
    let mut definitions = 0;
    for e in ENTRIES {
        let (found, defs) = references_outside_grading(e.dir);
        definitions += defs;
        for (file, line, text, what) in found {
            let allowed = ALLOWED
                .iter()
                .position(|a| a.0 == e.dir && a.1 == file && text.contains(a.2));
            match allowed {
                Some(k) => used[k] = true,
                None => problems.push(format!(
                    "{}/src/{file}:{line}: {what} (a result of the paper) outside the grading \
                     files: {text}",
                    e.dir
                )),
            }
        }
    }
    for (a, used) in ALLOWED.iter().zip(&used) {
        if !used {
            problems.push(format!(
                "ALLOWED entry used by no line: {}/src/{}: {:?}",
                a.0, a.1, a.2
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The scan sees the paper's numbers where they are defined (ding's PAPER_SPEEDUP,
    // Shim et al.'s two `mod paper`): it is not passing for want of reading them.
    assert!(definitions >= 3, "only {definitions} result items found");
}

#[test]
fn the_scan_finds_a_result_in_code_and_not_in_comments_strings_or_tests() {
    let src = r##"
        //! PAPER_X in a doc comment, paper::Y too.
        pub const PAPER_X: f64 = 1.0;
        pub mod paper { pub const Y: f64 = 2.0; fn f() -> f64 { PAPER_X } }
        fn model() -> f64 { let s = "PAPER_X paper::Y {"; let c = '{'; PAPER_X }
        fn table() -> f64 { paper::Y /* PAPER_X */ }
        use crate::experiment::{paper as p};
        #[cfg(test)]
        mod tests { fn t() { let _ = super::PAPER_X; } }
        #[cfg(test)]
        mod more;
        fn raw() -> &'static str { r#"PAPER_X "paper::Y""# }
    "##;
    let s = scan(src);
    let lines: Vec<usize> = s.references.iter().map(|r| r.0).collect();
    assert_eq!(lines, [5, 6, 7], "{:?}", s.references);
    assert_eq!(s.definitions, 2);
    assert_eq!(s.test_modules, ["more"]);
}

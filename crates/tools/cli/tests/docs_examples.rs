//! The user documentation against the code: its examples run, its generated parts are
//! what the code generates, and its links lead somewhere.
//!
//! **Examples.** A fenced block in `docs/*.md` is an example when its info string says so:
//!
//! - ```` ```toml scenario [NAME.toml] ```` is a complete scenario file. It is written to a
//!   scratch directory (as NAME.toml, else a name of the test's) and run there with
//!   `hetsched simulate FILE --out DIR`: it must exit 0, run the policies of its
//!   `policies` list in order, and under each complete every task the file declares (the
//!   `count`s of its `[[task]]`s, 1 where absent, plus its generators' `count`s) and
//!   reject none. When the next block is ```` ```console ```` and starts with
//!   `$ hetsched simulate NAME.toml`, the rest of it must be exactly what that prints.
//! - ```` ```toml machine NAME.toml ```` is a complete machine file. It is written to the
//!   same scratch directory as NAME.toml before any scenario runs (so that a scenario
//!   example names it by that path) and loaded with `hetsched topology --machine
//!   NAME.toml --json`: it must exit 0 with the PUs (`cores × smt` over its packages),
//!   NUMA nodes, accelerators and I/O devices the file declares.
//!
//! - ```` ```dot NAME.dot ```` is a graph file, written to the same scratch directory before
//!   any scenario runs, for a scenario example to name (`[graph] file = "NAME.dot"`). A
//!   scenario of a `[graph]` must complete every task of its graph under each policy.
//! - ```` ```console ```` starting with `$ hetsched simulate scenarios/...` (a scenario of
//!   the repository) is run from the repository's root, with `--out` to a scratch
//!   directory; what it prints (on stderr when it exits with 2, bad input) must be the
//!   rest of the block.
//!
//! In the reference pages ([`REFERENCE_PAGES`]) every ```` ```toml ```` block must be one
//! of these, so that no example there escapes this test.
//!
//! **Generated parts.** The text between `<!-- BEGIN generated: NAME -->` and
//! `<!-- END generated: NAME -->` is generated from the policy registry as `hetsched
//! policies --json` prints it: README.md's policy list and docs/policies.md's tables.
//! They must be what the code generates now, and every policy must have its own section
//! (`` ### `name` ``) in docs/policies.md. `HETSCHED_UPDATE_DOCS=1 cargo test -p
//! hetsched-cli --test docs_examples` rewrites the generated parts.
//!
//! **Links.** Every relative link (`[text](path)`, `[text](path#anchor)`, `[text](#anchor)`)
//! in README.md and the Markdown files under docs/, machines/ and scenarios/ names a file
//! or directory that exists, and an anchor into a Markdown file names one of its
//! headings (GitHub's anchors: lowercase, punctuation dropped, spaces to hyphens).
//!
//! **Architecture.** docs/architecture.md's crate table has one row per workspace crate,
//! named by its folder under `crates/` (`framework/core`, whose package is
//! `hetsched-core`), and each row's "depends on" column names exactly the hetsched
//! crates of that crate's `[dependencies]`.
//!
//! **No history.** The user pages carry none of the markers development history leaves
//! (commit hashes, issue numbers, pass numbers, "final code", "session by session"):
//! that goes to docs/dev/.

mod common;

use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The reference pages: every TOML block in them is a tested example.
const REFERENCE_PAGES: &[&str] = &["scenarios.md", "machines.md", "policies.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .unwrap()
}

/// A fenced block of a page.
struct Block {
    /// `page:line` of its opening fence.
    at: String,
    /// The words of its info string (```` ```toml scenario ```` → `["toml", "scenario"]`).
    info: Vec<String>,
    text: String,
}

/// The fenced blocks of a Markdown text (fences of three backticks, indented or not).
fn blocks(page: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                open = Some(Block {
                    at: format!("{page}:{}", i + 1),
                    info: info.split_whitespace().map(String::from).collect(),
                    text: String::new(),
                })
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => out.push(open.take().unwrap()),
            (Some(b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{page}: a fenced block is never closed");
    out
}

/// The user pages: `docs/*.md`, by file name.
fn user_pages() -> Vec<(String, String)> {
    let mut pages: Vec<(String, String)> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    pages.sort();
    pages
}

/// Runs the real binary in `dir`.
fn hetsched_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An integer key of a TOML table, `default` where absent.
fn int(table: &toml::Value, key: &str, default: i64) -> i64 {
    table.get(key).map_or(default, |v| v.as_integer().unwrap())
}

/// The entries of an array of tables (`[[key]]`), none where absent.
fn entries<'a>(file: &'a toml::Value, key: &str) -> &'a [toml::Value] {
    file.get(key)
        .map_or(&[][..], |v| v.as_array().unwrap().as_slice())
}

fn sum(file: &toml::Value, key: &str, count: impl Fn(&toml::Value) -> i64) -> u64 {
    entries(file, key).iter().map(count).sum::<i64>() as u64
}

/// Loads a machine example and checks what it declares against what hetsched made.
fn check_machine(dir: &Path, name: &str, block: &Block) {
    let file: toml::Value = toml::from_str(&block.text).unwrap();
    let out = hetsched_in(dir, &["topology", "--machine", name, "--json"]);
    assert_ok(&out, &block.at);
    let m: Json = serde_json::from_slice(&out.stdout).unwrap();
    let len = |key: &str| m[key].as_array().unwrap().len() as u64;
    let pus = sum(&file, "package", |p| int(p, "cores", 0) * int(p, "smt", 1));
    let nodes = match entries(&file, "numa_node").len() {
        0 => entries(&file, "package").len(),
        n => n,
    } as u64;
    let accelerators = sum(&file, "accelerator", |a| int(a, "count", 1));
    let devices = sum(&file, "io_device", |d| int(d, "count", 1));
    let what = &block.at;
    assert_eq!(len("pus"), pus, "{what}: PUs");
    assert_eq!(len("numa_nodes"), nodes, "{what}: NUMA nodes");
    assert_eq!(len("accelerators"), accelerators, "{what}: accelerators");
    assert_eq!(len("io_devices"), devices, "{what}: I/O devices");
    assert_eq!(len("units"), pus + accelerators, "{what}: units");
}

/// Runs a scenario example; `console`: what the page says it prints.
fn check_scenario(dir: &Path, name: &str, block: &Block, console: Option<&Block>) {
    let what = &block.at;
    let file: toml::Value = toml::from_str(&block.text).unwrap();
    let declared = sum(&file, "task", |t| int(t, "count", 1))
        + sum(&file, "generator", |g| int(g, "count", 0));
    let graph = file.get("graph").is_some();
    assert!(declared > 0 || graph, "{what}: no tasks");
    let policies: Vec<&str> = file["policies"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: an example names its policies"))
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let out_dir = dir.join(format!("{name}.out"));
    let out = hetsched_in(dir, &["simulate", name, "--out", out_dir.to_str().unwrap()]);
    assert_ok(&out, what);
    let metrics: Json =
        serde_json::from_slice(&std::fs::read(out_dir.join("metrics.json")).unwrap()).unwrap();
    // A graph's tasks, as many as the run found in it (each completed, once).
    let tasks = match graph {
        true => metrics["graph"]["tasks"].as_u64().unwrap(),
        false => declared,
    };
    assert!(tasks > 0, "{what}: no tasks");
    let runs = metrics["runs"].as_array().unwrap();
    let ran: Vec<&str> = runs.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(ran, policies, "{what}: the policies run");
    for r in runs {
        let policy = &r["policy"];
        assert_eq!(r["tasks"], tasks, "{what}: {policy}: tasks");
        assert_eq!(r["completed"], tasks, "{what}: {policy}: completed");
        assert_eq!(r["rejected"], 0, "{what}: {policy}: rejected");
    }
    let table = std::fs::read_to_string(out_dir.join("table.txt")).unwrap();
    // A graph's table ends with its bound and each policy's makespan against it.
    let bound_lines = if graph { 1 + policies.len() } else { 0 };
    assert_eq!(
        table.lines().count(),
        1 + policies.len() + bound_lines,
        "{what}: {table}"
    );
    if let Some(console) = console {
        let mut lines = console.text.lines();
        let command = lines.next().unwrap_or_default();
        assert_eq!(
            command,
            format!("$ hetsched simulate {name}"),
            "{}: the console block runs its scenario",
            console.at
        );
        let expected: Vec<&str> = lines.map(str::trim_end).collect();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
        assert_eq!(printed, expected, "{}: what it prints", console.at);
    }
}

#[test]
fn every_example_in_the_docs_runs() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let pages = user_pages();
    let mut machines = Vec::new();
    let mut graphs = Vec::new();
    let mut scenarios = Vec::new();
    let mut repository_runs = Vec::new();
    let all: Vec<(&String, Vec<Block>)> = pages.iter().map(|(p, t)| (p, blocks(p, t))).collect();
    for (page, blocks) in &all {
        let reference = REFERENCE_PAGES.contains(&page.as_str());
        for (i, b) in blocks.iter().enumerate() {
            let info: Vec<&str> = b.info.iter().map(String::as_str).collect();
            match info.as_slice() {
                ["toml", "machine", name] => {
                    assert!(
                        name.ends_with(".toml") && !name.contains('/'),
                        "{}: a machine example's name is a file name ending in .toml",
                        b.at
                    );
                    machines.push((name.to_string(), b));
                }
                ["toml", "machine", ..] => panic!("{}: expected ```toml machine NAME.toml", b.at),
                ["dot", name] => {
                    assert!(
                        name.ends_with(".dot") && !name.contains('/'),
                        "{}: a graph example's name is a file name ending in .dot",
                        b.at
                    );
                    graphs.push((name.to_string(), b));
                }
                ["toml", "scenario", rest @ ..] => {
                    let name = match rest {
                        [] => format!("{}-{}.toml", page.trim_end_matches(".md"), i),
                        [name] if name.ends_with(".toml") && !name.contains('/') => {
                            name.to_string()
                        }
                        _ => panic!("{}: expected ```toml scenario [NAME.toml]", b.at),
                    };
                    let next = blocks.get(i + 1).filter(|n| n.info == ["console"]);
                    // (One running a repository scenario is about that scenario.)
                    let console = next.filter(|n| {
                        n.text.starts_with("$ hetsched simulate ")
                            && !n.text.starts_with("$ hetsched simulate scenarios/")
                    });
                    scenarios.push((name, b, console));
                }
                ["console"] if b.text.starts_with("$ hetsched simulate scenarios/") => {
                    repository_runs.push(b)
                }
                ["toml", ..] if reference => panic!(
                    "{}: every TOML block of a reference page is an example: ```toml scenario or ```toml machine NAME.toml",
                    b.at
                ),
                _ => {}
            }
        }
    }
    for page in REFERENCE_PAGES {
        assert!(
            pages.iter().any(|(p, _)| p == page),
            "docs/{page} is missing"
        );
    }
    let mut names: Vec<&String> = machines
        .iter()
        .map(|m| &m.0)
        .chain(scenarios.iter().map(|s| &s.0))
        .collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "two examples share a file name");
    assert!(
        machines.len() >= 2,
        "machine examples found: {}",
        machines.len()
    );
    assert!(
        scenarios.len() >= 6,
        "scenario examples found: {}",
        scenarios.len()
    );
    for (name, b) in &machines {
        std::fs::write(dir.join(name), &b.text).unwrap();
    }
    for (name, b) in &machines {
        check_machine(dir, name, b);
    }
    for (name, b) in &graphs {
        std::fs::write(dir.join(name), &b.text).unwrap();
    }
    assert!(!graphs.is_empty(), "no graph example");
    for (name, b, console) in &scenarios {
        std::fs::write(dir.join(name), &b.text).unwrap();
        check_scenario(dir, name, b, *console);
    }
    assert!(!repository_runs.is_empty());
    for (i, b) in repository_runs.iter().enumerate() {
        let mut lines = b.text.lines();
        let command: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        let out_dir = dir.join(format!("repository-run-{i}"));
        let mut args = command[2..].to_vec();
        args.extend(["--out", out_dir.to_str().unwrap()]);
        let out = hetsched_in(&root(), &args);
        let expected: Vec<&str> = lines.map(str::trim_end).collect();
        // A run shows its table; a refused one (exit 2) its error.
        let shown = match out.status.code() {
            Some(0) => &out.stdout,
            Some(2) => &out.stderr,
            _ => panic!("{}: {out:?}", b.at),
        };
        let stdout = String::from_utf8_lossy(shown);
        let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
        assert_eq!(printed, expected, "{}: what it prints", b.at);
    }
}

/// `|` would end a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A policy's `about` split into what it models and what it does: at its first `:`
/// outside parentheses (the registry holds every `about` to that form).
fn split_about(about: &str) -> (&str, &str) {
    let mut depth = 0i32;
    for (i, c) in about.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ':' if depth == 0 => return (&about[..i], about[i + 1..].trim_start()),
            _ => {}
        }
    }
    (about, "")
}

/// The generated parts, by name, from `hetsched policies --json`.
fn generated() -> BTreeMap<&'static str, String> {
    let out = common::hetsched(&["policies", "--json"]);
    assert_ok(&out, "hetsched policies --json");
    let list: Json = serde_json::from_slice(&out.stdout).unwrap();
    let list = list.as_array().unwrap();
    let name = |p: &Json| p["name"].as_str().unwrap().to_string();
    let about = |p: &Json| p["about"].as_str().unwrap().to_string();

    let mut readme = String::from("| policy | what it models | what it does |\n|---|---|---|\n");
    for p in list {
        let (n, about) = (name(p), about(p));
        let (models, does) = split_about(&about);
        readme += &format!(
            "| [`{n}`](docs/policies.md#{n}) | {} | {} |\n",
            cell(models),
            cell(does)
        );
    }

    let mut summary = String::from(
        "| policy | what it models | what it does | parameters |\n|---|---|---|---|\n",
    );
    let mut params = String::from(
        "| policy | parameter | default | accepts | meaning |\n|---|---|---|---|---|\n",
    );
    for p in list {
        let n = name(p);
        let keys: Vec<String> = p["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| format!("`{}`", k["key"].as_str().unwrap()))
            .collect();
        let keys = if keys.is_empty() {
            "none".to_string()
        } else {
            keys.join(", ")
        };
        let about = about(p);
        let (models, does) = split_about(&about);
        summary += &format!(
            "| [`{n}`](#{n}) | {} | {} | {keys} |\n",
            cell(models),
            cell(does)
        );
        for k in p["params"].as_array().unwrap() {
            let s = |f: &str| cell(k[f].as_str().unwrap());
            params += &format!(
                "| `{n}` | `{}` | {} | {} | {} |\n",
                s("key"),
                s("default"),
                s("accepts"),
                s("about")
            );
        }
    }
    BTreeMap::from([
        ("readme-policies", readme),
        ("policies-summary", summary),
        ("policies-parameters", params),
    ])
}

/// The span of the generated part `name` in `text` (between its markers' lines).
fn span(text: &str, name: &str) -> Option<(usize, usize)> {
    let begin = format!("<!-- BEGIN generated: {name} -->\n");
    let end = format!("<!-- END generated: {name} -->");
    let from = text.find(&begin)? + begin.len();
    let to = from + text[from..].find(&end)?;
    Some((from, to))
}

#[test]
fn generated_parts_match_the_policy_registry() {
    let update = std::env::var_os("HETSCHED_UPDATE_DOCS").is_some();
    let generated = generated();
    let files = [
        ("README.md", vec!["readme-policies"]),
        (
            "docs/policies.md",
            vec!["policies-summary", "policies-parameters"],
        ),
    ];
    for (file, parts) in files {
        let path = root().join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for part in parts {
            let (from, to) =
                span(&text, part).unwrap_or_else(|| panic!("{file}: no generated part {part:?}"));
            let want = &generated[part];
            if update {
                text.replace_range(from..to, want);
            } else {
                assert_eq!(
                    &text[from..to],
                    want,
                    "{file}: the generated part {part:?} is out of date: run HETSCHED_UPDATE_DOCS=1 cargo test -p hetsched-cli --test docs_examples"
                );
            }
        }
        if update {
            std::fs::write(&path, text).unwrap();
        }
    }
    // Each policy is described on its own in docs/policies.md, below the tables.
    let policies = std::fs::read_to_string(root().join("docs/policies.md")).unwrap();
    for r in hetsched_policies::REGISTRY {
        let heading = format!("\n### `{}`\n", r.name);
        assert!(
            policies.contains(&heading),
            "docs/policies.md: no section {heading:?}"
        );
    }
}

/// GitHub's anchor of a heading: lowercase, letters, digits, `-` and `_` kept, spaces to
/// hyphens, everything else dropped (links keep their text only).
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](target)` → `text`
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](").map(|m| open + m) else {
            break;
        };
        let Some(close) = rest[mid..].find(')').map(|c| mid + c) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..mid]);
        rest = &rest[close + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings (outside fenced blocks), with GitHub's
/// `-1`, `-2` suffixes for repeated ones.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if fenced || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim());
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The link targets of a Markdown text, outside fenced blocks and code spans, with their
/// line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans out: every other piece between backticks.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(j, _)| j % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let target = &rest[at + 2..];
            let end = target.find(')').unwrap_or(target.len());
            let target = target[..end].split_whitespace().next().unwrap_or_default();
            out.push((i + 1, target.to_string()));
            rest = &rest[at + 2..];
        }
    }
    out
}

/// README.md and the Markdown files under docs/, machines/ and scenarios/.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let root = root();
    let mut out = vec![root.join("README.md")];
    for dir in ["docs", "machines", "scenarios"] {
        walk(&root.join(dir), &mut out);
    }
    out.sort();
    out
}

#[test]
fn relative_links_in_the_docs_lead_somewhere() {
    let root = root();
    let mut broken = Vec::new();
    let files = markdown_files();
    assert!(files.len() > 20, "{files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !dest.exists() {
                broken.push(format!("{shown}:{line}: {target}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                if dest.extension().is_some_and(|e| e == "md") {
                    let text = std::fs::read_to_string(&dest).unwrap();
                    if !anchors(&text).iter().any(|a| a == anchor) {
                        broken.push(format!("{shown}:{line}: {target}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(
        split_about("Linux EEVDF as of 6.6 (fair.c: pick_eevdf): earliest deadline"),
        (
            "Linux EEVDF as of 6.6 (fair.c: pick_eevdf)",
            "earliest deadline"
        )
    );
    assert_eq!(slug("Where issue #21 stands"), "where-issue-21-stands");
    assert_eq!(slug("`hetsched run`: programs"), "hetsched-run-programs");
    assert_eq!(slug("O² scheduling (CORETIME)"), "o²-scheduling-coretime");
    assert_eq!(slug("A [link](x.md) here"), "a-link-here");
    assert_eq!(
        anchors("# A\n## A\n```\n# not\n```\n## B"),
        ["a", "a-1", "b"]
    );
    assert_eq!(
        links("[a](x.md) `[b](y.md)` [c](z.md#h \"t\")\n```\n[d](w)\n```"),
        [(1, "x.md".to_string()), (1, "z.md#h".to_string())]
    );
}

/// The user pages describe the code as it is; how it got there (passes, sessions, the
/// commits figures were measured against, what an issue changed) is in `docs/dev/`.
/// This catches the markers such history leaves, not every was/now sentence.
#[test]
fn user_pages_hold_no_development_history() {
    fn commit_hash(w: &str) -> bool {
        // Short or full; not an MD5 (32) in an example.
        ((7..=12).contains(&w.len()) || w.len() == 40)
            && w.chars().all(|c| c.is_ascii_hexdigit())
            && w.chars().any(|c| c.is_ascii_digit())
            && w.chars().any(|c| c.is_ascii_alphabetic())
    }
    fn issue_number(w: &str) -> bool {
        w.len() > 1 && w.starts_with('#') && w[1..].chars().all(|c| c.is_ascii_digit())
    }
    fn number(w: &str) -> bool {
        w.chars().all(|c| c.is_ascii_digit())
    }
    let mut found = Vec::new();
    for (page, text) in user_pages() {
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let words: Vec<&str> = lower
                .split(|c: char| c.is_whitespace() || "()[],;:.`'\"".contains(c))
                .filter(|w| !w.is_empty())
                .collect();
            let what = if words.iter().any(|w| commit_hash(w)) {
                "a commit hash"
            } else if words.iter().any(|w| issue_number(w)) {
                "an issue number"
            } else if words.windows(2).any(|w| w[0] == "pass" && number(w[1])) {
                "a pass number"
            } else if lower.contains("final code") || lower.contains("session by session") {
                "a version's or a session's figures"
            } else {
                continue;
            };
            found.push(format!("docs/{page}:{}: {what}: {line}", n + 1));
        }
    }
    assert!(
        found.is_empty(),
        "development history belongs in docs/dev/:\n{}",
        found.join("\n")
    );
}

/// The package name of `manifest` and the hetsched crates it depends on
/// (`[dependencies]`), short names (without `hetsched-`).
fn hetsched_dependencies(manifest: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(manifest).unwrap();
    let file: toml::Value = toml::from_str(&text).unwrap();
    let name = file["package"]["name"].as_str().unwrap().to_string();
    let mut deps: Vec<String> = file
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| {
            t.keys()
                .filter_map(|k| k.strip_prefix("hetsched-").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    deps.sort();
    (name, deps)
}

#[test]
fn the_architecture_crate_table_is_the_workspace() {
    let root = root();
    // `GROUP/NAME` (crates/GROUP/NAME/Cargo.toml, the workspace's members) → its
    // hetsched dependencies.
    let mut crates: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for group in std::fs::read_dir(root.join("crates")).unwrap() {
        let group = group.unwrap().path();
        for entry in std::fs::read_dir(&group).unwrap() {
            let manifest = entry.unwrap().path().join("Cargo.toml");
            if !manifest.is_file() {
                continue;
            }
            let dir = manifest.parent().unwrap();
            let short = dir.file_name().unwrap().to_string_lossy().into_owned();
            let (package, deps) = hetsched_dependencies(&manifest);
            assert_eq!(
                package,
                format!("hetsched-{short}"),
                "{}: a crate's folder is its name",
                manifest.display()
            );
            let key = format!("{}/{short}", group.file_name().unwrap().to_string_lossy());
            crates.insert(key, deps);
        }
    }
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let table = &text[text.find("## Crates").expect("a Crates section")..];
    let mut rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in table.lines().skip_while(|l| !l.starts_with("| `")) {
        if !line.starts_with("| `") {
            break;
        }
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0]
            .trim_start_matches("| ")
            .trim_matches('`')
            .to_string();
        let deps_cell = cells.last().unwrap().trim_end_matches(" |").trim();
        // "core, sim, beisel (plots)": each name is the first word of its item.
        let mut deps: Vec<String> = deps_cell
            .split(", ")
            .filter(|d| *d != "—")
            .map(|d| {
                d.split_whitespace()
                    .next()
                    .unwrap()
                    .trim_matches('`')
                    .to_string()
            })
            .collect();
        deps.sort();
        rows.insert(name, deps);
    }
    let (have, want): (Vec<&String>, Vec<&String>) =
        (rows.keys().collect(), crates.keys().collect());
    assert_eq!(
        have, want,
        "the crate table's rows against crates/*/*/Cargo.toml"
    );
    for (name, deps) in &crates {
        assert_eq!(
            &rows[name], deps,
            "docs/architecture.md: `{name}` depends on"
        );
    }
}

//! Hand-written task graphs in Graphviz's DOT language, read by `graphviz-rust`'s parser:
//!
//! ```dot
//! digraph pipeline {
//!     load  [kind = "io",   runtime = 1.5];
//!     work  [kind = "work", runtime = 3];
//!     load -> work [bytes = 1000000];
//! }
//! ```
//!
//! The same terms as a graph from Python (`hetsched.graph`): each node is a task named
//! by its id, with its `runtime` (seconds on a capacity-1024 CPU; required unless it
//! has a `command`), `kind` (its category, whose models policies read; default
//! `task`) and `command` (a shell line `hetsched run-graph` runs, as make runs a
//! recipe; simulating reads only the runtime); each edge `u -> v` makes
//! `u` a parent of `v`, and with a `bytes` attribute above 0 it is also a file of that
//! size that `u` writes and `v` reads. The graph becomes a workflow
//! ([`super::wfformat::build`]): measured runtimes, per-category models.
//!
//! Read: a `digraph`, node and edge statements (chains `a -> b -> c` included), ports
//! ignored; graph attributes (`rankdir = LR`) are skipped. Refused, with the reason: an
//! undirected graph, subgraphs and default attribute statements (`node [...]`), HTML
//! ids, numbers that do not parse. Nesting is checked before parsing (the parser
//! recurses): at most [`MAX_NESTING`] levels of braces and brackets.

use super::wfformat::{self, Instance, WorkflowFile, WorkflowTask};
use graphviz_rust::dot_structures::{Attribute, EdgeTy, Graph, GraphAttributes, Id, Stmt, Vertex};
use hetsched_core::{Error, Result};
use rustc_hash::FxHashMap;

/// The largest DOT file read.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The deepest nesting of braces and brackets read.
pub const MAX_NESTING: usize = 32;

/// A node's attributes so far.
#[derive(Default)]
struct NodeAttrs {
    runtime: Option<f64>,
    kind: Option<String>,
    command: Option<String>,
}

/// Reads DOT `text`; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Instance> {
    let err = |m: String| Error::input(format!("{origin}: {m}"));
    check_nesting(text).map_err(err)?;
    let graph = graphviz_rust::parse(text).map_err(|e| {
        err(format!(
            "DOT: {}",
            e.split_whitespace().collect::<Vec<_>>().join(" ")
        ))
    })?;
    let Graph::DiGraph { stmts, .. } = graph else {
        return Err(err(
            "an undirected graph: a task graph is a `digraph`".into()
        ));
    };
    // Nodes in the order they first appear; edges in order.
    let mut order: Vec<String> = Vec::new();
    let mut nodes: FxHashMap<String, NodeAttrs> = FxHashMap::default();
    let mut edges: Vec<(String, String, u64)> = Vec::new();
    let see = |name: &str, nodes: &mut FxHashMap<String, NodeAttrs>, order: &mut Vec<String>| {
        if !nodes.contains_key(name) {
            nodes.insert(name.to_string(), NodeAttrs::default());
            order.push(name.to_string());
        }
    };
    for stmt in &stmts {
        match stmt {
            Stmt::Node(n) => {
                let name = id(&n.id.0).map_err(err)?;
                see(&name, &mut nodes, &mut order);
                let attrs = nodes.get_mut(&name).expect("just seen");
                for Attribute(k, v) in &n.attributes {
                    match id(k).map_err(err)?.as_str() {
                        "runtime" => {
                            let v = id(v).map_err(err)?;
                            attrs.runtime = Some(v.parse::<f64>().map_err(|_| {
                                err(format!(
                                    "node {name:?}: runtime {v:?}, expected a number of seconds"
                                ))
                            })?);
                        }
                        "kind" => attrs.kind = Some(id(v).map_err(err)?),
                        "command" => attrs.command = Some(id(v).map_err(err)?),
                        _ => {}
                    }
                }
            }
            Stmt::Edge(e) => {
                let mut bytes = 0u64;
                for Attribute(k, v) in &e.attributes {
                    if id(k).map_err(err)? == "bytes" {
                        let v = id(v).map_err(err)?;
                        bytes = v.parse::<u64>().map_err(|_| {
                            err(format!(
                                "an edge's bytes {v:?}: expected an integer in [0, 2^64 − 1]"
                            ))
                        })?;
                    }
                }
                let vertices: Vec<&Vertex> = match &e.ty {
                    EdgeTy::Pair(a, b) => vec![a, b],
                    EdgeTy::Chain(chain) => chain.iter().collect(),
                };
                let mut names = Vec::with_capacity(vertices.len());
                for v in vertices {
                    match v {
                        Vertex::N(n) => {
                            let name = id(&n.0).map_err(err)?;
                            see(&name, &mut nodes, &mut order);
                            names.push(name);
                        }
                        Vertex::S(_) => {
                            return Err(err(
                                "an edge to a subgraph: subgraphs are not read, name each node"
                                    .into(),
                            ))
                        }
                    }
                }
                for pair in names.windows(2) {
                    edges.push((pair[0].clone(), pair[1].clone(), bytes));
                }
            }
            Stmt::Subgraph(_) => {
                return Err(err("a subgraph: subgraphs are not read, name each node".into()))
            }
            Stmt::GAttribute(GraphAttributes::Node(_) | GraphAttributes::Edge(_)) => {
                return Err(err(
                    "a default attribute statement (node [...] or edge [...]): give each node its runtime and kind, each edge its bytes".into(),
                ))
            }
            Stmt::GAttribute(GraphAttributes::Graph(_)) | Stmt::Attribute(_) => {}
        }
    }
    let mut tasks: Vec<WorkflowTask> = order
        .iter()
        .map(|name| {
            let a = &nodes[name];
            WorkflowTask {
                id: name.clone(),
                name: a.kind.clone().unwrap_or_else(|| "task".into()),
                runtime: a.runtime,
                parents: Vec::new(),
                inputs: Vec::new(),
                outputs: Vec::new(),
                // A shell line, as make runs its recipes.
                command: a
                    .command
                    .as_ref()
                    .map(|c| vec!["/bin/sh".to_string(), "-c".to_string(), c.clone()]),
            }
        })
        .collect();
    let position: FxHashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut files = Vec::new();
    for (k, (u, v, bytes)) in edges.iter().enumerate() {
        let (ui, vi) = (position[u.as_str()], position[v.as_str()]);
        tasks[vi].parents.push(u.clone());
        if *bytes > 0 {
            // Numbered: node names may hold `->`.
            let file = format!("{k}:{u}->{v}");
            tasks[ui].outputs.push(file.clone());
            tasks[vi].inputs.push(file.clone());
            files.push(WorkflowFile {
                id: file,
                bytes: *bytes,
            });
        }
    }
    wfformat::build(&tasks, &files, origin, "")
}

/// An id as a string: plain, or quoted (unescaped); HTML ids are refused.
fn id(id: &Id) -> std::result::Result<String, String> {
    match id {
        Id::Plain(s) => Ok(s.clone()),
        Id::Escaped(s) => {
            let inner = s
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(s);
            Ok(inner.replace("\\\"", "\""))
        }
        Id::Html(_) => Err("an HTML id (<...>): name nodes and attributes plainly".into()),
        Id::Anonymous(s) => Ok(s.clone()),
    }
}

/// Refuses braces and brackets nested deeper than [`MAX_NESTING`], skipping what the
/// parser's grammar (`graphviz-rust`'s `dot.pest`) reads as one token or as a comment:
/// quoted strings (with `\` escapes), HTML ids (`<` up to `>`, blanks, `>`), and
/// comments (`/* */`, and `//` or `#` to the end of the line).
fn check_nesting(text: &str) -> std::result::Result<(), String> {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let b = text.as_bytes();
    let mut i = 0;
    // The end of the line from `i`.
    let line_end = |i: usize| {
        b[i..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |n| i + n)
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'<' => {
                // Up to `>`, blanks, `>`.
                i += 1;
                loop {
                    match b[i.min(b.len())..].iter().position(|&c| c == b'>') {
                        None => {
                            i = b.len();
                            break;
                        }
                        Some(n) => {
                            i += n + 1;
                            let blanks = b[i..]
                                .iter()
                                .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
                                .count();
                            if b.get(i + blanks) == Some(&b'>') {
                                i += blanks;
                                break;
                            }
                        }
                    }
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 1);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => i = line_end(i),
            b'#' => i = line_end(i),
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    if deepest > MAX_NESTING {
        return Err(format!(
            "braces and brackets nested {deepest} deep; at most {MAX_NESTING}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_core::graph::Mode;

    #[test]
    fn nodes_edges_chains_and_files() {
        let w = parse(
            r#"digraph p {
                rankdir = LR;
                // a comment
                b [runtime = 2, kind = "work"];
                a [runtime = 1.5, kind = io];
                a -> b [bytes = 1000];
                b -> c -> d;
                c [runtime = 3]; d [runtime = 0.5]
            }"#,
            "p.dot",
        )
        .unwrap();
        // Topological order: a, b, c, d (b is listed first but comes after a).
        assert_eq!(w.ids, vec!["a", "b", "c", "d"]);
        assert_eq!(w.runtimes, vec![Some(1.5), Some(2.0), Some(3.0), Some(0.5)]);
        assert_eq!(&*w.graph.tasks[0].kernel, "io");
        assert_eq!(&*w.graph.tasks[2].kernel, "task");
        assert_eq!(w.graph.tasks[1].after, vec![0]);
        assert_eq!(w.graph.tasks[3].after, vec![2]);
        assert_eq!(w.graph.data.len(), 1);
        assert_eq!(w.graph.data[0].bytes, 1000);
        assert_eq!(w.graph.tasks[0].accesses[0].mode, Mode::W);
        assert_eq!(w.graph.tasks[1].accesses[0].mode, Mode::R);
    }

    #[test]
    fn bad_dot_names_what_is_wrong() {
        let err = |text: &str| parse(text, "g.dot").err().unwrap().to_string();
        assert!(err("graph { a -- b }").contains("a `digraph`"));
        assert!(err("digraph { a [runtime = 1]; a -> b }").contains("(b): no runtime"));
        assert!(err("digraph { a [runtime = \"x\"] }").contains("runtime \"x\""));
        assert!(
            err("digraph { a [runtime = 1]; a -> b [bytes = -1]; b [runtime=1] }")
                .contains("bytes \"-1\"")
        );
        assert!(err("digraph { subgraph s { a } }").contains("subgraphs are not read"));
        assert!(err("digraph { node [runtime = 1]; a }").contains("default attribute"));
        assert!(err("digraph { a [runtime = 1]; b [runtime = 1]; a -> b -> a }").contains("cycle"));
        assert!(err("digraph { a -> ").starts_with("g.dot: DOT:"));
        let deep = format!("digraph {}{}", "{".repeat(10_000), "}".repeat(10_000));
        assert!(err(&deep).contains("nested 10000 deep"));
        // Braces inside strings and comments do not count.
        let quoted = format!(
            "digraph {{ a [runtime = 1, kind = \"{}\"] /* {} */ # {}\n }}",
            "{".repeat(100),
            "[".repeat(100),
            "{".repeat(100)
        );
        assert_eq!(parse(&quoted, "g.dot").unwrap().ids, vec!["a"]);
        // What the grammar reads as a comment or an HTML id hides no quote from the
        // count: `#` and `<"..>>` are not where strings start.
        let sneaky = |open: &str, close: &str| {
            format!(
                "digraph {{\n{open}\n{}{}\n{close}\n}}",
                "subgraph{".repeat(100_000),
                "}".repeat(100_000)
            )
        };
        for (open, close) in [
            ("# \"", "# \""),
            ("a [k = <\">>]", "b [k = <\">>]"),
            ("// \"", "// \""),
        ] {
            let e = err(&sneaky(open, close));
            assert!(e.contains("nested 100001 deep; at most 32"), "{open}: {e}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Any sequence of DOT's tokens is read or refused, never a panic (the parser
        /// reaches its `unreachable!`s only on trees its grammar cannot make).
        #[test]
        fn any_tokens_are_read_or_refused(tokens in proptest::collection::vec(
            proptest::sample::select(vec![
                "digraph", "graph", "strict", "subgraph", "node", "edge", "{", "}", "[",
                "]", ";", ",", "=", "->", "--", ":", "a", "b", "runtime", "bytes", "kind",
                "1", "2.5", "-3", "\"q\"", "<h>", "<<b>>", "n", "sw", "/*", "*/", "//",
                "\n", "#",
            ]),
            0..40,
        )) {
            let text = tokens.join(" ");
            let _ = parse(&text, "g.dot");
            let _ = parse(&format!("digraph {{ {text} }}"), "g.dot");
        }
    }
}

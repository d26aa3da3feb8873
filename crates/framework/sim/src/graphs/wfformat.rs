//! Workflows in WfFormat (<https://github.com/wfcommons/WfFormat>), the JSON format
//! WfCommons' instances and generators (`wfcommons` on PyPI: Montage, Epigenomics,
//! 1000Genome, Cycles, ...) write, versions 1.5 and 1.6 (`workflow.specification` and
//! `workflow.execution`).
//!
//! A workflow becomes a task graph and its timing:
//! - each file of `specification.files` is a data handle of its `sizeInBytes`;
//! - each task reads its `inputFiles` (`R`) and writes its `outputFiles` (`W`), and runs
//!   after its `parents` (explicit predecessors); tasks are put in a topological order
//!   (Kahn's, the file's order among ready tasks), so a cyclic workflow is refused;
//! - a task's kernel is its `name` (WfCommons' task category, e.g. `mProject`), its
//!   footprint 0;
//! - its duration on a CPU is its `runtimeInSeconds` from `execution.tasks` (what the
//!   workflow measured on one of its machines; its `coreCount` and the machines' speeds
//!   are not read: a task runs on one unit, as fast as the machine it was measured on);
//! - the models a policy sees are per kernel: the count, mean and deviation of the
//!   runtimes of its tasks, on CPUs of capacity 1024. A policy knows a category's
//!   average, not each task's runtime.
//!
//! Every task has a runtime and every file a size; ids are unique; a task names only
//! files and tasks that exist. The input is bounded: the file by the caller's cap, the
//! graph by `TaskGraph::check`. A scenario may write a workflow inline, in the same
//! terms ([`WorkflowTask`], [`WorkflowFile`], [`build`]): what Python's graphs become.

use hetsched_core::graph::{Access, Data, GraphTask, Mode, TaskGraph, MAX_ACCESSES, MAX_BYTES};
use hetsched_core::machine::{UnitType, CAPACITY_SCALE};
use hetsched_core::perf_model::{Arch, History, PerfModels};
use hetsched_core::{Error, Result};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::collections::VecDeque;
use std::sync::Arc;

/// The largest WfFormat file read (WfCommons' largest instances are a few MB a
/// thousand tasks).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// The WfFormat versions read.
pub const VERSIONS: &[&str] = &["1.5", "1.6"];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    schema_version: String,
    workflow: Workflow,
}

#[derive(Deserialize)]
struct Workflow {
    specification: Specification,
    execution: Execution,
}

#[derive(Deserialize)]
struct Specification {
    tasks: Vec<SpecTask>,
    #[serde(default)]
    files: Vec<SpecFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecTask {
    name: String,
    id: String,
    #[serde(default)]
    parents: Vec<String>,
    #[serde(default)]
    input_files: Vec<String>,
    #[serde(default)]
    output_files: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecFile {
    id: String,
    size_in_bytes: u64,
}

#[derive(Deserialize)]
struct Execution {
    tasks: Vec<ExecTask>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecTask {
    id: String,
    runtime_in_seconds: f64,
    #[serde(default)]
    command: Option<ExecCommand>,
}

/// What a task runs (`hetsched run-graph`).
#[derive(Deserialize)]
struct ExecCommand {
    program: String,
    #[serde(default)]
    arguments: Vec<String>,
}

/// A workflow as the simulator runs it.
pub struct Instance {
    pub graph: TaskGraph,
    /// Each task's measured runtime, seconds, in graph order (only a task that gives a
    /// command may have none).
    pub runtimes: Vec<Option<f64>>,
    /// Each task's command (program and arguments), in graph order, where it gives one.
    pub commands: Vec<Option<Vec<String>>>,
    /// Per kernel, the runtimes' count, mean and deviation on CPUs.
    pub models: PerfModels,
    /// Each graph task's WfFormat id.
    pub ids: Vec<String>,
}

/// The longest runtime accepted, seconds (about 31 years, the simulator's horizon).
const MAX_RUNTIME_S: f64 = 1e9;

/// A workflow's task, as WfFormat describes it and as a scenario may write it inline
/// (`[graph] tasks = [{ id, name, runtime, parents, inputs, outputs }]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowTask {
    pub id: String,
    /// Its category: the kernel its models are kept for.
    #[serde(default = "default_name")]
    pub name: String,
    /// Its measured run time on a capacity-1024 CPU, seconds.
    pub runtime: Option<f64>,
    #[serde(default)]
    pub parents: Vec<String>,
    /// The files it reads and writes, by id.
    #[serde(default)]
    pub inputs: Vec<String>,
    #[serde(default)]
    pub outputs: Vec<String>,
    /// The program and its arguments, for running the workflow (`hetsched run-graph`).
    #[serde(default)]
    pub command: Option<Vec<String>>,
}

fn default_name() -> String {
    "task".into()
}

/// A workflow's file: what moves between memory nodes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowFile {
    pub id: String,
    pub bytes: u64,
}

/// Reads WfFormat `text`; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Instance> {
    let err = |m: String| Error::input(format!("{origin}: {m}"));
    let file: File = serde_json::from_str(text).map_err(|e| err(format!("WfFormat: {e}")))?;
    if !VERSIONS.contains(&file.schema_version.as_str()) {
        return Err(err(format!(
            "schemaVersion {:?}: expected one of {} (what wfcommons 1.x writes)",
            file.schema_version,
            VERSIONS.join(", ")
        )));
    }
    let spec = file.workflow.specification;
    let mut tasks: Vec<WorkflowTask> = spec
        .tasks
        .into_iter()
        .map(|t| WorkflowTask {
            id: t.id,
            name: t.name,
            runtime: None,
            parents: t.parents,
            inputs: t.input_files,
            outputs: t.output_files,
            command: None,
        })
        .collect();
    let index: FxHashMap<String, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect();
    for (i, e) in file.workflow.execution.tasks.iter().enumerate() {
        let Some(&t) = index.get(&e.id) else {
            return Err(err(format!(
                "workflow.execution.tasks[{i}]: task {:?} is not in the specification",
                e.id
            )));
        };
        tasks[t].runtime = Some(e.runtime_in_seconds);
        tasks[t].command = e.command.as_ref().map(|c| {
            std::iter::once(c.program.clone())
                .chain(c.arguments.iter().cloned())
                .collect()
        });
    }
    let files: Vec<WorkflowFile> = spec
        .files
        .into_iter()
        .map(|f| WorkflowFile {
            id: f.id,
            bytes: f.size_in_bytes,
        })
        .collect();
    build(&tasks, &files, origin, "workflow.specification.")
}

/// A workflow's graph, runtimes and models (see the module documentation); `origin`
/// and `at` (the tasks' and files' key prefix) name what is wrong in errors.
pub fn build(
    tasks: &[WorkflowTask],
    files: &[WorkflowFile],
    origin: &str,
    at: &str,
) -> Result<Instance> {
    let err = |m: String| match origin {
        "" => Error::input(m),
        _ => Error::input(format!("{origin}: {m}")),
    };
    let mut file_index: FxHashMap<&str, u32> = FxHashMap::default();
    for (i, f) in files.iter().enumerate() {
        if file_index.insert(&f.id, i as u32).is_some() {
            return Err(err(format!("{at}files[{i}]: id {:?} used twice", f.id)));
        }
        if f.bytes > MAX_BYTES {
            return Err(err(format!(
                "{at}files[{i}] ({}): {} bytes; at most 2^50",
                f.id, f.bytes
            )));
        }
    }
    let mut task_index: FxHashMap<&str, usize> = FxHashMap::default();
    for (i, t) in tasks.iter().enumerate() {
        if task_index.insert(&t.id, i).is_some() {
            return Err(err(format!("{at}tasks[{i}]: id {:?} used twice", t.id)));
        }
    }
    for (i, t) in tasks.iter().enumerate() {
        let accesses = t.inputs.len() + t.outputs.len();
        if accesses > MAX_ACCESSES {
            return Err(err(format!(
                "{at}tasks[{i}] ({}): {accesses} input and output files; at most {MAX_ACCESSES}",
                t.id
            )));
        }
        if t.command
            .as_ref()
            .is_some_and(|c| c.is_empty() || c[0].is_empty())
        {
            return Err(err(format!(
                "{at}tasks[{i}] ({}): an empty command (expected a program and its arguments)",
                t.id
            )));
        }
        match t.runtime {
            None if t.command.is_none() => {
                return Err(err(format!(
                    "{at}tasks[{i}] ({}): no runtime and no command (WfFormat: runtimeInSeconds in workflow.execution.tasks)",
                    t.id
                )))
            }
            None => {}
            Some(r) if !(0.0..=MAX_RUNTIME_S).contains(&r) => {
                return Err(err(format!(
                    "{at}tasks[{i}] ({}): runtime {r}, expected a number of seconds in [0, {MAX_RUNTIME_S:e}]",
                    t.id
                )))
            }
            Some(_) => {}
        }
    }
    // Parents as indices, then Kahn's order (the given order among the ready).
    let mut parents: Vec<Vec<usize>> = Vec::with_capacity(tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        let mut mine = Vec::with_capacity(t.parents.len());
        for p in &t.parents {
            match task_index.get(p.as_str()) {
                Some(&j) => mine.push(j),
                None => {
                    return Err(err(format!(
                        "{at}tasks[{i}] ({}): parent {p:?} is not a task",
                        t.id
                    )))
                }
            }
        }
        mine.sort_unstable();
        mine.dedup();
        parents.push(mine);
    }
    let n = tasks.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = vec![0; n];
    for (i, ps) in parents.iter().enumerate() {
        waiting[i] = ps.len();
        for &p in ps {
            children[p].push(i);
        }
    }
    let mut ready: VecDeque<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(t) = ready.pop_front() {
        order.push(t);
        for &c in &children[t] {
            waiting[c] -= 1;
            if waiting[c] == 0 {
                ready.push_back(c);
            }
        }
    }
    if order.len() < n {
        let stuck = (0..n).find(|&i| waiting[i] > 0).expect("a task in a cycle");
        return Err(err(format!(
            "task {:?} is on a cycle of parents: a workflow is acyclic",
            tasks[stuck].id
        )));
    }
    let mut position = vec![0u32; n];
    for (k, &t) in order.iter().enumerate() {
        position[t] = k as u32;
    }
    let mut graph = TaskGraph {
        data: files.iter().map(|f| Data { bytes: f.bytes }).collect(),
        tasks: Vec::with_capacity(n),
    };
    let mut runtimes = Vec::with_capacity(n);
    let mut commands = Vec::with_capacity(n);
    let mut ids = Vec::with_capacity(n);
    let mut kernels: FxHashMap<&str, Arc<str>> = FxHashMap::default();
    let mut by_kernel: FxHashMap<Arc<str>, History> = FxHashMap::default();
    for &t in &order {
        let s = &tasks[t];
        let mut accesses = Vec::with_capacity(s.inputs.len() + s.outputs.len());
        for (names, mode) in [(&s.inputs, Mode::R), (&s.outputs, Mode::W)] {
            for f in names {
                let Some(&handle) = file_index.get(f.as_str()) else {
                    return Err(err(format!(
                        "task {:?} names file {f:?}, which {at}files does not list",
                        s.id
                    )));
                };
                accesses.push(Access { handle, mode });
            }
        }
        let kernel = kernels
            .entry(&s.name)
            .or_insert_with(|| Arc::from(s.name.as_str()))
            .clone();
        if let Some(r) = s.runtime {
            by_kernel.entry(kernel.clone()).or_default().add(r);
        }
        graph.tasks.push(GraphTask {
            kernel,
            footprint: 0,
            accesses,
            after: parents[t].iter().map(|&p| position[p]).collect(),
            flops: 0.0,
            priority: 0,
        });
        runtimes.push(s.runtime);
        commands.push(s.command.clone());
        ids.push(s.id.clone());
    }
    graph
        .check()
        .map_err(|e| e.map_message(|m| err(m).to_string()))?;
    let mut models = PerfModels::default();
    for (kernel, history) in by_kernel {
        let arch = Arch {
            unit_type: UnitType::Cpu,
            capacity: CAPACITY_SCALE,
            footprint: 0,
        };
        models.pool(&kernel, arch, &history);
    }
    Ok(Instance {
        graph,
        runtimes,
        commands,
        models,
        ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workflow(tasks: &str, files: &str, exec: &str) -> String {
        format!(
            r#"{{"name": "w", "schemaVersion": "1.5", "workflow": {{"specification": {{"tasks": [{tasks}], "files": [{files}]}}, "execution": {{"makespanInSeconds": 1, "tasks": [{exec}]}}}}}}"#
        )
    }

    const FILES: &str = r#"{"id": "a", "sizeInBytes": 10}, {"id": "b", "sizeInBytes": 20}"#;

    #[test]
    fn commands_are_read_and_a_task_without_runtime_needs_one() {
        let text = workflow(
            r#"{"name": "k", "id": "a", "outputFiles": ["a"]}, {"name": "k", "id": "b", "parents": ["a"]}"#,
            FILES,
            r#"{"id": "a", "runtimeInSeconds": 1, "command": {"program": "gzip", "arguments": ["-k", "in"]}},
               {"id": "b", "runtimeInSeconds": 2}"#,
        );
        let w = parse(&text, "w.json").unwrap();
        assert_eq!(
            w.commands,
            vec![Some(vec!["gzip".into(), "-k".into(), "in".into()]), None]
        );
        let task = |id: &str, command: Option<Vec<String>>| WorkflowTask {
            id: id.into(),
            name: "k".into(),
            runtime: None,
            parents: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            command,
        };
        let w = build(&[task("x", Some(vec!["true".into()]))], &[], "", "").unwrap();
        assert_eq!(w.runtimes, vec![None]);
        let e = build(&[task("y", None)], &[], "g", "")
            .err()
            .unwrap()
            .to_string();
        assert_eq!(e, "g: tasks[0] (y): no runtime and no command (WfFormat: runtimeInSeconds in workflow.execution.tasks)");
        let e = build(&[task("z", Some(vec![String::new()]))], &[], "g", "")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("an empty command"), "{e}");
    }

    #[test]
    fn a_workflow_in_any_order_becomes_a_graph_in_topological_order() {
        // "late" is listed first but needs "early"'s output.
        let text = workflow(
            r#"{"name": "k2", "id": "late", "parents": ["early"], "inputFiles": ["b"]},
               {"name": "k1", "id": "early", "parents": [], "inputFiles": ["a"], "outputFiles": ["b"]},
               {"name": "k1", "id": "other", "inputFiles": ["a"]}"#,
            FILES,
            r#"{"id": "late", "runtimeInSeconds": 3}, {"id": "early", "runtimeInSeconds": 1},
               {"id": "other", "runtimeInSeconds": 2}"#,
        );
        let w = parse(&text, "w.json").unwrap();
        assert_eq!(w.ids, vec!["early", "other", "late"]);
        assert_eq!(w.runtimes, vec![Some(1.0), Some(2.0), Some(3.0)]);
        let g = &w.graph;
        assert_eq!(g.tasks[2].after, vec![0]);
        assert_eq!(g.tasks[0].accesses.len(), 2);
        assert_eq!(g.tasks[2].accesses[0].mode, Mode::R);
        let d = g.dependencies().unwrap();
        assert_eq!(d.of(2), &[0]);
        // k1's model: two runs, mean 1.5 s, sample deviation √0.5 s.
        let arch = Arch {
            unit_type: UnitType::Cpu,
            capacity: CAPACITY_SCALE,
            footprint: 0,
        };
        let h = w.models.get("k1", &arch).unwrap();
        assert_eq!((h.samples(), h.mean()), (2, 1.5));
        assert!((h.dev() - 0.5f64.sqrt()).abs() < 1e-12, "{}", h.dev());
    }

    #[test]
    fn bad_workflows_name_what_is_wrong() {
        let err = |tasks: &str, exec: &str| {
            parse(&workflow(tasks, FILES, exec), "w.json")
                .err()
                .unwrap()
                .to_string()
        };
        let one = r#"{"id": "x", "runtimeInSeconds": 1}"#;
        assert!(err(r#"{"name": "k", "id": "x", "parents": ["x"]}"#, one).contains("cycle"));
        assert!(
            err(r#"{"name": "k", "id": "x", "inputFiles": ["zz"]}"#, one)
                .contains("names file \"zz\"")
        );
        assert!(err(r#"{"name": "k", "id": "x", "parents": ["y"]}"#, one)
            .contains("parent \"y\" is not a task"));
        assert!(err(r#"{"name": "k", "id": "x"}"#, "").contains("(x): no runtime"));
        assert!(err(
            r#"{"name": "k", "id": "x"}"#,
            r#"{"id": "x", "runtimeInSeconds": -1}"#
        )
        .contains("runtime -1, expected"));
        assert!(
            err(r#"{"name": "k", "id": "x"}, {"name": "k", "id": "x"}"#, one)
                .contains("used twice")
        );
        let old = workflow(r#"{"name": "k", "id": "x"}"#, FILES, one).replace("1.5", "1.4");
        assert!(parse(&old, "w.json")
            .err()
            .unwrap()
            .to_string()
            .contains("schemaVersion \"1.4\""));
        assert!(parse("{", "w.json")
            .err()
            .unwrap()
            .to_string()
            .starts_with("w.json: WfFormat"));
    }
}

//! `hetsched run-graph FILE`: a task graph of programs run under the daemon, as
//! `make -j` runs a makefile's recipes, each placed where the daemon's policy says.
//!
//! The graph is declared to the daemon first (`Client::declare_graph`), so that the
//! policy sees it whole (HEFT plans it at its first task) and knows which task writes
//! the data each reads. Then each task whose predecessors have all succeeded gets an
//! agent: a `hetsched run --graph-task I -- CMD` child process, the same agent as for a
//! single program (started stopped, granted a unit, checkpointed, its exit freeing the
//! unit), which the daemon grants only once the task's predecessors were freed.
//!
//! Why a process per task rather than agents in threads: an agent owns its program's
//! process group and forwards the signals it gets to it, and one that dies takes its
//! program with it; as processes, a Ctrl-C reaches every agent (they share the
//! terminal's process group) and through them every program, and nothing of one task
//! can stall another.
//!
//! At most `jobs` agents run at once (they wait for their grant stopped, so more would
//! only hold processes). A task that fails (its program exits non-zero, or its agent
//! cannot run it) stops the run: no task starts after it, those running finish, as
//! `make` does; with `keep_going` only the tasks that depend on it are skipped.
//! The declaring connection stays open for the run: closing it ends the graph in the
//! daemon.

use crate::client::Client;
use hetsched_core::graph::TaskGraph;
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use rustix::process::{waitid, WaitId, WaitIdOptions};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// What `hetsched run-graph` was asked to do.
pub struct RunGraphOptions {
    pub socket: PathBuf,
    /// The `hetsched` executable, whose `run` is each task's agent.
    pub agent: PathBuf,
    pub graph: TaskGraph,
    /// Each task's name (its id in the file), in graph order.
    pub names: Vec<String>,
    /// Each task's program and arguments, in graph order.
    pub commands: Vec<Vec<String>>,
    /// The unit types every task can use.
    pub types: Vec<UnitType>,
    /// Agents at once, at least 1.
    pub jobs: usize,
    pub keep_going: bool,
    /// The agents' checkpoint period, ms.
    pub check_ms: u64,
}

/// What the run is doing, as it goes.
#[derive(Debug)]
pub enum Progress<'a> {
    Started {
        task: usize,
        name: &'a str,
    },
    Ended {
        task: usize,
        name: &'a str,
        /// Its shell status (0: succeeded).
        status: i32,
        seconds: f64,
    },
}

/// How a task went.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TaskOutcome {
    pub name: String,
    pub kernel: String,
    /// Seconds from the start of the run; `None` for a task that never started.
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    /// Its shell status: 0 succeeded, 128 + N killed by signal N; `None` never ran.
    pub status: Option<i32>,
}

/// How the run went.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GraphOutcome {
    pub tasks: Vec<TaskOutcome>,
    pub makespan_s: f64,
    pub failed: usize,
    /// Tasks never started (after a failure).
    pub skipped: usize,
}

/// Runs the graph (see the module documentation) and says how it went; a task that
/// fails is an outcome, not an error. An error: no daemon, or it refused the graph.
pub fn run(options: RunGraphOptions, mut progress: impl FnMut(Progress)) -> Result<GraphOutcome> {
    let n = options.graph.tasks.len();
    if options.names.len() != n || options.commands.len() != n {
        return Err(Error::input(format!(
            "run-graph: {n} tasks but {} names and {} commands",
            options.names.len(),
            options.commands.len()
        )));
    }
    let deps = options.graph.dependencies()?;
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = vec![0; n];
    for (t, w) in waiting.iter_mut().enumerate() {
        *w = deps.of(t).len();
        for &p in deps.of(t) {
            successors[p as usize].push(t);
        }
    }
    let mut owner = Client::connect(&options.socket, "hetsched run-graph")?;
    owner.declare_graph(&options.graph)?;
    let started = Instant::now();
    let types: Vec<&str> = options.types.iter().map(|t| t.name()).collect();
    let mut ready: VecDeque<usize> = (0..n).filter(|&t| waiting[t] == 0).collect();
    let mut running: Vec<(Child, usize)> = Vec::new();
    let mut tasks: Vec<TaskOutcome> = (0..n)
        .map(|t| TaskOutcome {
            name: options.names[t].clone(),
            kernel: options.graph.tasks[t].kernel.to_string(),
            start_s: None,
            end_s: None,
            status: None,
        })
        .collect();
    let mut failed = 0;
    let jobs = options.jobs.max(1);
    loop {
        let stop = failed > 0 && !options.keep_going;
        while running.len() < jobs && !stop {
            let Some(t) = ready.pop_front() else { break };
            let mut agent = Command::new(&options.agent);
            agent
                .arg("run")
                .arg("--daemon")
                .arg(&options.socket)
                .args(["--kind", &tasks[t].kernel])
                .args(["--graph-task", &t.to_string()])
                .args(["--type", &types.join(",")])
                .args(["--check-ms", &options.check_ms.to_string()])
                .arg("--")
                .args(&options.commands[t])
                .stdin(Stdio::null());
            tasks[t].start_s = Some(started.elapsed().as_secs_f64());
            progress(Progress::Started {
                task: t,
                name: &options.names[t],
            });
            match agent.spawn() {
                Ok(child) => running.push((child, t)),
                Err(e) => {
                    return Err(Error::runtime(format!(
                        "run-graph: cannot start the agent {}: {e}",
                        options.agent.display()
                    )))
                }
            }
        }
        if running.is_empty() {
            break;
        }
        // Until a child has exited (left to reap below).
        while let Err(rustix::io::Errno::INTR) =
            waitid(WaitId::All, WaitIdOptions::EXITED | WaitIdOptions::NOWAIT)
        {}
        let mut i = 0;
        while i < running.len() {
            let Some(exit) = running[i]
                .0
                .try_wait()
                .map_err(|e| Error::runtime(format!("run-graph: waiting for an agent: {e}")))?
            else {
                i += 1;
                continue;
            };
            let (_, t) = running.swap_remove(i);
            let end = started.elapsed().as_secs_f64();
            let status: i32 = crate::process::Exit::from(exit).shell_status().into();
            let task = &mut tasks[t];
            task.end_s = Some(end);
            task.status = Some(status);
            progress(Progress::Ended {
                task: t,
                name: &options.names[t],
                status,
                seconds: end - task.start_s.unwrap_or(0.0),
            });
            if status != 0 {
                failed += 1;
                continue;
            }
            for &s in &successors[t] {
                waiting[s] -= 1;
                if waiting[s] == 0 {
                    ready.push_back(s);
                }
            }
        }
    }
    drop(owner);
    let skipped = tasks.iter().filter(|t| t.status.is_none()).count();
    let makespan_s = tasks.iter().filter_map(|t| t.end_s).fold(0.0, f64::max);
    Ok(GraphOutcome {
        tasks,
        makespan_s,
        failed,
        skipped,
    })
}

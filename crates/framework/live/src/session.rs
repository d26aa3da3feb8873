//! A live session: a daemon on a thread of this process, on a real socket, and a set of
//! client processes started together against it; what each process took from the common
//! start and the daemon's run record.
//!
//! Why a module: the Beisel live experiment and `hetsched validate` run exactly this,
//! and a measurement of a policy is only comparable with the simulator's when both come
//! from one harness. Each process finds the daemon through `HETSCHED_SOCKET`, as any
//! client does, so a job is any command line: a `hetsched app`, a `hetsched run -- CMD`.

use crate::arbiter::Arbiter;
use crate::server;
use hetsched_core::machine::Machine;
use hetsched_core::record::Record;
use hetsched_core::{Error, Result};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One client process of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// What the reports call it.
    pub name: String,
    /// The program and its arguments.
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// What one job did.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub name: String,
    /// Seconds from the session's start (before the first process was spawned) to the
    /// moment this process was seen to have exited.
    pub turnaround_s: f64,
    /// Its standard output.
    pub output: String,
}

/// A finished session: the jobs in completion order and the daemon's record.
pub struct Outcomes {
    pub jobs: Vec<Outcome>,
    pub record: Record,
}

/// How often the session looks for exited processes: the resolution of a turnaround.
const POLL: Duration = Duration::from_millis(2);

/// Runs `jobs` at once under a daemon arbitrating `machine` (`index`: its accelerators'
/// device indices, as [`crate::devices::attach`] gives them) with `policy`. A job that
/// fails (a non-zero exit) ends the session with an error naming it and its stderr; the
/// other processes are killed.
pub fn run(
    machine: Machine,
    index: Vec<Option<u32>>,
    policy: &str,
    jobs: &[Job],
) -> Result<Outcomes> {
    hetsched_policies::check(policy)?;
    let dir = tempfile::tempdir().map_err(Error::runtime)?;
    let socket = dir.path().join("daemon.sock");
    let (tx, rx) = std::sync::mpsc::channel();
    let (spec, path) = (policy.to_string(), socket.clone());
    let daemon = std::thread::spawn(move || -> Result<Option<Record>> {
        let mut arbiter = Arbiter::new(machine, index, hetsched_policies::build(&spec, 0)?);
        arbiter.start_recording();
        let mut d = server::Daemon::bind(&path, arbiter)?;
        tx.send(d.stop_handle()).map_err(Error::runtime)?;
        d.run()?;
        Ok(d.arbiter().record())
    });
    let Ok(stop) = rx.recv() else {
        // The thread ended before binding: its error says why.
        return Err(match daemon.join() {
            Ok(Err(e)) => e,
            _ => Error::runtime("the daemon did not start"),
        });
    };
    let start = Instant::now();
    let mut running: Vec<(String, Child)> = Vec::with_capacity(jobs.len());
    let collected = (|| {
        for job in jobs {
            let child = Command::new(&job.program)
                .args(&job.args)
                .env("HETSCHED_SOCKET", &socket)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| Error::runtime(format!("{}: {e}", job.program.display())))?;
            running.push((job.name.clone(), child));
        }
        // Collected in completion order (polling), so each turnaround is its own.
        let mut done = Vec::with_capacity(jobs.len());
        while !running.is_empty() {
            let mut i = 0;
            while i < running.len() {
                if running[i].1.try_wait().map_err(Error::runtime)?.is_some() {
                    let turnaround_s = start.elapsed().as_secs_f64();
                    let (name, child) = running.swap_remove(i);
                    let out = child.wait_with_output().map_err(Error::runtime)?;
                    if !out.status.success() {
                        return Err(Error::runtime(format!(
                            "{name} failed ({}): {}",
                            out.status,
                            String::from_utf8_lossy(&out.stderr).trim()
                        )));
                    }
                    done.push(Outcome {
                        name,
                        turnaround_s,
                        output: String::from_utf8_lossy(&out.stdout).into_owned(),
                    });
                } else {
                    i += 1;
                }
            }
            std::thread::sleep(POLL);
        }
        Ok(done)
    })();
    for (_, child) in &mut running {
        let _ = child.kill();
        let _ = child.wait();
    }
    stop.stop();
    let record = daemon
        .join()
        .map_err(|_| Error::runtime("daemon thread panicked"))??
        .ok_or_else(|| Error::runtime("the daemon kept no run record"))?;
    Ok(Outcomes {
        jobs: collected?,
        record,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_core::machine::UnitGranularity;

    fn machine() -> (Machine, Vec<Option<u32>>) {
        let m = hetsched_topology::load("live", UnitGranularity::Pu).unwrap();
        let index = crate::devices::described(&m);
        (m, index)
    }

    #[test]
    fn turnarounds_are_each_jobs_own_and_in_completion_order() {
        let (m, index) = machine();
        let job = |name: &str, secs: &str| Job {
            name: name.into(),
            program: "sleep".into(),
            args: vec![secs.into()],
        };
        let out = run(
            m,
            index,
            "fcfs",
            &[job("long", "0.4"), job("short", "0.05")],
        )
        .unwrap();
        let names: Vec<&str> = out.jobs.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["short", "long"]);
        assert!(out.jobs[0].turnaround_s >= 0.05 && out.jobs[0].turnaround_s < 0.35);
        assert!(out.jobs[1].turnaround_s >= 0.4);
    }

    #[test]
    fn a_failing_job_is_named_with_its_stderr() {
        let (m, index) = machine();
        let job = Job {
            name: "broken".into(),
            program: "sh".into(),
            args: vec!["-c".into(), "echo no such input >&2; exit 3".into()],
        };
        let e = run(m, index, "fcfs", &[job]).err().unwrap().to_string();
        assert!(e.contains("broken") && e.contains("no such input"), "{e}");
    }
}

//! Run a program under valgrind lackey and stream its memory trace through a pipe.
//!
//! Lackey writes the trace to its log; `--log-fd=3` sends the log to descriptor 3 of
//! the valgrind process, which is the write end of a pipe we read as it runs. The
//! program's own stdout/stderr are untouched and no trace file is ever written.

use super::lackey;
use crate::trace::TraceSink;
use hetsched_core::{Error, Result};
use std::os::fd::AsRawFd;
use std::process::{Command, ExitStatus};

/// The descriptor lackey writes its trace to in the child.
const TRACE_FD: i32 = 3;

/// What a traced run produced besides the events.
#[derive(Debug)]
pub struct TracedRun {
    /// The program's exit status (as valgrind reports it).
    pub status: ExitStatus,
    /// Trace bytes and lines read from the pipe.
    pub parsed: lackey::ParseStats,
}

/// Run `program args…` under `valgrind --tool=lackey --trace-mem=yes`, streaming every
/// event into `sink`. `quiet` discards the program's stdout.
pub fn trace_lackey(
    program: &str,
    args: &[String],
    quiet: bool,
    sink: &mut dyn TraceSink,
) -> Result<TracedRun> {
    let (reader, writer) =
        std::io::pipe().map_err(|e| Error::runtime(format!("cannot create a pipe: {e}")))?;
    let write_fd = writer.as_raw_fd();
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=lackey",
        "--trace-mem=yes",
        &format!("--log-fd={TRACE_FD}"),
        program,
    ])
    .args(args);
    super::place_fds(&mut cmd, quiet, [(write_fd, TRACE_FD)]);
    let mut child = cmd.spawn().map_err(|e| {
        Error::runtime(format!(
            "cannot start valgrind (is it installed? apt-get install valgrind): {e}"
        ))
    })?;
    drop(cmd); // drop our copy of the write end so EOF arrives when valgrind exits
    drop(writer);
    let parsed = lackey::parse(reader, &format!("lackey trace of {program}"), sink);
    let status = child
        .wait()
        .map_err(|e| Error::runtime(format!("waiting for valgrind: {e}")))?;
    let parsed = parsed?;
    if parsed.lines == 0 {
        return Err(Error::runtime(format!(
            "valgrind produced no trace for {program} (exit status {status})"
        )));
    }
    Ok(TracedRun { status, parsed })
}

//! Trace sources: lackey text (live or saved), the compact binary format, and QEMU
//! user mode with hetsched's plugin (live, fast).

pub mod binary;
pub mod lackey;
pub mod qemu;
pub mod valgrind;
pub mod wrapper;

use crate::trace::{AccessKind, Tee, TraceSink};
use hetsched_core::{Error, PathContext, Result};
use hetsched_util::files::{self, OutFile};
use std::io::Read;
use std::path::Path;

/// Replay a saved trace file, detecting its format (binary magic or lackey text).
/// Returns the bytes read. A file without a single instruction or access is an input
/// error: it is no trace of a program run, and its "signature" would be empty.
///
/// The trace is streamed, so it may be of any size; it must be a regular file (a FIFO
/// or a device is refused at once: a saved trace is a file, and `/dev/zero` would
/// never end).
pub fn replay_file(path: &Path, sink: &mut dyn TraceSink) -> Result<u64> {
    let name = path.display().to_string();
    let (mut f, _) = files::open(path, "a trace")?;
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(Error::runtime(format!("{name}: read error: {e}"))),
        }
    }
    let input = (&head[..got]).chain(f);
    let mut seen = Seen { sink, any: false };
    let bytes = if &head[..got] == binary::MAGIC {
        binary::parse(input, &name, &mut seen)?
    } else {
        lackey::parse(input, &name, &mut seen).map(|s| s.bytes)?
    };
    if !seen.any {
        return Err(Error::input(format!(
            "{name}: no instructions or memory accesses: an empty trace"
        )));
    }
    Ok(bytes)
}

/// Passes events on, noting whether there were any.
struct Seen<'a> {
    sink: &'a mut dyn TraceSink,
    any: bool,
}

impl TraceSink for Seen<'_> {
    fn instructions(&mut self, n: u64) {
        self.any = true;
        self.sink.instructions(n);
    }
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.any = true;
        self.sink.access(kind, addr, size);
    }
}

/// Prepare a tracer's command: no stdin, stdout discarded if `quiet`, and each
/// descriptor `fds[i].0` of ours placed at number `fds[i].1` in the child (where the
/// tracer expects its trace pipe or plugin).
pub(crate) fn place_fds<const N: usize>(
    cmd: &mut std::process::Command,
    quiet: bool,
    fds: [(i32, i32); N],
) {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    cmd.stdin(Stdio::null());
    if quiet {
        cmd.stdout(Stdio::null());
    }
    // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec, and no
    // allocation (`fds` is a copied array). Every descriptor is first copied above all
    // targets so that no dup2 overwrites a source still to be placed; dup2 clears
    // close-on-exec on the target. (std offers no way to place a descriptor at a given
    // number in the child; libc is the exception.)
    unsafe {
        cmd.pre_exec(move || {
            let above = fds.iter().map(|f| f.1).max().unwrap_or(0) + 1;
            let mut copies = [0; N];
            for (copy, &(from, _)) in copies.iter_mut().zip(&fds) {
                *copy = libc::fcntl(from, libc::F_DUPFD_CLOEXEC, above);
                if *copy < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (&copy, &(_, to)) in copies.iter().zip(&fds) {
                if libc::dup2(copy, to) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// A source that traces a program as it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Live {
    /// QEMU user mode with hetsched's plugin ([`qemu`]): fast, samples at capture.
    Qemu,
    /// valgrind lackey's text through a pipe ([`valgrind`]): slow, always there.
    Lackey,
}

impl Live {
    /// The fast source where it can run here, else lackey and the reason.
    pub fn pick() -> (Live, Option<String>) {
        match qemu::unavailable() {
            None => (Live::Qemu, None),
            Some(why) => (Live::Lackey, Some(why)),
        }
    }

    /// What it is, for messages.
    pub fn describe(self) -> String {
        match self {
            Live::Qemu => format!("{} with the hetsched plugin", qemu::emulator()),
            Live::Lackey => "valgrind lackey".into(),
        }
    }
}

/// What a live trace produced besides the profile.
#[derive(Debug)]
pub struct LiveRun {
    /// The program's exit status (as the tracer reports it).
    pub status: std::process::ExitStatus,
    /// Trace bytes read.
    pub bytes: u64,
    /// What came through the pipe, for a note.
    pub transport: String,
}

impl LiveRun {
    /// What a lackey trace through the pipe produced.
    fn lackey(run: valgrind::TracedRun) -> LiveRun {
        LiveRun {
            status: run.status,
            bytes: run.parsed.bytes,
            transport: format!(
                "{} lackey lines ({:.1} MB of text) through the pipe",
                run.parsed.lines,
                run.parsed.bytes as f64 / 1e6
            ),
        }
    }
}

/// Run `program args…` under `source`, analysing into `analyzer`; `progress` gets the
/// data accesses seen so far, now and then. `quiet` discards the program's stdout.
pub fn trace_live(
    source: Live,
    program: &str,
    args: &[String],
    quiet: bool,
    analyzer: &mut crate::Analyzer,
    progress: &mut dyn FnMut(u64),
) -> Result<LiveRun> {
    match source {
        Live::Qemu => {
            let run = qemu::trace_qemu(program, args, quiet, analyzer, progress)?;
            let mut transport = format!(
                "{:.1} MB of binary words through the pipe",
                run.bytes as f64 / 1e6
            );
            if run.forks > 0 {
                transport += &format!("; {} forked child processes were not traced", run.forks);
            }
            Ok(LiveRun {
                status: run.status,
                bytes: run.bytes,
                transport,
            })
        }
        Live::Lackey => {
            let mut counting = Counting {
                sink: analyzer,
                accesses: 0,
                progress,
            };
            let run = valgrind::trace_lackey(program, args, quiet, &mut counting)?;
            Ok(LiveRun::lackey(run))
        }
    }
}

/// `signature profile`: [`trace_live`], or, with `save`, through lackey with every
/// record also written to `save` in the binary format (the QEMU source sends block
/// numbers or samples, not records).
pub fn profile(
    source: Live,
    program: &str,
    args: &[String],
    quiet: bool,
    save: Option<OutFile>,
    analyzer: &mut crate::Analyzer,
    progress: &mut dyn FnMut(u64),
) -> Result<LiveRun> {
    let Some(file) = save else {
        return trace_live(source, program, args, quiet, analyzer, progress);
    };
    let path = file.path().to_path_buf();
    let mut w = binary::Writer::new(file);
    let run = valgrind::trace_lackey(program, args, quiet, &mut Tee(analyzer, &mut w))?;
    w.finish().at(&path)?.finish()?;
    Ok(LiveRun::lackey(run))
}

/// `signature convert`: the lackey trace at `input` (streamed, so of any size; a FIFO
/// or a device is refused at once) written to `output` in the binary format. Returns
/// what was read and the bytes written.
pub fn convert(input: &Path, output: &Path) -> Result<(lackey::ParseStats, u64)> {
    let (f, _) = files::open(input, "a lackey trace")?;
    let mut w = binary::Writer::new(OutFile::create(output)?);
    let stats = lackey::parse(
        f,
        &input.display().to_string(),
        &mut w as &mut dyn TraceSink,
    )?;
    w.finish().at(output)?.finish()?;
    let written = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    Ok((stats, written))
}

/// Passes events on, reporting progress every 2^20 accesses.
struct Counting<'a> {
    sink: &'a mut dyn TraceSink,
    accesses: u64,
    progress: &'a mut dyn FnMut(u64),
}

impl TraceSink for Counting<'_> {
    fn instructions(&mut self, n: u64) {
        self.sink.instructions(n);
    }
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.accesses += 1;
        if self.accesses.is_multiple_of(1 << 20) {
            (self.progress)(self.accesses);
        }
        self.sink.access(kind, addr, size);
    }
}

/// Which live trace source a command uses (`signature profile --source`,
/// `experiment signature-validate --source`).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceArg {
    /// QEMU with the plugin where it can run here, else lackey.
    Auto,
    /// QEMU user mode with hetsched's plugin (samples at capture with --sample).
    Qemu,
    /// valgrind lackey (text through a pipe; slow).
    Lackey,
}

impl SourceArg {
    /// The source to use, noting on stderr which and why.
    pub fn resolve(self, saving: bool) -> Result<Live> {
        let live = match self {
            SourceArg::Lackey => Live::Lackey,
            SourceArg::Qemu if saving => {
                return Err(Error::input(
                    "--save needs --source lackey: the QEMU source sends block numbers or \
                     samples, not the records a saved trace keeps",
                ))
            }
            SourceArg::Qemu => match qemu::unavailable() {
                None => Live::Qemu,
                Some(why) => return Err(Error::runtime(format!("--source qemu: {why}"))),
            },
            SourceArg::Auto if saving => {
                eprintln!("hetsched: --save keeps lackey's records: using valgrind lackey");
                Live::Lackey
            }
            SourceArg::Auto => {
                let (live, why) = Live::pick();
                if let Some(why) = why {
                    eprintln!("hetsched: the fast trace source is unavailable ({why})");
                }
                live
            }
        };
        eprintln!("hetsched: trace source: {}", live.describe());
        Ok(live)
    }
}

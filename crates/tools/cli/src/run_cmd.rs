//! `hetsched run -- CMD ARGS...`: an unmodified program as a task of the daemon (the
//! agent is `hetsched_live::run`; this module only parses and reports).

use clap::Args;
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_live::protocol::{self, MetaInfo, Request};
use hetsched_live::run::{OnDaemonLoss, RunOptions};
use hetsched_live::server;
use hetsched_sig::signature::Signature;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// The daemon's socket (default: $HETSCHED_SOCKET, $XDG_RUNTIME_DIR/hetsched/daemon.sock, root's /run/hetsched/daemon.sock or /tmp/hetsched-$UID/daemon.sock).
    #[arg(long, value_name = "SOCK")]
    daemon: Option<PathBuf>,
    /// Unit types the program can use, e.g. `cpu` or `cpu,opencl` (affinity 1 each).
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',', default_value = "cpu", value_parser = unit_type)]
    types: Vec<UnitType>,
    /// The program's architectural signature (`hetsched signature` JSON), sent to the
    /// daemon (default: the signature note of CMD's ELF file, if it has one).
    #[arg(long, value_name = "FILE")]
    signature: Option<PathBuf>,
    /// The device the program uses, sent to the daemon: an I/O device as `hetsched topology` names it (`vda`), a file or block device node (its disk is sent), or an accelerator as `hetsched client units` names it.
    #[arg(long, value_name = "DEV")]
    device: Option<String>,
    /// Task type name the daemon's models learn under (default: the program's file name).
    #[arg(long)]
    kind: Option<String>,
    /// Milliseconds between the agent's checkpoints: how late a decision may apply.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    check_ms: u64,
    /// Say on stderr what is applied to the program (grants, yields, memory binding).
    #[arg(long)]
    verbose: bool,
    /// When the daemon goes away (killed, or it drops the agent): `run` lets the program
    /// go on unscheduled with a one-line warning, `fail` kills it and exits 1; the same
    /// whether it waits for its first grant, runs, or is stopped after a yield.
    #[arg(long, value_name = "WHAT", default_value = "run", value_parser = OnDaemonLoss::NAMES)]
    on_daemon_loss: String,
    /// The task of the graph this uid declared to the daemon that the program is
    /// (`hetsched run-graph` starts its tasks this way): granted once its predecessors
    /// finished.
    #[arg(long, value_name = "INDEX", hide = true)]
    graph_task: Option<u32>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

pub(crate) fn unit_type(s: &str) -> std::result::Result<UnitType, String> {
    UnitType::parse(s).ok_or_else(|| {
        let names: Vec<&str> = UnitType::ALL.iter().map(|t| t.name()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

/// Runs the program and exits as it did (its code, or 128 + the signal that killed it).
pub fn run(args: RunArgs) -> Result<()> {
    let affinity = args.types.iter().map(|&kind| (kind, 1.0)).collect();
    let kind = args.kind.unwrap_or_else(|| {
        Path::new(&args.command[0])
            .file_name()
            .unwrap_or(args.command[0].as_os_str())
            .to_string_lossy()
            .into_owned()
    });
    // Checked here: the daemon refuses a longer one as malformed, and closes.
    if kind.len() > protocol::MAX_KIND {
        return Err(Error::input(format!(
            "--kind: {} bytes; a task kind has at most {}",
            kind.len(),
            protocol::MAX_KIND
        )));
    }
    let signature = match args.signature.as_deref() {
        Some(file) => Some(read_signature(file)?),
        None => embedded_signature(&args.command[0])?,
    };
    let meta = MetaInfo {
        kind,
        affinity,
        device: args.device.map(device_name).transpose()?,
        signature: signature.map(Box::new),
        graph_task: args.graph_task,
        ..MetaInfo::default()
    };
    check_size(&meta, args.signature.as_deref())?;
    let exit = hetsched_live::run::run(RunOptions {
        socket: args.daemon.unwrap_or_else(server::default_socket_path),
        meta,
        command: args.command,
        check: Duration::from_millis(args.check_ms),
        verbose: args.verbose,
        // clap accepted only OnDaemonLoss::NAMES.
        on_daemon_loss: OnDaemonLoss::parse(&args.on_daemon_loss).unwrap_or_default(),
    })?;
    match exit.shell_status() {
        0 => Ok(()),
        status => std::process::exit(status.into()),
    }
}

/// A path (a file, a device node) names the disk it lives on; anything else is a name.
fn device_name(dev: String) -> Result<String> {
    let path = Path::new(&dev);
    if !path.exists() {
        return Ok(dev);
    }
    hetsched_topology::block::block_device_of(path)
        .map(|d| d.name)
        .map_err(|e| Error::input(format!("--device {dev}: {e}")))
}

/// A regular file of at most 1 MiB (`Signature::load`): a FIFO or `/dev/zero` is refused
/// at once, before the daemon is asked.
fn read_signature(file: &Path) -> Result<Signature> {
    Signature::load(file)
}

/// The signature note of the program `command` names (found on `PATH` when it has no
/// slash, as `exec` does): `None` when the file has none, is not found or is not ELF
/// (a script); a note that is not a signature is an input error naming the file, and so
/// is a program that is not a regular file (a device, a FIFO: nothing could run it).
/// Only the program's headers and notes are read, whatever its size.
fn embedded_signature(command: &OsString) -> Result<Option<Signature>> {
    let path = Path::new(command);
    let file = if path.components().count() > 1 {
        Some(path.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|dirs| {
            std::env::split_paths(&dirs)
                .map(|d| d.join(path))
                .find(|f| f.is_file())
        })
    };
    let Some(file) = file else { return Ok(None) };
    if file.exists() {
        hetsched_util::files::open(&file, "a program")?;
    }
    let Ok(Some(note)) = hetsched_sig::elfnote::read(&file) else {
        return Ok(None);
    };
    let name = format!("{}: signature note", file.display());
    let text =
        std::str::from_utf8(&note).map_err(|_| Error::input(format!("{name}: not UTF-8")))?;
    Signature::from_json(text, &name).map(Some)
}

/// The `alloc` carrying `meta` (with the largest pid) must fit the daemon's request limit.
fn check_size(meta: &MetaInfo, signature: Option<&Path>) -> Result<()> {
    let mut frame = Vec::new();
    let meta = MetaInfo {
        pid: Some(u32::MAX),
        ..meta.clone()
    };
    protocol::encode(&Request::Alloc { meta }, &mut frame);
    let size = frame.len() - 4;
    if size <= protocol::MAX_REQUEST {
        return Ok(());
    }
    let what = signature.map_or("--kind / --device".into(), |f| f.display().to_string());
    Err(Error::input(format!(
        "{what}: the task's alloc request would be {size} bytes; the daemon takes at most {}",
        protocol::MAX_REQUEST
    )))
}

//! A daemon's whole life, as `hetsched daemon` runs it: the machine (this one with its
//! OpenCL and CUDA devices, or a description whose units become virtual ones), the
//! policy, the performance models it keeps, the socket served until SIGINT/SIGTERM, and
//! what it leaves at exit (the models written back, the trace with its metrics and the
//! run record's invariants). What a user should read goes through `say`, one line at a
//! time, as it happens; the trace's table and invariants are returned ([`Ended`]), for
//! the front to print as it prints tables.

use crate::arbiter::Arbiter;
use crate::{devices, server};
use hetsched_core::machine::UnitGranularity;
use hetsched_core::perf_model::{self, PerfModels};
use hetsched_core::{report, trace, Error, Result};
use hetsched_util::files::OutFile;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Where a daemon keeps performance models (for a policy that reads them, dmda).
#[derive(Clone, Debug)]
pub enum Models {
    /// `$HETSCHED_HOME/perfmodels`, else `~/.hetsched/perfmodels`.
    Default,
    /// In this directory.
    In(PathBuf),
    /// None: start with none, write none.
    Off,
}

/// What a daemon serves and how.
pub struct Options {
    /// The socket path (`None`: [`server::default_socket_path`]).
    pub socket: Option<PathBuf>,
    /// The policy spec, `name[:key=value,...]`.
    pub policy: String,
    /// `live` or any machine description (`hetsched_topology::load`).
    pub machine: String,
    pub seed: u64,
    /// At exit, the run's Perfetto trace here, its metrics table and the record's
    /// invariants said.
    pub trace: Option<PathBuf>,
    pub busy_poll: Duration,
    /// The event loop's nice value.
    pub nice: i32,
    pub models: Models,
    /// CPUs whose capacity the machine's source cannot see, `(os_index, capacity)`: a
    /// CPU slowed by `hetsched slow-cpu`, a frequency cap.
    pub capacities: Vec<(u32, u32)>,
}

/// What a daemon left when it stopped.
pub struct Ended {
    /// With [`Options::trace`]: the trace written.
    pub trace: Option<TraceWritten>,
}

/// The trace a daemon wrote at exit, with what its record says.
pub struct TraceWritten {
    pub file: PathBuf,
    /// The metrics table of the run (`hetsched_core::report::table`).
    pub table: String,
    /// The run record's invariants: `Err` names the first one violated.
    pub invariants: std::result::Result<(), String>,
}

/// Serves `o` until SIGINT or SIGTERM, saying through `say` what it starts with and
/// what it keeps.
pub fn serve(o: Options, say: &mut dyn FnMut(String)) -> Result<Ended> {
    // Before the OpenCL driver starts its threads: they inherit the blocked signals.
    let signals = server::StopSignals::block()?;
    // Started now, written at shutdown: a path that cannot take the trace (a directory,
    // a device, a link) is refused before the run, not after it.
    let trace_file = o.trace.as_deref().map(OutFile::create).transpose()?;
    let mut machine = hetsched_topology::load(&o.machine, UnitGranularity::Pu)?;
    for &(cpu, capacity) in &o.capacities {
        machine
            .set_cpu_capacity(cpu, capacity)
            .map_err(|e| Error::input(format!("--capacity {cpu}={capacity}: {e}")))?;
    }
    let device_index = if o.machine == "live" {
        let mut found = devices::opencl_devices();
        found.extend(devices::cuda_devices());
        devices::attach(&mut machine, &found)
    } else {
        devices::described(&machine)
    };
    let policy = hetsched_policies::build(&o.policy, o.seed)?;
    let path = o.socket.unwrap_or_else(server::default_socket_path);
    let units = machine.units.len();
    let machine_name = machine.name.clone();
    let mut arbiter = Arbiter::new(machine, device_index, policy);
    let models = match o.models {
        _ if !arbiter.wants_models() => None,
        Models::Off => None,
        Models::In(dir) => Some(dir),
        Models::Default => perf_model::default_dir(),
    };
    if let Some(dir) = &models {
        arbiter.set_models(PerfModels::load(dir, &machine_name)?);
    }
    if trace_file.is_some() {
        arbiter.start_recording();
    }
    let samples = arbiter.measure_processes();
    let mut daemon = server::Daemon::bind(&path, arbiter)?;
    // Said once: what the samples of `hetsched run` processes can hold on this machine.
    say(format!("samples: {samples}"));
    daemon.stop_on(signals)?;
    daemon.set_busy_poll(o.busy_poll);
    // This thread runs the loop.
    if let Err(e) = server::Daemon::set_nice(o.nice) {
        say(format!(
            "{e}; the event loop runs at its inherited priority"
        ));
    }
    say(format!(
        "{} units, policy {}, listening on {}",
        units,
        o.policy,
        path.display()
    ));
    daemon.run()?;
    let mut ended = Ended { trace: None };
    if let Some(dir) = &models {
        let file = daemon.arbiter().models().save(dir, &machine_name)?;
        say(format!("performance models kept in {}", file.display()));
    }
    if daemon.dropped() > 0 {
        say(format!(
            "{} clients dropped or refused in all",
            daemon.dropped()
        ));
    }
    if let (Some(mut file), Some(record)) = (trace_file, daemon.arbiter().record()) {
        let json = trace::trace(std::slice::from_ref(&record));
        let bytes = serde_json::to_vec(&json).map_err(Error::runtime)?;
        file.write_all(&bytes).map_err(|e| file.error(e))?;
        ended.trace = Some(TraceWritten {
            file: file.finish()?,
            table: report::table(&[record.metrics()]),
            invariants: record.check().map_err(|e| e.to_string()),
        });
    }
    Ok(ended)
}

//! A run's outputs made while it runs: the recorder behind `hetsched simulate` when no
//! trace is asked for and the per-task CSV is (with `--summary`, the metrics alone come
//! from `hetsched_core::outcome_stream::SummaryStream`).
//!
//! Why: keeping the whole run record (four events per task) and deriving the per-task
//! CSV and the metrics afterwards cost about five times the simulation on a 1M-task
//! run. [`StreamRecorder`] instead checks each event against the record's invariants,
//! folds it into the metrics and writes each task's CSV line (through a large buffer)
//! as soon as its outcome is final, with the same code the kept record uses
//! (`hetsched_core::outcome_stream`), so the outputs are byte-identical.

use hetsched_core::outcome_stream::{MetricsBuilder, RunStream};
use hetsched_core::record::{Event, Metrics, Recorder, TaskOutcome};
use hetsched_core::report::{write_csv_row, TASKS_CSV_HEADER};
use hetsched_core::task::TaskId;
use hetsched_core::{Error, Result};
use std::io::Write;
use std::sync::Arc;

/// Bytes of CSV lines gathered before each write.
const CSV_BUFFER: usize = 1 << 20;

/// Checks, tallies and writes out a run's events as they come (see the module docs).
pub struct StreamRecorder<W: Write> {
    run: RunStream,
    sink: Sink<W>,
}

/// Where final outcomes go: the metrics and the per-task CSV.
struct Sink<W: Write> {
    metrics: MetricsBuilder,
    /// The per-task CSV: the file, the lines not yet written to it, the unit names it
    /// prints and its name for errors.
    csv: W,
    buf: Vec<u8>,
    csv_name: String,
    unit_names: Vec<String>,
    /// The first invariant violation or write error (the run goes on; `finish` says).
    error: Option<Error>,
}

impl<W: Write> Sink<W> {
    #[inline]
    fn take(&mut self, o: &TaskOutcome) {
        self.metrics.outcome(o);
        write_csv_row(&mut self.buf, o, &self.unit_names);
        if self.buf.len() >= CSV_BUFFER {
            self.flush();
        }
    }

    /// An invariant violation of the record (the first error is kept for `finish`).
    #[cold]
    fn violation(&mut self, e: String) {
        self.error
            .get_or_insert_with(|| Error::runtime(format!("run record invariant: {e}")));
    }

    /// Writes out the lines gathered (the first write error is kept for `finish`).
    #[cold]
    fn flush(&mut self) {
        let w = &mut self.csv;
        let written = w.write_all(&self.buf).and_then(|()| w.flush());
        self.buf.clear();
        if let Err(e) = written {
            let name = &self.csv_name;
            self.error
                .get_or_insert_with(|| Error::runtime(format!("{name}: {e}")));
        }
    }
}

impl<W: Write> StreamRecorder<W> {
    /// A recorder for a run of `policy` on `machine`, writing the per-task CSV to `csv`
    /// (named `csv_name` in errors, e.g. its path).
    pub fn new(
        policy: &str,
        machine: &hetsched_core::machine::Machine,
        csv: W,
        csv_name: String,
    ) -> StreamRecorder<W> {
        let unit_kinds: Vec<_> = machine.units.iter().map(|u| u.kind).collect();
        let unit_names = machine.units.iter().map(|u| u.name.clone()).collect();
        // Room for the lines of one write and the one that crosses the mark.
        let mut buf = Vec::with_capacity(CSV_BUFFER + CSV_BUFFER / 4);
        buf.extend_from_slice(TASKS_CSV_HEADER.as_bytes());
        let sink = Sink {
            metrics: MetricsBuilder::new(policy, &unit_kinds),
            csv,
            buf,
            csv_name,
            unit_names,
            error: None,
        };
        StreamRecorder {
            run: RunStream::new(unit_kinds.len(), false),
            sink,
        }
    }

    /// The run's metrics, once the CSV is complete and flushed; an invariant violation
    /// of the record or a write error otherwise.
    pub fn finish(mut self) -> Result<Metrics> {
        let sink = &mut self.sink;
        self.run.finish(&mut |o| sink.take(o));
        sink.flush();
        match self.sink.error {
            Some(e) => Err(e),
            None => Ok(self.sink.metrics.finish(&self.run.tallies())),
        }
    }
}

impl<W: Write> Recorder for StreamRecorder<W> {
    #[inline(always)]
    fn record(&mut self, event: Event) {
        let sink = &mut self.sink;
        if let Err(e) = self.run.push(&event, &mut |o| sink.take(o)) {
            sink.violation(e);
        }
    }

    /// The type is looked up, not cloned (the stream keeps one clone of each).
    #[inline(always)]
    fn submit(&mut self, t_ns: u64, task: TaskId, ideal_ns: u64, kind: &Arc<str>) {
        if let Err(e) = self.run.push_submit(t_ns, task, ideal_ns, kind) {
            self.sink.violation(e);
        }
    }
}

/// One run of `policy` on `scenario` with its outputs made as it goes (no trace): its
/// metrics, and its per-task CSV written to `csv` if given (with its name for errors);
/// without the CSV, the metrics alone ([`SummaryStream`]: no outcomes, no record checks).
/// `hetsched simulate` without `--trace` and `hetsched bench simulate` both run this.
pub fn run_streamed<W: Write>(
    scenario: &crate::scenario::Scenario,
    policy: &str,
    csv: Option<(W, String)>,
    on_task: &mut dyn FnMut(&crate::SimTask),
) -> Result<(Metrics, crate::RunSummary)> {
    let (machine, seed) = (&scenario.machine, scenario.seed);
    let Some((file, name)) = csv else {
        let mut rec = hetsched_core::outcome_stream::SummaryStream::new(policy, machine);
        let summary = crate::Simulation::of(scenario)
            .on_task(on_task)
            .run_spec(policy, seed, &mut rec)?;
        return Ok((rec.finish(), summary));
    };
    let mut rec = StreamRecorder::new(policy, machine, file, name);
    let summary = crate::Simulation::of(scenario)
        .on_task(on_task)
        .run_spec(policy, seed, &mut rec)?;
    let metrics = rec
        .finish()
        .map_err(|e| Error::runtime(format!("{policy}: {e}")))?;
    Ok((metrics, summary))
}

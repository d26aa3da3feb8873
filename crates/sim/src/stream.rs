//! A run's outputs made while it runs: the recorder behind `hetsched simulate` when no
//! trace is asked for.
//!
//! Why: keeping the whole run record (four events per task) and deriving the per-task
//! CSV and the metrics afterwards cost about five times the simulation on a 1M-task
//! run. [`StreamRecorder`] instead checks each event against the record's invariants,
//! folds it into the metrics and writes each task's CSV line (through a large buffer)
//! as soon as its outcome is final, with the same code the kept record uses
//! (`hetsched_core::outcome_stream`), so the outputs are byte-identical.

use crate::report::{write_csv_row, TASKS_CSV_HEADER};
use hetsched_core::outcome_stream::{Checker, MetricsBuilder, OutcomeStream};
use hetsched_core::record::{Event, Metrics, Recorder, TaskOutcome};
use hetsched_core::{Error, Result};
use std::io::Write;

/// Bytes gathered before each write of the CSV.
const CSV_BUFFER: usize = 1 << 20;

/// Checks, tallies and writes out a run's events as they come (see the module docs).
pub struct StreamRecorder<W: Write> {
    outcomes: OutcomeStream,
    checker: Checker,
    sink: Sink<W>,
}

/// Where final outcomes go: the metrics and the per-task CSV.
struct Sink<W: Write> {
    metrics: MetricsBuilder,
    /// The per-task CSV, if asked for, the unit names it prints and its name for errors.
    csv: Option<std::io::BufWriter<W>>,
    csv_name: String,
    unit_names: Vec<String>,
    /// The first invariant violation or write error (the run goes on; `finish` says).
    error: Option<Error>,
}

impl<W: Write> Sink<W> {
    #[inline]
    fn take(&mut self, o: TaskOutcome) {
        self.metrics.outcome(&o);
        if let Some(w) = &mut self.csv {
            if let Err(e) = write_csv_row(w, &o, &self.unit_names) {
                self.fail(e);
            }
        }
    }

    #[cold]
    fn fail(&mut self, e: std::io::Error) {
        let name = &self.csv_name;
        self.error
            .get_or_insert_with(|| Error::runtime(format!("{name}: {e}")));
    }
}

impl<W: Write> StreamRecorder<W> {
    /// A recorder for a run of `policy` on units of these types and names, writing the
    /// per-task CSV to `csv` if given (with its name for errors, e.g. its path).
    pub fn new(
        policy: &str,
        unit_kinds: &[hetsched_core::machine::UnitType],
        unit_names: Vec<String>,
        csv: Option<(W, String)>,
    ) -> StreamRecorder<W> {
        let (csv, csv_name) = match csv {
            Some((w, name)) => (Some(std::io::BufWriter::with_capacity(CSV_BUFFER, w)), name),
            None => (None, String::new()),
        };
        let mut sink = Sink {
            metrics: MetricsBuilder::new(policy, unit_kinds),
            csv,
            csv_name,
            unit_names,
            error: None,
        };
        if let Some(Err(e)) = sink
            .csv
            .as_mut()
            .map(|w| w.write_all(TASKS_CSV_HEADER.as_bytes()))
        {
            sink.fail(e);
        }
        StreamRecorder {
            outcomes: OutcomeStream::default(),
            checker: Checker::new(unit_kinds.len(), false),
            sink,
        }
    }

    /// The run's metrics, once the CSV is complete and flushed; an invariant violation
    /// of the record or a write error otherwise.
    pub fn finish(mut self) -> Result<Metrics> {
        let sink = &mut self.sink;
        self.outcomes.finish(&mut |o| sink.take(o));
        if let Some(Err(e)) = sink.csv.as_mut().map(|w| w.flush()) {
            sink.fail(e);
        }
        match self.sink.error {
            Some(e) => Err(e),
            None => Ok(self.sink.metrics.finish()),
        }
    }
}

impl<W: Write> Recorder for StreamRecorder<W> {
    #[inline]
    fn record(&mut self, event: Event) {
        let sink = &mut self.sink;
        if sink.error.is_none() {
            if let Err(e) = self.checker.push(&event) {
                sink.error = Some(Error::runtime(format!("run record invariant: {e}")));
            }
        }
        sink.metrics.event(&event);
        self.outcomes.push(&event, &mut |o| sink.take(o));
    }
}

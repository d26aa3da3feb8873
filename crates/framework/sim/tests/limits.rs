//! The bounds a run has instead of a default event limit (`scenario`'s "What bounds a
//! run"): the tasks live at once, the events a kept record holds, the tasks a run
//! generates, and a stop asked through the progress it publishes. Each checked with a
//! bound lowered so that the run that reaches it stays small; the CLI's tests check the
//! defaults through the real binary.

use hetsched_core::outcome_stream::SummaryStream;
use hetsched_core::Error;
use hetsched_sim::engine::{Progress, WATCH_EVERY};
use hetsched_sim::scenario::{limits, Scenario};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn scenario(text: &str) -> Scenario {
    Scenario::parse(text, "limits.toml", "limits", Path::new(".")).unwrap()
}

/// `count` tasks of 1 s all arriving at t = 0 on Ding's 8 cores.
fn burst(count: u64) -> Scenario {
    scenario(&format!(
        "machine = \"ding\"\npolicies = [\"fcfs\"]\n[[task]]\nwork = 1.0\ncount = {count}\n"
    ))
}

fn input_message(r: hetsched_core::Result<impl Sized>) -> String {
    match r {
        Err(Error::Input(m)) => m,
        Err(e) => panic!("not an input error: {e:?}"),
        Ok(_) => panic!("the run succeeded"),
    }
}

#[test]
fn a_scenario_has_no_event_limit_but_bounds_memory() {
    let s = burst(1);
    assert_eq!(s.config.max_events, None);
    assert_eq!(s.config.max_live_tasks, Some(limits::MAX_LIVE_TASKS));
    assert_eq!(s.config.max_kept_events, Some(limits::MAX_KEPT_EVENTS));
}

/// The task that would be one too many live is refused, naming itself, the bound and
/// what to change; one fewer runs.
#[test]
fn too_many_live_tasks_stop_the_run() {
    let mut s = burst(1_000);
    s.config.max_live_tasks = Some(999);
    let m = input_message(hetsched_sim::Simulation::of(&s).record_spec("fcfs", 1));
    for needle in [
        "task 999 (type \"task\") arrives at 0.000 s simulated with 999 tasks live",
        "at most 999 tasks live at once",
        "end.max_time_s",
    ] {
        assert!(m.contains(needle), "{needle:?} not in {m:?}");
    }
    s.config.max_live_tasks = Some(1_000);
    let (_, summary) = hetsched_sim::Simulation::of(&s)
        .record_spec("fcfs", 1)
        .unwrap();
    assert_eq!((summary.completed, summary.peak_live), (1_000, 1_000));
}

/// A kept record past its bound stops the run (looked at every `WATCH_EVERY` events);
/// a recorder that keeps nothing is not bound by it.
#[test]
fn a_kept_record_past_its_bound_stops_the_run() {
    let mut s = burst(20_000);
    s.config.max_kept_events = Some(10_000);
    let m = input_message(hetsched_sim::Simulation::of(&s).record_spec("fcfs", 1));
    assert!(
        m.contains("the run record kept in memory reached")
            && m.contains("more than the 10000 this run may keep"),
        "{m}"
    );
    let kept: u64 = m
        .split("reached ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!((10_001..10_000 + 4 * WATCH_EVERY).contains(&kept), "{m}");

    let mut rec = SummaryStream::new("fcfs", &s.machine);
    let summary = hetsched_sim::Simulation::of(&s)
        .run_spec("fcfs", 1, &mut rec)
        .unwrap();
    assert_eq!(summary.completed, 20_000);
}

/// A run told to stop stops at its next look with `Error::Interrupted`; one left alone
/// publishes its final counts.
#[test]
fn a_run_stops_when_its_progress_is_told_to() {
    let mut s = burst(20_000);
    let progress = Arc::new(Progress::default());
    s.config.watch = Some(progress.clone());
    let mut rec = SummaryStream::new("fcfs", &s.machine);
    let summary = hetsched_sim::Simulation::of(&s)
        .run_spec("fcfs", 1, &mut rec)
        .unwrap();
    assert_eq!(progress.completed.load(Ordering::Relaxed), 20_000);
    assert_eq!(progress.events.load(Ordering::Relaxed), summary.events);

    progress.stop();
    let mut rec = SummaryStream::new("fcfs", &s.machine);
    match hetsched_sim::Simulation::of(&s).run_spec("fcfs", 1, &mut rec) {
        Err(Error::Interrupted(m)) => assert!(m.contains("interrupted at"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(progress.events.load(Ordering::Relaxed), WATCH_EVERY);
}

/// What a run generates is bounded before it starts: all the counts, or with an end
/// time the tasks expected to arrive by then.
#[test]
fn the_tasks_a_run_generates_are_bounded_before_it_starts() {
    let gen = |end: &str| {
        scenario(&format!(
            "machine = \"ding\"\npolicies = [\"fcfs\"]\n{end}[[generator]]\ncount = 1_000_000_000_000\n\
             rate = 1000.0\nstart = 5.0\nsize = {{ dist = \"fixed\", value = 0.001 }}\n[[generator.mix]]\nshare = 1.0\n"
        ))
    };
    let all = gen("");
    assert_eq!(all.expected_tasks(), 1_000_000_000_000);
    let m = input_message(all.check_limits());
    assert!(
        m.contains("generator[0].count = 1000000000000") && m.contains("at most 100000000"),
        "{m}"
    );
    // From 5 s to 15 s at 1000/s.
    let short = gen("end = { max_time_s = 15 }\n");
    assert_eq!(short.expected_tasks(), 10_000);
    short.check_limits().unwrap();
    // 10^8 tasks expected: at the bound, allowed; a second more, refused.
    let at = gen(&format!("end = {{ max_time_s = {} }}\n", 5.0 + 1e5));
    assert_eq!(at.expected_tasks(), limits::MAX_RUN_TASKS);
    at.check_limits().unwrap();
    let past = gen(&format!("end = {{ max_time_s = {} }}\n", 6.0 + 1e5));
    let m = input_message(past.check_limits());
    assert!(m.contains("about 1.00001e8 tasks arrive"), "{m}");
}

/// A traced run's memory is its kept record's: the trace is written as it is made, the
/// same document as the one built whole.
#[test]
fn a_trace_written_as_it_is_made_is_the_document() {
    let s = scenario(
        "machine = \"ding\"\n[[generator]]\ncount = 300\nrate = 40.0\n\
         size = { dist = \"exponential\", mean = 0.2 }\n[[generator.mix]]\nshare = 1.0\n",
    );
    let records: Vec<_> = ["cfs", "ws", "fcfs"]
        .iter()
        .map(|p| {
            hetsched_sim::Simulation::of(&s)
                .record_spec(p, 1)
                .unwrap()
                .0
        })
        .collect();
    let mut written = Vec::new();
    hetsched_core::trace::write(&records, &mut written).unwrap();
    let parsed: serde_json::Value = serde_json::from_slice(&written).unwrap();
    let whole = hetsched_core::trace::trace(&records);
    assert!(whole["traceEvents"].as_array().unwrap().len() > 3 * 300);
    assert_eq!(parsed, whole);
}

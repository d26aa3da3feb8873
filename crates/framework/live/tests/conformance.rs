//! Conformance of the two engines: every registered policy (each spec the registry lists
//! for tests), driven through the same scripted situations by the simulator and by the
//! live arbiter (on a clock the test sets), makes the same decisions — the logs of a
//! recording decorator are identical, call for call, with times and answers — and both
//! engines write the same run record (but for the ideal times, which live cannot know).
//!
//! A script is a task set run in the simulator. Its decision log says when each task
//! arrived, reached a checkpoint (a slice end), completed, and when ticks came; the
//! arbiter is then driven with the same stimuli, as clients would drive it: `alloc` at
//! an arrival, `rerequest` at a checkpoint (then `free` and `alloc` again when told to
//! give the unit up), `free` at a completion, `expire` at a tick. Tasks carry only meta
//! info a live client can send (kind, affinities, bytes to copy in, weight); their work
//! and speeds, which only the simulator knows, vary.

use hetsched_core::machine::{Machine, UnitType};
use hetsched_core::policy::{CheckpointDecision, PickDecision};
use hetsched_core::record::{EventKind, Record};
use hetsched_live::arbiter::{Arbiter, ManualClock};
use hetsched_live::protocol::{MetaInfo, Verdict};
use hetsched_policies::recording::{Call, Recording};
use hetsched_sim::{machine_from_toml, Config, SimTask, Simulation};

const MS: u64 = 1_000_000;

/// Three CPUs of two speeds, and optionally a GPU with a link.
fn machine(gpu: bool) -> Machine {
    let mut text = String::from(
        "name = \"c\"\n[[cpu_kind]]\nname = \"big\"\ncapacity = 1024\n[[cpu_kind]]\nname = \"little\"\ncapacity = 512\n[[package]]\ncores = 3\nkind = [\"big\", \"little\", \"big\"]\n",
    );
    if gpu {
        text += "[[accelerator]]\ntype = \"gpu\"\nname = \"gpu0\"\nlink_bandwidth = \"8 GB/s\"\nlink_latency_us = 10\n";
    }
    machine_from_toml(&text, "c.toml").unwrap()
}

/// `n` tasks from a seeded generator: bursts and gaps, three types, CPU-only, GPU-only
/// and both, work from 0.1 to 60 ms.
fn script(seed: u64, n: u64, gpu: bool) -> Vec<SimTask> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut t = 0;
    (0..n)
        .map(|id| {
            // Mostly bursts, now and then a gap that empties the machine.
            t += match next() % 10 {
                0..=5 => 0,
                6..=8 => next() % (5 * MS),
                _ => 200 * MS,
            };
            let mut task = SimTask::cpu(id, (1 + next() % 600) as f64 * 1e-4, t);
            let kind = next() % 3;
            task.kind = ["a", "b", "c"][kind as usize].into();
            task.weight = [1024, 512, 2048][kind as usize];
            if gpu {
                match next() % 3 {
                    0 => {}
                    1 => {
                        task.affinity.set(UnitType::Cpu, 0.0);
                        task.affinity.set(UnitType::Gpu, 2.0);
                    }
                    _ => task.affinity.set(UnitType::Gpu, (1 + next() % 8) as f64),
                }
                task.bytes_in = next() % 50_000_000;
                task.model.speed.set(UnitType::Gpu, (1 + next() % 6) as f64);
            }
            task
        })
        .collect()
}

fn meta(t: &SimTask) -> MetaInfo {
    MetaInfo {
        kind: t.kind.to_string(),
        affinity: t.affinity,
        bytes_in: t.bytes_in,
        weight: t.weight,
        ..MetaInfo::default()
    }
}

fn record_for(m: &Machine, spec: &str) -> Record {
    Record::new(
        spec,
        m.units.iter().map(|u| u.kind).collect(),
        m.units.iter().map(|u| u.name.clone()).collect(),
    )
}

fn simulate(m: &Machine, spec: &str, tasks: &[SimTask]) -> (Vec<Call>, Record) {
    let (mut policy, log) = Recording::new(hetsched_policies::build(spec, 9).unwrap());
    let mut rec = record_for(m, spec);
    let summary = Simulation::new(m, tasks.to_vec(), &Config::default())
        .run(&mut policy, &mut rec)
        .unwrap();
    assert_eq!(summary.unfinished, 0, "{spec}");
    let log = log.lock().unwrap().clone();
    (log, rec)
}

/// Drives the arbiter with the stimuli of the simulator's log.
fn replay(m: &Machine, spec: &str, tasks: &[SimTask], script: &[Call]) -> (Vec<Call>, Record) {
    let (policy, log) = Recording::new(hetsched_policies::build(spec, 9).unwrap());
    let clock = ManualClock::default();
    let devices = hetsched_live::devices::described(m);
    let mut a = Arbiter::with_clock(
        m.clone(),
        devices,
        Box::new(policy),
        Box::new(clock.clone()),
    );
    a.start_recording();
    let client = |task: u64| task + 1;
    for call in script {
        match *call {
            Call::Submit { t_ns, task, .. } => {
                clock.set(t_ns);
                a.alloc(client(task), &meta(&tasks[task as usize])).unwrap();
            }
            Call::Checkpoint { t_ns, task, .. } => {
                clock.set(t_ns);
                if a.rerequest(client(task)).unwrap() != Verdict::Keep {
                    a.free(client(task), false).unwrap();
                    a.alloc(client(task), &meta(&tasks[task as usize])).unwrap();
                }
            }
            Call::Complete { t_ns, task, .. } => {
                clock.set(t_ns);
                a.free(client(task), true).unwrap();
            }
            Call::Tick { t_ns, .. } => {
                clock.set(t_ns);
                a.expire();
            }
            Call::Pick { .. } | Call::TimeSlice { .. } => {}
        }
    }
    assert_eq!(a.violations(), 0, "{spec}");
    let log = log.lock().unwrap().clone();
    (log, a.record().unwrap())
}

/// Where two logs first differ, with a little context.
fn first_difference<T: std::fmt::Debug + PartialEq>(a: &[T], b: &[T]) -> Option<String> {
    let i = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    let from = i.saturating_sub(3);
    Some(format!(
        "entry {i} of {} / {}:\nsimulator: {:#?}\nlive:      {:#?}",
        a.len(),
        b.len(),
        &a[from.min(a.len())..(i + 1).min(a.len())],
        &b[from.min(b.len())..(i + 1).min(b.len())]
    ))
}

#[test]
fn every_policy_decides_the_same_in_the_simulator_and_live() {
    let scripts = [
        (machine(false), script(1, 60, false)),
        (machine(true), script(2, 60, true)),
        (machine(true), script(3, 120, true)),
    ];
    // What the scripts made the policies do, over all of them: the paths compared.
    let (mut yields, mut migrations, mut tick_moves, mut steals, mut entries) = (0, 0, 0, 0, 0);
    for spec in hetsched_policies::test_specs() {
        for (i, (m, tasks)) in scripts.iter().enumerate() {
            let (mut sim_log, mut sim_rec) = simulate(m, spec, tasks);
            // Live cannot know a task's modelled memory-bound fraction either.
            for c in &mut sim_log {
                if let Call::Tick { samples, .. } = c {
                    samples.iter_mut().for_each(|s| s.memory_bound = None);
                }
            }
            entries += sim_log.len();
            for c in &sim_log {
                match c {
                    Call::Checkpoint { answer, .. } => match answer {
                        CheckpointDecision::Yield => yields += 1,
                        CheckpointDecision::Migrate(_) => migrations += 1,
                        CheckpointDecision::Continue => {}
                    },
                    Call::Tick { answer, .. } => tick_moves += answer.len(),
                    Call::Pick {
                        answer: PickDecision::Steal { .. },
                        ..
                    } => steals += 1,
                    _ => {}
                }
            }
            assert!(
                sim_log.iter().any(|c| matches!(c, Call::Pick { .. })),
                "{spec}"
            );
            let (live_log, live_rec) = replay(m, spec, tasks, &sim_log);
            if let Some(d) = first_difference(&sim_log, &live_log) {
                panic!("{spec}, script {i}: decision logs differ at {d}");
            }
            // Live cannot know how long a task would take alone.
            for e in &mut sim_rec.events {
                if let EventKind::Submit { ideal_ns, .. } = &mut e.kind {
                    *ideal_ns = 0;
                }
            }
            if let Some(d) = first_difference(&sim_rec.events, &live_rec.events) {
                panic!("{spec}, script {i}: run records differ at {d}");
            }
            live_rec.check().unwrap();
        }
    }
    let covered = (yields, migrations, tick_moves, steals, entries);
    assert!(
        yields > 100 && migrations > 0 && tick_moves > 0 && steals > 10 && entries > 10_000,
        "(yields, migrations, tick moves, steals, calls) = {covered:?}"
    );
}

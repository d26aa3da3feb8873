//! Perfetto / Chrome trace-event JSON from run records: one process per policy run, one
//! track (thread) per unit named after it, an "X" slice per run segment, flow events
//! ("s" at the unit a task left, "f" at its next start) for migrations and steals, and
//! "C" counter events for queue lengths (one counter per unit plus the central queue),
//! and for a task graph's copies a track per accelerator link direction used, an "X"
//! slice per copy (its handle and bytes). Times are microseconds. Beside [`crate::record`]: the simulator and the live daemon
//! write the same trace of their records.

use crate::record::{EventKind, Record};
use crate::task::{Placement, QueueId};
use rustc_hash::FxHashMap;
use serde_json::{json, Value};
use std::io::Write;

/// The trace of one or more runs, as a JSON document.
pub fn trace(records: &[Record]) -> Value {
    let mut events = Vec::new();
    each_event(records, &mut |v| events.push(v));
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

/// Writes the trace of one or more runs to `w` as it makes it: the same document as
/// [`trace`], without holding it: as JSON values, the 2.8 M trace events of a `--trace`
/// of 50,000 tasks under six policies took 8.9 GB at peak, streamed 160 MB, so that the
/// memory of a traced run is its kept record's (`Config::max_kept_events`).
pub fn write(records: &[Record], w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(b"{\"traceEvents\":[")?;
    let mut first = true;
    let mut failed = None;
    each_event(records, &mut |v| {
        if failed.is_some() {
            return;
        }
        let sep: &[u8] = if first { b"" } else { b"," };
        first = false;
        let r = w
            .write_all(sep)
            .and_then(|()| serde_json::to_writer(&mut *w, &v).map_err(std::io::Error::from));
        if let Err(e) = r {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    w.write_all(b"],\"displayTimeUnit\":\"ms\"}")
}

/// Calls `emit` with each trace event of the runs, in the order of [`trace`]'s list.
fn each_event(records: &[Record], emit: &mut dyn FnMut(Value)) {
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut flow_id = 0u64;
    for (p, rec) in records.iter().enumerate() {
        let pid = p + 1;
        emit(
            json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": rec.policy}}),
        );
        for (u, name) in rec.unit_names.iter().enumerate() {
            emit(
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": u, "args": {"name": format!("{name} ({})", rec.unit_kinds[u])}}),
            );
            emit(
                json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": u, "args": {"sort_index": u}}),
            );
        }
        let mut open: FxHashMap<u64, (u32, u64)> = FxHashMap::default();
        let mut kinds: FxHashMap<u64, std::sync::Arc<str>> = FxHashMap::default();
        let mut pending_flow: FxHashMap<u64, u64> = FxHashMap::default();
        let mut qlen: FxHashMap<QueueId, i64> = FxHashMap::default();
        let mut counter = |emit: &mut dyn FnMut(Value), q: QueueId, delta: i64, t: u64| {
            let n = qlen.entry(q).or_insert(0);
            *n += delta;
            let name = match q {
                QueueId::Unit(u) => format!("queue {}", rec.unit_names[u as usize]),
                QueueId::Central => "queue central".to_string(),
            };
            emit(json!({"ph": "C", "name": name, "pid": pid, "ts": us(t), "args": {"tasks": *n}}));
        };
        for e in &rec.events {
            match &e.kind {
                EventKind::Submit { kind, .. } => {
                    kinds.insert(e.task, kind.clone());
                }
                EventKind::Enqueue { queue } => counter(emit, *queue, 1, e.t_ns),
                EventKind::Start { unit, from } => {
                    counter(emit, *from, -1, e.t_ns);
                    if matches!(from, QueueId::Unit(q) if q != unit) {
                        flow_id += 1;
                        let src = match from {
                            QueueId::Unit(q) => *q,
                            QueueId::Central => *unit,
                        };
                        emit(
                            json!({"ph": "s", "name": "steal", "cat": "steal", "id": flow_id, "pid": pid, "tid": src, "ts": us(e.t_ns)}),
                        );
                        pending_flow.insert(e.task, flow_id);
                    }
                    open.insert(e.task, (*unit, e.t_ns));
                    if let Some(id) = pending_flow.remove(&e.task) {
                        emit(
                            json!({"ph": "f", "bp": "e", "name": "move", "cat": "migration", "id": id, "pid": pid, "tid": unit, "ts": us(e.t_ns)}),
                        );
                    }
                }
                EventKind::Stop { .. } | EventKind::Complete { .. } => {
                    if let Some((unit, t0)) = open.remove(&e.task) {
                        let kind = kinds.get(&e.task).map_or("task", |k| &**k);
                        emit(json!({
                            "ph": "X", "name": format!("{kind} #{}", e.task), "cat": "run",
                            "pid": pid, "tid": unit, "ts": us(t0), "dur": us(e.t_ns - t0),
                            "args": {"task": e.task, "completed": matches!(e.kind, EventKind::Complete { .. })}
                        }));
                    }
                    if matches!(e.kind, EventKind::Complete { .. }) {
                        kinds.remove(&e.task);
                    }
                }
                EventKind::Migrate { from, to } => {
                    flow_id += 1;
                    let src = match from {
                        Placement::Running(u) | Placement::Queued(QueueId::Unit(u)) => *u,
                        Placement::Queued(QueueId::Central) => *to,
                    };
                    if let Placement::Queued(q) = from {
                        counter(emit, *q, -1, e.t_ns);
                    }
                    counter(emit, QueueId::Unit(*to), 1, e.t_ns);
                    emit(
                        json!({"ph": "s", "name": "move", "cat": "migration", "id": flow_id, "pid": pid, "tid": src, "ts": us(e.t_ns)}),
                    );
                    pending_flow.insert(e.task, flow_id);
                }
                EventKind::Reject { .. } => {
                    kinds.remove(&e.task);
                }
            }
        }
        transfers(rec, pid, emit);
    }
}

/// A task graph's copies: one track per link direction that carried one, after the
/// units' tracks (a link is its accelerator's: memory node `a + 1` is the `a`-th unit
/// that is not a CPU).
fn transfers(rec: &Record, pid: usize, emit: &mut dyn FnMut(Value)) {
    let us = |ns: u64| ns as f64 / 1000.0;
    let devices: Vec<&str> = rec
        .unit_names
        .iter()
        .zip(&rec.unit_kinds)
        .filter(|(_, &k)| k != crate::machine::UnitType::Cpu)
        .map(|(n, _)| n.as_str())
        .collect();
    let mut named = rustc_hash::FxHashSet::default();
    for c in &rec.transfers {
        // (device node, 0 host to device / 1 back)
        let (node, back) = if c.to == 0 { (c.from, 1) } else { (c.to, 0) };
        let tid = rec.unit_names.len() + 2 * (node.max(1) as usize - 1) + back;
        if named.insert(tid) {
            let device = devices
                .get(node.max(1) as usize - 1)
                .map_or_else(|| format!("memory node {node}"), |d| d.to_string());
            let name = match back {
                0 => format!("link host → {device}"),
                _ => format!("link {device} → host"),
            };
            emit(
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}),
            );
            emit(
                json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}),
            );
        }
        emit(json!({
            "ph": "X", "name": format!("handle {}", c.handle), "cat": "copy",
            "pid": pid, "tid": tid, "ts": us(c.start_ns), "dur": us(c.end_ns - c.start_ns),
            "args": {"handle": c.handle, "bytes": c.bytes, "from": c.from, "to": c.to}
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflow::Transfer;
    use crate::machine::UnitType;

    /// Copies go on their link's tracks, one per direction used, named after the
    /// accelerator, after the units' tracks.
    #[test]
    fn copies_are_slices_on_their_links_tracks() {
        let mut rec = Record::new(
            "dmda",
            vec![UnitType::Cpu, UnitType::Gpu],
            vec!["cpu0".into(), "gpu0".into()],
        );
        let copy = |from, to, start_ns| Transfer {
            handle: 7,
            from,
            to,
            bytes: 4000,
            start_ns,
            end_ns: start_ns + 5000,
        };
        rec.transfers = vec![copy(0, 1, 1000), copy(1, 0, 9000), copy(0, 1, 20_000)];
        let t = trace(&[rec]);
        let events = t["traceEvents"].as_array().unwrap();
        let names: Vec<(u64, &str)> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| {
                (
                    e["tid"].as_u64().unwrap(),
                    e["args"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                (0, "cpu0 (cpu)"),
                (1, "gpu0 (gpu)"),
                (2, "link host → gpu0"),
                (3, "link gpu0 → host")
            ]
        );
        let copies: Vec<(u64, f64, f64)> = events
            .iter()
            .filter(|e| e["cat"] == "copy")
            .map(|e| {
                (
                    e["tid"].as_u64().unwrap(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(copies, [(2, 1.0, 5.0), (3, 9.0, 5.0), (2, 20.0, 5.0)]);
    }
}

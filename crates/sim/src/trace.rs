//! Perfetto / Chrome trace-event JSON from run records: one process per policy run, one
//! track (thread) per unit named after it, an "X" slice per run segment, flow events
//! ("s" at the unit a task left, "f" at its next start) for migrations and steals, and
//! "C" counter events for queue lengths (one counter per unit plus the central queue).
//! Times are microseconds.

use hetsched_core::record::{EventKind, Record};
use hetsched_core::task::{Placement, QueueId};
use rustc_hash::FxHashMap;
use serde_json::{json, Value};

/// The trace of one or more runs, as a JSON document.
pub fn trace(records: &[Record]) -> Value {
    let mut events = Vec::new();
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut flow_id = 0u64;
    for (p, rec) in records.iter().enumerate() {
        let pid = p + 1;
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": rec.policy}}));
        for (u, name) in rec.unit_names.iter().enumerate() {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": u, "args": {"name": format!("{name} ({})", rec.unit_kinds[u])}}));
            events.push(json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": u, "args": {"sort_index": u}}));
        }
        let mut open: FxHashMap<u64, (u32, u64)> = FxHashMap::default();
        let mut kinds: FxHashMap<u64, std::sync::Arc<str>> = FxHashMap::default();
        let mut pending_flow: FxHashMap<u64, u64> = FxHashMap::default();
        let mut qlen: FxHashMap<QueueId, i64> = FxHashMap::default();
        let mut counter = |events: &mut Vec<Value>, q: QueueId, delta: i64, t: u64| {
            let n = qlen.entry(q).or_insert(0);
            *n += delta;
            let name = match q {
                QueueId::Unit(u) => format!("queue {}", rec.unit_names[u as usize]),
                QueueId::Central => "queue central".to_string(),
            };
            events.push(
                json!({"ph": "C", "name": name, "pid": pid, "ts": us(t), "args": {"tasks": *n}}),
            );
        };
        for e in &rec.events {
            match &e.kind {
                EventKind::Submit { kind, .. } => {
                    kinds.insert(e.task, kind.clone());
                }
                EventKind::Enqueue { queue } => counter(&mut events, *queue, 1, e.t_ns),
                EventKind::Start { unit, from } => {
                    counter(&mut events, *from, -1, e.t_ns);
                    if matches!(from, QueueId::Unit(q) if q != unit) {
                        flow_id += 1;
                        let src = match from {
                            QueueId::Unit(q) => *q,
                            QueueId::Central => *unit,
                        };
                        events.push(json!({"ph": "s", "name": "steal", "cat": "steal", "id": flow_id, "pid": pid, "tid": src, "ts": us(e.t_ns)}));
                        pending_flow.insert(e.task, flow_id);
                    }
                    open.insert(e.task, (*unit, e.t_ns));
                    if let Some(id) = pending_flow.remove(&e.task) {
                        events.push(json!({"ph": "f", "bp": "e", "name": "move", "cat": "migration", "id": id, "pid": pid, "tid": unit, "ts": us(e.t_ns)}));
                    }
                }
                EventKind::Stop { .. } | EventKind::Complete { .. } => {
                    if let Some((unit, t0)) = open.remove(&e.task) {
                        let kind = kinds.get(&e.task).map_or("task", |k| &**k);
                        events.push(json!({
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
                        counter(&mut events, *q, -1, e.t_ns);
                    }
                    counter(&mut events, QueueId::Unit(*to), 1, e.t_ns);
                    events.push(json!({"ph": "s", "name": "move", "cat": "migration", "id": flow_id, "pid": pid, "tid": src, "ts": us(e.t_ns)}));
                    pending_flow.insert(e.task, flow_id);
                }
                EventKind::Reject { .. } => {
                    kinds.remove(&e.task);
                }
            }
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

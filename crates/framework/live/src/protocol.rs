//! The daemon's wire protocol, version 1 (documented in `docs/live.md`).
//!
//! A connection is a Unix stream socket carrying frames: a 4-byte little-endian length
//! followed by that many bytes of JSON (one [`Request`] from the client, one [`Reply`]
//! from the daemon). The first request must be `hello` with the protocol version; the
//! daemon answers `welcome` and passes the client's shared page and doorbell (see `shm`)
//! as `SCM_RIGHTS` file descriptors with that frame; a client that asked for the compact
//! encoding may then send its hot-path frames through the page. A client runs at most one
//! task at a time: `alloc` (answered when a unit is granted), `rerequest` at checkpoints,
//! `free` when it finished or was told to give the unit up.
//!
//! A malformed frame, an unknown request or one that is out of order (e.g. `rerequest`
//! without a grant) is answered with `error` and the connection is closed; the daemon
//! serves everyone else as before.

use crate::compact::COMPACT_BIT;
use hetsched_core::machine::UnitType;
use hetsched_sig::signature::Signature;
use serde::{Deserialize, Serialize};

pub const VERSION: u32 = 1;
/// Largest request the daemon accepts; a larger length prefix is a protocol error.
pub const MAX_REQUEST: usize = 64 * 1024;
/// Largest reply a client accepts (a `stats` reply lists thousands of tasks).
pub const MAX_REPLY: usize = 16 << 20;
/// Longest task kind name (bytes): the daemon keeps it for every task in its history.
pub const MAX_KIND: usize = 256;
/// Longest checkpoint interval a task may declare (one day, in ns): a policy multiplies
/// intervals, and an interval longer than any run says "never" better as 0.
pub const MAX_CHECKPOINT_NS: u64 = 86_400 * 1_000_000_000;
/// Most requests one `batch` may carry (see `batch`).
pub const MAX_BATCH: usize = 1024;

/// A task's meta information as `alloc` carries it: the one meta info type, whose serde
/// form is the wire's, with the program's signature (see
/// [`hetsched_core::task::MetaInfo`]).
pub type MetaInfo = hetsched_core::task::MetaInfo<Box<Signature>>;

/// A unit as the daemon reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnitInfo {
    pub id: u32,
    #[serde(rename = "type")]
    pub kind: UnitType,
    pub name: String,
    /// PUs a CPU grant pins to.
    pub cpus: Vec<u32>,
    /// OpenCL platform/device index or CUDA ordinal, for accelerators.
    pub device: Option<u32>,
    pub capacity: u32,
    /// Offline units take no new work and leave when their holder frees them.
    pub online: bool,
    pub running: Option<u64>,
    pub queued: usize,
    /// Host link of an accelerator (bytes/s, seconds), where known: what data-aware
    /// policies charge for copying a task's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bandwidth_bytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_latency_s: Option<f64>,
}

/// What a control client may change on a unit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitChanges {
    #[serde(default)]
    pub capacity: Option<u32>,
    #[serde(default)]
    pub name: Option<String>,
    /// Accelerators only: the host link's bandwidth (e.g. after a PCIe link retrained
    /// to fewer lanes, or to share it with another tenant).
    #[serde(default)]
    pub link_bandwidth_bytes_per_s: Option<f64>,
    /// Accelerators only: the host link's latency.
    #[serde(default)]
    pub link_latency_s: Option<f64>,
}

/// A unit a control client adds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewUnit {
    #[serde(rename = "type")]
    pub kind: UnitType,
    pub name: String,
    #[serde(default)]
    pub cpus: Vec<u32>,
    #[serde(default)]
    pub device: Option<u32>,
    #[serde(default = "default_capacity")]
    pub capacity: u32,
}

fn default_capacity() -> u32 {
    1024
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    Hello {
        version: u32,
        name: String,
        /// Ask for the compact encoding of the hot-path messages (see `compact`).
        #[serde(default)]
        compact: bool,
    },
    /// Ask for a unit for this connection's task (a new task, or the same task again
    /// after it gave its unit up). Answered with `granted` once a unit is free for it.
    Alloc {
        meta: MetaInfo,
    },
    /// At a checkpoint: may the task keep its unit?
    Rerequest,
    /// Release the unit; `finished` says the task is done (else it waits in a queue).
    Free {
        finished: bool,
    },
    /// Control API (daemon's uid or root only).
    ListUnits,
    AddUnit {
        unit: NewUnit,
    },
    RemoveUnit {
        id: u32,
    },
    AlterUnit {
        id: u32,
        changes: UnitChanges,
    },
    Stats,
    /// Several hot-path requests (`alloc`, `rerequest`, `free`) in one message,
    /// answered in order by one `batch` reply (see `batch`).
    Batch {
        requests: Vec<Request>,
    },
    /// Declares a task graph, in parts (a frame holds 64 KiB): each part's data handles
    /// and tasks follow those of the parts before it; `done` after each part but the
    /// last, whose answer (`graph`) says the graph runs. Its tasks are then allocated
    /// from any connection of the same uid with `meta.graph_task`, each granted once its
    /// predecessors have been freed as finished. The daemon runs one graph at a time;
    /// it ends when all its tasks have finished or its declaring connection closes.
    Graph {
        /// Bytes of each data handle.
        #[serde(default)]
        data: Vec<u64>,
        #[serde(default)]
        tasks: Vec<GraphTaskInfo>,
        /// The last part.
        #[serde(default)]
        last: bool,
    },
}

/// A task of a declared graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphTaskInfo {
    /// What it runs (its performance models' key, and its task kind).
    pub kernel: String,
    /// The performance-model footprint of its data sizes.
    #[serde(default)]
    pub footprint: u64,
    /// The data handles it accesses (indices of `data`, over all parts) and how.
    #[serde(default)]
    pub access: Vec<(u32, AccessMode)>,
    /// Predecessors besides those its accesses imply: earlier tasks' indices.
    #[serde(default)]
    pub after: Vec<u32>,
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub flops: f64,
}

impl From<&hetsched_core::graph::GraphTask> for GraphTaskInfo {
    fn from(t: &hetsched_core::graph::GraphTask) -> Self {
        GraphTaskInfo {
            kernel: t.kernel.to_string(),
            footprint: t.footprint,
            access: t
                .accesses
                .iter()
                .map(|a| (a.handle, a.mode.into()))
                .collect(),
            after: t.after.clone(),
            priority: t.priority,
            flops: t.flops,
        }
    }
}

/// How a graph task accesses a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessMode {
    R,
    W,
    Rw,
}

impl From<AccessMode> for hetsched_core::graph::Mode {
    fn from(m: AccessMode) -> Self {
        use hetsched_core::graph::Mode;
        match m {
            AccessMode::R => Mode::R,
            AccessMode::W => Mode::W,
            AccessMode::Rw => Mode::RW,
        }
    }
}

impl From<hetsched_core::graph::Mode> for AccessMode {
    fn from(m: hetsched_core::graph::Mode) -> Self {
        use hetsched_core::graph::Mode;
        match m {
            Mode::R => AccessMode::R,
            Mode::W => AccessMode::W,
            Mode::RW => AccessMode::Rw,
        }
    }
}

/// The answer to a `rerequest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Keep the unit until the next checkpoint.
    Keep,
    /// Write the checkpoint back, `free`, and `alloc` again: the task waits in a queue.
    Yield,
    /// As `yield`, and the next grant will be this unit (a migration).
    Migrate { to: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The frame was not valid JSON for a request, or too large.
    Malformed,
    /// The request is valid but not now (e.g. `rerequest` without a grant).
    OutOfOrder,
    /// The protocol version is not one this daemon speaks.
    Version,
    /// No unit, now or ever, can run the task (all affinities 0 for present types).
    NoUnit,
    /// The control API needs the daemon's uid or root; a graph's tasks are its uid's.
    PermissionDenied,
    /// Another client's task graph runs (the daemon runs one at a time).
    Busy,
    /// A control request named a unit that does not exist, or is otherwise invalid.
    Invalid,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStats {
    pub task: u64,
    pub kind: String,
    pub client: u64,
    pub state: String,
    pub unit: Option<u32>,
    pub grants: u32,
    pub run_ms: f64,
    /// A running task's latest sample, where the daemon measures its process: what
    /// the sources named in it measured over `sample.interval_ns`; fields no source
    /// here gives are absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<hetsched_core::policy::Sample>,
    /// How old the sample is, ms (the sampler's pass that measured it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_age_ms: Option<f64>,
    /// The process's threads, and how many of them the sample's pass read (at most
    /// `sampler::THREADS_PER_PASS`; CPU time always covers them all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_read: Option<u32>,
    /// Why the process the task named is not measured (its uid's cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Welcome {
        version: u32,
        client: u64,
        /// The compact encoding is on for this connection.
        #[serde(default)]
        compact: bool,
    },
    Granted {
        unit: UnitInfo,
        task: u64,
        /// The NUMA node the task's process should now keep its memory on (first touch
        /// or a policy's page migration); only for tasks that named a process (`pid`),
        /// whose agent applies it. Such a grant travels as JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        memory_node: Option<u32>,
    },
    Rerequest {
        verdict: Verdict,
    },
    Freed,
    Units {
        units: Vec<UnitInfo>,
    },
    Done,
    Stats {
        grants: u64,
        decisions: u64,
        /// The policy's ticks so far.
        #[serde(default)]
        ticks: u64,
        tasks: Vec<TaskStats>,
        /// The sampling thread, when the daemon measures processes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sampler: Option<crate::sampler::SamplerStats>,
    },
    Error {
        code: ErrorCode,
        message: String,
    },
    /// The replies to a `batch`, one per request, in order.
    Batch {
        replies: Vec<Reply>,
    },
    /// The graph declared runs: its task of index `i` has the id `first + i`.
    Graph {
        first: u64,
        tasks: u32,
    },
}

/// Appends one frame holding `msg` to `out`.
pub fn encode<T: Serialize>(msg: &T, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut *out, msg).expect("protocol messages serialise");
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// A frame cut from the front of a buffer.
#[derive(Debug, PartialEq)]
pub enum Frame<'a> {
    /// Not all of it has arrived yet.
    Incomplete,
    /// A JSON frame body and the total bytes it used.
    Body(&'a [u8], usize),
    /// A compact frame body (see `compact`) and the total bytes it used.
    Compact(&'a [u8], usize),
    /// The length prefix exceeds the limit given to [`next_frame`].
    TooLarge(usize),
}

/// Cuts the next frame off `buf`; frames longer than `max` bytes are `TooLarge`.
pub fn next_frame(buf: &[u8], max: usize) -> Frame<'_> {
    if buf.len() < 4 {
        return Frame::Incomplete;
    }
    let prefix = u32::from_le_bytes(buf[..4].try_into().unwrap());
    let len = (prefix & !COMPACT_BIT) as usize;
    if len > max {
        return Frame::TooLarge(len);
    }
    if buf.len() < 4 + len {
        return Frame::Incomplete;
    }
    let body = &buf[4..4 + len];
    if prefix & COMPACT_BIT != 0 {
        Frame::Compact(body, 4 + len)
    } else {
        Frame::Body(body, 4 + len)
    }
}

/// A request out of a frame (from a socket or a page), with the bytes it used; `None`
/// while it is incomplete. An error names what is wrong with it; `compact` says whether
/// the connection asked for the compact encoding. Never panics, whatever the bytes.
pub fn decode_request(
    frame: Frame<'_>,
    max: usize,
    compact: bool,
) -> Option<(Result<Request, String>, usize)> {
    Some(match frame {
        Frame::Incomplete => return None,
        Frame::TooLarge(n) => (Err(format!("frame of {n} bytes exceeds {max}")), 0),
        Frame::Body(body, used) => (
            serde_json::from_slice::<Request>(body)
                .map_err(|e| format!("not a valid request: {e}")),
            used,
        ),
        Frame::Compact(body, used) if compact => (
            crate::compact::decode_request(body)
                .map_err(|e| format!("not a valid compact request: {e}")),
            used,
        ),
        Frame::Compact(_, used) => (
            Err("a compact frame, but hello did not ask for the compact encoding".into()),
            used,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_core::task::PerUnitType;

    #[test]
    fn frames_round_trip_and_split() {
        let mut buf = Vec::new();
        encode(&Request::Rerequest, &mut buf);
        encode(&Request::Free { finished: true }, &mut buf);
        let Frame::Body(body, used) = next_frame(&buf, MAX_REQUEST) else {
            panic!()
        };
        assert_eq!(
            serde_json::from_slice::<Request>(body).unwrap(),
            Request::Rerequest
        );
        assert_eq!(next_frame(&buf[..used - 1], MAX_REQUEST), Frame::Incomplete);
        let Frame::Body(body, _) = next_frame(&buf[used..], MAX_REQUEST) else {
            panic!()
        };
        assert_eq!(
            serde_json::from_slice::<Request>(body).unwrap(),
            Request::Free { finished: true }
        );
        assert_eq!(
            next_frame(&u32::MAX.to_le_bytes(), MAX_REPLY),
            Frame::TooLarge(!COMPACT_BIT as usize)
        );
    }

    /// The meta info's serde form is the wire's that clients of every version speak: the
    /// field names, the unit types by name with every one written, the optional fields
    /// left out when unset; and what it refuses, it refuses in the words clients and
    /// tests match.
    #[test]
    fn meta_info_round_trips_in_its_wire_form() {
        let short = r#"{"kind":"md5","affinity":{"cpu":1.0,"gpu":0.0,"opencl":2.0,"coprocessor":0.0},"memory_to_copy":64,"weight":1024}"#;
        let meta: MetaInfo = serde_json::from_str(short).unwrap();
        assert_eq!(
            (meta.affinity, meta.bytes_in, meta.checkpoint_ns),
            (PerUnitType([1.0, 0.0, 2.0, 0.0]), 64, PerUnitType([0; 4]))
        );
        assert_eq!(serde_json::to_string(&meta).unwrap(), short);
        let full = r#"{"kind":"k","affinity":{"cpu":1.0,"gpu":0.0,"opencl":0.0,"coprocessor":0.5},"memory_to_copy":1,"weight":7,"bytes_out":2,"checkpoint_ns":{"cpu":0,"gpu":3,"opencl":0,"coprocessor":0},"numa_home":1,"pid":42,"device":"vda"}"#;
        let meta: MetaInfo = serde_json::from_str(full).unwrap();
        assert_eq!(
            (
                meta.checkpoint_ns.get(UnitType::Gpu),
                meta.bytes_out,
                meta.pid
            ),
            (3, 2, Some(42))
        );
        assert_eq!(serde_json::to_string(&meta).unwrap(), full);
        // Absent unit types are 0, absent fields their defaults.
        let meta: MetaInfo =
            serde_json::from_str(r#"{"kind":"k","affinity":{"gpu":2},"checkpoint_ns":{}}"#)
                .unwrap();
        assert_eq!(
            meta,
            MetaInfo {
                kind: "k".into(),
                affinity: PerUnitType([0.0, 2.0, 0.0, 0.0]),
                ..MetaInfo::default()
            }
        );
        for (bad, words) in [
            (
                r#"{"kind":"k","affinity":{"fpga":1}}"#,
                "unknown field `fpga`, expected one of `cpu`, `gpu`, `opencl`, `coprocessor`",
            ),
            (
                r#"{"kind":"k","affinity":3}"#,
                "invalid type: integer `3`, expected struct WireAffinity",
            ),
            (
                r#"{"kind":"k","affinity":{},"checkpoint_ns":{"cpu":-1}}"#,
                "invalid value: integer `-1`, expected u64",
            ),
            (
                r#"{"kind":"k","affinity":{},"checkpoint_ns":"x"}"#,
                "invalid type: string \"x\", expected struct WireCheckpoints",
            ),
            // The names the engine knows the fields by are not the wire's.
            (
                r#"{"kind":"k","affinity":{},"bytes_in":1}"#,
                "unknown field `bytes_in`",
            ),
            (
                r#"{"kind":"k","affinity":{},"io_device":0}"#,
                "unknown field `io_device`",
            ),
            (r#"{"kind":"k"}"#, "missing field `affinity`"),
        ] {
            let err = serde_json::from_str::<MetaInfo>(bad)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(words), "{bad}: {err}");
        }
    }

    #[test]
    fn unknown_fields_and_ops_are_rejected() {
        assert!(serde_json::from_str::<Request>(r#"{"op":"launch_missiles"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"op":"free","finished":true,"x":1}"#).is_err());
        let alloc = r#"{"op":"alloc","meta":{"kind":"md5","affinity":{"cpu":1,"opencl":2}}}"#;
        let Request::Alloc { meta } = serde_json::from_str(alloc).unwrap() else {
            panic!()
        };
        assert_eq!(
            (meta.affinity.get(UnitType::OpenCl), meta.weight),
            (2.0, 1024)
        );
    }
}

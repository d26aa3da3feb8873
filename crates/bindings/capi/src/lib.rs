//! The C ABI over [`hetsched_live::client::Client`]; the header is `include/hetsched.h`.
//!
//! C cannot take the meta info type every client declares
//! ([`hetsched_core::task::MetaInfo`]), so it has `#[repr(C)]` forms here, laid out as
//! the header declares them; they become that type (`From`) before anything reads them,
//! and the daemon checks them as it checks every client's.

use hetsched_core::task::PerUnitType;
use hetsched_live::client::Client;
use hetsched_live::protocol::{MetaInfo, Reply, Request, UnitInfo, Verdict};
use hetsched_live::server::default_socket_path;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::path::PathBuf;

pub const MAX_CPUS: usize = 256;

/// Affinity per unit type (`hetsched_affinity`).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Affinity {
    pub cpu: f64,
    pub gpu: f64,
    pub opencl: f64,
    pub coprocessor: f64,
}

impl From<Affinity> for hetsched_core::task::Affinity {
    fn from(a: Affinity) -> Self {
        PerUnitType([a.cpu, a.gpu, a.opencl, a.coprocessor])
    }
}

/// A task's meta information (`hetsched_meta`).
#[repr(C)]
pub struct Meta {
    pub kind: *const c_char,
    pub affinity: Affinity,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Per unit type, in `UnitType::ALL` order (cpu, gpu, opencl, coprocessor).
    pub checkpoint_ns: [u64; 4],
    /// −1: unknown.
    pub numa_home: i32,
    /// 0: 1024.
    pub weight: u32,
}

#[repr(C)]
pub struct Grant {
    pub unit: u32,
    pub kind: i32,
    pub device: i32,
    pub ncpus: u32,
    pub cpus: [u32; MAX_CPUS],
}

/// One request of a batch (`hetsched_op`).
#[repr(C)]
pub struct Op {
    /// 0 alloc, 1 rerequest, 2 free.
    pub op: i32,
    /// Free: the task is done.
    pub finished: i32,
    /// Alloc: the task's meta information.
    pub meta: *const Meta,
}

/// The answer to one request of a batch (`hetsched_result`).
#[repr(C)]
pub struct OpResult {
    /// 0 done (granted, freed), a verdict for a rerequest, −1 refused or not answered.
    pub status: i32,
    /// Rerequest answered with migrate: the target unit.
    pub migrate_to: u32,
    /// Alloc: the grant.
    pub grant: Grant,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: impl ToString) -> c_int {
    let text = CString::new(msg.to_string().replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
    -1
}

/// # Safety
/// `s` is NULL or a NUL-terminated string.
unsafe fn string(s: *const c_char) -> Option<String> {
    // SAFETY: per the caller's contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// # Safety
/// `socket_path` and `name` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn hetsched_connect(
    socket_path: *const c_char,
    name: *const c_char,
) -> *mut Client {
    // SAFETY: per the caller's contract.
    let (path, name) = unsafe { (string(socket_path), string(name)) };
    let path = path.map_or_else(default_socket_path, PathBuf::from);
    match Client::connect(&path, name.as_deref().unwrap_or("c client")) {
        Ok(c) => Box::into_raw(Box::new(c)),
        Err(e) => {
            set_error(e);
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// `c` comes from `hetsched_connect`; `kind` is NULL or a string; `affinity` and `grant`
/// point to valid structs.
#[no_mangle]
pub unsafe extern "C" fn hetsched_alloc(
    c: *mut Client,
    kind: *const c_char,
    affinity: *const Affinity,
    memory_to_copy: u64,
    grant: *mut Grant,
) -> c_int {
    if affinity.is_null() {
        return set_error("hetsched_alloc: NULL argument");
    }
    // SAFETY: non-NULL and valid per the caller's contract.
    let a = unsafe { &*affinity };
    let meta = Meta {
        kind,
        affinity: *a,
        bytes_in: memory_to_copy,
        bytes_out: 0,
        checkpoint_ns: [0; 4],
        numa_home: -1,
        weight: 0,
    };
    // SAFETY: per the caller's contract.
    unsafe { hetsched_alloc_meta(c, &meta, grant) }
}

/// # Safety
/// `c` comes from `hetsched_connect`; `meta` and `grant` point to valid structs and
/// `meta.kind` is NULL or a string.
#[no_mangle]
pub unsafe extern "C" fn hetsched_alloc_meta(
    c: *mut Client,
    meta: *const Meta,
    grant: *mut Grant,
) -> c_int {
    if c.is_null() || meta.is_null() || grant.is_null() {
        return set_error("hetsched_alloc: NULL argument");
    }
    // SAFETY: non-NULL and valid per the caller's contract.
    let (client, m, out) = unsafe { (&mut *c, &*meta, &mut *grant) };
    // SAFETY: per the caller's contract.
    match client.alloc(&unsafe { meta_info(m) }) {
        Ok(unit) => {
            fill_grant(&unit, out);
            0
        }
        Err(e) => set_error(e),
    }
}

/// The meta information a `hetsched_meta` describes.
///
/// # Safety
/// `m.kind` is NULL or a NUL-terminated string.
unsafe fn meta_info(m: &Meta) -> MetaInfo {
    // Every field by name: a field added to `hetsched_meta` is passed on here.
    let Meta {
        kind,
        affinity,
        bytes_in,
        bytes_out,
        checkpoint_ns,
        numa_home,
        weight,
    } = *m;
    MetaInfo {
        // SAFETY: per the caller's contract.
        kind: unsafe { string(kind) }.unwrap_or_else(|| "task".into()),
        affinity: affinity.into(),
        bytes_in,
        bytes_out,
        // In `UnitType::ALL` order, as a `PerUnitType` holds them.
        checkpoint_ns: PerUnitType(checkpoint_ns),
        // Any negative number: unknown.
        numa_home: u32::try_from(numa_home).ok(),
        weight: if weight == 0 { 1024 } else { weight },
        ..MetaInfo::default()
    }
}

fn fill_grant(unit: &UnitInfo, out: &mut Grant) {
    out.unit = unit.id;
    out.kind = unit.kind as i32;
    out.device = unit.device.map_or(-1, |d| d as i32);
    out.ncpus = unit.cpus.len().min(MAX_CPUS) as u32;
    for (slot, cpu) in out.cpus.iter_mut().zip(&unit.cpus) {
        *slot = *cpu;
    }
}

/// Sends `n` requests in one message and fills one result per request; returns how
/// many were answered (`n`, or fewer when the daemon refused one: its result is −1 and
/// the connection is closed), or −1 when the batch itself is refused.
///
/// # Safety
/// `c` comes from `hetsched_connect`; `ops` and `results` point to `n` structs each;
/// every alloc's `meta` points to a valid `hetsched_meta` whose `kind` is NULL or a
/// string.
#[no_mangle]
pub unsafe extern "C" fn hetsched_batch(
    c: *mut Client,
    ops: *const Op,
    n: u32,
    results: *mut OpResult,
) -> c_int {
    if c.is_null() || ops.is_null() || results.is_null() {
        return set_error("hetsched_batch: NULL argument");
    }
    let max = hetsched_live::protocol::MAX_BATCH;
    if n == 0 || n as usize > max {
        return set_error(format!(
            "hetsched_batch: n = {n}, accepted 1..={max} (HETSCHED_MAX_BATCH)"
        ));
    }
    // SAFETY: non-NULL, `n` valid structs each, per the caller's contract.
    let (client, ops, results) = unsafe {
        (
            &mut *c,
            std::slice::from_raw_parts(ops, n as usize),
            std::slice::from_raw_parts_mut(results, n as usize),
        )
    };
    let mut requests = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        requests.push(match op.op {
            0 if op.meta.is_null() => {
                return set_error(format!("hetsched_batch: ops[{i}].meta is NULL"))
            }
            // SAFETY: non-NULL and valid per the caller's contract.
            0 => Request::Alloc {
                meta: unsafe { meta_info(&*op.meta) },
            },
            1 => Request::Rerequest,
            2 => Request::Free {
                finished: op.finished != 0,
            },
            k => {
                return set_error(format!(
                    "hetsched_batch: ops[{i}].op = {k}, accepted 0 (alloc), 1 (rerequest), 2 (free)"
                ))
            }
        });
    }
    let replies = match client.batch(requests) {
        Ok(replies) => replies,
        Err(e) => return set_error(e),
    };
    for r in results.iter_mut() {
        r.status = -1;
    }
    for (reply, out) in replies.iter().zip(results.iter_mut()) {
        out.status = match reply {
            Reply::Granted { unit, .. } => {
                fill_grant(unit, &mut out.grant);
                0
            }
            Reply::Freed
            | Reply::Rerequest {
                verdict: Verdict::Keep,
            } => 0,
            Reply::Rerequest {
                verdict: Verdict::Yield,
            } => 1,
            Reply::Rerequest {
                verdict: Verdict::Migrate { to },
            } => {
                out.migrate_to = *to;
                2
            }
            Reply::Error { message, .. } => set_error(format!("daemon: {message}")),
            other => set_error(format!("daemon: unexpected {other:?}")),
        };
    }
    replies.len() as c_int
}

/// # Safety
/// `c` comes from `hetsched_connect`; `migrate_to` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn hetsched_rerequest(c: *mut Client, migrate_to: *mut u32) -> c_int {
    if c.is_null() {
        return set_error("hetsched_rerequest: NULL client");
    }
    // SAFETY: per the caller's contract.
    match unsafe { &mut *c }.rerequest() {
        Ok(Verdict::Keep) => 0,
        Ok(Verdict::Yield) => 1,
        Ok(Verdict::Migrate { to }) => {
            if !migrate_to.is_null() {
                // SAFETY: non-NULL and valid per the caller's contract.
                unsafe { *migrate_to = to };
            }
            2
        }
        Err(e) => set_error(e),
    }
}

/// # Safety
/// `c` comes from `hetsched_connect`.
#[no_mangle]
pub unsafe extern "C" fn hetsched_free(c: *mut Client, finished: c_int) -> c_int {
    if c.is_null() {
        return set_error("hetsched_free: NULL client");
    }
    // SAFETY: per the caller's contract.
    match unsafe { &mut *c }.free(finished != 0) {
        Ok(()) => 0,
        Err(e) => set_error(e),
    }
}

/// # Safety
/// `c` comes from `hetsched_connect` and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn hetsched_disconnect(c: *mut Client) {
    if !c.is_null() {
        // SAFETY: allocated by hetsched_connect, released once.
        drop(unsafe { Box::from_raw(c) });
    }
}

#[no_mangle]
pub extern "C" fn hetsched_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsched_core::machine::{UnitGranularity, UnitType};
    use hetsched_live::arbiter::Arbiter;
    use hetsched_live::protocol::{ErrorCode, MAX_CHECKPOINT_NS};

    fn c_meta(kind: *const c_char) -> Meta {
        Meta {
            kind,
            affinity: Affinity {
                cpu: 1.0,
                gpu: 0.0,
                opencl: 2.0,
                coprocessor: 0.5,
            },
            bytes_in: 10,
            bytes_out: 20,
            checkpoint_ns: [1, 2, 3, 4],
            numa_home: -1,
            weight: 0,
        }
    }

    /// A `hetsched_meta` becomes the meta info it describes: every field, C's "unknown"
    /// and "the default" as the meta info says them, the intervals in the header's unit
    /// type order.
    #[test]
    fn a_c_meta_becomes_the_meta_info_it_describes() {
        let kind = CString::new("md5").unwrap();
        // SAFETY: `kind` is a string.
        let meta = unsafe { meta_info(&c_meta(kind.as_ptr())) };
        let expected = MetaInfo {
            kind: "md5".into(),
            affinity: [
                (UnitType::Cpu, 1.0),
                (UnitType::OpenCl, 2.0),
                (UnitType::CoProcessor, 0.5),
            ]
            .into_iter()
            .collect(),
            bytes_in: 10,
            bytes_out: 20,
            checkpoint_ns: [
                (UnitType::Cpu, 1),
                (UnitType::Gpu, 2),
                (UnitType::OpenCl, 3),
                (UnitType::CoProcessor, 4),
            ]
            .into_iter()
            .collect(),
            numa_home: None,
            weight: 1024,
            ..MetaInfo::default()
        };
        assert_eq!(meta, expected);
        let m = Meta {
            numa_home: 0,
            weight: 7,
            ..c_meta(std::ptr::null())
        };
        // SAFETY: a NULL kind.
        let meta = unsafe { meta_info(&m) };
        assert_eq!(
            (meta.kind.as_str(), meta.numa_home, meta.weight),
            ("task", Some(0), 7)
        );
    }

    /// What is out of range in a `hetsched_meta` is refused by the daemon in the words it
    /// refuses any client's meta info with, naming the field and the accepted range.
    #[test]
    fn out_of_range_c_meta_is_refused_as_any_clients() {
        let mut m = hetsched_topology::machine_file::parse(
            "name = \"one\"\n[[package]]\ncores = 1\n",
            "test",
        )
        .unwrap();
        m.derive_units(UnitGranularity::Pu);
        let devices = hetsched_live::devices::described(&m);
        let mut a = Arbiter::new(m, devices, hetsched_policies::build("fcfs", 0).unwrap());
        let kind = CString::new("k").unwrap();
        let long = Meta {
            checkpoint_ns: [0, 0, MAX_CHECKPOINT_NS + 1, 0],
            ..c_meta(kind.as_ptr())
        };
        let negative = Meta {
            affinity: Affinity {
                gpu: -1.0,
                ..c_meta(kind.as_ptr()).affinity
            },
            ..c_meta(kind.as_ptr())
        };
        let nan = Meta {
            affinity: Affinity {
                opencl: f64::NAN,
                ..c_meta(kind.as_ptr()).affinity
            },
            ..c_meta(kind.as_ptr())
        };
        let far = Meta {
            numa_home: 7,
            ..c_meta(kind.as_ptr())
        };
        for (m, words) in [
            (
                long,
                "checkpoint_ns.opencl must be in [0, 86400000000000] (one day), not 86400000000001",
            ),
            (negative, "affinity for gpu must be a non-negative number"),
            (nan, "affinity for opencl must be a non-negative number"),
            (far, "numa_home 7 is not a NUMA node of this machine"),
        ] {
            // SAFETY: `kind` is a string.
            let (code, message) = a.alloc(1, &unsafe { meta_info(&m) }).unwrap_err();
            assert_eq!(code, ErrorCode::Malformed);
            assert!(message.starts_with(words), "{message}");
        }
    }
}

//! The C ABI over [`hetsched_live::client::Client`]; the header is `include/hetsched.h`.

use hetsched_live::client::Client;
use hetsched_live::protocol::{MetaInfo, Verdict, WireAffinity, WireCheckpoints};
use hetsched_live::server::default_socket_path;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::path::PathBuf;

pub const MAX_CPUS: usize = 256;

#[derive(Clone, Copy)]
#[repr(C)]
pub struct Affinity {
    pub cpu: f64,
    pub gpu: f64,
    pub opencl: f64,
    pub coprocessor: f64,
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
    let a = &m.affinity;
    let cp = m.checkpoint_ns;
    let meta = MetaInfo {
        // SAFETY: per the caller's contract.
        kind: unsafe { string(m.kind) }.unwrap_or_else(|| "task".into()),
        affinity: WireAffinity {
            cpu: a.cpu,
            gpu: a.gpu,
            opencl: a.opencl,
            coprocessor: a.coprocessor,
        },
        memory_to_copy: m.bytes_in,
        bytes_out: m.bytes_out,
        checkpoint_ns: WireCheckpoints {
            cpu: cp[0],
            gpu: cp[1],
            opencl: cp[2],
            coprocessor: cp[3],
        },
        // Any negative number: unknown.
        numa_home: u32::try_from(m.numa_home).ok(),
        weight: if m.weight == 0 { 1024 } else { m.weight },
        ..MetaInfo::default()
    };
    match client.alloc(&meta) {
        Ok(unit) => {
            out.unit = unit.id;
            out.kind = unit.kind as i32;
            out.device = unit.device.map_or(-1, |d| d as i32);
            out.ncpus = unit.cpus.len().min(MAX_CPUS) as u32;
            for (slot, cpu) in out.cpus.iter_mut().zip(&unit.cpus) {
                *slot = *cpu;
            }
            0
        }
        Err(e) => set_error(e),
    }
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

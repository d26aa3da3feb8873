//! Per-thread memory traces and their binary file format.
//!
//! A trace file holds one thread's memory accesses in program order (all integers
//! little-endian):
//!
//! ```text
//! header (16 bytes): magic "HSNT" | version u32 = 1 | record count u64
//! record (16 bytes): address u64 | pc u32 | gap u16 | kind u8 (0 read, 1 write) | 0u8
//! ```
//!
//! `pc` identifies the access site (an instruction address, or for our instrumented
//! kernels a source-site id); `gap` is the number of non-memory instructions the thread
//! executed since its previous access (saturating at 65535).
//!
//! A saved trace is read whole into memory (as large as the file), so a file is read
//! only if it is a regular file within [`MAX_FILE_BYTES`], and a directory's traces
//! only up to [`MAX_TOTAL_BYTES`] together.

use hetsched_core::{Error, Result};
use hetsched_util::files::{self, OutDir};
use std::io::{Read, Write};
use std::path::Path;

const MAGIC: &[u8; 4] = b"HSNT";
const VERSION: u32 = 1;
const RECORD_BYTES: usize = 16;

/// Largest trace file, bytes: 64 Mi accesses of one thread.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Largest sum of one benchmark's trace files, bytes (they are all in memory at once).
pub const MAX_TOTAL_BYTES: u64 = 4 << 30;

/// One memory access of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    pub pc: u32,
    /// Non-memory instructions since the previous access.
    pub gap: u16,
    pub write: bool,
}

/// The accesses of one thread, in program order.
pub type Trace = Vec<Access>;

/// The access site of the accesses [`with_stack_accesses`] inserts (no kernel line).
pub const STACK_PC: u32 = u32::MAX;

/// Where thread `t`'s simulated stack frame lives: one page per thread, high in the
/// 48-bit address space, far from the kernels' arrays.
pub fn stack_frame(t: usize) -> u64 {
    0x7f00_0000_0000 - (t as u64 + 1) * 4096
}

/// `traces` with `per_access` accesses to each thread's own stack frame inserted per
/// traced access, in bursts of `burst` consecutive ones (1 = spread evenly; a call's
/// pushes and pops come in bursts), the first burst before the thread's first access,
/// so first touch homes the frame at the thread's native core.
///
/// Why: Pin, which the paper used, records every load and store of the compiled code,
/// including register spills and call frames on each thread's stack, while our
/// kernels record only their data. This controlled variant asks how much such
/// private traffic changes the core-miss rate and the gains; `per_access` is a swept
/// parameter, not a measured property of SPLASH-2.
pub fn with_stack_accesses(traces: &[Trace], per_access: f64, burst: u32) -> Result<Vec<Trace>> {
    if !per_access.is_finite() || !(0.0..=16.0).contains(&per_access) {
        return Err(Error::input(format!(
            "stack accesses per traced access: {per_access} is outside 0–16"
        )));
    }
    if !(1..=1024).contains(&burst) {
        return Err(Error::input(format!(
            "stack burst: {burst} is outside 1–1024"
        )));
    }
    let burst_f = burst as f64;
    Ok(traces
        .iter()
        .enumerate()
        .map(|(t, trace)| {
            let frame = stack_frame(t);
            let mut out =
                Vec::with_capacity(trace.len() + (trace.len() as f64 * per_access) as usize + 1);
            let mut due = if per_access > 0.0 { burst_f } else { 0.0 };
            let mut k = 0u64;
            let mut stack = |out: &mut Trace| {
                // Eight words of one frame, alternately read and written.
                out.push(Access {
                    addr: frame + 8 * (k % 8),
                    pc: STACK_PC,
                    gap: 0,
                    write: k % 2 == 1,
                });
                k += 1;
            };
            for a in trace {
                while due >= burst_f {
                    for _ in 0..burst {
                        stack(&mut out);
                    }
                    due -= burst_f;
                }
                out.push(*a);
                due += per_access;
            }
            out
        })
        .collect())
}

/// Writes a trace in the binary format.
pub fn write_trace(w: &mut impl Write, trace: &[Access]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(16 + trace.len() * RECORD_BYTES);
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&VERSION.to_le_bytes());
    buf.extend_from_slice(&(trace.len() as u64).to_le_bytes());
    for a in trace {
        buf.extend_from_slice(&a.addr.to_le_bytes());
        buf.extend_from_slice(&a.pc.to_le_bytes());
        buf.extend_from_slice(&a.gap.to_le_bytes());
        buf.push(a.write as u8);
        buf.push(0);
    }
    w.write_all(&buf)
}

/// Reads a trace; `origin` names the source in error messages.
pub fn read_trace(r: &mut impl Read, origin: &str) -> Result<Trace> {
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes)
        .map_err(|e| Error::runtime(format!("{origin}: {e}")))?;
    parse_trace(&bytes, origin)
}

/// A trace from its bytes; `origin` names the source in error messages.
pub fn parse_trace(bytes: &[u8], origin: &str) -> Result<Trace> {
    if bytes.len() < 16 || &bytes[..4] != MAGIC {
        return Err(Error::input(format!(
            "{origin}: not a trace (magic \"HSNT\" expected)"
        )));
    }
    let version = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
    if version != VERSION {
        return Err(Error::input(format!(
            "{origin}: trace version {version}, expected {VERSION}"
        )));
    }
    let count = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
    let body = &bytes[16..];
    if body.len() as u64 != count.saturating_mul(RECORD_BYTES as u64) {
        return Err(Error::input(format!(
            "{origin}: header says {count} records but the body holds {} bytes",
            body.len()
        )));
    }
    body.chunks_exact(RECORD_BYTES)
        .enumerate()
        .map(|(i, r)| {
            let kind = r[14];
            if kind > 1 {
                return Err(Error::input(format!(
                    "{origin}: record {i}: kind {kind}, expected 0 or 1"
                )));
            }
            Ok(Access {
                addr: u64::from_le_bytes(r[0..8].try_into().unwrap()),
                pc: u32::from_le_bytes(r[8..12].try_into().unwrap()),
                gap: u16::from_le_bytes(r[12..14].try_into().unwrap()),
                write: kind == 1,
            })
        })
        .collect()
}

/// Writes one file per thread, `DIR/thread-<i>.trace`.
pub fn save_traces(dir: &OutDir, traces: &[Trace]) -> Result<()> {
    for (i, t) in traces.iter().enumerate() {
        let mut f = dir.file(&format!("thread-{i}.trace"))?;
        write_trace(&mut f, t).map_err(|e| f.error(e))?;
        f.finish()?;
    }
    Ok(())
}

/// Reads `DIR/thread-0.trace`, `thread-1.trace`, … until the first missing index: at
/// most [`crate::chip::MAX_CORES`] threads, each file a regular file of at most
/// [`MAX_FILE_BYTES`], [`MAX_TOTAL_BYTES`] in all.
pub fn load_traces(dir: &Path) -> Result<Vec<Trace>> {
    let mut traces = Vec::new();
    let mut total = 0u64;
    loop {
        let path = dir.join(format!("thread-{}.trace", traces.len()));
        if !path.exists() {
            break;
        }
        if traces.len() == crate::chip::MAX_CORES as usize {
            return Err(Error::input(format!(
                "{}: more than {} thread traces (a chip has at most {} cores)",
                dir.display(),
                crate::chip::MAX_CORES,
                crate::chip::MAX_CORES
            )));
        }
        let bytes = files::read(&path, "a NUCA trace", MAX_FILE_BYTES)?;
        total += bytes.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(Error::input(format!(
                "{}: the traces up to {} hold {total} bytes; a benchmark's traces may have at most {} together",
                dir.display(),
                path.display(),
                files::bytes(MAX_TOTAL_BYTES)
            )));
        }
        traces.push(parse_trace(&bytes, &path.display().to_string())?);
    }
    if traces.is_empty() {
        return Err(Error::input(format!(
            "{}: no thread-0.trace",
            dir.display()
        )));
    }
    Ok(traces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let t = vec![
            Access {
                addr: 0xdead_beef_0000,
                pc: 7,
                gap: 3,
                write: false,
            },
            Access {
                addr: 64,
                pc: u32::MAX,
                gap: u16::MAX,
                write: true,
            },
        ];
        let mut buf = Vec::new();
        write_trace(&mut buf, &t).unwrap();
        assert_eq!(buf.len(), 16 + 32);
        assert_eq!(read_trace(&mut buf.as_slice(), "t").unwrap(), t);
        let short = &buf[..buf.len() - 1];
        assert!(read_trace(&mut &short[..], "t")
            .unwrap_err()
            .to_string()
            .contains("header says 2"));
        let mut bad = buf.clone();
        bad[16 + 14] = 9;
        assert!(read_trace(&mut bad.as_slice(), "t")
            .unwrap_err()
            .to_string()
            .contains("record 0"));
        assert!(read_trace(&mut &b"nope"[..], "t").is_err());
    }

    #[test]
    fn directory_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let traces = vec![
            vec![Access {
                addr: 1,
                pc: 2,
                gap: 3,
                write: true,
            }],
            vec![],
        ];
        save_traces(&OutDir::create(dir.path()).unwrap(), &traces).unwrap();
        assert_eq!(load_traces(dir.path()).unwrap(), traces);
    }

    #[test]
    fn stack_accesses_are_inserted_in_bursts_at_the_given_rate() {
        let data = |i: u64| Access {
            addr: 0x1000 + 8 * i,
            pc: 7,
            gap: 3,
            write: false,
        };
        let traces = vec![(0..8).map(data).collect::<Trace>(), vec![data(0)]];
        let out = with_stack_accesses(&traces, 0.5, 2).unwrap();
        let kinds: String = out[0]
            .iter()
            .map(|a| if a.pc == STACK_PC { 's' } else { 'd' })
            .collect();
        // A burst first, then one burst of 2 per 4 data accesses.
        assert_eq!(kinds, "ssddddssdddd");
        assert!(out[0]
            .iter()
            .filter(|a| a.pc == STACK_PC)
            .all(|a| a.addr & !0xfff == stack_frame(0) && a.gap == 0));
        assert_eq!(out[1][0].addr & !0xfff, stack_frame(1));
        assert_eq!(with_stack_accesses(&traces, 0.0, 1).unwrap(), traces);
        let e = with_stack_accesses(&traces, f64::NAN, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("0–16"), "{e}");
        assert!(with_stack_accesses(&traces, 1.0, 0).is_err());
    }
}

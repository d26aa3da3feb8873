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

use hetsched_core::{Error, Result};
use std::io::{Read, Write};
use std::path::Path;

const MAGIC: &[u8; 4] = b"HSNT";
const VERSION: u32 = 1;
const RECORD_BYTES: usize = 16;

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
pub fn save_traces(dir: &Path, traces: &[Trace]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::runtime(format!("{}: {e}", dir.display())))?;
    for (i, t) in traces.iter().enumerate() {
        let path = dir.join(format!("thread-{i}.trace"));
        let mut f = std::fs::File::create(&path)
            .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
        write_trace(&mut f, t).map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// Reads `DIR/thread-0.trace`, `thread-1.trace`, … until the first missing index.
pub fn load_traces(dir: &Path) -> Result<Vec<Trace>> {
    let mut traces = Vec::new();
    loop {
        let path = dir.join(format!("thread-{}.trace", traces.len()));
        if !path.exists() {
            break;
        }
        let mut f = std::fs::File::open(&path)
            .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
        traces.push(read_trace(&mut f, &path.display().to_string())?);
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
        save_traces(dir.path(), &traces).unwrap();
        assert_eq!(load_traces(dir.path()).unwrap(), traces);
    }
}

//! The compact binary trace format (`.hstrace`), to save a trace once and replay it fast.
//!
//! Layout: the 8-byte magic `HSTRACE1`, then records until end of file. Each record
//! starts with an unsigned LEB128 varint `v`:
//! - `v & 3 == 0`: `v >> 2` (≥ 1) instructions were retired;
//! - `v & 3 == 1 | 2 | 3`: a load | store | modify of `v >> 2` bytes, followed by a
//!   second varint: the zig-zag encoded difference between this access's address and
//!   the previous access's address (the first access is relative to 0), wrapping.
//!
//! Instruction addresses are not kept (the analysis only counts instructions), so a
//! typical access costs 2–4 bytes against ~14 bytes of lackey text.

use crate::trace::{AccessKind, TraceSink, MAX_ACCESS_BYTES};
use hetsched_core::{Error, Result};
use std::io::{ErrorKind, Read, Write};

/// The file magic.
pub const MAGIC: &[u8; 8] = b"HSTRACE1";
const CHUNK: usize = 1 << 20;
/// Longest record: two 10-byte varints.
const MAX_RECORD: usize = 20;

/// A sink that writes the binary format.
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
    pending_instr: u64,
    prev_addr: u64,
    error: Option<std::io::Error>,
}

#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl<W: Write> Writer<W> {
    /// Start a trace (writes the magic).
    pub fn new(out: W) -> Self {
        let mut buf = Vec::with_capacity(CHUNK + MAX_RECORD);
        buf.extend_from_slice(MAGIC);
        Writer {
            out,
            buf,
            pending_instr: 0,
            prev_addr: 0,
            error: None,
        }
    }

    fn flush_instr(&mut self) {
        if self.pending_instr > 0 {
            // Split runs so that count << 2 cannot overflow.
            while self.pending_instr > 0 {
                let n = self.pending_instr.min(u64::MAX >> 2);
                put_varint(&mut self.buf, n << 2);
                self.pending_instr -= n;
            }
        }
    }

    fn drain(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Write what is pending, flush, and return the output (or the first write error).
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush_instr();
        self.drain();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> TraceSink for Writer<W> {
    fn instructions(&mut self, n: u64) {
        self.pending_instr = self.pending_instr.saturating_add(n);
    }

    #[inline]
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.flush_instr();
        let k = match kind {
            AccessKind::Load => 1,
            AccessKind::Store => 2,
            AccessKind::Modify => 3,
        };
        put_varint(&mut self.buf, (u64::from(size) << 2) | k);
        let delta = addr.wrapping_sub(self.prev_addr) as i64;
        put_varint(&mut self.buf, ((delta << 1) ^ (delta >> 63)) as u64);
        self.prev_addr = addr;
        if self.buf.len() >= CHUNK {
            self.drain();
        }
    }
}

/// Read a binary trace from `input` into `sink`; returns the bytes read.
pub fn parse<R: Read>(mut input: R, name: &str, sink: &mut dyn TraceSink) -> Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut filled = 0;
    let mut total = 0u64;
    let mut eof = false;
    // Fill until `want` bytes are available or the input ends.
    let mut fill = |buf: &mut Vec<u8>, filled: &mut usize, eof: &mut bool| -> Result<()> {
        while !*eof && *filled < buf.len() {
            match input.read(&mut buf[*filled..]) {
                Ok(0) => *eof = true,
                Ok(n) => {
                    *filled += n;
                    total += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::runtime(format!("{name}: read error: {e}"))),
            }
        }
        Ok(())
    };
    fill(&mut buf, &mut filled, &mut eof)?;
    if filled < MAGIC.len() || &buf[..MAGIC.len()] != MAGIC {
        return Err(Error::input(format!(
            "{name}: not a hetsched binary trace (expected the magic {:?} at offset 0)",
            std::str::from_utf8(MAGIC).unwrap_or_default()
        )));
    }
    let mut pos = MAGIC.len();
    let mut offset = 0u64; // file offset of buf[0]
    let mut prev_addr = 0u64;
    let corrupt = |at: u64, what: &str| Error::input(format!("{name}: byte {at}: {what}"));
    loop {
        if filled - pos < MAX_RECORD && !eof {
            buf.copy_within(pos..filled, 0);
            offset += pos as u64;
            filled -= pos;
            pos = 0;
            fill(&mut buf, &mut filled, &mut eof)?;
        }
        if pos == filled {
            break;
        }
        let at = offset + pos as u64;
        let v = get_varint(&buf[..filled], &mut pos)
            .ok_or_else(|| corrupt(at, "truncated or overlong varint"))?;
        match v & 3 {
            0 => {
                if v == 0 {
                    return Err(corrupt(at, "empty instruction run"));
                }
                sink.instructions(v >> 2)
            }
            k => {
                let size = u32::try_from(v >> 2)
                    .ok()
                    .filter(|&s| s <= MAX_ACCESS_BYTES)
                    .ok_or_else(|| {
                        corrupt(
                            at,
                            &format!(
                                "access size {} out of range: expected [0, {MAX_ACCESS_BYTES}] bytes",
                                v >> 2
                            ),
                        )
                    })?;
                let z = get_varint(&buf[..filled], &mut pos)
                    .ok_or_else(|| corrupt(at, "truncated address delta"))?;
                let delta = ((z >> 1) as i64) ^ -((z & 1) as i64);
                prev_addr = prev_addr.wrapping_add(delta as u64);
                let kind = match k {
                    1 => AccessKind::Load,
                    2 => AccessKind::Store,
                    _ => AccessKind::Modify,
                };
                sink.access(kind, prev_addr, size);
            }
        }
    }
    Ok(total)
}

#[inline]
fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Recorded;
    use proptest::prelude::*;

    fn event() -> impl Strategy<Value = Result<(AccessKind, u64, u32), u64>> {
        prop_oneof![
            (1u64..1000).prop_map(Err),
            (0u8..3, any::<u64>(), 0u32..4096).prop_map(|(k, a, s)| {
                let k = [AccessKind::Load, AccessKind::Store, AccessKind::Modify][k as usize];
                Ok((k, a, s))
            }),
            (0u8..3, 0u64..1 << 20, 1u32..9).prop_map(|(k, a, s)| {
                let k = [AccessKind::Load, AccessKind::Store, AccessKind::Modify][k as usize];
                Ok((k, 0x7fff_0000_0000 + a, s))
            }),
        ]
    }

    proptest! {
        #[test]
        fn round_trips(events in prop::collection::vec(event(), 0..2000)) {
            let mut original = Recorded::default();
            for e in &events {
                match *e {
                    Err(n) => original.instructions(n),
                    Ok((k, a, s)) => original.access(k, a, s),
                }
            }
            let mut w = Writer::new(Vec::new());
            original.replay(&mut w);
            let bytes = w.finish().unwrap();
            let mut back = Recorded::default();
            let n = parse(&bytes[..], "t", &mut back).unwrap();
            prop_assert_eq!(n, bytes.len() as u64);
            prop_assert_eq!(back, original);
        }
    }

    #[test]
    fn rejects_foreign_and_truncated_files() {
        assert!(matches!(
            parse(&b"I  1,1\n"[..], "t", &mut Recorded::default()),
            Err(Error::Input(_))
        ));
        let mut w = Writer::new(Vec::new());
        w.access(AccessKind::Load, u64::MAX - 5, 8);
        let mut bytes = w.finish().unwrap();
        bytes.pop();
        let e = parse(&bytes[..], "t.hstrace", &mut Recorded::default()).unwrap_err();
        assert!(e.to_string().contains("t.hstrace: byte 8"), "{e}");
    }
}

//! Trace sources: lackey text (live or saved) and the compact binary format.

pub mod binary;
pub mod lackey;
pub mod valgrind;

use crate::trace::{AccessKind, TraceSink};
use hetsched_core::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Replay a saved trace file, detecting its format (binary magic or lackey text).
/// Returns the bytes read. A file without a single instruction or access is an input
/// error: it is no trace of a program run, and its "signature" would be empty.
pub fn replay_file(path: &Path, sink: &mut dyn TraceSink) -> Result<u64> {
    let name = path.display().to_string();
    let mut f = File::open(path).map_err(|e| Error::input(format!("{name}: cannot open: {e}")))?;
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(Error::runtime(format!("{name}: read error: {e}"))),
        }
    }
    let input = (&head[..got]).chain(f);
    let mut seen = Seen { sink, any: false };
    let bytes = if &head[..got] == binary::MAGIC {
        binary::parse(input, &name, &mut seen)?
    } else {
        lackey::parse(input, &name, &mut seen).map(|s| s.bytes)?
    };
    if !seen.any {
        return Err(Error::input(format!(
            "{name}: no instructions or memory accesses: an empty trace"
        )));
    }
    Ok(bytes)
}

/// Passes events on, noting whether there were any.
struct Seen<'a> {
    sink: &'a mut dyn TraceSink,
    any: bool,
}

impl TraceSink for Seen<'_> {
    fn instructions(&mut self, n: u64) {
        self.any = true;
        self.sink.instructions(n);
    }
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.any = true;
        self.sink.access(kind, addr, size);
    }
}

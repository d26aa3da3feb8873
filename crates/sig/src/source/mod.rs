//! Trace sources: lackey text (live or saved) and the compact binary format.

pub mod binary;
pub mod lackey;
pub mod valgrind;

use crate::trace::TraceSink;
use hetsched_core::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Replay a saved trace file, detecting its format (binary magic or lackey text).
/// Returns the bytes read.
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
    if &head[..got] == binary::MAGIC {
        binary::parse(input, &name, sink)
    } else {
        lackey::parse(input, &name, sink).map(|s| s.bytes)
    }
}

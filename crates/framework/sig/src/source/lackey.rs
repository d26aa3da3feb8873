//! Streaming parser for valgrind lackey `--trace-mem=yes` output.
//!
//! Lines look like `I  0401c4e0,3` (an instruction), ` L 1ffefffe38,8` (load),
//! ` S …` (store) and ` M …` (modify): a hexadecimal address and a decimal size.
//! Valgrind's own messages (`==pid== …`, `--pid-- …`) and blank lines are skipped; any
//! other line is an input error naming its line number. The parser reads in large
//! chunks and never holds more than one chunk, so traces of any size stream through.

use crate::trace::{AccessKind, TraceSink, MAX_ACCESS_BYTES};
use hetsched_core::{Error, Result};
use std::io::{ErrorKind, Read};

const CHUNK: usize = 1 << 20;
/// The longest line accepted (lackey's are under 40 bytes): a file without newlines
/// (`/dev/zero`) is an error, not a buffer that grows without end.
pub const MAX_LINE: usize = 4096;

/// What a parse consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseStats {
    /// Bytes read.
    pub bytes: u64,
    /// Lines read (all kinds).
    pub lines: u64,
}

/// Parse a lackey trace from `input` into `sink`. `name` labels errors.
pub fn parse<R: Read>(mut input: R, name: &str, sink: &mut dyn TraceSink) -> Result<ParseStats> {
    let mut buf = vec![0u8; CHUNK];
    let mut filled = 0; // bytes of `buf` holding unparsed input
    let mut stats = ParseStats::default();
    let mut pending_instr = 0u64;
    loop {
        if filled > MAX_LINE {
            return Err(Error::input(format!(
                "{name}:{}: line longer than {MAX_LINE} bytes: not a lackey trace",
                stats.lines + 1
            )));
        }
        let n = match input.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::runtime(format!("{name}: read error: {e}"))),
        };
        stats.bytes += n as u64;
        let end = filled + n;
        let eof = n == 0;
        let mut start = 0;
        while let Some(off) = memchr_newline(&buf[start..end]) {
            stats.lines += 1;
            line(
                &buf[start..start + off],
                name,
                stats.lines,
                &mut pending_instr,
                sink,
            )?;
            start += off + 1;
        }
        if eof {
            if start < end {
                stats.lines += 1;
                line(
                    &buf[start..end],
                    name,
                    stats.lines,
                    &mut pending_instr,
                    sink,
                )?;
            }
            break;
        }
        buf.copy_within(start..end, 0);
        filled = end - start;
    }
    if pending_instr > 0 {
        sink.instructions(pending_instr);
    }
    Ok(stats)
}

#[inline]
fn memchr_newline(s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == b'\n')
}

#[inline]
fn line(
    l: &[u8],
    name: &str,
    lineno: u64,
    pending_instr: &mut u64,
    sink: &mut dyn TraceSink,
) -> Result<()> {
    let bad = || {
        Error::input(format!(
            "{name}:{lineno}: not a lackey trace line (expected `I  ADDR,SIZE` or ` L|S|M ADDR,SIZE`): {:?}",
            String::from_utf8_lossy(&l[..l.len().min(80)])
        ))
    };
    match l.first() {
        None => Ok(()),
        Some(b'I') => {
            if l.len() < 4 || l[1] != b' ' {
                return Err(bad());
            }
            *pending_instr += 1;
            Ok(())
        }
        Some(b' ') if l.len() >= 6 && l[2] == b' ' => {
            let kind = match l[1] {
                b'L' => AccessKind::Load,
                b'S' => AccessKind::Store,
                b'M' => AccessKind::Modify,
                _ => return Err(bad()),
            };
            let (addr, size) = addr_size(&l[3..]).ok_or_else(bad)?;
            if size > MAX_ACCESS_BYTES {
                return Err(Error::input(format!(
                    "{name}:{lineno}: access size {size} out of range: expected [0, {MAX_ACCESS_BYTES}] bytes"
                )));
            }
            if *pending_instr > 0 {
                sink.instructions(*pending_instr);
                *pending_instr = 0;
            }
            sink.access(kind, addr, size);
            Ok(())
        }
        Some(b'=') | Some(b'-') if l.starts_with(b"==") || l.starts_with(b"--") => Ok(()),
        Some(b'\r') if l.len() == 1 => Ok(()),
        _ => Err(bad()),
    }
}

/// Parse `HEX,DEC` (trailing whitespace allowed).
#[inline]
fn addr_size(s: &[u8]) -> Option<(u64, u32)> {
    let mut i = 0;
    let mut addr: u64 = 0;
    while i < s.len() {
        let d = match s[i] {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        if i >= 16 {
            return None;
        }
        addr = (addr << 4) | u64::from(d);
        i += 1;
    }
    if i == 0 || s.get(i) != Some(&b',') {
        return None;
    }
    i += 1;
    let digits_start = i;
    let mut size: u32 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        size = size.checked_mul(10)?.checked_add(u32::from(s[i] - b'0'))?;
        i += 1;
    }
    if i == digits_start || !s[i..].iter().all(|c| c.is_ascii_whitespace()) {
        return None;
    }
    Some((addr, size))
}

/// Write events as lackey lines (tests, and turning a binary trace back into text).
pub struct Writer<W: std::io::Write> {
    out: W,
    error: Option<std::io::Error>,
}

impl<W: std::io::Write> Writer<W> {
    /// Wrap an output.
    pub fn new(out: W) -> Self {
        Writer { out, error: None }
    }
    /// Flush and return the output, or the first write error.
    pub fn finish(mut self) -> std::io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
    fn emit(&mut self, args: std::fmt::Arguments<'_>) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_fmt(args) {
                self.error = Some(e);
            }
        }
    }
}

impl<W: std::io::Write> TraceSink for Writer<W> {
    fn instructions(&mut self, n: u64) {
        // Lackey prints an address per instruction; the analysis never uses it.
        for _ in 0..n {
            self.emit(format_args!("I  00000000,1\n"));
        }
    }
    fn access(&mut self, kind: AccessKind, addr: u64, size: u32) {
        self.emit(format_args!(" {} {addr:08x},{size}\n", kind.letter()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Recorded;

    #[test]
    fn parses_real_lackey_lines() {
        let text = "==123== Lackey, an example Valgrind tool\n\
                    I  0401c4e0,3\n\
                    I  0401c4e3,5\n \
                    S 1ffefffe38,8\n\
                    I  04020ea0,1\n \
                    L 04035b50,4\n \
                    M 0403a6c8,8\n\
                    ==123== \n";
        let mut r = Recorded::default();
        let st = parse(text.as_bytes(), "t", &mut r).unwrap();
        assert_eq!(st.lines, 8);
        assert_eq!(
            r.events,
            vec![
                Err(2),
                Ok((AccessKind::Store, 0x1ffefffe38, 8)),
                Err(1),
                Ok((AccessKind::Load, 0x04035b50, 4)),
                Ok((AccessKind::Modify, 0x0403a6c8, 8)),
            ]
        );
    }

    #[test]
    fn bad_lines_name_their_number() {
        let text = "I  0401c4e0,3\n X 1234,8\n";
        let err = parse(text.as_bytes(), "trace.txt", &mut Recorded::default()).unwrap_err();
        assert!(matches!(err, Error::Input(_)));
        assert!(err.to_string().starts_with("trace.txt:2:"), "{err}");
        for bad in [" L zz,8\n", " L 1234\n", " L 1234,\n", " L 1234,8x\n"] {
            assert!(
                parse(bad.as_bytes(), "t", &mut Recorded::default()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn small_reads_split_lines_anywhere() {
        // A reader that returns one byte at a time: lines straddle every chunk boundary.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                if self.0.is_empty() || b.is_empty() {
                    return Ok(0);
                }
                b[0] = self.0[0];
                self.0 = &self.0[1..];
                Ok(1)
            }
        }
        let text = b"I  1,1\n L 40,8\n S 7f,2\nI  2,1";
        let mut a = Recorded::default();
        let mut b = Recorded::default();
        parse(&text[..], "t", &mut a).unwrap();
        parse(Trickle(text), "t", &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.events.len(), 4);
    }
}

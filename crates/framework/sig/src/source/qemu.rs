//! The fast trace source: QEMU user mode with hetsched's TCG plugin (`qemu/hstrace.c`).
//!
//! Why: lackey prints ~50 bytes of text per access through a pipe, so capture, not
//! analysis, made profiling thousands of times slower than the program. The plugin
//! sees every data access of the emulated program and sends 8-byte block numbers
//! (exact mode) or only the samples of the sampled engine's filter (sampled mode:
//! repeats, block changes, time sampling with exact near distances, and the spatial
//! hash of [`crate::sampled`] are all evaluated in the plugin, with the same hash and
//! threshold, so the same blocks are sampled). Words arrive through a pipe on the
//! emulator's descriptor 3; the plugin itself, embedded in this library at build time,
//! is handed to QEMU as a memfd on descriptor 4, so no file is ever written.
//!
//! QEMU user mode traces the process it starts and its threads; a child it forks runs
//! untraced (the plugin counts forks and this module reports them), and a program it
//! `exec`s runs natively, which ends the trace without its end marker (an error here).

use crate::analysis::Analyzer;
use crate::near::{MID, NEAR};
use hetsched_core::{Error, Result};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The plugin, compiled by build.rs (empty when no C compiler was found).
const PLUGIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hstrace.so"));
/// The emulator's descriptor the plugin writes to.
const TRACE_FD: i32 = 3;
/// The emulator's descriptor holding the plugin.
const PLUGIN_FD: i32 = 4;

/// Word tags (top 4 bits), as documented in `qemu/hstrace.c`.
const T_BLOCK: u64 = 0;
const T_REPEAT: u64 = 1;
const T_PROGRESS: u64 = 2;
const T_SAMPLE: u64 = 3;
const T_SUMMARY: u64 = 4;
const T_FORK: u64 = 5;
const T_END: u64 = 15;
const PAYLOAD: u64 = (1 << 60) - 1;
/// More block accesses than any traced run makes (10^15: two weeks at 10^9/s); a
/// count above it is corrupt, and below it no sum of counts can overflow.
const MAX_ACCESSES: u64 = 1 << 50;

/// The QEMU user-mode emulator for this machine's architecture.
pub fn emulator() -> String {
    format!("qemu-{}", std::env::consts::ARCH)
}

/// Why the fast source cannot run here (`None`: it can).
pub fn unavailable() -> Option<String> {
    if PLUGIN.is_empty() {
        return Some("hetsched was built without a C compiler, so without its QEMU plugin".into());
    }
    let qemu = emulator();
    find_program(&qemu)
        .is_none()
        .then(|| format!("{qemu} is not installed (apt-get install qemu-user)"))
}

/// `program` as a path to an executable file: itself if it has a `/`, else its first
/// match in `PATH` (QEMU does not search `PATH`).
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program)).filter(|p| is_executable(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What a traced run produced besides the profile.
#[derive(Debug)]
pub struct QemuRun {
    /// The program's exit status (as the emulator reports it).
    pub status: ExitStatus,
    /// Trace bytes read from the pipe.
    pub bytes: u64,
    /// Child processes the program forked (not traced).
    pub forks: u64,
}

/// Run `program args…` under QEMU with the plugin, analysing into `analyzer` (exact
/// mode for an exact analyser, the plugin's filter at the analyser's rate for a
/// sampled one). `progress` is called with the block accesses seen so far, about
/// every 64 K words of trace. `quiet` discards the program's stdout.
pub fn trace_qemu(
    program: &str,
    args: &[String],
    quiet: bool,
    analyzer: &mut Analyzer,
    progress: &mut dyn FnMut(u64),
) -> Result<QemuRun> {
    if let Some(why) = unavailable() {
        return Err(Error::runtime(format!("the QEMU trace source: {why}")));
    }
    let path = find_program(program)
        .ok_or_else(|| Error::input(format!("{program}: no such executable (nor in PATH)")))?;
    let filter = match analyzer.sampled_engine() {
        Some(s) => format!("rate={},threshold={}", s.rate(), s.threshold()),
        None => "rate=0".into(),
    };
    let plugin = plugin_memfd()?;
    let (reader, writer) =
        std::io::pipe().map_err(|e| Error::runtime(format!("cannot create a pipe: {e}")))?;
    let (write_fd, plugin_fd) = (writer.as_raw_fd(), plugin.as_raw_fd());
    let mut cmd = Command::new(emulator());
    cmd.arg("-plugin")
        .arg(format!("/proc/self/fd/{PLUGIN_FD},fd={TRACE_FD},{filter}"))
        .arg(&path)
        .args(args);
    super::place_fds(
        &mut cmd,
        quiet,
        [(write_fd, TRACE_FD), (plugin_fd, PLUGIN_FD)],
    );
    let mut child = cmd.spawn().map_err(|e| {
        Error::runtime(format!(
            "cannot start {} (apt-get install qemu-user): {e}",
            emulator()
        ))
    })?;
    drop(cmd); // our copies of the write end go, so EOF arrives when QEMU exits
    drop(writer);
    drop(plugin);
    let mut decoder = Decoder::new(analyzer, progress);
    let read = decoder.read_all(reader);
    let status = child
        .wait()
        .map_err(|e| Error::runtime(format!("waiting for {}: {e}", emulator())))?;
    let bytes = read?;
    if bytes == 0 {
        return Err(Error::runtime(format!(
            "{} produced no trace for {program} ({status})",
            emulator()
        )));
    }
    if !decoder.ended {
        return Err(Error::runtime(format!(
            "the trace of {program} ended without its end marker ({status}): the \
             program called exec, which QEMU user mode runs untraced, or it was killed; \
             profile the program that does the work directly"
        )));
    }
    Ok(QemuRun {
        status,
        bytes,
        forks: decoder.forks,
    })
}

/// The embedded plugin in a memory file (close-on-exec; the child gets a copy).
fn plugin_memfd() -> Result<File> {
    // SAFETY: memfd_create with a valid C string; the returned descriptor is owned by
    // the File from here on.
    let fd = unsafe { libc::memfd_create(c"hstrace.so".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::runtime(format!("memfd_create: {e}")));
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let mut f = unsafe { File::from_raw_fd(fd) };
    f.write_all(PLUGIN)
        .map_err(|e| Error::runtime(format!("writing the QEMU plugin to a memfd: {e}")))?;
    Ok(f)
}

/// Turns the plugin's words into analysis.
struct Decoder<'a> {
    analyzer: &'a mut Analyzer,
    progress: &'a mut dyn FnMut(u64),
    /// The last block of exact mode (for repeats).
    prev: Option<u64>,
    /// Words of an incomplete record, carried to the next read.
    carry: Vec<u64>,
    /// Bytes of an incomplete word.
    partial: Vec<u8>,
    /// Words decoded so far (for error positions).
    offset: u64,
    ended: bool,
    forks: u64,
}

impl<'a> Decoder<'a> {
    fn new(analyzer: &'a mut Analyzer, progress: &'a mut dyn FnMut(u64)) -> Self {
        Decoder {
            analyzer,
            progress,
            prev: None,
            carry: Vec::new(),
            partial: Vec::new(),
            offset: 0,
            ended: false,
            forks: 0,
        }
    }

    /// Read the pipe to its end; returns the bytes read.
    fn read_all(&mut self, mut input: impl Read) -> Result<u64> {
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        let mut words = Vec::with_capacity(buf.len() / 8 + 8);
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::runtime(format!("reading the QEMU trace: {e}"))),
            };
            total += n as u64;
            self.partial.extend_from_slice(&buf[..n]);
            let whole = self.partial.len() / 8 * 8;
            words.clear();
            words.append(&mut self.carry);
            words.extend(
                self.partial[..whole]
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))),
            );
            self.partial.drain(..whole);
            let used = self.decode(&words)?;
            self.carry.extend_from_slice(&words[used..]);
        }
        if !self.partial.is_empty() || !self.carry.is_empty() {
            return Err(self.corrupt(0, "the trace ends inside a record"));
        }
        Ok(total)
    }

    fn corrupt(&self, at: usize, what: &str) -> Error {
        Error::runtime(format!(
            "QEMU trace word {}: {what} (the plugin and hetsched disagree: rebuild hetsched)",
            self.offset + at as u64
        ))
    }

    /// Decode the complete records at the start of `words`; returns the words used.
    fn decode(&mut self, words: &[u64]) -> Result<usize> {
        let mut i = 0;
        while i < words.len() {
            let (tag, payload) = (words[i] >> 60, words[i] & PAYLOAD);
            if self.ended {
                return Err(self.corrupt(i, "words after the end marker"));
            }
            let len = match tag {
                T_SAMPLE => 2,
                T_SUMMARY => 6,
                _ => 1,
            };
            if i + len > words.len() {
                break;
            }
            match tag {
                T_BLOCK => {
                    self.prev = Some(payload);
                    self.analyzer.block(payload);
                }
                T_REPEAT if self.prev.is_none() => {
                    return Err(self.corrupt(i, "a repeat before any block"))
                }
                T_REPEAT if self.analyzer.accesses() + payload > MAX_ACCESSES => {
                    return Err(self.corrupt(i, "more accesses than any run makes"))
                }
                T_REPEAT => self.analyzer.repeat_last(payload),
                T_PROGRESS => (self.progress)(payload),
                T_SAMPLE => {
                    // Bit 0 timed, 1 spatial, 2 long; bits 8..20 the walk's distance,
                    // its limit meaning "that far or more".
                    let (d, long) = (payload >> 8, payload & 4 != 0);
                    let limit = if long { MID } else { NEAR } as u64;
                    if payload & !0xf_ff07 != 0 || d > limit {
                        return Err(self.corrupt(i, "a malformed sample"));
                    }
                    let timed =
                        (payload & 1 != 0).then_some((long, (d < limit).then_some(d as u32)));
                    let Some(s) = self.analyzer.sampled_engine() else {
                        return Err(self.corrupt(i, "a sample in exact mode"));
                    };
                    s.captured(words[i + 1], timed, payload & 2 != 0);
                }
                T_SUMMARY => {
                    let [instructions, mem_ops, accesses, changes, repeats] =
                        words[i + 1..i + 6].try_into().expect("5 words");
                    let arrived = self.analyzer.accesses();
                    if accesses > MAX_ACCESSES || changes.saturating_add(repeats) != accesses {
                        return Err(self.corrupt(
                            i,
                            &format!(
                                "a summary of {accesses} accesses, {changes} block changes and \
                                 {repeats} repeats"
                            ),
                        ));
                    }
                    match self.analyzer.sampled_engine() {
                        Some(s) => s.captured_counts(changes, repeats),
                        None if arrived != accesses => {
                            return Err(self.corrupt(
                                i,
                                &format!(
                                "{arrived} block accesses arrived, the plugin counted {accesses}"
                            ),
                            ))
                        }
                        None => {}
                    }
                    self.analyzer.set_totals(instructions, mem_ops, accesses);
                }
                T_FORK => self.forks = payload,
                T_END => self.ended = true,
                _ => return Err(self.corrupt(i, &format!("unknown tag {tag}"))),
            }
            i += len;
        }
        self.offset += i as u64;
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Mode;
    use crate::trace::TraceSink;
    use proptest::prelude::*;

    fn decode(words: &[u64], mode: Mode) -> (Result<u64>, bool, crate::Profile) {
        let mut a = Analyzer::new(mode);
        let mut seen = 0;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut p = |n| seen = n;
        let mut d = Decoder::new(&mut a, &mut p);
        // Odd-sized reads split words and records anywhere.
        let r = d.read_all(std::io::Read::chain(
            &bytes[..13.min(bytes.len())],
            &bytes[13.min(bytes.len())..],
        ));
        let ended = d.ended;
        (r, ended, a.finish())
    }

    #[test]
    fn exact_words_give_the_profile_of_the_same_accesses() {
        let blocks = [5u64, 5, 5, 9, 5, 7, 7, 9];
        let mut words = vec![5, T_REPEAT << 60 | 2, 9, 5, 7, T_REPEAT << 60 | 1, 9];
        words.extend([
            T_PROGRESS << 60 | 8,
            T_SUMMARY << 60,
            100,
            8,
            8,
            5,
            3,
            T_END << 60,
        ]);
        let (r, ended, got) = decode(&words, Mode::Exact);
        assert_eq!(r.unwrap(), words.len() as u64 * 8);
        assert!(ended);
        let mut want = Analyzer::new(Mode::Exact);
        want.instructions(100);
        for b in blocks {
            want.access(crate::trace::AccessKind::Load, b << 6, 8);
        }
        assert_eq!(got, want.finish());
    }

    #[test]
    fn bad_words_are_errors_that_name_the_word() {
        for (words, what) in [
            (vec![T_REPEAT << 60 | 3], "a repeat before any block"),
            (vec![7 << 60], "unknown tag 7"),
            (vec![T_SAMPLE << 60 | 65 << 8, 1], "a malformed sample"),
            (
                vec![T_SAMPLE << 60 | 1025 << 8 | 5, 1],
                "a malformed sample",
            ),
            (vec![T_SAMPLE << 60, 1], "a sample in exact mode"),
            (vec![T_END << 60, 5], "after the end marker"),
            (vec![T_SUMMARY << 60, 1, 2], "ends inside a record"),
            (
                vec![5, T_SUMMARY << 60, 1, 1, 2, 1, 1],
                "the plugin counted 2",
            ),
            (
                vec![5, T_SUMMARY << 60, 1, 1, 1, 1, 1],
                "1 block changes and 1 repeats",
            ),
            (
                vec![5, T_REPEAT << 60 | 1 << 51],
                "more accesses than any run makes",
            ),
        ] {
            let e = decode(&words, Mode::Exact).0.unwrap_err().to_string();
            assert!(
                e.contains(what) && e.contains("QEMU trace word"),
                "{what}: {e}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_words_decode_or_fail_without_panicking(
            words in prop::collection::vec(prop_oneof![any::<u64>(), (0u64..16, 0u64..1100 << 8).prop_map(|(t, p)| t << 60 | p)], 0..64),
            sampled in any::<bool>(),
        ) {
            let mode = if sampled { Mode::Sampled(0.5) } else { Mode::Exact };
            let _ = decode(&words, mode);
        }
    }
}

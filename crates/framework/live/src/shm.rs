//! The per-client shared page: how a re-request inside the granted slice costs no
//! system call, and how the hot-path requests reach the daemon without one.
//!
//! The daemon creates one anonymous shared page per client (`memfd_create`), maps it,
//! and passes the descriptor to the client with its `welcome`, together with an eventfd
//! (the client's doorbell). Both are the client's own: what a client writes there can
//! only disturb that client. The page is sealed at its size first: a client that could
//! truncate it would kill the daemon with `SIGBUS` at its next look.
//!
//! - The flag word is `KEEP` while nothing could change the policy's answer at the
//!   client's next checkpoint, `ASK` once something might (another task waits for the
//!   unit, a unit the task could move to went idle, the time slice ran out). A client's
//!   `rerequest` reads it; on `KEEP` it keeps the unit without leaving user space.
//! - The request slot and the reply slot each hold one frame, encoded exactly as on the
//!   socket, and a sequence number bumped after the frame is written. A client has one
//!   request in flight at a time, so one slot per direction suffices. The daemon polls
//!   the request sequence numbers while it is busy; before it sleeps it raises each
//!   page's `asleep` word, and a client that then posts a request rings its doorbell.
//!   A client that waits for a reply polls the reply sequence number, then sleeps on it
//!   with `futex` after raising its `waiting` word, which tells the daemon to wake it.
//!   Either side's "raise, then re-check" and the other's "publish, then check" are
//!   sequentially consistent, so a wake-up is never missed.
//! - Each side publishes the CPU it runs on when it moved: the client as it sends a
//!   request, the daemon at each turn of its loop. Polling for the other side only pays while the other side runs
//!   elsewhere: on one CPU, a poller holds the CPU the other needs to answer, and the two
//!   take turns at the scheduler's pace (about 117 µs per round trip instead of 2 µs).
//!   So a client that finds the daemon on its CPU, and a daemon that has served a
//!   client on its CPU, yield the CPU (`sched_yield`) while they wait instead of
//!   spinning: the other side then runs at once, and neither needs a wake-up (blocking
//!   in `futex` and ringing cost more here: 14 µs per alloc+free against 10 µs). A word
//!   of 0 says "not published" (a client of an older library), which polls as before.
//! - A counter of replies written to the socket lets a client that waits for a socket
//!   reply poll in user space too.
//!
//! Frames are copied in and out with relaxed atomic word accesses: the other side may
//! scribble on the page at any time, and the daemon decodes only its own copy.

use memmap2::MmapMut;
use rustix::thread::futex;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

pub const KEEP: u32 = 0;
pub const ASK: u32 = 1;
const PAGE: usize = 4096;
// Word offsets, each hot word on its own cache line.
const FLAG: usize = 0;
const SOCKET_REPLIES: usize = 64;
const ASLEEP: usize = 128;
const REQUEST_SEQ: usize = 192;
/// The client's CPU plus one, on the line the daemon reads for each request anyway.
const CLIENT_CPU: usize = 196;
const REPLY_SEQ: usize = 256;
const WAITING: usize = 260;
/// The daemon's CPU plus one, on the line the client reads while it waits anyway.
const DAEMON_CPU: usize = 264;
const REQUEST_SLOT: usize = 512;
const REPLY_SLOT: usize = 2304;
/// Bytes of one slot: the largest frame the page carries.
pub const SLOT: usize = 1792;
/// A reply slot whose first word is this says: the reply is on the socket (it did not
/// fit in the slot). No frame starts with it: a frame's body is never empty.
const ON_SOCKET: u32 = 0;

/// The seals of every page before it is handed to a client: the client may write it
/// but can neither shrink it (the daemon's next access would be `SIGBUS`) nor grow it,
/// nor remove the seals.
pub const SEALS: nix::fcntl::SealFlag = nix::fcntl::SealFlag::F_SEAL_SHRINK
    .union(nix::fcntl::SealFlag::F_SEAL_GROW)
    .union(nix::fcntl::SealFlag::F_SEAL_SEAL);

/// One mapped page (either side).
pub struct SharedPage {
    file: File,
    map: MmapMut,
}

impl SharedPage {
    /// A new page: `KEEP`, no request, no reply; sealed at its size (see [`SEALS`]).
    pub fn create() -> std::io::Result<SharedPage> {
        use nix::sys::memfd::MFdFlags;
        let flags = MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING;
        let fd: OwnedFd = nix::sys::memfd::memfd_create(c"hetsched-page", flags)?;
        let file = File::from(fd);
        file.set_len(PAGE as u64)?;
        nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_ADD_SEALS(SEALS))?;
        Self::map(file)
    }

    /// Maps a page received from the daemon.
    pub fn from_fd(fd: OwnedFd) -> std::io::Result<SharedPage> {
        let file = File::from(fd);
        if file.metadata()?.len() < PAGE as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "shared page too small",
            ));
        }
        Self::map(file)
    }

    fn map(file: File) -> std::io::Result<SharedPage> {
        // SAFETY: the file is a private memfd (or one the daemon made for this client);
        // both sides only touch it through the atomics below.
        let map = unsafe { MmapMut::map_mut(&file)? };
        Ok(SharedPage { file, map })
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset.is_multiple_of(4) && offset + 4 <= PAGE);
        // SAFETY: the mapping is page-aligned, PAGE bytes long, lives as long as self,
        // and is only accessed atomically; offsets are aligned and inside it.
        unsafe { &*(self.map.as_ptr().add(offset) as *const AtomicU32) }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    // --- the flag word

    pub fn get(&self) -> u32 {
        self.word(FLAG).load(Ordering::Acquire)
    }

    pub fn set(&self, value: u32) {
        self.word(FLAG).store(value, Ordering::Release);
    }

    // --- socket replies

    /// Replies the daemon has finished writing to this client's socket (wrapping).
    pub fn socket_replies(&self) -> u32 {
        self.word(SOCKET_REPLIES).load(Ordering::Acquire)
    }

    /// The daemon: a reply is now in the client's socket.
    pub fn note_socket_reply(&self) {
        self.word(SOCKET_REPLIES).fetch_add(1, Ordering::Release);
    }

    // --- where each side runs (see the module doc)

    /// The client: publishes the CPU it runs on (before it posts a request).
    pub fn set_client_cpu(&self, cpu: u32) {
        self.word(CLIENT_CPU)
            .store(cpu.saturating_add(1), Ordering::Relaxed);
    }

    /// The daemon: the CPU the client last said it runs on, if it said.
    pub fn client_cpu(&self) -> Option<u32> {
        self.word(CLIENT_CPU).load(Ordering::Relaxed).checked_sub(1)
    }

    /// The daemon: publishes the CPU its loop runs on.
    pub fn set_daemon_cpu(&self, cpu: u32) {
        self.word(DAEMON_CPU)
            .store(cpu.saturating_add(1), Ordering::Relaxed);
    }

    /// The client: the CPU the daemon last said it runs on, if it said.
    pub fn daemon_cpu(&self) -> Option<u32> {
        self.word(DAEMON_CPU).load(Ordering::Relaxed).checked_sub(1)
    }

    // --- slots

    fn write_slot(&self, slot: usize, frame: &[u8]) {
        for (i, chunk) in frame.chunks(4).enumerate() {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            self.word(slot + 4 * i)
                .store(u32::from_le_bytes(word), Ordering::Relaxed);
        }
    }

    /// Copies the frame in `slot` (its length prefix says how long, clamped to the slot)
    /// into `out`, replacing its contents.
    fn read_slot(&self, slot: usize, out: &mut Vec<u8>) {
        out.clear();
        let prefix = self.word(slot).load(Ordering::Relaxed);
        let len = 4 + (prefix & !crate::compact::COMPACT_BIT) as usize;
        let len = len.min(SLOT);
        for i in 0..len.div_ceil(4) {
            out.extend_from_slice(
                &self
                    .word(slot + 4 * i)
                    .load(Ordering::Relaxed)
                    .to_le_bytes(),
            );
        }
        out.truncate(len);
    }

    /// The client: posts a request frame (at most [`SLOT`] bytes). Returns true if the
    /// daemon announced it sleeps, so the doorbell must be rung.
    pub fn post_request(&self, frame: &[u8]) -> bool {
        assert!(frame.len() <= SLOT, "a request frame larger than the slot");
        self.write_slot(REQUEST_SLOT, frame);
        self.word(REQUEST_SEQ).fetch_add(1, Ordering::SeqCst);
        self.word(ASLEEP).load(Ordering::SeqCst) != 0
    }

    /// The daemon: the request sequence number (a new request when it differs from the
    /// one last taken).
    pub fn request_seq(&self) -> u32 {
        self.word(REQUEST_SEQ).load(Ordering::Acquire)
    }

    /// The daemon: copies the posted request frame into `out` (possibly malformed: the
    /// client wrote it).
    pub fn take_request(&self, out: &mut Vec<u8>) {
        self.read_slot(REQUEST_SLOT, out)
    }

    /// The daemon, after announcing it sleeps: whether a request was posted since `seen`
    /// (sequentially consistent with the client's post and its look at `asleep`).
    pub fn posted_since(&self, seen: u32) -> bool {
        self.word(REQUEST_SEQ).load(Ordering::SeqCst) != seen
    }

    /// The daemon: announces it is about to sleep (`true`) or awake (`false`).
    pub fn set_asleep(&self, asleep: bool) {
        self.word(ASLEEP).store(asleep as u32, Ordering::SeqCst);
    }

    /// The daemon: writes a reply frame into the reply slot, or, if it does not fit,
    /// marks the slot "on the socket" (the caller writes it there); then publishes it
    /// and wakes the client if it sleeps. Returns whether the frame went into the slot.
    pub fn post_reply(&self, frame: &[u8]) -> bool {
        let fits = frame.len() <= SLOT;
        if fits {
            self.write_slot(REPLY_SLOT, frame);
        } else {
            self.word(REPLY_SLOT).store(ON_SOCKET, Ordering::Relaxed);
        }
        self.word(REPLY_SEQ).fetch_add(1, Ordering::SeqCst);
        if self.word(WAITING).load(Ordering::SeqCst) != 0 {
            // Not private: the two sides are different processes sharing the page.
            let _ = futex::wake(self.word(REPLY_SEQ), futex::Flags::empty(), 1);
        }
        fits
    }

    /// The client: the reply sequence number (compare after posting a request).
    pub fn reply_seq(&self) -> u32 {
        self.word(REPLY_SEQ).load(Ordering::Acquire)
    }

    /// The client: sleeps until the reply sequence number differs from `seen` or
    /// `timeout` passes.
    pub fn wait_reply(&self, seen: u32, timeout: Duration) {
        self.word(WAITING).store(1, Ordering::SeqCst);
        if self.word(REPLY_SEQ).load(Ordering::SeqCst) == seen {
            let t = rustix::time::Timespec {
                tv_sec: timeout.as_secs() as i64,
                tv_nsec: timeout.subsec_nanos() as i64,
            };
            // EAGAIN (it changed already), EINTR and ETIMEDOUT all mean: look again.
            let _ = futex::wait(self.word(REPLY_SEQ), futex::Flags::empty(), seen, Some(&t));
        }
        self.word(WAITING).store(0, Ordering::SeqCst);
    }

    /// The client: copies the reply into `out`; `false` means it is on the socket.
    pub fn take_reply(&self, out: &mut Vec<u8>) -> bool {
        if self.word(REPLY_SLOT).load(Ordering::Relaxed) == ON_SOCKET {
            return false;
        }
        self.read_slot(REPLY_SLOT, out);
        true
    }
}

/// The CPU the calling thread runs on now (through the vDSO: no system call).
pub fn this_cpu() -> u32 {
    u32::try_from(rustix::thread::sched_getcpu()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (SharedPage, SharedPage) {
        let daemon = SharedPage::create().unwrap();
        let client = SharedPage::from_fd(daemon.fd().try_clone_to_owned().unwrap()).unwrap();
        (daemon, client)
    }

    #[test]
    fn a_page_cannot_be_resized_or_unsealed() {
        let (daemon, _client) = pair();
        let file = File::from(daemon.fd().try_clone_to_owned().unwrap());
        for len in [0, PAGE as u64 - 1, PAGE as u64 + 1, 1 << 30] {
            let err = file.set_len(len).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc_eperm()), "set_len({len})");
        }
        let seals = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GET_SEALS).unwrap();
        assert_eq!(seals, SEALS.bits());
        let unseal = nix::fcntl::fcntl(
            &file,
            nix::fcntl::FcntlArg::F_ADD_SEALS(nix::fcntl::SealFlag::F_SEAL_WRITE),
        );
        assert_eq!(
            unseal,
            Err(nix::errno::Errno::EPERM),
            "sealed against new seals"
        );
        daemon.set(ASK);
        assert_eq!(daemon.get(), ASK, "still writable");
    }

    fn libc_eperm() -> i32 {
        nix::errno::Errno::EPERM as i32
    }

    #[test]
    fn a_second_mapping_sees_the_first_ones_writes() {
        let (daemon, client) = pair();
        assert_eq!(client.get(), KEEP);
        daemon.set(ASK);
        assert_eq!(client.get(), ASK);
        client.set(KEEP);
        assert_eq!(daemon.get(), KEEP);
        let before = client.socket_replies();
        daemon.note_socket_reply();
        assert_eq!(client.socket_replies(), before.wrapping_add(1));
        assert_eq!(client.get(), KEEP, "the counter is a separate word");
    }

    #[test]
    fn frames_travel_through_the_slots_with_their_sequence_numbers() {
        let (daemon, client) = pair();
        let mut frame = Vec::new();
        crate::compact::encode_request(
            &crate::protocol::Request::Free { finished: true },
            &mut frame,
        );
        let seq = daemon.request_seq();
        assert!(
            !client.post_request(&frame),
            "an awake daemon needs no doorbell"
        );
        assert_eq!(daemon.request_seq(), seq.wrapping_add(1));
        let mut got = vec![9; 3];
        daemon.take_request(&mut got);
        assert_eq!(got, frame);

        daemon.set_asleep(true);
        assert!(
            client.post_request(&frame),
            "a sleeping daemon must be rung"
        );
        daemon.set_asleep(false);

        let seen = client.reply_seq();
        let odd = vec![7u8; 4 + 5]; // a length prefix of 0x07070707 clamps to the slot
        assert!(daemon.post_reply(&odd));
        assert_eq!(client.reply_seq(), seen.wrapping_add(1));
        assert!(client.take_reply(&mut got));
        assert_eq!(
            got.len(),
            SLOT,
            "a lying length prefix is clamped to the slot"
        );
        assert_eq!(&got[..odd.len()], &odd[..]);

        assert!(!daemon.post_reply(&vec![1u8; SLOT + 1]));
        assert!(
            !client.take_reply(&mut got),
            "too large: the reply is on the socket"
        );
    }

    #[test]
    fn each_side_reads_the_cpu_the_other_published() {
        let (daemon, client) = pair();
        assert_eq!(daemon.client_cpu(), None, "a fresh page says nothing");
        assert_eq!(client.daemon_cpu(), None);
        for cpu in [0, 1, 4095] {
            client.set_client_cpu(cpu);
            daemon.set_daemon_cpu(cpu + 1);
            assert_eq!(daemon.client_cpu(), Some(cpu));
            assert_eq!(client.daemon_cpu(), Some(cpu + 1));
        }
        client.set_client_cpu(7);
        let mut frame = Vec::new();
        crate::compact::encode_request(
            &crate::protocol::Request::Free { finished: true },
            &mut frame,
        );
        client.post_request(&frame);
        let mut got = Vec::new();
        daemon.take_request(&mut got);
        assert_eq!(got, frame, "the CPU words leave the request slot alone");
        assert_eq!(
            daemon.client_cpu(),
            Some(7),
            "and the slot leaves them alone"
        );
        assert_eq!(client.get(), KEEP);
        assert_eq!(client.reply_seq(), 0);
    }

    #[test]
    fn this_cpu_is_the_one_a_pinned_thread_runs_on() {
        let cpus = hetsched_worker::CpuMask::current().unwrap().cpus();
        for cpu in [cpus[0], cpus[cpus.len() - 1]] {
            let on = std::thread::spawn(move || {
                hetsched_util::host::pin_current_thread(&[cpu]).unwrap();
                this_cpu()
            });
            assert_eq!(on.join().unwrap(), cpu as u32);
        }
    }

    #[test]
    fn a_sleeping_client_is_woken_by_the_reply() {
        let (daemon, client) = pair();
        let seen = client.reply_seq();
        let waiter = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while client.reply_seq() == seen {
                client.wait_reply(seen, Duration::from_secs(10));
            }
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        let mut frame = Vec::new();
        crate::protocol::encode(&crate::protocol::Reply::Done, &mut frame);
        daemon.post_reply(&frame);
        let waited = waiter.join().unwrap();
        assert!(
            waited < Duration::from_secs(5),
            "woken by the reply, not the timeout ({waited:?})"
        );
    }
}

//! The per-client flag page: how a re-request inside the granted slice costs no
//! system call.
//!
//! The daemon creates one anonymous shared page per client (`memfd_create`), maps it,
//! and passes the descriptor to the client with its `welcome`. The page holds one
//! atomic word: `KEEP` while nothing could change the policy's answer at the client's
//! next checkpoint, `ASK` once something might (another task waits for the unit, a unit
//! the task could move to went idle, the time slice ran out). A client's `rerequest`
//! reads the word; on `KEEP` it keeps the unit without leaving user space, on `ASK` it
//! asks the daemon over the socket, whose answer comes from the policy itself.
//!
//! A second word, on its own cache line, counts the replies the daemon has written to
//! the client's socket: a client waiting for a reply polls it in user space instead of
//! polling the socket with system calls that contend with the daemon's write.

use memmap2::MmapMut;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

pub const KEEP: u32 = 0;
pub const ASK: u32 = 1;
const PAGE: usize = 4096;
/// Byte offset of the reply counter: a cache line away from the flag word.
const REPLIES: usize = 64;

/// One mapped flag page (either side).
pub struct FlagPage {
    file: File,
    map: MmapMut,
}

impl FlagPage {
    /// A new page, `KEEP`.
    pub fn create() -> std::io::Result<FlagPage> {
        let fd: OwnedFd = nix::sys::memfd::memfd_create(
            c"hetsched-flags",
            nix::sys::memfd::MFdFlags::MFD_CLOEXEC,
        )
        .map_err(std::io::Error::from)?;
        let file = File::from(fd);
        file.set_len(PAGE as u64)?;
        Self::map(file)
    }

    /// Maps a page received from the daemon.
    pub fn from_fd(fd: OwnedFd) -> std::io::Result<FlagPage> {
        let file = File::from(fd);
        if file.metadata()?.len() < PAGE as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "flag page too small",
            ));
        }
        Self::map(file)
    }

    fn map(file: File) -> std::io::Result<FlagPage> {
        // SAFETY: the file is a private memfd (or one the daemon made for this client);
        // both sides only touch it through the atomic below.
        let map = unsafe { MmapMut::map_mut(&file)? };
        Ok(FlagPage { file, map })
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset.is_multiple_of(4) && offset + 4 <= PAGE);
        // SAFETY: the mapping is page-aligned, PAGE bytes long, lives as long as self,
        // and is only accessed atomically; offsets are aligned and inside it.
        unsafe { &*(self.map.as_ptr().add(offset) as *const AtomicU32) }
    }

    pub fn get(&self) -> u32 {
        self.word(0).load(Ordering::Acquire)
    }

    pub fn set(&self, value: u32) {
        self.word(0).store(value, Ordering::Release);
    }

    /// Replies the daemon has finished writing to this client's socket (wrapping).
    pub fn replies(&self) -> u32 {
        self.word(REPLIES).load(Ordering::Acquire)
    }

    /// The daemon: a reply is now in the client's socket.
    pub fn note_reply(&self) {
        self.word(REPLIES).fetch_add(1, Ordering::Release);
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_mapping_sees_the_first_ones_writes() {
        let daemon = FlagPage::create().unwrap();
        let client = FlagPage::from_fd(daemon.fd().try_clone_to_owned().unwrap()).unwrap();
        assert_eq!(client.get(), KEEP);
        daemon.set(ASK);
        assert_eq!(client.get(), ASK);
        client.set(KEEP);
        assert_eq!(daemon.get(), KEEP);
        let before = client.replies();
        daemon.note_reply();
        assert_eq!(client.replies(), before.wrapping_add(1));
        assert_eq!(client.get(), KEEP, "the counter is a separate word");
    }
}

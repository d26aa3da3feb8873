//! The benchmark's file system: in-memory FAT-style directories, as in the paper's
//! EFSL-derived setup (memory instead of disk, no buffer cache).
//!
//! A directory is an array of 32-byte FAT entries (8.3 name, attributes, times, first
//! cluster, size) behind a spin lock; a lookup takes the lock and scans for the name.
//! File `i` of directory `d` is named `F{i:07}.DAT` (names repeat across directories,
//! as in a real tree) and its first cluster and size derive from `(d, i)`, so a caller
//! can check that a lookup found exactly the entry it should. Entry order inside a
//! directory is shuffled (seeded) so scan lengths vary like in a real directory.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// One FAT directory entry (32 bytes, the on-disk layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: [u8; 11],
    pub attr: u8,
    pub nt_res: u8,
    pub crt_time_tenth: u8,
    pub crt_time: u16,
    pub crt_date: u16,
    pub lst_acc_date: u16,
    pub fst_clus_hi: u16,
    pub wrt_time: u16,
    pub wrt_date: u16,
    pub fst_clus_lo: u16,
    pub file_size: u32,
}

const _: () = assert!(std::mem::size_of::<DirEntry>() == 32);

hetsched_study::assumptions! { "coretime";
    /// Bytes per directory entry: the paper's setup, §Preliminary evidence (32-byte FAT
    /// entries; the layout of `DirEntry`).
    pub const ENTRY_BYTES: u64 = 32;
    /// Entries per directory of the lookup benchmark: the paper's setup, §Preliminary
    /// evidence (1000 entries per directory).
    pub const ENTRIES_PER_DIR: usize = 1000;
}
const ATTR_ARCHIVE: u8 = 0x20;

/// The 8.3 name of file `i` (space-padded, no dot, as FAT stores it).
pub fn file_name(i: usize) -> [u8; 11] {
    let mut n = [b' '; 11];
    let s = format!("F{:07}DAT", i % 10_000_000);
    n.copy_from_slice(s.as_bytes());
    n
}

/// What a lookup of file `i` in directory `d` must return: (first cluster, size).
pub fn expected(d: usize, i: usize, per_dir: usize) -> (u32, u32) {
    let cluster = 2 + (d * per_dir + i) as u32;
    let size = (cluster.wrapping_mul(2_654_435_761) >> 12) & 0xF_FFFF;
    (cluster, size)
}

/// 8.3 names compared as one 8-byte word plus three bytes: the scan then costs about
/// what streaming the entries through the cache costs, as in a tuned file system.
fn same_name(a: &[u8; 11], b: &[u8; 11]) -> bool {
    let word = |n: &[u8; 11]| u64::from_ne_bytes([n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]);
    word(a) == word(b) && a[8..] == b[8..]
}

/// A directory: its entries behind a spin lock (the paper's per-directory lock).
pub struct Directory {
    entries: spin::Mutex<Box<[DirEntry]>>,
}

impl Directory {
    fn new(d: usize, per_dir: usize, rng: &mut ChaCha8Rng) -> Self {
        let mut entries: Vec<DirEntry> = (0..per_dir)
            .map(|i| {
                let (cluster, size) = expected(d, i, per_dir);
                DirEntry {
                    name: file_name(i),
                    attr: ATTR_ARCHIVE,
                    nt_res: 0,
                    crt_time_tenth: 0,
                    crt_time: 0,
                    crt_date: 0x5A21,
                    lst_acc_date: 0x5A21,
                    fst_clus_hi: (cluster >> 16) as u16,
                    wrt_time: 0,
                    wrt_date: 0x5A21,
                    fst_clus_lo: cluster as u16,
                    file_size: size,
                }
            })
            .collect();
        entries.shuffle(rng);
        Directory {
            entries: spin::Mutex::new(entries.into_boxed_slice()),
        }
    }

    /// Finds `name`: (first cluster, size), or None.
    pub fn lookup(&self, name: &[u8; 11]) -> Option<(u32, u32)> {
        let entries = self.entries.lock();
        entries.iter().find(|e| same_name(&e.name, name)).map(|e| {
            (
                (e.fst_clus_hi as u32) << 16 | e.fst_clus_lo as u32,
                e.file_size,
            )
        })
    }

    /// Bytes of directory data (what must be in a cache for a lookup to hit).
    pub fn bytes(&self) -> u64 {
        self.entries.lock().len() as u64 * ENTRY_BYTES
    }
}

/// A set of directories (the paper's workload picks one at random per lookup).
pub struct FileSystem {
    pub directories: Vec<Directory>,
    pub per_dir: usize,
}

impl FileSystem {
    /// `dirs` directories of `per_dir` files; `seed` fixes the entry order.
    pub fn new(dirs: usize, per_dir: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        FileSystem {
            directories: (0..dirs)
                .map(|d| Directory::new(d, per_dir, &mut rng))
                .collect(),
            per_dir,
        }
    }

    /// Total directory bytes.
    pub fn bytes(&self) -> u64 {
        self.directories.len() as u64 * self.per_dir as u64 * ENTRY_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_found_with_its_own_cluster_and_size() {
        let fs = FileSystem::new(3, ENTRIES_PER_DIR, 7);
        assert_eq!(fs.bytes(), 3 * 32_000);
        for (d, dir) in fs.directories.iter().enumerate() {
            assert_eq!(dir.bytes(), 32_000);
            for i in [0, 1, 499, 999] {
                assert_eq!(
                    dir.lookup(&file_name(i)),
                    Some(expected(d, i, ENTRIES_PER_DIR))
                );
            }
            assert_eq!(dir.lookup(&file_name(1000)), None);
        }
        // Different directories give different answers for the same name.
        assert_ne!(expected(0, 5, 1000), expected(1, 5, 1000));
    }

    #[test]
    fn layout_is_seeded() {
        let a = FileSystem::new(1, 50, 1);
        let b = FileSystem::new(1, 50, 1);
        let c = FileSystem::new(1, 50, 2);
        let order = |fs: &FileSystem| {
            fs.directories[0]
                .entries
                .lock()
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&a), order(&b));
        assert_ne!(order(&a), order(&c));
    }
}

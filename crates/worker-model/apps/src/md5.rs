//! Brute-force MD5 cracking: find the string of `length` letters of `alphabet`
//! whose MD5 is the target hash, enumerating words by index (the paper's
//! `currentWordNumber`; letter i of word w is digit i of w in base |alphabet|,
//! least significant first).

use crate::md5_cl::OpenClMd5;
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_worker::{Grant, Implementation, MetaInfo, Step, UnitState, Worker};
use md5::{Digest, Md5};
use std::sync::Arc;

/// Words between two checkpoints on the CPU (the paper's 500).
pub const CPU_INTERVAL: u64 = 500;
/// Words per OpenCL launch / checkpoint by default. The paper uses 10^9 on a GPU;
/// PoCL on a CPU hashes a few million words/s, so 2^16 keeps checkpoints frequent.
pub const OPENCL_INTERVAL: u32 = 1 << 16;
/// One MD5 block holds at most 55 message bytes; longer words are not supported.
pub const MAX_LENGTH: u32 = 55;

/// A validated cracking problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Md5Job {
    /// The MD5 to find.
    pub target: [u8; 16],
    /// Distinct ASCII letters.
    pub alphabet: Vec<u8>,
    /// Letters per word.
    pub length: u32,
    /// |alphabet|^length.
    pub words: u64,
}

impl Md5Job {
    /// Validate a hex hash, alphabet and length (errors name the field).
    pub fn new(hash_hex: &str, alphabet: &str, length: u32) -> Result<Self> {
        let hex = hash_hex.trim();
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::input(format!(
                "--hash: expected 32 hexadecimal digits (an MD5), got {hash_hex:?}"
            )));
        }
        let mut target = [0u8; 16];
        for (i, byte) in target.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|e| Error::input(format!("--hash: {e}")))?;
        }
        if alphabet.is_empty() {
            return Err(Error::input("--alphabet: must not be empty"));
        }
        if !alphabet.is_ascii() {
            return Err(Error::input(format!(
                "--alphabet: expected ASCII letters, got {alphabet:?}"
            )));
        }
        let bytes = alphabet.as_bytes().to_vec();
        let mut seen = [false; 128];
        for &b in &bytes {
            if std::mem::replace(&mut seen[b as usize], true) {
                return Err(Error::input(format!(
                    "--alphabet: letter {:?} appears twice (words would repeat)",
                    b as char
                )));
            }
        }
        if length == 0 || length > MAX_LENGTH {
            return Err(Error::input(format!(
                "--length: expected 1..={MAX_LENGTH}, got {length}"
            )));
        }
        let words = (bytes.len() as u64).checked_pow(length).ok_or_else(|| {
            Error::input(format!(
                "--alphabet/--length: {}^{length} words do not fit in 64 bits",
                bytes.len()
            ))
        })?;
        Ok(Md5Job {
            target,
            alphabet: bytes,
            length,
            words,
        })
    }

    /// The word with this index.
    pub fn word(&self, mut index: u64) -> Vec<u8> {
        let n = self.alphabet.len() as u64;
        (0..self.length)
            .map(|_| {
                let letter = self.alphabet[(index % n) as usize];
                index /= n;
                letter
            })
            .collect()
    }

    /// Target as lowercase hex.
    pub fn target_hex(&self) -> String {
        self.target.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// MD5 of `data` as lowercase hex (md-5 crate).
pub fn md5_hex(data: &[u8]) -> String {
    Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The state any implementation resumes from.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Md5Checkpoint {
    /// The first word not yet hashed.
    pub next_word: u64,
    /// Index of the matching word, once found.
    pub found: Option<u64>,
    /// Words actually hashed so far by all implementations (for accounting: a
    /// correct run has `words_hashed == next_word`).
    pub words_hashed: u64,
}

/// The cracked word (verified to hash to the target) or `None` when no word of
/// the search space matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Md5Found {
    pub index: u64,
    pub word: String,
}

/// Interval settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Md5Config {
    pub cpu_interval: u64,
    pub opencl_interval: u32,
}

impl Default for Md5Config {
    fn default() -> Self {
        Md5Config {
            cpu_interval: CPU_INTERVAL,
            opencl_interval: OPENCL_INTERVAL,
        }
    }
}

/// The MD5-cracking worker: affinity OpenCL 2, CPU 1 (the paper's GPU 2 / CPU 1;
/// GPU = CUDA has no implementation here, so 0).
pub struct Md5Cracker {
    job: Arc<Md5Job>,
    cpu: CpuMd5,
    opencl: OpenClMd5,
}

impl Md5Cracker {
    pub fn new(job: Md5Job, config: Md5Config) -> Result<Self> {
        if config.cpu_interval == 0 || config.opencl_interval == 0 {
            return Err(Error::input(
                "--cpu-interval / --opencl-interval: expected at least 1",
            ));
        }
        let job = Arc::new(job);
        Ok(Md5Cracker {
            cpu: CpuMd5 {
                job: job.clone(),
                interval: config.cpu_interval,
            },
            opencl: OpenClMd5 {
                job: job.clone(),
                interval: config.opencl_interval,
            },
            job,
        })
    }

    pub fn job(&self) -> &Md5Job {
        &self.job
    }
}

impl Worker for Md5Cracker {
    type Checkpoint = Md5Checkpoint;
    type Output = Option<Md5Found>;

    fn meta_info(&self) -> MetaInfo {
        MetaInfo {
            kind: "md5".into(),
            affinity: [(UnitType::OpenCl, 2.0), (UnitType::Cpu, 1.0)]
                .into_iter()
                .collect(),
            // The target hash and the alphabet are all a unit needs.
            bytes_in: 16 + self.job.alphabet.len() as u64,
            bytes_out: std::mem::size_of::<Md5Checkpoint>() as u64,
            ..MetaInfo::default()
        }
    }

    fn implementation_for(
        &self,
        unit: UnitType,
    ) -> Option<&dyn Implementation<Md5Checkpoint, Option<Md5Found>>> {
        match unit {
            UnitType::Cpu => Some(&self.cpu),
            UnitType::OpenCl => Some(&self.opencl),
            UnitType::Gpu | UnitType::CoProcessor => None,
        }
    }
}

/// The result a finished checkpoint stands for, verified against the target.
pub(crate) fn finish(job: &Md5Job, cp: &Md5Checkpoint) -> Result<Step<Option<Md5Found>>> {
    let Some(index) = cp.found else {
        return Ok(Step::Done(None));
    };
    let word = job.word(index);
    if Md5::digest(&word).as_slice() != job.target {
        return Err(Error::runtime(format!(
            "word {index} ({:?}) was reported but does not hash to {}",
            String::from_utf8_lossy(&word),
            job.target_hex()
        )));
    }
    Ok(Step::Done(Some(Md5Found {
        index,
        word: String::from_utf8_lossy(&word).into_owned(),
    })))
}

struct CpuMd5 {
    job: Arc<Md5Job>,
    interval: u64,
}

impl Implementation<Md5Checkpoint, Option<Md5Found>> for CpuMd5 {
    fn init(
        &self,
        checkpoint: &Md5Checkpoint,
        _grant: &Grant,
    ) -> Result<Box<dyn UnitState<Md5Checkpoint, Option<Md5Found>>>> {
        Ok(Box::new(CpuMd5State {
            job: self.job.clone(),
            interval: self.interval,
            cp: checkpoint.clone(),
        }))
    }
}

struct CpuMd5State {
    job: Arc<Md5Job>,
    interval: u64,
    cp: Md5Checkpoint,
}

impl UnitState<Md5Checkpoint, Option<Md5Found>> for CpuMd5State {
    fn main(&mut self) -> Result<Step<Option<Md5Found>>> {
        let job = &*self.job;
        if self.cp.found.is_some() || self.cp.next_word >= job.words {
            return finish(job, &self.cp);
        }
        let end = (self.cp.next_word + self.interval).min(job.words);
        // Odometer over letter indices: one division per interval, not per word.
        let n = job.alphabet.len();
        let mut digits: Vec<usize> = Vec::with_capacity(job.length as usize);
        let mut rest = self.cp.next_word;
        for _ in 0..job.length {
            digits.push((rest % n as u64) as usize);
            rest /= n as u64;
        }
        let mut word: Vec<u8> = digits.iter().map(|&d| job.alphabet[d]).collect();
        for index in self.cp.next_word..end {
            self.cp.words_hashed += 1;
            if Md5::digest(&word).as_slice() == job.target {
                self.cp.found = Some(index);
                self.cp.next_word = index + 1;
                return finish(job, &self.cp);
            }
            for (d, letter) in digits.iter_mut().zip(word.iter_mut()) {
                *d += 1;
                if *d < n {
                    *letter = job.alphabet[*d];
                    break;
                }
                *d = 0;
                *letter = job.alphabet[0];
            }
        }
        self.cp.next_word = end;
        if end == job.words {
            return finish(job, &self.cp);
        }
        Ok(Step::Checkpoint)
    }

    fn free(self: Box<Self>) -> Result<Md5Checkpoint> {
        Ok(self.cp)
    }
}

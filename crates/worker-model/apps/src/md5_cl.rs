//! The OpenCL implementation of MD5 cracking: one work-item per word, one launch
//! per checkpoint interval; the smallest matching offset wins (atomic_min).

use crate::md5::{finish, Md5Checkpoint, Md5Found, Md5Job};
use crate::opencl::ClKernel;
use hetsched_core::{Error, Result};
use hetsched_worker::{Grant, Implementation, Step, UnitState};
use opencl3::kernel::ExecuteKernel;
use opencl3::memory::Buffer;
use opencl3::types::{cl_uchar, cl_uint, cl_ulong};
use std::sync::Arc;

/// The exception to "prefer a crate": no crate runs inside an OpenCL kernel, so MD5
/// (RFC 1321, single 64-byte block, words of at most 55 bytes) is written out here in
/// OpenCL C. The host side verifies every hit with the md-5 crate.
const KERNEL: &str = r#"
__constant uint K[64] = {
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391 };
__constant uint S[64] = {
  7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
  5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
  4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
  6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21 };

__kernel void md5_search(ulong start, uint count, __global const uchar *alphabet,
                         uint letters, uint length, uint t0, uint t1, uint t2, uint t3,
                         __global uint *found) {
  uint gid = get_global_id(0);
  if (gid >= count) return;
  ulong index = start + gid;
  uint m[16];
  for (int i = 0; i < 16; i++) m[i] = 0;
  for (uint i = 0; i < length; i++) {
    uint letter = alphabet[index % letters];
    index /= letters;
    m[i >> 2] |= letter << ((i & 3) * 8);
  }
  m[length >> 2] |= 0x80u << ((length & 3) * 8);
  m[14] = length * 8;
  uint a = 0x67452301, b = 0xefcdab89, c = 0x98badcfe, d = 0x10325476;
  for (int i = 0; i < 64; i++) {
    uint f; int g;
    if (i < 16)      { f = (b & c) | (~b & d); g = i; }
    else if (i < 32) { f = (d & b) | (~d & c); g = (5 * i + 1) & 15; }
    else if (i < 48) { f = b ^ c ^ d;          g = (3 * i + 5) & 15; }
    else             { f = c ^ (b | ~d);       g = (7 * i) & 15; }
    uint t = d; d = c; c = b;
    b = b + rotate(a + f + K[i] + m[g], S[i]);
    a = t;
  }
  a += 0x67452301; b += 0xefcdab89; c += 0x98badcfe; d += 0x10325476;
  if (a == t0 && b == t1 && c == t2 && d == t3) atomic_min(found, gid);
}
"#;

pub(crate) struct OpenClMd5 {
    pub(crate) job: Arc<Md5Job>,
    pub(crate) interval: u32,
}

impl Implementation<Md5Checkpoint, Option<Md5Found>> for OpenClMd5 {
    fn init(
        &self,
        checkpoint: &Md5Checkpoint,
        grant: &Grant,
    ) -> Result<Box<dyn UnitState<Md5Checkpoint, Option<Md5Found>>>> {
        let device = grant.opencl_device.ok_or_else(|| {
            Error::runtime(format!(
                "grant of unit {} names no OpenCL device",
                grant.unit
            ))
        })?;
        let cl = ClKernel::open(device, KERNEL, "md5_search")?;
        let job = &*self.job;
        let alphabet = cl.upload(&job.alphabet)?;
        let t = |i: usize| u32::from_le_bytes(job.target[4 * i..4 * i + 4].try_into().unwrap());
        Ok(Box::new(OpenClMd5State {
            job: self.job.clone(),
            interval: self.interval,
            target: [t(0), t(1), t(2), t(3)],
            cp: checkpoint.clone(),
            cl,
            alphabet,
        }))
    }
}

struct OpenClMd5State {
    job: Arc<Md5Job>,
    interval: u32,
    target: [u32; 4],
    cp: Md5Checkpoint,
    cl: ClKernel,
    alphabet: Buffer<cl_uchar>,
}

impl UnitState<Md5Checkpoint, Option<Md5Found>> for OpenClMd5State {
    fn main(&mut self) -> Result<Step<Option<Md5Found>>> {
        let job = &*self.job;
        if self.cp.found.is_some() || self.cp.next_word >= job.words {
            return finish(job, &self.cp);
        }
        let count = (job.words - self.cp.next_word).min(self.interval as u64) as cl_uint;
        let start: cl_ulong = self.cp.next_word;
        let letters = job.alphabet.len() as cl_uint;
        let (alphabet, length, target) = (&self.alphabet, job.length, self.target);
        let hit = self.cl.search(|cl| {
            // SAFETY: argument types and order match the kernel; work size = count.
            unsafe {
                ExecuteKernel::new(&cl.kernel)
                    .set_arg(&start)
                    .set_arg(&count)
                    .set_arg(alphabet)
                    .set_arg(&letters)
                    .set_arg(&length)
                    .set_arg(&target[0])
                    .set_arg(&target[1])
                    .set_arg(&target[2])
                    .set_arg(&target[3])
                    .set_arg(&cl.found)
                    .set_global_work_size(count as usize)
                    .enqueue_nd_range(&cl.queue)
                    .map(drop)
            }
        })?;
        // The whole block was hashed, hit or not.
        self.cp.words_hashed += count as u64;
        self.cp.next_word += count as u64;
        if let Some(offset) = hit {
            self.cp.found = Some(start + offset as u64);
        }
        if self.cp.found.is_some() || self.cp.next_word == job.words {
            return finish(job, &self.cp);
        }
        Ok(Step::Checkpoint)
    }

    fn free(self: Box<Self>) -> Result<Md5Checkpoint> {
        // The only device-side state is per-launch; OpenCL objects release on drop.
        Ok(self.cp)
    }
}

//! The compact encoding of the hot-path messages (protocol version 1, optional).
//!
//! JSON costs a few microseconds per message here — as much as the socket exchange
//! itself — so a client may ask in `hello` (`"compact": true`) to send `alloc`,
//! `rerequest` and `free` in fixed little-endian layouts and to receive `granted`,
//! `rerequest` and `freed` the same way. Everything else (hello, errors, control, stats)
//! stays JSON. A compact frame is marked by the top bit of its length prefix, which a
//! JSON frame never sets (frames are at most [`MAX_REPLY`](crate::protocol::MAX_REPLY)
//! bytes). Layouts (first byte = message tag), documented in `docs/live.md`:
//!
//! | message | bytes after the tag |
//! |---|---|
//! | `A` alloc | weight u32, memory_to_copy u64, affinity cpu, gpu, opencl, coprocessor f64, kind (UTF-8, rest) |
//! | `B` alloc with extras | weight u32, memory_to_copy u64, bytes_out u64, checkpoint_ns cpu, gpu, opencl, coprocessor u64, numa_home u32 (`u32::MAX`: none), affinity cpu, gpu, opencl, coprocessor f64, kind (UTF-8, rest) |
//! | `R` rerequest | — |
//! | `F` free | finished u8 (0 / 1) |
//! | `G` granted (no memory node) | task u64, unit u32, type u8, capacity u32, device i64 (−1: none), online u8, running i64 (−1: none), queued u32, link bandwidth f64, link latency f64 (NaN: unknown), cpu count u32, cpus u32…, name (UTF-8, rest) |
//! | `V` rerequest verdict | 0 keep / 1 yield / 2 migrate, then the target unit u32 for migrate |
//! | `D` freed | — |
//! | `M` batch | count u32 (1 to [`MAX_BATCH`](crate::protocol::MAX_BATCH)), then that many compact request frames (length prefix and body), no batch among them |
//! | `N` batch reply | count u32, then that many compact reply frames, no batch among them |
//!
//! A batch whose requests or replies do not all have a compact form travels as JSON.

use crate::protocol::{MetaInfo, Reply, Request, UnitInfo, Verdict, MAX_BATCH};
use hetsched_core::machine::UnitType;
use hetsched_core::task::PerUnitType;

/// The length-prefix bit that marks a compact frame.
pub const COMPACT_BIT: u32 = 1 << 31;

/// Whether `meta` has a compact form, and whether it is the one with extras (`B`):
/// `None` when it carries a field the compact layouts do not hold (the optional fields
/// of `hetsched run` and graph tasks, and `u32::MAX`, which stands for "no NUMA home" there). The
/// fields are named one by one, so that a field added to the meta info travels as JSON
/// until it is given a place here.
fn compact_form(meta: &MetaInfo) -> Option<bool> {
    let MetaInfo {
        kind: _,
        affinity: _,
        bytes_in: _,
        weight: _,
        bytes_out,
        checkpoint_ns,
        numa_home,
        pid,
        device,
        signature,
        graph_task,
    } = meta;
    let compact = pid.is_none()
        && device.is_none()
        && signature.is_none()
        && graph_task.is_none()
        && *numa_home != Some(u32::MAX);
    // Most tasks declare no extras: their frame stays short.
    compact.then(|| *bytes_out != 0 || !checkpoint_ns.is_default() || numa_home.is_some())
}

/// Appends a compact frame for `request`, or returns false if it has no compact form.
pub fn encode_request(request: &Request, out: &mut Vec<u8>) -> bool {
    let start = frame_start(out);
    match request {
        Request::Alloc { meta } => {
            let Some(extras) = compact_form(meta) else {
                out.truncate(start);
                return false;
            };
            out.push(if extras { b'B' } else { b'A' });
            out.extend_from_slice(&meta.weight.to_le_bytes());
            out.extend_from_slice(&meta.bytes_in.to_le_bytes());
            if extras {
                out.extend_from_slice(&meta.bytes_out.to_le_bytes());
                for ns in meta.checkpoint_ns.0 {
                    out.extend_from_slice(&ns.to_le_bytes());
                }
                out.extend_from_slice(&meta.numa_home.unwrap_or(u32::MAX).to_le_bytes());
            }
            for a in meta.affinity.0 {
                out.extend_from_slice(&a.to_le_bytes());
            }
            out.extend_from_slice(meta.kind.as_bytes());
        }
        Request::Rerequest => out.push(b'R'),
        Request::Free { finished } => {
            out.push(b'F');
            out.push(*finished as u8);
        }
        Request::Batch { requests } => {
            let nested = |r: &Request| matches!(r, Request::Batch { .. });
            if !encode_items(b'M', requests, nested, encode_request, out) {
                out.truncate(start);
                return false;
            }
        }
        _ => {
            out.truncate(start);
            return false;
        }
    }
    frame_end(out, start);
    true
}

/// Appends a compact frame for `reply`, or returns false if it has no compact form.
pub fn encode_reply(reply: &Reply, out: &mut Vec<u8>) -> bool {
    let start = frame_start(out);
    match reply {
        Reply::Granted {
            unit,
            task,
            memory_node: None,
        } => {
            out.push(b'G');
            out.extend_from_slice(&task.to_le_bytes());
            out.extend_from_slice(&unit.id.to_le_bytes());
            out.push(type_code(unit.kind));
            out.extend_from_slice(&unit.capacity.to_le_bytes());
            out.extend_from_slice(&unit.device.map_or(-1, i64::from).to_le_bytes());
            out.push(unit.online as u8);
            out.extend_from_slice(&unit.running.map_or(-1, |t| t as i64).to_le_bytes());
            out.extend_from_slice(&(unit.queued as u32).to_le_bytes());
            for link in [unit.link_bandwidth_bytes_per_s, unit.link_latency_s] {
                out.extend_from_slice(&link.unwrap_or(f64::NAN).to_le_bytes());
            }
            out.extend_from_slice(&(unit.cpus.len() as u32).to_le_bytes());
            for cpu in &unit.cpus {
                out.extend_from_slice(&cpu.to_le_bytes());
            }
            out.extend_from_slice(unit.name.as_bytes());
        }
        Reply::Rerequest { verdict } => {
            out.push(b'V');
            match verdict {
                Verdict::Keep => out.push(0),
                Verdict::Yield => out.push(1),
                Verdict::Migrate { to } => {
                    out.push(2);
                    out.extend_from_slice(&to.to_le_bytes());
                }
            }
        }
        Reply::Freed => out.push(b'D'),
        Reply::Batch { replies } => {
            let nested = |r: &Reply| matches!(r, Reply::Batch { .. });
            if !encode_items(b'N', replies, nested, encode_reply, out) {
                out.truncate(start);
                return false;
            }
        }
        _ => {
            out.truncate(start);
            return false;
        }
    }
    frame_end(out, start);
    true
}

/// A batch body: `tag`, the count, then each item's compact frame; false if an item is
/// `nested` (a batch) or has no compact form.
fn encode_items<T>(
    tag: u8,
    items: &[T],
    nested: impl Fn(&T) -> bool,
    encode: fn(&T, &mut Vec<u8>) -> bool,
    out: &mut Vec<u8>,
) -> bool {
    out.push(tag);
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    items.iter().all(|item| !nested(item) && encode(item, out))
}

fn frame_start(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    start
}

fn frame_end(out: &mut [u8], start: usize) {
    let len = (out.len() - start - 4) as u32 | COMPACT_BIT;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

fn type_code(kind: UnitType) -> u8 {
    UnitType::ALL.iter().position(|&k| k == kind).unwrap() as u8
}

/// Reads fixed-size fields off the front of a body; every read says what was expected.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        if self.rest.len() < N {
            return Err(format!(
                "compact frame ends inside {what} ({N} bytes expected)"
            ));
        }
        let (head, rest) = self.rest.split_at(N);
        self.rest = rest;
        Ok(head.try_into().unwrap())
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take::<1>(what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(what)?))
    }
    fn i64(&mut self, what: &str) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(what)?))
    }
    fn f64(&mut self, what: &str) -> Result<f64, String> {
        Ok(f64::from_le_bytes(self.take(what)?))
    }
    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.rest.len() < n {
            return Err(format!(
                "compact frame ends inside {what} ({n} bytes expected)"
            ));
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }
    /// The rest: `count u32` compact frames, each decoded by `decode` (a frame whose tag
    /// is `nested`, a batch in a batch, is refused before it is decoded).
    fn batch<T>(
        mut self,
        what: &str,
        nested: u8,
        decode: impl Fn(&[u8]) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        let n = self.u32(&format!("{what} count"))? as usize;
        if !(1..=MAX_BATCH).contains(&n) {
            return Err(format!("{what} count {n}, accepted 1..={MAX_BATCH}"));
        }
        // Each item takes at least a length prefix and a tag.
        if n > self.rest.len() / 5 {
            return Err(format!("{what} count {n} exceeds the frame"));
        }
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            let prefix = self.u32(what)?;
            if prefix & COMPACT_BIT == 0 {
                return Err(format!("{what} item {i} is not a compact frame"));
            }
            let body = self.bytes((prefix & !COMPACT_BIT) as usize, what)?;
            if body.first() == Some(&nested) {
                return Err(format!("{what} item {i}: a batch inside a batch"));
            }
            items.push(decode(body).map_err(|e| format!("{what} item {i}: {e}"))?);
        }
        self.end(what)?;
        Ok(items)
    }
    fn text(self, what: &str) -> Result<String, String> {
        String::from_utf8(self.rest.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }
    fn end(self, what: &str) -> Result<(), String> {
        match self.rest.len() {
            0 => Ok(()),
            n => Err(format!("{n} stray bytes after {what}")),
        }
    }
}

/// Decodes a compact request body (the frame without its length prefix).
pub fn decode_request(body: &[u8]) -> Result<Request, String> {
    let Some((&tag, rest)) = body.split_first() else {
        return Err("empty compact frame".into());
    };
    let mut f = Fields { rest };
    match tag {
        b'A' | b'B' => {
            let weight = f.u32("alloc weight")?;
            let bytes_in = f.u64("alloc memory_to_copy")?;
            let (mut bytes_out, mut checkpoint_ns, mut numa_home) =
                (0, PerUnitType::default(), None);
            if tag == b'B' {
                bytes_out = f.u64("alloc bytes_out")?;
                for ns in &mut checkpoint_ns.0 {
                    *ns = f.u64("alloc checkpoint_ns")?;
                }
                numa_home = Some(f.u32("alloc numa_home")?).filter(|&n| n != u32::MAX);
            }
            let mut affinity = PerUnitType::default();
            for a in &mut affinity.0 {
                *a = f.f64("alloc affinity")?;
            }
            let kind = f.text("alloc kind")?;
            Ok(Request::Alloc {
                meta: MetaInfo {
                    kind,
                    affinity,
                    bytes_in,
                    weight,
                    bytes_out,
                    checkpoint_ns,
                    numa_home,
                    ..MetaInfo::default()
                },
            })
        }
        b'R' => f.end("rerequest").map(|()| Request::Rerequest),
        b'F' => {
            let finished = match f.u8("free finished")? {
                0 => false,
                1 => true,
                b => return Err(format!("free finished must be 0 or 1, not {b}")),
            };
            f.end("free").map(|()| Request::Free { finished })
        }
        b'M' => f
            .batch("batch", b'M', decode_request)
            .map(|requests| Request::Batch { requests }),
        t => Err(format!("unknown compact request tag 0x{t:02x}")),
    }
}

/// Decodes a compact reply body.
pub fn decode_reply(body: &[u8]) -> Result<Reply, String> {
    let Some((&tag, rest)) = body.split_first() else {
        return Err("empty compact frame".into());
    };
    let mut f = Fields { rest };
    match tag {
        b'G' => {
            let task = f.u64("granted task")?;
            let id = f.u32("granted unit")?;
            let code = f.u8("granted unit type")?;
            let kind = *UnitType::ALL
                .get(code as usize)
                .ok_or_else(|| format!("unknown unit type code {code}"))?;
            let capacity = f.u32("granted capacity")?;
            let device = u32::try_from(f.i64("granted device")?).ok();
            let online = f.u8("granted online")? != 0;
            let running = u64::try_from(f.i64("granted running")?).ok();
            let queued = f.u32("granted queued")? as usize;
            let known = |v: f64| Some(v).filter(|v| !v.is_nan());
            let link_bandwidth_bytes_per_s = known(f.f64("granted link bandwidth")?);
            let link_latency_s = known(f.f64("granted link latency")?);
            let n = f.u32("granted cpu count")? as usize;
            if n > f.rest.len() / 4 {
                return Err(format!("granted cpu count {n} exceeds the frame"));
            }
            let cpus = (0..n)
                .map(|_| f.u32("granted cpus"))
                .collect::<Result<_, _>>()?;
            let name = f.text("granted unit name")?;
            Ok(Reply::Granted {
                unit: UnitInfo {
                    id,
                    kind,
                    name,
                    cpus,
                    device,
                    capacity,
                    online,
                    running,
                    queued,
                    link_bandwidth_bytes_per_s,
                    link_latency_s,
                },
                task,
                memory_node: None,
            })
        }
        b'V' => {
            let verdict = match f.u8("verdict")? {
                0 => Verdict::Keep,
                1 => Verdict::Yield,
                2 => Verdict::Migrate {
                    to: f.u32("migration target")?,
                },
                v => return Err(format!("unknown verdict code {v}")),
            };
            f.end("verdict").map(|()| Reply::Rerequest { verdict })
        }
        b'D' => f.end("freed").map(|()| Reply::Freed),
        b'N' => f
            .batch("batch reply", b'N', decode_reply)
            .map(|replies| Reply::Batch { replies }),
        t => Err(format!("unknown compact reply tag 0x{t:02x}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{next_frame, Frame, MAX_REQUEST};
    use proptest::prelude::*;

    fn body(out: &[u8]) -> &[u8] {
        match next_frame(out, MAX_REQUEST) {
            Frame::Compact(b, used) => {
                assert_eq!(used, out.len());
                b
            }
            other => panic!("not a compact frame: {other:?}"),
        }
    }

    proptest! {
        #[test]
        fn requests_round_trip(kind in "\\PC{0,40}", weight: u32, bytes: u64,
                               aff in proptest::array::uniform4(0.0f64..1e6), finished: bool,
                               bytes_out in prop_oneof![Just(0u64), any::<u64>()],
                               cps in proptest::array::uniform4(prop_oneof![Just(0u64), any::<u64>()]),
                               numa_home in proptest::option::of(0u32..u32::MAX)) {
            let meta = MetaInfo {
                kind,
                affinity: PerUnitType(aff),
                bytes_in: bytes,
                weight,
                bytes_out,
                checkpoint_ns: PerUnitType(cps),
                numa_home,
                ..MetaInfo::default()
            };
            for r in [Request::Alloc { meta: meta.clone() }, Request::Rerequest, Request::Free { finished }] {
                let mut out = Vec::new();
                prop_assert!(encode_request(&r, &mut out));
                prop_assert_eq!(decode_request(body(&out)), Ok(r));
            }
        }

        #[test]
        fn replies_round_trip(name in "\\PC{0,20}", task: u64, id: u32, code in 0usize..4,
                              cpus in proptest::collection::vec(any::<u32>(), 0..8),
                              device: Option<u32>, running in proptest::option::of(0u64..1 << 62),
                              queued in 0usize..1 << 20, to: u32,
                              link in proptest::option::of(1.0f64..1e12)) {
            let unit = UnitInfo {
                id, kind: UnitType::ALL[code], name, cpus, device, capacity: 1024,
                online: true, running, queued,
                link_bandwidth_bytes_per_s: link, link_latency_s: link.map(|b| 1.0 / b),
            };
            for r in [
                Reply::Granted {
                    unit: unit.clone(),
                    task,
                    memory_node: None,
                },
                Reply::Rerequest { verdict: Verdict::Keep },
                Reply::Rerequest { verdict: Verdict::Yield },
                Reply::Rerequest { verdict: Verdict::Migrate { to } },
                Reply::Freed,
            ] {
                let mut out = Vec::new();
                prop_assert!(encode_reply(&r, &mut out));
                prop_assert_eq!(decode_reply(body(&out)), Ok(r));
            }
            // A grant that names a memory node (a `hetsched run` task) travels as JSON.
            let mut out = Vec::new();
            let grant = Reply::Granted { unit, task, memory_node: Some(id) };
            prop_assert!(!encode_reply(&grant, &mut out));
            prop_assert!(out.is_empty());
        }

        /// Garbage never panics the decoder: it is a request or an error message.
        #[test]
        fn garbage_is_an_error_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode_request(&bytes);
            let _ = decode_reply(&bytes);
        }

        /// Batch-shaped garbage (a batch tag, a count, items with random length prefixes
        /// and bodies, possibly a batch inside) is an error, not a panic, and a huge
        /// count allocates nothing before the frame is seen to be too short for it.
        #[test]
        fn batch_garbage_is_an_error_not_a_panic(
            count in prop_oneof![0u32..10, any::<u32>()],
            items in proptest::collection::vec(
                (prop_oneof![0u32..16, any::<u32>()].prop_map(|n| n | COMPACT_BIT),
                 proptest::collection::vec(prop_oneof![Just(b'M'), Just(b'N'), Just(b'F'), any::<u8>()], 0..12)),
                0..8),
        ) {
            for tag in [b'M', b'N'] {
                let mut body = vec![tag];
                body.extend_from_slice(&count.to_le_bytes());
                for (prefix, bytes) in &items {
                    body.extend_from_slice(&prefix.to_le_bytes());
                    body.extend_from_slice(bytes);
                }
                let _ = decode_request(&body);
                let _ = decode_reply(&body);
            }
        }

        /// A batch survives the trip; one byte changed anywhere in it is a different
        /// batch or an error, never a panic.
        #[test]
        fn batches_round_trip(free in proptest::collection::vec(any::<bool>(), 1..40),
                              flip in any::<proptest::sample::Index>(), byte: u8) {
            let meta = MetaInfo { kind: "k".into(), ..MetaInfo::default() };
            let requests = free.iter().map(|&f| if f {
                Request::Free { finished: true }
            } else {
                Request::Alloc { meta: meta.clone() }
            }).collect();
            let r = Request::Batch { requests };
            let mut out = Vec::new();
            prop_assert!(encode_request(&r, &mut out));
            prop_assert_eq!(decode_request(body(&out)), Ok(r));
            let replies = free.iter().map(|_| Reply::Freed).collect();
            let reply = Reply::Batch { replies };
            let mut out = Vec::new();
            prop_assert!(encode_reply(&reply, &mut out));
            prop_assert_eq!(decode_reply(body(&out)), Ok(reply));
            let i = 4 + flip.index(out.len() - 4);
            out[i] = byte;
            let _ = decode_reply(&out[4..]);
            let _ = decode_request(&out[4..]);
        }
    }

    #[test]
    fn batch_errors_name_the_field_and_the_range() {
        let err = decode_request(b"M\x00\x00\x00\x00").unwrap_err();
        assert_eq!(err, format!("batch count 0, accepted 1..={MAX_BATCH}"));
        let err = decode_request(b"M\x01\x04\x00\x00").unwrap_err();
        assert_eq!(err, format!("batch count 1025, accepted 1..={MAX_BATCH}"));
        let err = decode_request(b"M\x02\x00\x00\x00\x01\x00\x00\x80R").unwrap_err();
        assert_eq!(err, "batch count 2 exceeds the frame");
        let mut inner = Vec::new();
        encode_request(
            &Request::Batch {
                requests: vec![Request::Rerequest],
            },
            &mut inner,
        );
        let mut outer = b"M\x01\x00\x00\x00".to_vec();
        outer.extend_from_slice(&inner);
        assert_eq!(
            decode_request(&outer),
            Err("batch item 0: a batch inside a batch".into())
        );
        // A batch with a request that has no compact form, or a batch in it, is JSON.
        let mut out = Vec::new();
        let nested = Request::Batch {
            requests: vec![Request::Batch { requests: vec![] }],
        };
        assert!(!encode_request(&nested, &mut out));
        let error = Reply::Error {
            code: crate::protocol::ErrorCode::NoUnit,
            message: "x".into(),
        };
        assert!(!encode_reply(
            &Reply::Batch {
                replies: vec![Reply::Freed, error]
            },
            &mut out
        ));
        assert!(out.is_empty());
    }

    #[test]
    fn errors_name_what_was_expected() {
        assert_eq!(
            decode_request(b"F"),
            Err("compact frame ends inside free finished (1 bytes expected)".into())
        );
        assert_eq!(
            decode_request(b"F\x01\x00"),
            Err("1 stray bytes after free".into())
        );
        assert!(decode_request(b"Z").unwrap_err().contains("0x5a"));
        let mut out = Vec::new();
        assert!(!encode_request(&Request::Stats, &mut out));
        assert!(out.is_empty());
    }
}

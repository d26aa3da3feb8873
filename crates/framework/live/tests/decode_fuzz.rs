//! A fuzz target for the daemon's frame decoders: the socket's JSON and compact frames
//! and the shared page's request slot. Whatever the bytes, decoding never panics, and
//! every valid request survives every path it can travel.
//!
//! CI runs proptest's default number of cases (256 per property); a longer run:
//! `PROPTEST_CASES=100000 cargo test --release -p hetsched-live --test decode_fuzz`.

use hetsched_core::machine::UnitType;
use hetsched_core::task::PerUnitType;
use hetsched_live::compact;
use hetsched_live::protocol::{
    decode_request, encode, next_frame, AccessMode, GraphTaskInfo, MetaInfo, NewUnit, Request,
    UnitChanges, MAX_REQUEST,
};
use hetsched_live::shm::{SharedPage, SLOT};
use proptest::prelude::*;

/// Numbers that print and parse back exactly: serde_json's default parser may come back
/// one unit in the last place off for numbers of 17 significant digits (it found
/// 909388.4833984375 → …76), which is no harm for an affinity or a link figure.
fn number() -> impl Strategy<Value = f64> {
    (0u32..1 << 24).prop_map(|n| f64::from(n) / 4.0)
}

fn meta() -> impl Strategy<Value = MetaInfo> {
    (
        "\\PC{0,40}",
        proptest::array::uniform4(number()),
        any::<u64>(),
        any::<u32>(),
        proptest::option::of(any::<u32>()),
        proptest::option::of("\\PC{0,20}"),
        // The extras: often absent (the short compact alloc), any value otherwise.
        proptest::option::of((
            any::<u64>(),
            proptest::array::uniform4(any::<u64>()),
            proptest::option::of(any::<u32>()),
        )),
        proptest::option::of(any::<u32>()),
    )
        .prop_map(
            |(kind, a, bytes_in, weight, pid, device, extras, graph_task)| {
                let (bytes_out, cp, numa_home) = extras.unwrap_or_default();
                MetaInfo {
                    kind,
                    affinity: PerUnitType(a),
                    bytes_in,
                    weight,
                    bytes_out,
                    checkpoint_ns: PerUnitType(cp),
                    numa_home,
                    pid,
                    device,
                    signature: None,
                    graph_task,
                }
            },
        )
}

/// The requests a batch may carry.
fn hot() -> impl Strategy<Value = Request> {
    prop_oneof![
        meta().prop_map(|meta| Request::Alloc { meta }),
        Just(Request::Rerequest),
        any::<bool>().prop_map(|finished| Request::Free { finished }),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let kind = (0..UnitType::ALL.len()).prop_map(|i| UnitType::ALL[i]);
    prop_oneof![
        ("\\PC{0,20}", any::<u32>(), any::<bool>()).prop_map(|(name, version, compact)| {
            Request::Hello {
                version,
                name,
                compact,
            }
        }),
        meta().prop_map(|meta| Request::Alloc { meta }),
        Just(Request::Rerequest),
        any::<bool>().prop_map(|finished| Request::Free { finished }),
        Just(Request::ListUnits),
        Just(Request::Stats),
        proptest::collection::vec(hot(), 1..12).prop_map(|requests| Request::Batch { requests }),
        any::<u32>().prop_map(|id| Request::RemoveUnit { id }),
        (
            proptest::collection::vec(any::<u64>(), 0..4),
            proptest::collection::vec(
                (
                    "\\PC{0,12}",
                    any::<u64>(),
                    proptest::collection::vec((any::<u32>(), 0..3usize), 0..4),
                    proptest::collection::vec(any::<u32>(), 0..3),
                    any::<i32>(),
                    number(),
                ),
                0..4
            ),
            any::<bool>(),
        )
            .prop_map(|(data, tasks, last)| Request::Graph {
                data,
                tasks: tasks
                    .into_iter()
                    .map(
                        |(kernel, footprint, access, after, priority, flops)| GraphTaskInfo {
                            kernel,
                            footprint,
                            access: access
                                .into_iter()
                                .map(|(h, m)| (
                                    h,
                                    [AccessMode::R, AccessMode::W, AccessMode::Rw][m]
                                ))
                                .collect(),
                            after,
                            priority,
                            flops,
                        }
                    )
                    .collect(),
                last,
            }),
        (
            any::<u32>(),
            proptest::option::of(any::<u32>()),
            proptest::option::of("\\PC{0,20}"),
            proptest::option::of(number()),
            proptest::option::of(number()),
        )
            .prop_map(
                |(id, capacity, name, bandwidth, latency)| Request::AlterUnit {
                    id,
                    changes: UnitChanges {
                        capacity,
                        name,
                        link_bandwidth_bytes_per_s: bandwidth,
                        link_latency_s: latency,
                    },
                }
            ),
        (
            kind,
            "\\PC{0,20}",
            proptest::collection::vec(any::<u32>(), 0..8),
            proptest::option::of(any::<u32>()),
            any::<u32>(),
        )
            .prop_map(|(kind, name, cpus, device, capacity)| Request::AddUnit {
                unit: NewUnit {
                    kind,
                    name,
                    cpus,
                    device,
                    capacity,
                },
            }),
    ]
}

/// Decodes `bytes` as the daemon does on a socket and in a page, with and without the
/// compact encoding: whatever the outcome, it must come back (no panic).
fn decode_everywhere(bytes: &[u8], page: &SharedPage) {
    for compact in [false, true] {
        let _ = decode_request(next_frame(bytes, MAX_REQUEST), MAX_REQUEST, compact);
    }
    page.post_request(&bytes[..bytes.len().min(SLOT)]);
    let mut copy = Vec::new();
    page.take_request(&mut copy);
    assert!(copy.len() <= SLOT);
    for compact in [false, true] {
        let _ = decode_request(next_frame(&copy, SLOT), SLOT, compact);
    }
    let _ = compact::decode_reply(bytes);
    let _ = serde_json::from_slice::<hetsched_live::protocol::Reply>(bytes);
}

proptest! {
    /// A valid request decodes to itself from a JSON frame, from a compact frame where it
    /// has one, and from the page's slot where it fits, using the whole frame each time.
    #[test]
    fn valid_requests_round_trip(r in request()) {
        let page = SharedPage::create().unwrap();
        let mut frames = Vec::new();
        let mut json = Vec::new();
        encode(&r, &mut json);
        frames.push((json, false));
        let mut packed = Vec::new();
        if compact::encode_request(&r, &mut packed) {
            frames.push((packed, true));
        }
        for (frame, compact) in frames {
            let decoded = decode_request(next_frame(&frame, MAX_REQUEST), MAX_REQUEST, compact);
            prop_assert_eq!(decoded, Some((Ok(r.clone()), frame.len())));
            if frame.len() <= SLOT {
                page.post_request(&frame);
                let mut copy = Vec::new();
                page.take_request(&mut copy);
                let decoded = decode_request(next_frame(&copy, SLOT), SLOT, compact);
                prop_assert_eq!(decoded, Some((Ok(r.clone()), frame.len())));
            }
        }
    }

    /// Arbitrary bytes, often behind a plausible length prefix.
    #[test]
    fn garbage_never_panics(prefix in proptest::option::of(any::<u32>()),
                            body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let page = SharedPage::create().unwrap();
        let mut bytes = Vec::new();
        if let Some(p) = prefix {
            let len = p & (compact::COMPACT_BIT | 0xfff);
            bytes.extend_from_slice(&len.to_le_bytes());
        }
        bytes.extend_from_slice(&body);
        decode_everywhere(&bytes, &page);
    }

    /// Valid frames with bytes flipped, cut short or lengthened: the nearest misses.
    #[test]
    fn damaged_frames_never_panic(r in request(), compact in any::<bool>(),
                                  flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
                                  cut in any::<usize>(), extra in proptest::collection::vec(any::<u8>(), 0..8)) {
        let page = SharedPage::create().unwrap();
        let mut frame = Vec::new();
        if !(compact && compact::encode_request(&r, &mut frame)) {
            encode(&r, &mut frame);
        }
        for (at, xor) in flips {
            let i = at % frame.len();
            frame[i] ^= xor;
        }
        let mut short = frame[..cut % (frame.len() + 1)].to_vec();
        decode_everywhere(&short, &page);
        short.extend_from_slice(&extra);
        decode_everywhere(&short, &page);
        frame.extend_from_slice(&extra);
        decode_everywhere(&frame, &page);
    }
}

//! Batched submission against a real daemon (the library's daemon in a child process,
//! real sockets, real pages): a batch is answered as its requests would be one by one,
//! on every transport, and a hostile batch is refused with an error that names the
//! field and the accepted range, without harm to the daemon or its other clients.

use hetsched_core::Error;
use hetsched_live::client::{Client, Transport};
use hetsched_live::compact;
use hetsched_live::protocol::{Reply, Request, MAX_BATCH};
use std::io::Write;
use std::time::Duration;

mod common;
use common::daemon::{
    eventually, flood_until_dropped, frame, meta, page_exchange, raw_json, raw_paged, read_frame,
    Daemon,
};

daemon_process!();

/// `n` empty tasks: alloc and free each.
fn empty_tasks(n: usize) -> Vec<Request> {
    (0..n)
        .flat_map(|_| {
            [
                Request::Alloc {
                    meta: meta(1.0, 0.0),
                },
                Request::Free { finished: true },
            ]
        })
        .collect()
}

fn grants(c: &mut Client) -> u64 {
    match c.stats().unwrap() {
        Reply::Stats { grants, .. } => grants,
        other => panic!("{other:?}"),
    }
}

/// Small batches (in the page's slot), large ones (on the socket) and the largest, on
/// each transport: every task granted and freed, in order, and counted by the daemon.
#[test]
fn a_batch_is_answered_in_order_on_every_transport() {
    let d = Daemon::start(2, 0, "fcfs");
    let mut admin = d.client();
    let mut expected = grants(&mut admin);
    for transport in [
        Transport::SharedPage,
        Transport::CompactSocket,
        Transport::Json,
    ] {
        let mut c = Client::connect_with(&d.socket, "batch", transport).unwrap();
        // The largest batch in JSON exceeds the 64 KiB request limit (see below).
        let largest = if transport == Transport::Json {
            300
        } else {
            MAX_BATCH / 2
        };
        for n in [1, 10, 200, largest] {
            let replies = c.batch(empty_tasks(n)).unwrap();
            assert_eq!(replies.len(), 2 * n, "{transport:?}, {n} tasks");
            for pair in replies.chunks(2) {
                assert!(
                    matches!(pair, [Reply::Granted { .. }, Reply::Freed]),
                    "{transport:?}: {pair:?}"
                );
            }
            expected += n as u64;
        }
        // The connection still serves single requests after its batches.
        c.alloc(&meta(1.0, 0.0)).unwrap();
        c.free(true).unwrap();
        expected += 1;
    }
    assert_eq!(grants(&mut admin), expected);
}

/// An `alloc` in a batch that must wait holds the rest of the batch back until its
/// grant: the batch returns only after the holder frees the only unit.
#[test]
fn a_waiting_alloc_holds_the_rest_of_the_batch() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut holder = d.client();
    holder.alloc(&meta(1.0, 0.0)).unwrap();
    let socket = d.socket.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let batcher = std::thread::spawn(move || {
        let mut c = Client::connect(&socket, "batch").unwrap();
        let replies = c.batch(empty_tasks(3)).unwrap();
        tx.send(()).unwrap();
        replies
    });
    let mut admin = d.client();
    let queued = |c: &mut Client| match c.stats().unwrap() {
        Reply::Stats { tasks, .. } => tasks.iter().any(|t| t.state == "queued"),
        other => panic!("{other:?}"),
    };
    assert!(
        eventually(Duration::from_secs(60), || queued(&mut admin)),
        "the batch's alloc never queued"
    );
    assert!(rx.try_recv().is_err(), "answered while its alloc waits");
    holder.free(true).unwrap();
    let replies = batcher.join().unwrap();
    assert_eq!(replies.len(), 6);
    assert!(matches!(replies[0], Reply::Granted { .. }));
    assert!(matches!(replies[5], Reply::Freed));
}

/// The client library refuses what the daemon would: an empty batch, too many requests,
/// a request that may not be batched, a frame beyond the request limit; each an input
/// error naming the field and the range, and the connection goes on.
#[test]
fn the_client_refuses_a_bad_batch_before_sending_it() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut c = d.client();
    let input = |r: hetsched_core::Result<Vec<Reply>>| match r {
        Err(Error::Input(m)) => m,
        other => panic!("not an input error: {other:?}"),
    };
    let m = input(c.batch(Vec::new()));
    assert!(
        m.contains("batch requests: 0 requests, accepted 1..=1024"),
        "{m}"
    );
    let m = input(c.batch(vec![Request::Rerequest; MAX_BATCH + 1]));
    assert!(m.contains("1025 requests"), "{m}");
    let m = input(c.batch(vec![Request::Stats]));
    assert!(m.contains("requests[0]"), "{m}");
    // 512 allocs with a 200-byte kind name: beyond the 64 KiB request limit.
    let mut long = meta(1.0, 0.0);
    long.kind = "k".repeat(200);
    let big = (0..MAX_BATCH / 2)
        .flat_map(|_| {
            [
                Request::Alloc { meta: long.clone() },
                Request::Free { finished: true },
            ]
        })
        .collect();
    let m = input(c.batch(big));
    assert!(m.contains("at most 65536"), "{m}");
    assert_eq!(c.batch(empty_tasks(2)).unwrap().len(), 4);
}

/// Raw hostile batches on the socket: each is answered with an error naming the field
/// and the range, its connection is closed, and the daemon serves the next client.
#[test]
fn hostile_batches_on_the_socket_are_refused() {
    let mut d = Daemon::start(1, 0, "fcfs");
    let alloc = r#"{"op":"alloc","meta":{"kind":"h","affinity":{"cpu":1}}}"#;
    let over: Vec<&str> = vec![r#"{"op":"rerequest"}"#; MAX_BATCH + 1];
    let cases = [
        (
            r#"{"op":"batch","requests":[]}"#.to_string(),
            "accepted 1..=1024",
        ),
        (
            format!(r#"{{"op":"batch","requests":[{}]}}"#, over.join(",")),
            "1025 requests, accepted 1..=1024",
        ),
        (
            format!(r#"{{"op":"batch","requests":[{alloc},{{"op":"stats"}}]}}"#),
            "requests[1]: only alloc, rerequest and free",
        ),
        (
            r#"{"op":"batch","requests":[{"op":"batch","requests":[{"op":"rerequest"}]}]}"#
                .to_string(),
            "requests[0]",
        ),
        (
            format!(r#"{{"op":"batch","requests":[{alloc},{alloc}]}}"#),
            "alloc while holding a unit",
        ),
    ];
    for (json, expected) in cases {
        let mut s = raw_json(&d.socket);
        s.write_all(&frame(&json)).unwrap();
        let reply = read_frame(&mut s);
        assert!(reply.contains(expected), "{json:.80}: {reply}");
        assert!(
            common::daemon::closed_within(&mut s, Duration::from_secs(60)),
            "{json:.80}: not closed"
        );
    }
    // A request sent while the client's batch waits in a queue.
    let mut holder = d.client();
    holder.alloc(&meta(1.0, 0.0)).unwrap();
    let mut s = raw_json(&d.socket);
    s.write_all(&frame(&format!(r#"{{"op":"batch","requests":[{alloc}]}}"#)))
        .unwrap();
    s.write_all(&frame(r#"{"op":"rerequest"}"#)).unwrap();
    let reply = read_frame(&mut s);
    assert!(
        reply.contains("out_of_order") && reply.contains("before the batch"),
        "{reply}"
    );
    holder.free(true).unwrap();
    let mut good = d.client();
    assert_eq!(good.batch(empty_tasks(5)).unwrap().len(), 10);
    d.assert_alive();
}

/// Hostile compact batches through the page: a huge count, an item that is not a
/// compact frame, a batch inside a batch; each an error in the page naming it.
#[test]
fn hostile_batches_in_the_page_are_refused() {
    let mut d = Daemon::start(1, 0, "fcfs");
    let mut free = Vec::new();
    compact::encode_request(&Request::Free { finished: true }, &mut free);
    let mut nested = Vec::new();
    compact::encode_request(
        &Request::Batch {
            requests: vec![Request::Rerequest],
        },
        &mut nested,
    );
    let body = |count: u32, items: &[&[u8]]| {
        let mut b = vec![b'M'];
        b.extend_from_slice(&count.to_le_bytes());
        items.iter().for_each(|i| b.extend_from_slice(i));
        let mut f = ((b.len() as u32) | compact::COMPACT_BIT)
            .to_le_bytes()
            .to_vec();
        f.extend_from_slice(&b);
        f
    };
    let cases = [
        (
            body(u32::MAX, &[&free]),
            "batch count 4294967295, accepted 1..=1024",
        ),
        (
            body(1, &[&[5, 0, 0, 0, b'F', 1]]),
            "item 0 is not a compact frame",
        ),
        (body(1, &[&nested]), "a batch inside a batch"),
        (body(2, &[&free]), "batch count 2 exceeds the frame"),
    ];
    for (frame, expected) in cases {
        let (_s, page, bell) = raw_paged(&d.socket);
        page_exchange(&page, &bell, &frame);
        let mut reply = Vec::new();
        assert!(page.take_reply(&mut reply));
        let text = String::from_utf8_lossy(&reply);
        assert!(
            text.contains("malformed") && text.contains(expected),
            "{text}"
        );
    }
    let mut good = d.client();
    assert_eq!(good.batch(empty_tasks(3)).unwrap().len(), 6);
    d.assert_alive();
}

/// A client that sends batch after batch and never reads the replies is paused once its
/// unread replies pass the limit, then dropped, while the daemon stays small and serves
/// a well-behaved batching client.
#[test]
fn a_client_that_never_reads_its_batch_replies_is_dropped() {
    let mut d = Daemon::start(2, 0, "fcfs");
    let mut flood = raw_json(&d.socket);
    flood
        .set_write_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let alloc = r#"{"op":"alloc","meta":{"kind":"h","affinity":{"cpu":1}}}"#;
    let pair = format!(r#"{alloc},{{"op":"free","finished":true}}"#);
    let tasks = vec![pair.as_str(); MAX_BATCH / 2].join(",");
    let batch = frame(&format!(r#"{{"op":"batch","requests":[{tasks}]}}"#));
    let mut good = d.client();
    flood_until_dropped(&d, &mut flood, &batch, || {
        assert_eq!(good.batch(empty_tasks(4)).unwrap().len(), 8)
    });
    assert_eq!(good.batch(empty_tasks(4)).unwrap().len(), 8);
    d.assert_alive();
}

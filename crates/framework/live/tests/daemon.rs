//! The live daemon with real processes and a real Unix socket: the daemon serves from
//! this crate's library in a child process (see `common`); clients are the library in
//! threads of this test. Tests of the `hetsched daemon` and `hetsched client` commands
//! are in `crates/tools/cli/tests/daemon.rs`.

use hetsched_live::client::{Client, Transport};
use hetsched_live::protocol::{MetaInfo, UnitChanges, Verdict};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::daemon::{alloc_in_thread, frame, meta, page_exchange, raw_paged, Daemon};

daemon_process!();

#[test]
fn waiting_clients_queue_and_get_the_unit_when_it_is_freed() {
    let d = Daemon::start(1, 0, "fcfs");
    // The holder speaks JSON only, the first waiter the compact encoding on the socket,
    // the second the shared page: all three at once, served in arrival order.
    let mut a = Client::connect_with(&d.socket, "json", Transport::Json).unwrap();
    assert_eq!(a.alloc(&meta(1.0, 0.0)).unwrap().id, 0);
    let (tx, socket) = (mpsc::channel(), d.socket.clone());
    let (granted_b, first) = tx;
    let b = std::thread::spawn(move || {
        let mut c = Client::connect_with(&socket, "compact", Transport::CompactSocket).unwrap();
        granted_b
            .send(c.alloc(&meta(1.0, 0.0)).unwrap().id)
            .unwrap();
        c
    });
    std::thread::sleep(Duration::from_millis(100)); // b queues first
    let (granted_c, c) = alloc_in_thread(&d.socket, meta(1.0, 0.0));
    assert!(
        first.recv_timeout(Duration::from_millis(200)).is_err() && granted_c.try_recv().is_err(),
        "the other clients must wait"
    );
    a.free(true).unwrap();
    assert_eq!(first.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
    assert!(
        granted_c.recv_timeout(Duration::from_millis(200)).is_err(),
        "the page client waits behind the socket one"
    );
    b.join().unwrap().free(true).unwrap();
    assert_eq!(granted_c.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
    c.join().unwrap().free(true).unwrap();
}

/// Many clients through their pages at once, against a real daemon process: no request
/// is lost (every thread finishes), and no unit is ever held by two of them. A lost
/// first request of a new connection once hung the benchmark this way.
#[test]
fn many_page_clients_alloc_and_free_without_losing_a_request() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let d = Daemon::start(2, 0, "fcfs");
    let held: Arc<[AtomicBool; 2]> = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let (socket, held) = (d.socket.clone(), held.clone());
            std::thread::spawn(move || {
                // A new connection every 3 tasks: a connection's first request and
                // its later ones.
                for _ in 0..100 {
                    let mut c = Client::connect(&socket, "stress").unwrap();
                    for _ in 0..3 {
                        let unit = c.alloc(&meta(1.0, 0.0)).unwrap().id as usize;
                        assert!(
                            !held[unit].swap(true, Ordering::SeqCst),
                            "unit {unit} granted twice"
                        );
                        held[unit].store(false, Ordering::SeqCst);
                        c.free(true).unwrap();
                    }
                }
            })
        })
        .collect();
    let start = Instant::now();
    while !threads.iter().all(|t| t.is_finished()) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "a client still waits for a reply after 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for t in threads {
        t.join().unwrap();
    }
}

/// Each client costs the daemon three descriptors: started with a soft limit of 64 open
/// files, it lifts it to the hard limit and serves 60 clients at once.
#[test]
fn the_daemon_lifts_its_descriptor_limit_for_many_clients() {
    let mut shell = Command::new("sh");
    let this = std::env::current_exe().unwrap();
    shell.args([
        "-c",
        r#"ulimit -Sn 64 && exec "$0" "$@""#,
        this.to_str().unwrap(),
    ]);
    let d = Daemon::start_in(shell, 1, 0, "fcfs");
    let mut clients: Vec<Client> = (0..60).map(|_| d.client()).collect();
    for c in &mut clients {
        assert_eq!(c.list_units().unwrap().len(), 1);
    }
}

/// A daemon that dies while a client sleeps on its page for a grant cannot wake it:
/// the client notices the closed socket on its own.
#[test]
fn a_client_waiting_in_its_page_notices_a_dead_daemon() {
    let mut d = Daemon::start(1, 0, "fcfs");
    let mut holder = d.client();
    holder.alloc(&meta(1.0, 0.0)).unwrap();
    let socket = d.socket.clone();
    let waiter = std::thread::spawn(move || {
        let mut c = Client::connect(&socket, "waiter").unwrap();
        let result = c.alloc(&meta(1.0, 0.0));
        (result.map(|u| u.id), Instant::now())
    });
    std::thread::sleep(Duration::from_millis(300)); // long enough to be asleep
    d.child.kill().unwrap();
    let killed = Instant::now();
    let (result, when) = waiter.join().unwrap();
    let err = result.expect_err("no grant can come from a dead daemon");
    assert!(
        err.to_string().contains("daemon closed the connection"),
        "{err}"
    );
    assert!(
        when.duration_since(killed) < Duration::from_secs(1),
        "noticed after {:?}",
        when.duration_since(killed)
    );
}

/// Sends raw bytes and returns what the daemon answered before closing.
fn raw(socket: &Path, bytes: &[u8]) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap(); // returns at EOF: the daemon closed
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn garbage_and_out_of_order_requests_close_only_that_connection() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut holder = d.client();
    holder.alloc(&meta(1.0, 0.0)).unwrap();

    assert!(raw(&d.socket, b"\xff\xff\xff\x7fGARBAGE").contains("malformed"));
    assert!(raw(&d.socket, &frame("{not json")).contains("malformed"));
    assert!(raw(
        &d.socket,
        &frame(r#"{"op":"alloc","meta":{"kind":"x","affinity":{}}}"#)
    )
    .contains("hello"));
    let mut hello = frame(r#"{"op":"hello","version":1,"name":"raw"}"#);
    hello.extend(frame(r#"{"op":"rerequest"}"#));
    assert!(raw(&d.socket, &hello).contains("out_of_order"));
    assert!(raw(
        &d.socket,
        &frame(r#"{"op":"hello","version":99,"name":"raw"}"#)
    )
    .contains("version"));
    // Compact frames: refused unless hello asked for them; a truncated one names the
    // field that ended early.
    let compact_free = [2u8, 0, 0, 0x80, b'F', 1];
    let mut json_hello = frame(r#"{"op":"hello","version":1,"name":"raw"}"#);
    json_hello.extend(compact_free);
    assert!(raw(&d.socket, &json_hello).contains("did not ask for the compact encoding"));
    let mut compact_hello = frame(r#"{"op":"hello","version":1,"name":"raw","compact":true}"#);
    compact_hello.extend([1u8, 0, 0, 0x80, b'F']);
    assert!(raw(&d.socket, &compact_hello).contains("ends inside free finished"));

    // The holder still holds its unit and the daemon still serves.
    assert_eq!(holder.rerequest().unwrap(), Verdict::Keep);
    let mut other = d.client();
    assert_eq!(other.list_units().unwrap().len(), 1);
    holder.free(true).unwrap();
    assert_eq!(other.alloc(&meta(1.0, 0.0)).unwrap().id, 0);
}

/// connection closes.
#[test]
fn garbage_in_the_shared_page_closes_only_that_connection() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut holder = d.client();
    holder.alloc(&meta(1.0, 0.0)).unwrap();
    let garbage: [&[u8]; 3] = [
        &[5, 0, 0, 0x80, b'Z', 1, 2, 3, 4], // a compact frame with an unknown tag
        &[0xff, 0xff, 0x0f, 0, b'{'],       // a length far beyond the slot
        &[
            9, 0, 0, 0, b'{', b'n', b'o', b'p', b'e', b'!', b'!', b'!', b'!',
        ], // not JSON
    ];
    for bytes in garbage {
        let (mut s, page, bell) = raw_paged(&d.socket);
        page_exchange(&page, &bell, bytes);
        let mut reply = Vec::new();
        assert!(page.take_reply(&mut reply));
        let text = String::from_utf8_lossy(&reply);
        assert!(text.contains("malformed"), "{text}");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap(); // returns at EOF: the daemon closed
    }
    assert_eq!(holder.rerequest().unwrap(), Verdict::Keep);
    holder.free(true).unwrap();
    assert_eq!(d.client().alloc(&meta(1.0, 0.0)).unwrap().id, 0);
}

/// The control API's `alter_unit` changes what the policy sees: a slow host link makes
/// `dmda` keep a task with 1 GB to copy off the accelerator.
#[test]
fn altering_an_accelerators_link_changes_where_dmda_places_work() {
    // A model is trusted after one run here: dmda weighs copies only once calibrated.
    let d = Daemon::start(1, 1, "dmda:calibrate=1");
    let mut admin = d.client();
    let units = admin.list_units().unwrap();
    let (cpu, cl) = (units[0].id, units[1].id);
    assert_eq!(units[1].link_bandwidth_bytes_per_s, None);
    let big = MetaInfo {
        bytes_in: 1 << 30,
        ..meta(1.0, 1.0)
    };
    // Calibration, as StarPU does it: with no model, the lowest id; then the unit whose
    // model is missing, to measure it there.
    let mut c = d.client();
    for unit in [cpu, cl] {
        assert_eq!(c.alloc(&big).unwrap().id, unit);
        c.free(true).unwrap();
    }
    let mut holder = d.client();
    assert_eq!(holder.alloc(&meta(1.0, 0.0)).unwrap().id, cpu);

    // No link figure: copying is free; both end about now, and the idle OpenCL unit,
    // with fewer tasks, wins.
    assert_eq!(c.alloc(&big).unwrap().id, cl);
    c.free(true).unwrap();

    // A 1 MB/s link: 1 GB takes minutes to copy, waiting for the CPU is better.
    let slow = UnitChanges {
        link_bandwidth_bytes_per_s: Some(1e6),
        link_latency_s: Some(1e-5),
        ..Default::default()
    };
    admin.alter_unit(cl, slow).unwrap();
    let shown = &admin.list_units().unwrap()[1];
    assert_eq!(
        (shown.link_bandwidth_bytes_per_s, shown.link_latency_s),
        (Some(1e6), Some(1e-5))
    );
    let (granted, h) = alloc_in_thread(&d.socket, big);
    assert!(
        granted.recv_timeout(Duration::from_millis(200)).is_err(),
        "dmda must queue the task for the CPU"
    );
    holder.free(true).unwrap();
    assert_eq!(granted.recv_timeout(Duration::from_secs(5)).unwrap(), cpu);
    h.join().unwrap().free(true).unwrap();

    // Bad alterations name the field; a CPU has no link.
    let zero = UnitChanges {
        link_bandwidth_bytes_per_s: Some(0.0),
        ..Default::default()
    };
    let err = admin.alter_unit(cl, zero).unwrap_err().to_string();
    assert!(err.contains("link_bandwidth_bytes_per_s must be"), "{err}");
    assert!(admin
        .alter_unit(
            cpu,
            UnitChanges {
                link_latency_s: Some(1e-6),
                ..Default::default()
            }
        )
        .unwrap_err()
        .to_string()
        .contains("no host link"));
}

/// A long-running daemon keeps the last `HISTORY` ended tasks, and a `stats` reply that
/// lists them (hundreds of KiB) still reaches the client.
#[test]
fn stats_history_is_bounded_and_its_reply_arrives() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut c = d.client();
    let n = hetsched_live::arbiter::HISTORY + 100;
    for _ in 0..n {
        c.alloc(&meta(1.0, 0.0)).unwrap();
        c.free(true).unwrap();
    }
    let hetsched_live::protocol::Reply::Stats { grants, tasks, .. } = c.stats().unwrap() else {
        panic!("not a stats reply")
    };
    assert_eq!(grants, n as u64);
    assert_eq!(tasks.len(), hetsched_live::arbiter::HISTORY);
    // The oldest ones were dropped: the newest task is there, the first is not.
    assert!(tasks.iter().any(|t| t.task == n as u64 - 1));
    assert!(tasks.iter().all(|t| t.task >= 100));
}

#[test]
fn a_task_without_an_opencl_implementation_never_gets_the_opencl_unit() {
    let d = Daemon::start(1, 1, "fcfs");
    let mut cpu_only = d.client();
    assert_eq!(
        cpu_only.alloc(&meta(1.0, 0.0)).unwrap().kind.to_string(),
        "cpu"
    );
    // A second CPU-only task waits for the CPU although the OpenCL unit is idle.
    let (granted, h) = alloc_in_thread(&d.socket, meta(1.0, 0.0));
    assert!(granted.recv_timeout(Duration::from_millis(300)).is_err());
    let mut flexible = d.client();
    assert_eq!(
        flexible.alloc(&meta(1.0, 2.0)).unwrap().kind.to_string(),
        "opencl"
    );
    cpu_only.free(true).unwrap();
    assert_eq!(granted.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
    h.join().unwrap();
    // No implementation for anything present: a clear error, and the connection lives on.
    let mut nothing = d.client();
    let err = nothing.alloc(&meta(0.0, 0.0)).unwrap_err().to_string();
    assert!(err.contains("no unit can run"), "{err}");
    assert_eq!(nothing.list_units().unwrap().len(), 2);
}

#[test]
fn with_a_short_slice_two_tasks_alternate_on_one_unit() {
    let d = Daemon::start(1, 0, "cfs:latency_ms=2,min_granularity_ms=1");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::<char>::new()));
    // Both connected before either asks, so that neither finishes alone on a busy machine.
    let ready = std::sync::Arc::new(std::sync::Barrier::new(2));
    let worker = |name: char| {
        let socket = d.socket.clone();
        let log = log.clone();
        let ready = ready.clone();
        std::thread::spawn(move || {
            let mut c = Client::connect(&socket, "worker").unwrap();
            ready.wait();
            let mut checkpoints = 0;
            while checkpoints < 100 {
                c.alloc(&meta(1.0, 0.0)).unwrap();
                log.lock().unwrap().push(name);
                loop {
                    std::thread::sleep(Duration::from_millis(1)); // work to the next checkpoint
                    checkpoints += 1;
                    if checkpoints == 100 {
                        c.free(true).unwrap();
                        return;
                    }
                    if c.rerequest().unwrap() != Verdict::Keep {
                        c.free(false).unwrap();
                        break;
                    }
                }
            }
        })
    };
    let (a, b) = (worker('A'), worker('B'));
    a.join().unwrap();
    b.join().unwrap();
    let log = log.lock().unwrap().clone();
    let switches = log.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 4, "grants {log:?}: the tasks should take turns");
}

#[test]
fn rerequests_inside_the_slice_need_no_daemon() {
    let d = Daemon::start(1, 0, "fcfs");
    let mut c = d.client();
    c.alloc(&meta(1.0, 0.0)).unwrap();
    // A stopped daemon cannot answer: keeps can only come from the shared page.
    d.signal(nix::sys::signal::Signal::SIGSTOP);
    let start = Instant::now();
    for _ in 0..10_000 {
        assert_eq!(c.rerequest().unwrap(), Verdict::Keep);
    }
    let took = start.elapsed();
    d.signal(nix::sys::signal::Signal::SIGCONT);
    assert!(took < Duration::from_millis(500), "{took:?}");
    c.free(true).unwrap();
}

#[test]
fn socket_permissions_and_the_control_api() {
    let d = Daemon::start(2, 0, "fcfs");
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660);
    let dir_mode = std::fs::metadata(d.socket.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        dir_mode & 0o022,
        0,
        "directory writable by others: {dir_mode:o}"
    );

    // Remove a busy unit: it stays (leaving) until its holder frees it.
    let mut holder = d.client();
    let unit = holder.alloc(&meta(1.0, 0.0)).unwrap().id;
    let mut admin = d.client();
    admin.remove_unit(unit).unwrap();
    let units = admin.list_units().unwrap();
    assert!(units.iter().any(|u| u.id == unit && !u.online));
    holder.free(true).unwrap();
    assert!(admin.list_units().unwrap().iter().all(|u| u.id != unit));
    assert!(admin.remove_unit(unit).is_err());
}

#[test]
fn a_unit_added_through_the_control_api_is_used_under_every_policy() {
    for policy in hetsched_policies::registry().map(|r| r.default_spec()) {
        let d = Daemon::start(1, 0, policy);
        let mut holder = d.client();
        assert_eq!(holder.alloc(&meta(1.0, 0.0)).unwrap().id, 0);
        let (granted, h) = alloc_in_thread(&d.socket, meta(1.0, 0.0));
        assert!(granted.recv_timeout(Duration::from_millis(100)).is_err());
        let mut admin = d.client();
        let unit = hetsched_live::protocol::NewUnit {
            kind: hetsched_core::machine::UnitType::Cpu,
            name: "added".into(),
            cpus: vec![0],
            device: None,
            capacity: 1024,
        };
        admin.add_unit(unit).unwrap();
        // The waiter gets the new unit (or unit 0 once freed), and the daemon lives on.
        holder.free(true).unwrap();
        let got = granted
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{policy}: waiter never granted"));
        assert!(got <= 1, "{policy}");
        h.join().unwrap().free(true).unwrap();
        let mut next = d.client();
        next.alloc(&meta(1.0, 0.0)).unwrap();
        let mut other = d.client();
        other.alloc(&meta(1.0, 0.0)).unwrap();
        assert_eq!(admin.list_units().unwrap().len(), 2, "{policy}");
    }
}

/// Sets the CPU mask of every thread of the daemon process (its loop runs on one of
/// them, not necessarily the main one).
fn pin_daemon(d: &Daemon, cpu: usize) {
    for task in std::fs::read_dir(format!("/proc/{}/task", d.pid())).unwrap() {
        let tid: libc::pid_t = task.unwrap().file_name().to_str().unwrap().parse().unwrap();
        // SAFETY: all-zero is a valid empty set; the CPU comes from this process's
        // mask; the set is passed with its size.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        assert_eq!(
            rc,
            0,
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// The daemon publishes the CPU its loop runs on in every client's page, and follows
/// the loop when it moves: a client compares it with its own before it polls.
#[test]
fn the_daemon_publishes_its_cpu_in_each_page_and_follows_it() {
    let cpus = hetsched_worker::CpuMask::current().unwrap().cpus();
    let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
    let d = Daemon::start(1, 0, "fcfs");
    for cpu in [last, first] {
        pin_daemon(&d, cpu);
        let (_s, page, _bell) = raw_paged(&d.socket);
        assert_eq!(page.daemon_cpu(), Some(cpu as u32), "in a new page");
    }
    let (_s, page, bell) = raw_paged(&d.socket);
    pin_daemon(&d, last);
    let mut alloc = Vec::new();
    assert!(hetsched_live::compact::encode_request(
        &hetsched_live::protocol::Request::Alloc {
            meta: meta(1.0, 0.0)
        },
        &mut alloc
    ));
    page_exchange(&page, &bell, &alloc);
    assert_eq!(
        page.daemon_cpu(),
        Some(last as u32),
        "in a page handed out before"
    );
}

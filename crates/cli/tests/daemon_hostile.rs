//! The daemon against hostile clients (a real `hetsched daemon` process, real sockets,
//! real pages): one regression test per way a tester once broke it, and a soak of
//! hostile clients beside well-behaved ones.
//!
//! The soak runs small here; the acceptance size (100 hostile + 100 well-behaved
//! clients for 60 s) is the ignored test `soak_full`:
//! `cargo test --release -p hetsched-cli --test daemon_hostile -- --ignored soak_full --nocapture`
//! (`HETSCHED_SOAK=hostile,good,seconds` changes its size).

use hetsched_live::client::{Client, Transport};
use hetsched_live::protocol::{NewUnit, Reply, UnitChanges};
use nix::sys::signal::Signal;
use std::io::{BufRead, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;
use common::daemon::{eventually, frame, meta, raw_paged, Daemon};

const ALLOC: &str = r#"{"op":"alloc","meta":{"kind":"hostile","affinity":{"cpu":1}}}"#;
const STATS: &str = r#"{"op":"stats"}"#;

/// A raw connection that said a JSON hello and read the `welcome` (the page and doorbell
/// that came with it are closed unread).
fn raw_json(socket: &Path) -> UnixStream {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(&frame(r#"{"op":"hello","version":1,"name":"raw"}"#))
        .unwrap();
    assert!(read_frame(&mut s).contains("welcome"));
    s
}

/// The next JSON frame from the daemon, as text.
fn read_frame(s: &mut UnixStream) -> String {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

/// Every unit is idle and nobody waits (checked by a fresh client).
fn all_units_free(d: &Daemon) -> bool {
    Client::connect(&d.socket, "check")
        .and_then(|mut c| c.list_units())
        .is_ok_and(|units| units.iter().all(|u| u.running.is_none() && u.queued == 0))
}

/// A client truncates the shared page the daemon handed it: the page is sealed, so the
/// truncation fails and the daemon (which reads every page on each turn) lives on.
#[test]
fn a_client_cannot_truncate_or_grow_its_shared_page() {
    use nix::fcntl::{fcntl, FcntlArg, SealFlag};
    let mut d = Daemon::start(1, 0, "fcfs");
    let (_s, page, _bell) = raw_paged(&d.socket);
    let shrink = nix::unistd::ftruncate(page.fd(), 0);
    // The daemon is still there and serves a well-behaved client through its page.
    let mut good = d.client();
    assert_eq!(good.alloc(&meta(1.0, 0.0)).unwrap().id, 0);
    good.free(true).unwrap();
    d.assert_alive();
    assert_eq!(shrink, Err(nix::errno::Errno::EPERM), "shrinking must fail");
    let grow = nix::unistd::ftruncate(page.fd(), 1 << 20);
    assert_eq!(grow, Err(nix::errno::Errno::EPERM), "growing must fail");
    let seals = SealFlag::from_bits_truncate(fcntl(page.fd(), FcntlArg::F_GET_SEALS).unwrap());
    assert!(
        seals.contains(SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL),
        "{seals:?}"
    );
}

/// A client floods `stats` requests and never reads a reply: the daemon drops it once
/// its unread replies pass the limit, instead of growing by gigabytes, and serves a
/// well-behaved client all the while.
#[test]
fn a_client_that_never_reads_its_replies_is_dropped() {
    let mut d = Daemon::start(1, 0, "fcfs");
    let socket = d.socket.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let good = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = Client::connect(&socket, "good").unwrap();
            let mut rounds = 0u64;
            while !stop.load(Ordering::SeqCst) || rounds < 20 {
                c.alloc(&meta(1.0, 0.0)).unwrap();
                c.free(true).unwrap();
                rounds += 1;
            }
            rounds
        })
    };
    let mut flood = UnixStream::connect(&d.socket).unwrap();
    flood
        .set_write_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    flood
        .write_all(&frame(r#"{"op":"hello","version":1,"name":"flood"}"#))
        .unwrap();
    let batch: Vec<u8> = (0..4096).flat_map(|_| frame(STATS)).collect();
    let start = Instant::now();
    let dropped = loop {
        if let Err(e) = flood.write_all(&batch) {
            break e;
        }
        let rss = d.status_kb("VmRSS");
        assert!(rss < 512 << 10, "the daemon grew to {rss} kB");
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "not dropped after 120 s"
        );
    };
    assert!(
        matches!(
            dropped.kind(),
            ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
        ),
        "the flood should end because the daemon hung up: {dropped}"
    );
    stop.store(true, Ordering::SeqCst);
    assert!(good.join().unwrap() >= 20);
    d.assert_alive();
    let peak = d.status_kb("VmHWM");
    assert!(peak < 256 << 10, "daemon peak RSS {peak} kB");
}

/// A client that holds a unit and closes its socket in the middle of a frame (the half
/// frame and the end of the stream reach the daemon together, as when it was busy) loses
/// its unit at once, and its descriptors are closed.
#[test]
fn a_client_that_closes_mid_frame_frees_its_unit_and_descriptors() {
    let mut d = Daemon::start(1, 0, "fcfs");
    let mut admin = d.client();
    let baseline = d.settled_fd_list().len();
    for _ in 0..20 {
        let mut s = raw_json(&d.socket);
        s.write_all(&frame(ALLOC)).unwrap();
        assert!(read_frame(&mut s).contains("granted"));
        let free = frame(r#"{"op":"free","finished":true}"#);
        d.signal(Signal::SIGSTOP); // both arrive before the daemon looks again
        s.write_all(&free[..free.len() / 2]).unwrap();
        drop(s);
        d.signal(Signal::SIGCONT);
        assert!(
            eventually(Duration::from_secs(20), || admin.list_units().unwrap()[0]
                .running
                .is_none()),
            "the unit stays granted to a closed connection"
        );
    }
    assert!(
        eventually(Duration::from_secs(20), || d.fds() == baseline),
        "descriptors leaked: {} open, {baseline} before",
        d.fds()
    );
    d.assert_alive();
}

/// SIGTERM with the OpenCL driver loaded (PoCL's LLVM installs its own handler, which
/// re-raised the signal and killed the daemon): the trace is written, the invariants
/// are checked and the socket is removed; SIGINT likewise without a trace.
#[test]
fn sigterm_and_sigint_stop_the_daemon_cleanly_with_opencl_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("live.json");
    let mut d = Daemon::start_live(
        "fcfs",
        &["--trace", trace.to_str().unwrap()],
        Stdio::piped(),
    );
    let mut c = d.client();
    assert!(
        c.list_units()
            .unwrap()
            .iter()
            .any(|u| u.kind.to_string() == "opencl"),
        "this test needs an OpenCL device (PoCL: pocl-opencl-icd)"
    );
    c.alloc(&meta(1.0, 0.0)).unwrap();
    c.free(true).unwrap();
    let stderr = d.stop_with(Signal::SIGTERM);
    assert!(stderr.contains("run record invariants: ok"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(v["traceEvents"].as_array().unwrap().len() > 1);

    let mut d = Daemon::start_live("fcfs", &[], Stdio::null());
    d.stop_with(Signal::SIGINT);
}

/// `--socket` naming something that is not a socket: a one-line input error, and the
/// file is untouched.
#[test]
fn the_daemon_refuses_to_replace_a_file_that_is_not_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("precious.txt");
    std::fs::write(&file, "keep me").unwrap();
    let out = common::hetsched(&["daemon", "--socket", file.to_str().unwrap()]);
    common::assert_input_error(&out, &["precious.txt", "not a socket"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
}

/// A control request with one invalid field changes nothing.
#[test]
fn an_invalid_control_request_changes_nothing() {
    let d = Daemon::start(1, 1, "fcfs");
    let mut admin = d.client();
    let before = admin.list_units().unwrap();
    let (cpu, cl) = (before[0].id, before[1].id);
    let bad_link = UnitChanges {
        capacity: Some(2048),
        name: Some("renamed".into()),
        link_bandwidth_bytes_per_s: Some(0.0),
        link_latency_s: Some(1e-6),
    };
    let err = admin.alter_unit(cl, bad_link).unwrap_err().to_string();
    assert!(err.contains("link_bandwidth_bytes_per_s"), "{err}");
    let cpu_link = UnitChanges {
        capacity: Some(2048),
        name: Some("renamed".into()),
        link_latency_s: Some(1e-6),
        ..Default::default()
    };
    let err = admin.alter_unit(cpu, cpu_link).unwrap_err().to_string();
    assert!(err.contains("no host link"), "{err}");
    let zero = UnitChanges {
        capacity: Some(0),
        name: Some("renamed".into()),
        ..Default::default()
    };
    let err = admin.alter_unit(cl, zero).unwrap_err().to_string();
    assert!(err.contains("capacity"), "{err}");
    let unit = NewUnit {
        kind: hetsched_core::machine::UnitType::Cpu,
        name: "zero".into(),
        cpus: vec![0],
        device: None,
        capacity: 0,
    };
    let err = admin.add_unit(unit).unwrap_err().to_string();
    assert!(err.contains("capacity"), "{err}");
    assert_eq!(
        admin.list_units().unwrap(),
        before,
        "a rejected request changed units"
    );
}

// ---- the soak

/// A process that says hello, is granted a unit, writes half a frame and waits to be
/// killed: run by the soak (this test binary re-executed with `HETSCHED_MID_FRAME`), a
/// no-op otherwise.
#[test]
#[ignore = "a helper process of the soak"]
fn mid_frame_child() {
    let Some(socket) = std::env::var_os("HETSCHED_MID_FRAME") else {
        return;
    };
    let mut s = raw_json(Path::new(&socket));
    s.write_all(&frame(ALLOC)).unwrap();
    s.write_all(&frame(STATS)[..7]).unwrap();
    println!("\nmid-frame");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(600));
}

/// What a soak measured.
#[derive(Debug, Default)]
struct Figures {
    grants: u64,
    double_grants: u64,
    errors: Vec<String>,
    hostile_rounds: u64,
    dropped_clients: u64,
    rss_peak_kb: u64,
    fds_peak: usize,
    fds_after: usize,
    fds_before: usize,
}

/// One hostile client's attack, repeated until `deadline`; `kind` picks which.
fn attack(kind: usize, socket: &Path, deadline: Instant, rounds: &AtomicU64) -> Result<(), String> {
    let mut garbage = 0x9e37_79b9_7f4a_7c15u64 ^ kind as u64;
    while Instant::now() < deadline {
        match kind {
            // Truncate the page, then ask for a unit and leave.
            0 => {
                let (mut s, page, _bell) = raw_paged(socket);
                if nix::unistd::ftruncate(page.fd(), 0).is_ok() {
                    return Err("a client truncated its page".into());
                }
                s.write_all(&frame(ALLOC)).map_err(|e| e.to_string())?;
                std::thread::sleep(Duration::from_millis(2));
            }
            // Flood `stats` and never read a reply, until dropped.
            1 => {
                let mut s = UnixStream::connect(socket).map_err(|e| e.to_string())?;
                s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
                let hello = frame(r#"{"op":"hello","version":1,"name":"flood"}"#);
                s.write_all(&hello).map_err(|e| e.to_string())?;
                let batch: Vec<u8> = (0..1024).flat_map(|_| frame(STATS)).collect();
                let e = loop {
                    if let Err(e) = s.write_all(&batch) {
                        break e;
                    }
                };
                if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut {
                    return Err("a stats flood was not dropped within 60 s".into());
                }
            }
            // Ask for a unit (sometimes wait for it), then half a frame, then close.
            2 => {
                let mut s = raw_json(socket);
                s.write_all(&frame(ALLOC)).map_err(|e| e.to_string())?;
                if rounds.load(Ordering::Relaxed).is_multiple_of(2) {
                    let reply = read_frame(&mut s);
                    if !reply.contains("granted") {
                        return Err(format!("unexpected reply {reply}"));
                    }
                }
                s.write_all(&frame(STATS)[..5]).map_err(|e| e.to_string())?;
            }
            // Garbage: any bytes, at least one whole (bad) frame's worth; the daemon
            // must answer with an error or hang up.
            3 => {
                let mut s = UnixStream::connect(socket).map_err(|e| e.to_string())?;
                let bytes: Vec<u8> = (0..hetsched_live::protocol::MAX_REQUEST + 8)
                    .map(|_| {
                        garbage ^= garbage << 13;
                        garbage ^= garbage >> 7;
                        garbage ^= garbage << 17;
                        garbage as u8
                    })
                    .collect();
                let _ = s.write_all(&bytes); // the daemon may hang up before the end
                s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                let mut sink = Vec::new();
                if let Err(e) = s.read_to_end(&mut sink) {
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut {
                        return Err("garbage did not close the connection within 60 s".into());
                    }
                }
            }
            // A process killed with half a frame written.
            _ => {
                let mut child = Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", "mid_frame_child", "--ignored", "--nocapture"])
                    .env("HETSCHED_MID_FRAME", socket)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| e.to_string())?;
                let out = child.stdout.take().unwrap();
                let ready = std::io::BufReader::new(out)
                    .lines()
                    .any(|l| l.is_ok_and(|l| l == "mid-frame"));
                child.kill().unwrap();
                child.wait().unwrap();
                if !ready {
                    return Err("the mid-frame child did not get ready".into());
                }
            }
        }
        rounds.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// `good` clients run alloc/free loops checking their grants while `hostile` ones
/// attack, for `secs`; then everyone leaves and the daemon stops on SIGTERM.
fn soak(hostile: usize, good: usize, units: u32, secs: u64) -> Figures {
    let dir = tempfile::tempdir().unwrap();
    let (trace, log) = (dir.path().join("soak.json"), dir.path().join("daemon.log"));
    let log_file = std::fs::File::create(&log).unwrap();
    let mut d = Daemon::start_with(
        units,
        0,
        "fcfs",
        &["--trace", trace.to_str().unwrap()],
        Stdio::from(log_file),
    );
    let fds_before = d.settled_fd_list();
    let mut fig = Figures {
        fds_before: fds_before.len(),
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(secs);
    let held: Arc<Vec<AtomicBool>> = Arc::new((0..units).map(|_| AtomicBool::new(false)).collect());
    let (grants, doubles, rounds) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let done = Arc::new(AtomicBool::new(false));
    let pid = d.pid();
    let monitor = {
        let done = done.clone();
        std::thread::spawn(move || {
            let (mut rss, mut fds) = (0u64, 0usize);
            while !done.load(Ordering::SeqCst) {
                let status =
                    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let kb = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                    .unwrap_or(0);
                rss = rss.max(kb);
                let n = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |r| r.count());
                fds = fds.max(n);
                std::thread::sleep(Duration::from_millis(20));
            }
            (rss, fds)
        })
    };
    let mut threads = Vec::new();
    for i in 0..good {
        let (socket, held, grants, doubles, errors) = (
            d.socket.clone(),
            held.clone(),
            grants.clone(),
            doubles.clone(),
            errors.clone(),
        );
        threads.push(std::thread::spawn(move || {
            let transport = [
                Transport::SharedPage,
                Transport::CompactSocket,
                Transport::Json,
            ][i % 3];
            let run = || -> hetsched_core::Result<()> {
                while Instant::now() < deadline {
                    let mut c = Client::connect_with(&socket, "good", transport)?;
                    for _ in 0..20 {
                        let unit = c.alloc(&meta(1.0, 0.0))?.id as usize;
                        if held[unit].swap(true, Ordering::SeqCst) {
                            doubles.fetch_add(1, Ordering::SeqCst);
                        }
                        grants.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(Duration::from_micros(200));
                        held[unit].store(false, Ordering::SeqCst);
                        c.free(true)?;
                    }
                }
                Ok(())
            };
            if let Err(e) = run() {
                errors.lock().unwrap().push(format!("good client {i}: {e}"));
            }
        }));
    }
    for i in 0..hostile {
        let (socket, rounds, errors) = (d.socket.clone(), rounds.clone(), errors.clone());
        threads.push(std::thread::spawn(move || {
            if let Err(e) = attack(i % 5, &socket, deadline, &rounds) {
                errors
                    .lock()
                    .unwrap()
                    .push(format!("hostile client {i}: {e}"));
            }
        }));
    }
    let limit = deadline + Duration::from_secs(120);
    while !threads.iter().all(|t| t.is_finished()) {
        assert!(
            Instant::now() < limit,
            "clients still running 120 s after the end: a lost grant or a hung daemon"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for t in threads {
        t.join().unwrap();
    }
    d.assert_alive();
    assert!(
        eventually(Duration::from_secs(30), || all_units_free(&d)),
        "a unit is still held or waited for after every client left"
    );
    assert!(
        eventually(Duration::from_secs(30), || d.fds() <= fig.fds_before),
        "descriptors not back to the start: before {fds_before:?}, now {:?}",
        d.fd_list()
    );
    fig.fds_after = d.fds();
    done.store(true, Ordering::SeqCst);
    (fig.rss_peak_kb, fig.fds_peak) = monitor.join().unwrap();
    fig.rss_peak_kb = fig.rss_peak_kb.max(d.status_kb("VmHWM"));
    let mut c = d.client();
    let Reply::Stats { grants: served, .. } = c.stats().unwrap() else {
        panic!("not a stats reply")
    };
    drop(c);
    d.stop_with(Signal::SIGTERM);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("run record invariants: ok"), "{text}");
    fig.grants = grants.load(Ordering::SeqCst);
    assert!(
        served >= fig.grants,
        "the daemon counts {served} grants, the good clients alone got {}",
        fig.grants
    );
    fig.double_grants = doubles.load(Ordering::SeqCst);
    fig.hostile_rounds = rounds.load(Ordering::SeqCst);
    fig.errors = std::mem::take(&mut errors.lock().unwrap());
    fig.dropped_clients = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("hetsched daemon: ")?
                .strip_suffix(" clients dropped or refused in all")
        })
        .map_or(0, |n| n.parse().unwrap());
    fig
}

fn check(fig: &Figures, hostile: usize, good: usize) {
    println!("soak {hostile} hostile + {good} good: {fig:#?}");
    assert!(fig.errors.is_empty(), "{:#?}", fig.errors);
    assert_eq!(fig.double_grants, 0, "a unit was granted twice");
    assert!(fig.grants >= good as u64, "{} grants", fig.grants);
    assert!(fig.hostile_rounds >= hostile as u64);
    assert!(fig.fds_after <= fig.fds_before);
    // Three per connection; a client may open its next connection before the daemon
    // has seen its last one close.
    let fd_bound = 4 * (hostile + good) + 64;
    assert!(
        fig.fds_peak <= fd_bound,
        "{} fds open (bound {fd_bound})",
        fig.fds_peak
    );
    // A few MiB per connection at most (its unread replies), most connections far less.
    let rss_bound = (64 + 2 * hostile as u64) << 10;
    assert!(
        fig.rss_peak_kb <= rss_bound,
        "daemon RSS peak {} kB (bound {rss_bound} kB)",
        fig.rss_peak_kb
    );
}

#[test]
fn soak_short() {
    let fig = soak(15, 15, 4, 6);
    check(&fig, 15, 15);
}

#[test]
#[ignore = "the acceptance size: 100 + 100 clients for 60 s (see the module doc)"]
fn soak_full() {
    let size = std::env::var("HETSCHED_SOAK").unwrap_or_else(|_| "100,100,60".into());
    let n: Vec<u64> = size.split(',').map(|v| v.trim().parse().unwrap()).collect();
    let (hostile, good, secs) = (n[0] as usize, n[1] as usize, n[2]);
    let fig = soak(hostile, good, 8, secs);
    check(&fig, hostile, good);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap();
    println!("load average after the soak: {load}");
}

/// Whether the daemon has closed `s` (end of stream), waiting up to `limit`.
fn closed_within(s: &mut UnixStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a reply (e.g. welcome): keep reading
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true, // reset: closed too
        }
    }
}

/// A connection that never says hello, or stops in the middle of a frame, is dropped
/// after `SLOW_CLIENT`; a greeted client that holds a unit and sends nothing is not.
#[test]
fn silent_and_half_sent_connections_are_dropped_but_quiet_holders_stay() {
    use hetsched_live::server::SLOW_CLIENT;
    let mut d = Daemon::start(2, 0, "fcfs");
    let mut holder = d.client();
    let held = holder.alloc(&meta(1.0, 0.0)).unwrap().id;
    let mut half = raw_json(&d.socket);
    half.write_all(&frame(STATS)[..6]).unwrap();
    // Both are silent from here on: neither may be dropped sooner than SLOW_CLIENT.
    let silent_since = Instant::now();
    let mut silent = UnixStream::connect(&d.socket).unwrap();
    let limit = SLOW_CLIENT + Duration::from_secs(30);
    assert!(
        closed_within(&mut silent, limit),
        "a silent connection stays"
    );
    assert!(silent_since.elapsed() >= SLOW_CLIENT, "dropped too soon");
    assert!(closed_within(&mut half, limit), "a half-sent frame stays");
    // The quiet holder kept its unit and its connection.
    let units = d.units();
    assert!(units[held as usize].running.is_some(), "{units:?}");
    holder.free(true).unwrap();
    d.assert_alive();
}

/// Another uid may hold at most `MAX_CLIENTS_PER_UID` connections: the next is closed at
/// once, and the daemon's own uid still connects. (Runs as root, which may become
/// `nobody`; elsewhere it says why it checks nothing.)
#[test]
fn another_uid_cannot_take_every_connection() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !nix::unistd::getuid().is_root() {
        eprintln!("not root: cannot run a client as another uid; nothing checked");
        return;
    }
    let mut d = Daemon::start(1, 0, "fcfs");
    std::fs::set_permissions(
        d.socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    std::fs::set_permissions(d._dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut flood = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "per_uid_flood_child", "--ignored", "--nocapture"])
        .env("HETSCHED_FLOOD", &d.socket)
        .uid(65534)
        .gid(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = flood.stdout.take().unwrap();
    let mut report = String::new();
    for line in std::io::BufReader::new(out).lines() {
        let line = line.unwrap();
        if line.starts_with("closed ") {
            report = line;
            break;
        }
    }
    // While the flood holds its connections, the owner is still served.
    let mut owner = d.client();
    assert_eq!(owner.list_units().unwrap().len(), 1);
    flood.kill().unwrap();
    flood.wait().unwrap();
    let cap = hetsched_live::server::MAX_CLIENTS_PER_UID;
    assert_eq!(report, format!("closed 1 of {}", cap + 1));
    d.assert_alive();
}

/// Helper process of `another_uid_cannot_take_every_connection`: opens one connection
/// more than the per-uid cap, says how many the daemon closed, then waits to be killed.
#[test]
#[ignore = "a helper process of another test"]
fn per_uid_flood_child() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Some(socket) = std::env::var_os("HETSCHED_FLOOD") else {
        return;
    };
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let n = hetsched_live::server::MAX_CLIENTS_PER_UID + 1;
    let conns: Vec<UnixStream> = (0..n)
        .map(|_| UnixStream::connect(Path::new(&socket)).unwrap())
        .collect();
    for s in &conns {
        s.set_nonblocking(true).unwrap();
    }
    let is_closed = |mut s: &UnixStream| matches!(s.read(&mut [0u8; 1]), Ok(0));
    // The daemon accepts in order: once the last is refused, all were looked at (well
    // within SLOW_CLIENT, after which it would drop the silent others too).
    let start = Instant::now();
    while !is_closed(&conns[n - 1]) && start.elapsed() < Duration::from_secs(8) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let closed = conns.iter().filter(|s| is_closed(s)).count();
    println!("\nclosed {closed} of {n}");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(600));
}

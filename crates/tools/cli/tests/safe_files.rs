//! Files on a file system others can write to (issue 38, points 7, 8 and 9), through the
//! real binary: outputs never written through a planted link nor into another user's
//! directory, inputs that are FIFOs or devices refused at once with bounded memory,
//! output paths that cannot take the output refused before the work (exit 2, one line
//! naming the path), and a run that fails leaves no truncated output.

#[allow(dead_code)] // `hetsched` is not used here: these runs need limits and a guard
mod common;
use common::assert_input_error;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// What each refusal here must take at most: a FIFO waited on would take forever.
const PROMPT: Duration = Duration::from_secs(20);

fn run(dir: &Path, args: &[&str]) -> Output {
    common::hetsched_bounded(dir, args, PROMPT)
}

use common::scenario;

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A file of root's that only root may read, which a planted link points at.
fn secret(dir: &Path) -> PathBuf {
    let secret = dir.join("secret");
    std::fs::write(&secret, "root's own\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    secret
}

/// The reproducer: root runs `hetsched simulate` (default `--out`) in a
/// world-writable directory where another user (uid 65534) planted
/// `hetsched-out/simulate-hand/table.txt` as a link to root's 0600 file; then
/// `hetsched-out` as a link to a directory of root's.
#[test]
fn root_refuses_an_output_directory_another_user_planted() {
    if !is_root() {
        eprintln!("SKIPPED: not root (only root can make a directory of uid 65534 here)");
        return;
    }
    let top = tempfile::tempdir().unwrap();
    let secret = secret(top.path());
    let shared = top.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let nobody = Some(65534);
    let planted = shared.join("hetsched-out/simulate-hand");
    std::fs::create_dir_all(&planted).unwrap();
    std::os::unix::fs::chown(shared.join("hetsched-out"), nobody, nobody).unwrap();
    std::os::unix::fs::chown(&planted, nobody, nobody).unwrap();
    symlink(&secret, planted.join("table.txt")).unwrap();
    std::os::unix::fs::lchown(planted.join("table.txt"), nobody, nobody).unwrap();

    let out = run(&shared, &["simulate", &scenario("hand.toml")]);
    assert_input_error(
        &out,
        &[
            "hetsched-out/simulate-hand",
            "belongs to uid 65534, not to uid 0",
        ],
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's own\n");
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // Nothing was written into the planted directory.
    assert_eq!(std::fs::read_dir(&planted).unwrap().count(), 1);

    // The same user plants `hetsched-out` itself as a link to a directory of root's
    // holding an earlier `simulate-hand`: the link is not followed.
    std::fs::remove_dir_all(shared.join("hetsched-out")).unwrap();
    let roots = top.path().join("roots");
    std::fs::create_dir_all(roots.join("simulate-hand")).unwrap();
    std::fs::write(roots.join("simulate-hand/table.txt"), "root's table\n").unwrap();
    symlink(&roots, shared.join("hetsched-out")).unwrap();
    std::os::unix::fs::lchown(shared.join("hetsched-out"), nobody, nobody).unwrap();
    let out = run(&shared, &["simulate", &scenario("hand.toml")]);
    assert_input_error(
        &out,
        &["hetsched-out is a symbolic link of uid 65534, not of uid 0 (you) or root"],
    );
    let table = std::fs::read_to_string(roots.join("simulate-hand/table.txt")).unwrap();
    assert_eq!(table, "root's table\n");
    assert_eq!(
        std::fs::read_dir(roots.join("simulate-hand"))
            .unwrap()
            .count(),
        1
    );
}

/// In one's own output directory, a link planted at an output's name is replaced by
/// the output, never written through; so is one at a `--trace` file's name... which
/// is refused instead, since that name is the user's to give.
#[test]
fn a_link_at_an_output_name_is_replaced_not_followed() {
    let top = tempfile::tempdir().unwrap();
    let secret = secret(top.path());
    let mine = top.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    for name in ["table.txt", "metrics.json", "tasks-fcfs.csv"] {
        symlink(&secret, mine.join(name)).unwrap();
    }
    let out = run(
        top.path(),
        &["simulate", &scenario("hand.toml"), "--out", "mine"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's own\n");
    for name in ["table.txt", "metrics.json", "tasks-fcfs.csv"] {
        let meta = std::fs::symlink_metadata(mine.join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name} is still a link");
    }
    // No temporary is left beside the outputs.
    let names: Vec<String> = std::fs::read_dir(&mine)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");

    symlink(&secret, top.path().join("trace.json")).unwrap();
    let out = run(
        top.path(),
        &[
            "simulate",
            &scenario("hand.toml"),
            "--out",
            "mine",
            "--trace",
            "trace.json",
        ],
    );
    assert_input_error(&out, &["trace.json", "is a symbolic link"]);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's own\n");
}

/// A FIFO given as any input fails at once (exit 2, naming it) instead of waiting for
/// a writer forever: a machine (directly and in a scenario), a scenario, a signature
/// (of `run`, and in a scenario), a trace, a NUCA machine.
#[test]
fn a_fifo_given_as_an_input_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in [
        "machine.toml",
        "machine.xml",
        "dump.tar.bz2",
        "scenario.toml",
        "sig.json",
        "trace.lackey",
        "chip.toml",
    ] {
        mkfifo(&d.join(name));
    }
    std::fs::write(
        d.join("uses-machine.toml"),
        "machine = \"machine.toml\"\n[[task]]\nwork = 1\n",
    )
    .unwrap();
    std::fs::write(
        d.join("uses-sig.toml"),
        "machine = \"ding\"\npolicies = [\"signature\"]\n[[task]]\nwork = 1\nsignature = \"sig.json\"\n",
    )
    .unwrap();
    let cases: [(&[&str], &[&str]); 10] = [
        (
            &["topology", "--machine", "machine.toml"],
            &["machine.toml", "is a FIFO"],
        ),
        (
            &["topology", "--machine", "machine.xml"],
            &["machine.xml", "is a FIFO"],
        ),
        (
            &["topology", "--machine", "dump.tar.bz2"],
            &["dump.tar.bz2", "is a FIFO"],
        ),
        (
            &["simulate", "scenario.toml"],
            &[
                "scenario.toml",
                "is a FIFO; a scenario must be a regular file",
            ],
        ),
        (
            &["simulate", "uses-machine.toml"],
            &["uses-machine.toml", "machine", "is a FIFO"],
        ),
        (
            &["simulate", "uses-sig.toml"],
            &[
                "uses-sig.toml",
                "task[0].signature",
                "sig.json",
                "is a FIFO",
            ],
        ),
        (
            &["run", "--signature", "sig.json", "--", "true"],
            &["sig.json", "is a FIFO; a signature must be a regular file"],
        ),
        (
            &["signature", "analyze", "trace.lackey"],
            &["trace.lackey", "is a FIFO; a trace must be a regular file"],
        ),
        (
            &["signature", "convert", "trace.lackey", "out.hstrace"],
            &["trace.lackey", "is a FIFO"],
        ),
        (
            &[
                "experiment",
                "shim-theta",
                "--machine",
                "chip.toml",
                "--tiny",
            ],
            &["chip.toml", "is a FIFO"],
        ),
    ];
    for (args, needles) in cases {
        let out = run(d, args);
        assert_input_error(&out, needles);
    }
    // No output was begun for the refused conversion.
    assert!(!d.join("out.hstrace").exists());
}

/// `/dev/zero` never ends: as `run --signature` (it grew to 2.1 GB) and as the program
/// of `run --` (1 GB read for its signature note), it is refused at once, before the
/// daemon is asked, under a 2 GiB address-space limit.
#[test]
fn dev_zero_as_a_signature_or_a_program_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = run(d, &["run", "--signature", "/dev/zero", "--", "true"]);
    assert_input_error(
        &out,
        &["/dev/zero: is a character device; a signature must be a regular file"],
    );
    let out = run(d, &["run", "--", "/dev/zero"]);
    assert_input_error(
        &out,
        &["/dev/zero: is a character device; a program must be a regular file"],
    );
    mkfifo(&d.join("prog"));
    let out = run(d, &["run", "--", "./prog"]);
    assert_input_error(
        &out,
        &["./prog: is a FIFO; a program must be a regular file"],
    );
}

/// Output paths that cannot take the outputs are bad input, found before any work:
/// an existing file as `--out`, `/proc` (root's, but it takes no files), a directory
/// one may not write, `/dev/full` as `--trace`, and a directory as `daemon --trace`
/// (which used to fail only at shutdown, after the run).
#[test]
fn an_output_path_that_cannot_take_the_output_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hand = scenario("hand.toml");
    std::fs::write(d.join("file"), "x").unwrap();
    let out = run(d, &["simulate", &hand, "--out", "file"]);
    assert_input_error(&out, &["file: is a regular file, not a directory"]);
    let out = run(d, &["simulate", &hand, "--out", "/proc"]);
    assert_input_error(&out, &["/proc: cannot write in the output directory"]);
    let out = run(d, &["simulate", &hand, "--out", "/proc/self"]);
    assert_input_error(&out, &["/proc/self: is a symbolic link"]);
    // Root may write any directory; sysfs takes no new one, even from root.
    let read_only = if is_root() {
        PathBuf::from("/sys/hetsched-out")
    } else {
        let ro = d.join("read-only");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        ro.join("out")
    };
    let ro = read_only.to_str().unwrap();
    let out = run(d, &["simulate", &hand, "--out", ro]);
    assert_input_error(&out, &[ro, "cannot"]);
    let out = run(
        d,
        &["simulate", &hand, "--out", "out", "--trace", "/dev/full"],
    );
    assert_input_error(&out, &["/dev/full: is a character device"]);
    let out = run(d, &["demo", "--out", "/proc"]);
    assert_input_error(&out, &["/proc: cannot write in the output directory"]);

    let trace_dir = d.join("traces");
    std::fs::create_dir(&trace_dir).unwrap();
    let trace = format!("{}/", trace_dir.display());
    let socket = d.join("daemon.sock");
    let out = run(
        d,
        &[
            "daemon",
            "--machine",
            "ding",
            "--socket",
            socket.to_str().unwrap(),
            "--trace",
            &trace,
        ],
    );
    assert_input_error(&out, &["traces", "is a directory"]);
    assert!(
        !socket.exists(),
        "the daemon started before refusing --trace"
    );
}

/// A run that fails midway (its event limit, after thousands of tasks were written)
/// leaves no truncated per-task CSV, nor its temporary; runs that succeeded keep theirs;
/// the error says which outputs were written and which not.
#[test]
fn a_failed_run_leaves_no_truncated_csv() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("many.toml"),
        "machine = \"ding\"\npolicies = [\"fcfs\"]\n[[generator]]\ncount = 400000\nrate = 1000000.0\nsize = { dist = \"fixed\", value = 0.000001 }\n[[generator.mix]]\nshare = 1.0\n",
    )
    .unwrap();
    let out = run(
        d,
        &[
            "simulate",
            "many.toml",
            "--out",
            "out",
            "--max-events",
            "500000",
        ],
    );
    assert_input_error(
        &out,
        &[
            "many.toml",
            "fcfs",
            "event limit (500000 events",
            "; in out: not written: tasks-fcfs.csv, table.txt, metrics.json",
        ],
    );
    let left: Vec<String> = std::fs::read_dir(d.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // With a policy that succeeds first, its CSV is complete and stays.
    std::fs::write(
        d.join("one.toml"),
        "machine = \"ding\"\n[[task]]\nwork = 1\n",
    )
    .unwrap();
    let out = run(
        d,
        &[
            "simulate",
            "one.toml",
            "--out",
            "out",
            "--policy",
            "fcfs",
            "--policy",
            "cfs",
            "--max-events",
            "3",
        ],
    );
    assert_input_error(
        &out,
        &[
            "one.toml: cfs: the run reached its event limit (3 events",
            "; in out: not written: tasks-cfs.csv, table.txt, metrics.json; complete: tasks-fcfs.csv",
        ],
    );
    let csv = std::fs::read_to_string(d.join("out/tasks-fcfs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(!d.join("out/tasks-cfs.csv").exists());

    // The table of an earlier command is left as it was, and said to be.
    let ok = run(
        d,
        &["simulate", "one.toml", "--out", "out", "--policy", "fcfs"],
    );
    assert_eq!(ok.status.code(), Some(0));
    let table = std::fs::read_to_string(d.join("out/table.txt")).unwrap();
    let out = run(
        d,
        &[
            "simulate",
            "one.toml",
            "--out",
            "out",
            "--policy",
            "cfs",
            "--max-events",
            "3",
        ],
    );
    assert_input_error(
        &out,
        &["; in out: not written: tasks-cfs.csv, table.txt, metrics.json (the table.txt, metrics.json there are from an earlier command)"],
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out/table.txt")).unwrap(),
        table
    );
}

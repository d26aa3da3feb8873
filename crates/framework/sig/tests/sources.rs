//! Trace sources on real programs: live lackey streaming, saved traces, binary replay.

use hetsched_sig::analysis::{Analyzer, Mode};
use hetsched_sig::source::{binary, lackey, replay_file, valgrind};
use hetsched_sig::trace::{Recorded, Tee};

fn have_valgrind() -> bool {
    std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok()
}

#[test]
fn live_lackey_streams_and_saved_traces_replay_identically() {
    if !have_valgrind() {
        eprintln!("valgrind not installed: skipped");
        return;
    }
    let mut live = Recorded::default();
    let run = valgrind::trace_lackey("/bin/true", &[], true, &mut live).unwrap();
    assert!(run.status.success());
    let accesses = live.events.iter().filter(|e| e.is_ok()).count();
    assert!(
        accesses > 10_000,
        "only {accesses} accesses traced for /bin/true"
    );

    // Save as lackey text and as binary; both replay to the same events.
    let dir = tempfile::tempdir().unwrap();
    let text_path = dir.path().join("t.lackey");
    let bin_path = dir.path().join("t.hstrace");
    let mut text = lackey::Writer::new(std::fs::File::create(&text_path).unwrap());
    let mut bin = binary::Writer::new(std::fs::File::create(&bin_path).unwrap());
    live.replay(&mut Tee(&mut text, &mut bin));
    text.finish().unwrap();
    bin.finish().unwrap();
    for p in [&text_path, &bin_path] {
        let mut back = Recorded::default();
        replay_file(p, &mut back).unwrap();
        assert_eq!(back, live, "{}", p.display());
    }
    let text_len = std::fs::metadata(&text_path).unwrap().len();
    let bin_len = std::fs::metadata(&bin_path).unwrap().len();
    assert!(
        bin_len * 3 < text_len,
        "binary {bin_len} B vs text {text_len} B"
    );

    // The analysis sees the same profile from the live run and the replay.
    let mut a = Analyzer::new(Mode::Exact);
    live.replay(&mut a);
    let mut b = Analyzer::new(Mode::Exact);
    replay_file(&bin_path, &mut b).unwrap();
    assert_eq!(a.finish(), b.finish());
}

#[test]
fn a_missing_program_is_an_error_not_a_panic() {
    if !have_valgrind() {
        return;
    }
    let r = valgrind::trace_lackey("/nonexistent/prog", &[], true, &mut Recorded::default());
    assert!(r.is_err());
}

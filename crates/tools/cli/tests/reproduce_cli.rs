//! `hetsched reproduce` through the real binary: one cheap paper end to end, and bad
//! input.

use std::process::Command;

fn hetsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hetsched"))
}

#[test]
fn only_one_paper_writes_the_report_and_prints_its_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let out = hetsched()
        .args(["reproduce", "--quick", "--only", "akram", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("akram") && stdout.contains("10 claims"),
        "{stdout}"
    );
    for f in ["index.html", "report.md", "claims.json", "akram/table.txt"] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    // Quick, and the section says what the stored full run gives (Akram's model is
    // solved, so the same).
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("**Quick run: the claim tests' scale")
            && md.contains("gives the same 10 verdicts.**"),
        "{md}"
    );
}

#[test]
fn an_unknown_paper_is_bad_input_naming_the_accepted_ones() {
    let out = hetsched()
        .args(["reproduce", "--only", "nope", "--out"])
        .arg(std::env::temp_dir().join("hetsched-reproduce-never-written"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--only") && err.contains("beisel, shelepov, ding, akram, shim, coretime"),
        "{err}"
    );
}

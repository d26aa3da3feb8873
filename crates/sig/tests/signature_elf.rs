//! Signatures: JSON round trip and ELF note embedding on a real binary.

use hetsched_sig::analysis::{Analyzer, Mode};
use hetsched_sig::elasticity::ElasticityModel;
use hetsched_sig::elfnote;
use hetsched_sig::missrate::CacheConfig;
use hetsched_sig::signature::Signature;
use hetsched_sig::trace::{AccessKind, TraceSink};

fn sample_signature() -> Signature {
    let mut a = Analyzer::new(Mode::Exact);
    // Three passes over 40,000 blocks (2.5 MB): misses in small caches, hits in large.
    for _ in 0..3 {
        for b in 0..40_000u64 {
            a.instructions(4);
            a.access(AccessKind::Load, b * 64, 8);
        }
    }
    let p = a.finish();
    Signature::build(
        "scan",
        &p,
        &CacheConfig::standard(),
        &ElasticityModel::default(),
    )
}

#[test]
fn json_round_trips_and_checks_version() {
    let s = sample_signature();
    assert_eq!(s.configs.len(), 24);
    assert_eq!(s.buckets.len(), 20);
    let json = s.to_json();
    assert_eq!(Signature::from_json(&json, "x").unwrap(), s);
    let wrong = json.replace("\"version\": 1", "\"version\": 99");
    assert!(Signature::from_json(&wrong, "x").is_err());
    assert!(Signature::from_json("{}", "x").is_err());
    // The scan misses in 512 KB and fits in 16 MB.
    assert!(s.config("512KB/8").unwrap().miss_rate > 0.1);
    assert_eq!(s.config("16MB/8").unwrap().miss_rate, 0.0);
}

#[test]
fn embedded_binary_still_runs_and_shows_the_same_json() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("true");
    std::fs::copy("/bin/true", &bin).unwrap();
    assert_eq!(
        elfnote::read(&bin).unwrap(),
        None,
        "a fresh binary has no signature"
    );

    let json = sample_signature().to_json();
    elfnote::embed(&bin, json.as_bytes()).unwrap();
    let back = elfnote::read(&bin).unwrap().expect("note present");
    assert_eq!(String::from_utf8(back).unwrap(), json);
    assert!(std::process::Command::new(&bin).status().unwrap().success());

    // Embedding again replaces the note rather than adding a second one.
    elfnote::embed(&bin, b"{\"x\":2}").unwrap();
    assert_eq!(elfnote::read(&bin).unwrap().unwrap(), b"{\"x\":2}");
    let out = std::process::Command::new("readelf")
        .arg("-S")
        .arg(&bin)
        .output();
    if let Ok(out) = out {
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.matches(".note.hetsched").count(), 1);
        assert!(text
            .lines()
            .any(|l| l.contains(".note.hetsched") && l.contains("NOTE")));
    }
}

#[test]
fn non_elf_is_a_clear_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("script.sh");
    std::fs::write(&f, "#!/bin/sh\necho hi\n").unwrap();
    let e = elfnote::read(&f).unwrap_err();
    assert!(matches!(e, hetsched_core::Error::Input(_)));
    assert!(e.to_string().contains("not an ELF file"), "{e}");
    assert!(elfnote::embed(&f, b"{}").is_err());
}

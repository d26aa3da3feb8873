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

#[test]
fn embedding_keeps_the_mode_and_never_writes_through_a_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("true");
    std::fs::copy("/bin/true", &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o751)).unwrap();
    elfnote::embed(&bin, b"{\"x\":1}").unwrap();
    let mode = std::fs::metadata(&bin).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o751);
    assert!(std::process::Command::new(&bin).status().unwrap().success());
    // Only the program is left in the directory (no temporary).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // A link where the program was expected is refused; its target is untouched.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&bin, &link).unwrap();
    let before = std::fs::read(&bin).unwrap();
    let e = elfnote::embed(&link, b"{\"x\":2}").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("is a symbolic link"), "{e}");
    assert_eq!(std::fs::read(&bin).unwrap(), before);
    // Reading follows it (a program run through a link is still that program).
    assert_eq!(elfnote::read(&link).unwrap().unwrap(), b"{\"x\":1}");
}

#[test]
fn a_device_or_a_fifo_is_not_read_as_a_program() {
    let start = std::time::Instant::now();
    let e = elfnote::read(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(e.to_string().contains("is a character device"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let e = elfnote::read(&fifo).unwrap_err();
    assert!(e.to_string().contains("is a FIFO"), "{e}");
    assert!(elfnote::embed(&fifo, b"{}").is_err());
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

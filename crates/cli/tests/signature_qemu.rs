//! `hetsched signature profile` with the fast (QEMU) source: the source it says it
//! uses, and shell wrappers.

mod common;
use common::{assert_input_error, hetsched};

#[test]
fn a_shell_wrapper_around_one_command_profiles_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.txt");
    std::fs::write(&file, "hello hello hello\n".repeat(2000)).unwrap();
    let script = format!("gzip -c {}", file.display());
    let o = hetsched(&[
        "signature",
        "profile",
        "--quiet",
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("trace source: qemu"), "{stderr}");
    assert!(
        stderr.contains(&format!("profiling `{script}` directly")),
        "{stderr}"
    );
    let sig: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(sig["program"], script.as_str());
    assert!(sig["instructions"].as_u64().unwrap() > 100_000);
}

#[test]
fn a_shell_pipeline_is_refused_with_the_reason() {
    let o = hetsched(&[
        "signature",
        "profile",
        "--",
        "bash",
        "-c",
        "gzip -c x | wc -c",
    ]);
    assert_input_error(&o, &["bash -c", "'|'", "would profile the shell"]);
}

#[test]
fn save_needs_lackey() {
    let o = hetsched(&[
        "signature",
        "profile",
        "--source",
        "qemu",
        "--save",
        "t.hstrace",
        "--",
        "true",
    ]);
    assert_input_error(&o, &["--save needs --source lackey"]);
}

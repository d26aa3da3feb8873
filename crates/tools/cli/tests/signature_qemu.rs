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

/// Runs `hetsched ARGS` on a pseudo-terminal (util-linux `script`); returns what the
/// terminal showed.
fn on_a_terminal(args: &str) -> String {
    let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_hetsched"));
    let o = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("script (util-linux)");
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{shown}");
    shown
}

#[test]
fn progress_is_shown_on_a_terminal_only_and_not_when_quiet() {
    // gzip on 1 MB of text: about 57 M accesses, seconds under QEMU.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.txt");
    std::fs::write(&file, hetsched_sig::validate::text(17_000, 1)).unwrap();
    let profile = format!(
        "signature profile --sample 0.01 -- gzip -6 -kf {}",
        file.display()
    );
    let shown = on_a_terminal(&profile);
    assert!(shown.contains("tracing: "), "{shown}");
    assert!(shown.contains(" M accesses, "), "{shown}");
    let quiet = on_a_terminal(&profile.replace("profile ", "profile --quiet "));
    assert!(!quiet.contains("tracing: "), "{quiet}");
    assert!(quiet.contains("trace source: qemu"), "{quiet}");
    // Not a terminal: no progress.
    let args: Vec<&str> = profile.split(' ').collect();
    let o = hetsched(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("tracing: "), "{stderr}");
}

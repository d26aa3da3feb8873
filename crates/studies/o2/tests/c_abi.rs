//! Compiles a small C program against include/hetsched_o2.h and the crate's static
//! library with `cc`, runs it, and checks delegation happened on the owners' CPUs.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn c_program_delegates_to_owner_cpus() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // target/<profile>/deps/c_abi-<hash> → target/<profile>/libhetsched_o2.a
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let lib = profile_dir.join("libhetsched_o2.a");
    // `cargo test` builds the rlib only; make sure the static library is current.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "--lib", "-p", "hetsched-o2"]);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let built = build
        .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
        .status()
        .expect("cargo runs");
    assert!(built.success(), "building the static library failed");
    assert!(
        lib.exists(),
        "static library not built at {}",
        lib.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("delegation");
    let status = Command::new("cc")
        .arg("-O1")
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c/delegation.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&prog)
        .status()
        .expect("cc runs");
    assert!(status.success(), "C program failed to compile/link");
    let cpus = hetsched_util::host::allowed_cpus();
    let (a, b) = (cpus[0], *cpus.last().unwrap());
    let out = Command::new(&prog)
        .args([a.to_string(), b.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "C program reported failure: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("ops=8000 wrong_cpu=0 failures=0"),
        "{stdout}"
    );
}

//! `hetsched app md5|prime` as a user runs them: the real binary on real OpenCL.

mod common;
use common::hetsched;

use std::process::Output;

fn stdout(out: &Output) -> String {
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "stdout: {s}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    s
}

/// Exit 2 and a one-line message naming the field.
fn assert_input_error(args: &[&str], needle: &str) {
    let out = hetsched(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
}

/// MD5("hello"), as `printf hello | md5sum` prints it.
const HELLO: &str = "5d41402abc4b2a76b9719d911017c592";

#[test]
fn md5_migrates_from_cpu_to_opencl() {
    let s = stdout(&hetsched(&[
        "app",
        "md5",
        "--hash",
        HELLO,
        "--length",
        "5",
        "--alphabet",
        "abcdefghijklmno",
        "--migrate-after",
        "4",
        "--opencl-interval",
        "20000",
    ]));
    assert!(s.contains("found: \"hello\""), "{s}");
    assert!(s.contains("4 checkpoints on cpu"), "{s}");
    assert!(s.contains("on opencl (device 0"), "{s}");
}

#[test]
fn prime_on_opencl_prints_verified_factors() {
    let s = stdout(&hetsched(&[
        "app",
        "prime",
        "600851475143",
        "--device",
        "opencl",
    ]));
    assert!(s.contains("600851475143 = 71 * 839 * 1471 * 6857"), "{s}");
    assert!(s.contains("on opencl"), "{s}");
}

#[test]
fn prime_prints_multiplicities() {
    let s = stdout(&hetsched(&["app", "prime", "1024"]));
    assert!(s.contains("1024 = 2^10"), "{s}");
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    assert_input_error(
        &["app", "md5", "--hash", "not-hex", "--length", "3"],
        "--hash",
    );
    assert_input_error(
        &["app", "md5", "--hash", &"g".repeat(32), "--length", "3"],
        "hexadecimal",
    );
    assert_input_error(
        &[
            "app",
            "md5",
            "--hash",
            HELLO,
            "--length",
            "3",
            "--alphabet",
            "",
        ],
        "--alphabet: must not be empty",
    );
    assert_input_error(&["app", "prime", "1"], ">= 2");
    assert_input_error(&["app", "prime", "0"], ">= 2");
    assert_input_error(&["app", "prime", "-5"], "unexpected argument");
    assert_input_error(
        &["app", "prime", "12", "--migrate-after", "0"],
        "--migrate-after",
    );
    assert_input_error(&["app", "prime", "12", "--device", "gpu"], "--device");
    assert_input_error(&["app", "prime", "12", "--cpu", "100000"], "--cpu");
    assert_input_error(
        &["app", "prime", "12", "--opencl-interval", "0"],
        "--opencl-interval",
    );
    assert_input_error(&["app", "prime", "18446744073709551616"], "N");
    assert_input_error(
        &[
            "app",
            "md5",
            "--hash",
            HELLO,
            "--length",
            "30",
            "--alphabet",
            "abcdefghij",
        ],
        "64 bits",
    );
}

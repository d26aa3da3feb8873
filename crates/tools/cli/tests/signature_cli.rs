//! `hetsched signature ...` end to end.

mod common;
use common::hetsched;

use std::process::Command;

#[test]
fn elasticity_reproduces_the_papers_vpr_example() {
    let o = hetsched(&[
        "signature",
        "elasticity",
        "--t1",
        "58.17",
        "--f1",
        "1.87",
        "--t2",
        "65.33",
        "--f2",
        "1.6",
    ]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let e: f64 = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(format!("{e:.2}"), "-0.75", "{out}");
    let o = hetsched(&[
        "signature",
        "elasticity",
        "--t1",
        "1",
        "--f1",
        "2",
        "--t2",
        "1",
        "--f2",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn analyze_embed_show_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.lackey");
    let mut text = String::new();
    for pass in 0..3 {
        for b in 0..30_000u64 {
            text.push_str("I  00400000,4\n");
            text.push_str(&format!(
                " {} {:x},8\n",
                if pass == 0 { 'S' } else { 'L' },
                0x1000_0000 + b * 64
            ));
        }
    }
    std::fs::write(&trace, text).unwrap();
    let sig = dir.path().join("sig.json");
    let o = hetsched(&[
        "signature",
        "analyze",
        trace.to_str().unwrap(),
        "-o",
        sig.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("4MB/16") && table.contains("working set   30000 blocks"),
        "{table}"
    );

    // Convert to binary: same signature from the replay.
    let bin_trace = dir.path().join("t.hstrace");
    assert!(hetsched(&[
        "signature",
        "convert",
        trace.to_str().unwrap(),
        bin_trace.to_str().unwrap()
    ])
    .status
    .success());
    let sig2 = dir.path().join("sig2.json");
    let o = hetsched(&[
        "signature",
        "analyze",
        bin_trace.to_str().unwrap(),
        "--program",
        "t.lackey",
        "-o",
        sig2.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(&sig).unwrap(), std::fs::read(&sig2).unwrap());

    let exe = dir.path().join("true");
    std::fs::copy("/bin/true", &exe).unwrap();
    let o = hetsched(&["signature", "show", exe.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no hetsched signature"));

    assert!(hetsched(&[
        "signature",
        "embed",
        exe.to_str().unwrap(),
        sig.to_str().unwrap()
    ])
    .status
    .success());
    let o = hetsched(&["signature", "show", exe.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(o.stdout, std::fs::read(&sig).unwrap());
    assert!(
        Command::new(&exe).status().unwrap().success(),
        "embedded binary still runs"
    );

    let o = hetsched(&["signature", "show", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an ELF file"));
}

#[test]
fn fit_writes_a_model_that_profile_commands_accept() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("pairs.csv");
    std::fs::write(
        &csv,
        "cache,miss_rate,elasticity\n4MB/16,0.001,-0.95\n4MB/16,0.004,-0.8\n4MB/16,0.01,-0.5\n",
    )
    .unwrap();
    let model = dir.path().join("model.json");
    let o = hetsched(&[
        "signature",
        "fit",
        csv.to_str().unwrap(),
        "--out",
        model.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("4MB/16"));
    let trace = dir.path().join("t.lackey");
    std::fs::write(&trace, "I  1,1\n L 40,8\nI  2,1\n L 80,8\n").unwrap();
    let o = hetsched(&[
        "signature",
        "analyze",
        trace.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("fitted from"));
}

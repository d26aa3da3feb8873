//! Fuzzing machine files: every field from absurd values (NaN, ±inf, 1e300, 2^32 - 1,
//! 2^64 - 1, ...) and raw bytes. Parsing must not panic, must fail with a one-line input
//! error naming the file, and what parses stays within the documented limits (so that
//! no file expands into millions of objects).
//!
//! CI runs `HETSCHED_FUZZ_CASES` cases (default 64); a longer run:
//! `HETSCHED_FUZZ_CASES=100000 cargo nextest run -p hetsched-topology --test fuzz_machine_file`.

use hetsched_core::Error;
use hetsched_topology::machine_file::{limits, parse};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("HETSCHED_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "-1",
            "nan",
            "inf",
            "-inf",
            "1e300",
            "1e-300",
            "65536",
            "65537",
            "16384",
            "4294967295",
            "18446744073709551615",
            "1000000000",
            "\"24 GB/s\"",
            "\"1 EiB\"",
        ])
        .prop_map(str::to_string),
        (1u64..20).prop_map(|v| v.to_string()),
    ]
}

fn field(key: &'static str) -> impl Strategy<Value = String> {
    prop::option::of(number())
        .prop_map(move |v| v.map_or(String::new(), |v| format!("{key} = {v}\n")))
}

fn machine_text() -> impl Strategy<Value = String> {
    let kind = (field("capacity"), field("max_mhz"), field("base_mhz"))
        .prop_map(|(a, b, c)| format!("[[cpu_kind]]\nname = \"k\"\n{a}{b}{c}"));
    let package =
        (number(), field("smt"), field("numa_node"), any::<bool>()).prop_map(|(c, s, n, k)| {
            format!(
                "[[package]]\ncores = {c}\n{s}{n}{}",
                if k { "kind = \"k\"\n" } else { "" }
            )
        });
    let node = (number(), field("bandwidth"))
        .prop_map(|(m, b)| format!("[[numa_node]]\nmemory = {m}\n{b}"));
    let cache = (number(), number(), field("ways"), field("line"), number()).prop_map(
        |(l, s, w, li, sh)| {
            format!("[[cache]]\nlevel = {l}\nsize = {s}\n{w}{li}shared_by = {sh}\n")
        },
    );
    let acc = (
        field("count"),
        field("link_latency_us"),
        field("relative_speed"),
        field("link_bandwidth"),
    )
        .prop_map(|(a, b, c, d)| {
            format!("[[accelerator]]\ntype = \"gpu\"\nname = \"g\"\n{a}{b}{c}{d}")
        });
    let io =
        field("count").prop_map(|c| format!("[[io_device]]\nkind = \"block\"\nname = \"d\"\n{c}"));
    let mesh = prop::option::of((number(), number(), number(), number())).prop_map(|m| {
        m.map_or(String::new(), |(w, h, c, f)| {
            format!("[mesh]\nwidth = {w}\nheight = {h}\ncycles_per_hop = {c}\nflit_bits = {f}\n")
        })
    });
    let distances = prop::option::of(number())
        .prop_map(|d| d.map_or(String::new(), |d| format!("distances = [[{d}]]\n")));
    (
        distances,
        prop::collection::vec(kind, 0..2),
        prop::collection::vec(package, 0..3),
        prop::collection::vec(node, 0..2),
        prop::collection::vec(cache, 0..3),
        prop::collection::vec(acc, 0..2),
        prop::collection::vec(io, 0..2),
        mesh,
    )
        .prop_map(|(d, k, p, n, c, a, i, m)| {
            format!(
                "name = \"fuzz\"\n{d}{}{}{}{}{}{}{m}",
                k.concat(),
                p.concat(),
                n.concat(),
                c.concat(),
                a.concat(),
                i.concat()
            )
        })
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text, "fuzz.toml") {
        Ok(m) => {
            prop_assert!(m.pus.len() as u64 <= limits::MAX_PUS);
            prop_assert!(m.accelerators.len() as u64 <= limits::MAX_ACCELERATORS);
            prop_assert!(m.io_devices.len() as u64 <= limits::MAX_IO_DEVICES);
            prop_assert!(m.caches.len() <= limits::MAX_CACHES * m.pus.len());
        }
        Err(Error::Input(msg)) => {
            prop_assert!(msg.starts_with("fuzz.toml"), "{}", msg);
            prop_assert_eq!(msg.lines().count(), 1, "{}", msg);
        }
        Err(e) => prop_assert!(false, "not an input error: {e}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn machine_files_never_panic_and_stay_within_limits(text in machine_text()) {
        check(&text)?;
    }

    #[test]
    fn machine_file_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }
}

//! Fuzzing every reader of the signature tools: lackey text, binary traces, signature
//! JSON and the ELF note reader, on structured absurd input (access sizes up to
//! 2^32 - 1, huge instruction runs, long lines) and raw bytes. No input may panic, and
//! the analysis does bounded work per record: an access is at most
//! `MAX_ACCESS_BYTES / 64 + 1` blocks (twice for a modify).
//!
//! CI runs `HETSCHED_FUZZ_CASES` cases (default 64); a longer run:
//! `HETSCHED_FUZZ_CASES=100000 cargo nextest run -p hetsched-sig --test fuzz_readers`.

use hetsched_core::Error;
use hetsched_sig::analysis::{Analyzer, Mode};
use hetsched_sig::elfnote;
use hetsched_sig::signature::Signature;
use hetsched_sig::source::{binary, lackey};
use hetsched_sig::trace::MAX_ACCESS_BYTES;
use proptest::prelude::*;
use std::io::Read;

fn cases() -> u32 {
    std::env::var("HETSCHED_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// Blocks one trace record may make the analysis touch.
const BLOCKS_PER_RECORD: u64 = 2 * (MAX_ACCESS_BYTES as u64 / 64 + 1);

fn bounded(
    result: hetsched_core::Result<()>,
    a: Analyzer,
    records: u64,
) -> Result<(), TestCaseError> {
    match result {
        Ok(()) => {
            let p = a.finish();
            prop_assert!(
                p.accesses <= records * BLOCKS_PER_RECORD,
                "{} blocks",
                p.accesses
            );
        }
        Err(Error::Input(m)) => prop_assert_eq!(m.lines().count(), 1, "{}", m),
        Err(e) => prop_assert!(false, "not an input error: {e}"),
    }
    Ok(())
}

fn lackey_line() -> impl Strategy<Value = String> {
    let size = prop_oneof![
        (0u64..64).prop_map(|s| s.to_string()),
        prop::sample::select(vec![
            "4096",
            "4097",
            "4294967295",
            "4294967296",
            "99999999999"
        ])
        .prop_map(str::to_string),
    ];
    prop_oneof![
        any::<u64>().prop_map(|a| format!("I  {a:x},3")),
        (
            prop::sample::select(vec!['L', 'S', 'M', 'X']),
            any::<u64>(),
            size
        )
            .prop_map(|(k, a, s)| format!(" {k} {a:x},{s}")),
        "[ -~]{0,40}",
        (1usize..6000).prop_map(|n| "7".repeat(n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn lackey_text_never_panics_and_work_is_bounded(lines in prop::collection::vec(lackey_line(), 0..50)) {
        let text = lines.join("\n");
        let mut a = Analyzer::new(Mode::Exact);
        let r = lackey::parse(text.as_bytes(), "t", &mut a).map(|_| ());
        bounded(r, a, lines.len() as u64)?;
    }

    #[test]
    fn lackey_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let mut a = Analyzer::new(Mode::Sampled(0.5));
        let r = lackey::parse(&bytes[..], "t", &mut a).map(|_| ());
        bounded(r, a, bytes.len() as u64)?;
    }

    #[test]
    fn binary_traces_never_panic_and_work_is_bounded(
        varints in prop::collection::vec(prop_oneof![any::<u64>(), 0u64..1 << 16, Just(u64::MAX)], 0..60),
        tail in prop::collection::vec(any::<u8>(), 0..20),
    ) {
        let mut bytes = binary::MAGIC.to_vec();
        for mut v in varints.iter().copied() {
            while v >= 0x80 {
                bytes.push((v as u8) | 0x80);
                v >>= 7;
            }
            bytes.push(v as u8);
        }
        bytes.extend(&tail);
        let mut a = Analyzer::new(Mode::Exact);
        let r = binary::parse(&bytes[..], "t", &mut a).map(|_| ());
        bounded(r, a, bytes.len() as u64)?;
    }

    #[test]
    fn signature_json_never_panics(text in prop_oneof![
        "\\PC{0,200}",
        "[{}\\[\\]:,\"a-z0-9 .e+-]{0,200}".prop_map(|s| format!("{{\"format\":\"hetsched-signature\",\"version\":1,{s}")),
    ]) {
        if let Err(e) = Signature::from_json(&text, "s.json") {
            prop_assert!(matches!(e, Error::Input(_)), "{e}");
        }
    }

    #[test]
    fn elf_note_reader_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16),
    ) {
        // Random bytes, and a real ELF (this test's own binary, cut short) with bytes
        // flipped in its headers.
        let mut elf = Vec::new();
        std::fs::File::open(std::env::current_exe().unwrap())
            .and_then(|f| f.take(64 << 10).read_to_end(&mut elf))
            .unwrap();
        for (i, b) in &flips {
            let at = i.index(elf.len().min(4096));
            elf[at] ^= b;
        }
        let dir = tempfile::tempdir().unwrap();
        for (name, data) in [("raw", &bytes), ("elf", &elf)] {
            let p = dir.path().join(name);
            std::fs::write(&p, data).unwrap();
            if let Err(e) = elfnote::read(&p) {
                prop_assert!(matches!(e, Error::Input(_)), "{e}");
            }
        }
    }
}

//! The estimated miss rate of synthetic kernels has the right shape across cache sizes:
//! ~0 while the working set fits, rising across the cache size, flat beyond.

use hetsched_sig::analysis::{Analyzer, Mode, Profile};
use hetsched_sig::missrate::{miss_rate, CacheConfig};
use hetsched_sig::trace::{AccessKind, TraceSink};

/// Touch every line of `bytes` once, then `passes` × lines reads (2 instructions each),
/// sequential or at random lines (xorshift, deterministic).
fn kernel(bytes: u64, random: bool, passes: u64) -> Profile {
    let lines = bytes / 64;
    let mut a = Analyzer::new(Mode::Exact);
    for l in 0..lines {
        a.instructions(2);
        a.access(AccessKind::Store, l * 64, 8);
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0..passes * lines {
        let l = if random {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % lines
        } else {
            k % lines
        };
        a.instructions(2);
        a.access(AccessKind::Load, l * 64, 8);
    }
    a.finish()
}

#[test]
fn scan_and_random_kernels_have_the_expected_shape() {
    let cache = CacheConfig::parse("1MB/8").unwrap();
    for random in [false, true] {
        let rates: Vec<(u64, f64)> = (0..=10)
            .map(|k| {
                let bytes = (64u64 << 10) << k; // 64 KB … 64 MB
                let passes = if bytes >= 16 << 20 { 1 } else { 2 };
                (bytes, miss_rate(&kernel(bytes, random, passes), cache))
            })
            .collect();
        for &(bytes, r) in &rates {
            if bytes <= 1 << 20 {
                assert!(
                    r < 1e-3,
                    "random={random}: {bytes} B fits in 1 MB but rate {r}"
                );
            }
        }
        // Rising across the cache size…
        let at = |b: u64| rates.iter().find(|x| x.0 == b).unwrap().1;
        assert!(at(2 << 20) > 0.02, "random={random}: {rates:?}");
        assert!(at(4 << 20) > at(2 << 20), "random={random}: {rates:?}");
        // …and flat far beyond it: every read misses, one read per 2 instructions.
        assert!(
            (at(32 << 20) - 0.5).abs() < 0.06,
            "random={random}: {rates:?}"
        );
        assert!(
            (at(64 << 20) - at(32 << 20)).abs() < 0.05,
            "random={random}: {rates:?}"
        );
    }
}

#[test]
fn a_larger_cache_never_misses_more() {
    let p = kernel(3 << 20, true, 2);
    for ways in [4, 8, 16, 32] {
        let mut last = f64::INFINITY;
        for size_kb in [512u64, 1024, 2048, 4096, 8192, 16384] {
            let r = miss_rate(
                &p,
                CacheConfig {
                    size_bytes: size_kb << 10,
                    ways,
                },
            );
            assert!(r <= last + 1e-12, "{size_kb} KB/{ways}: {r} > {last}");
            last = r;
        }
    }
}

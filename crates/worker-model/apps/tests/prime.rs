//! Prime factorisation on the CPU, on OpenCL (PoCL) and across migrations.

mod common;

use common::{cpu_grant, opencl_grant};
use hetsched_apps::prime::{is_prime, PrimeCheckpoint, PrimeConfig, PrimeFactoriser};
use hetsched_core::machine::UnitType;
use hetsched_core::Error;
use hetsched_worker::{run, Fixed, Rerequest, Worker};

// 999983 is the largest prime below 10^6, 1000003 the smallest above.
const SEMIPRIME: u64 = 999_983 * 1_000_003;

fn config() -> PrimeConfig {
    PrimeConfig {
        cpu_interval: 1000,
        opencl_interval: 8192,
    }
}

fn factorise(
    n: u64,
    sched: &mut Fixed,
) -> hetsched_worker::RunReport<PrimeCheckpoint, Vec<(u64, u32)>> {
    let w = PrimeFactoriser::new(config()).unwrap();
    run(&w, sched, PrimeCheckpoint::start(n).unwrap()).unwrap()
}

fn check(n: u64, factors: &[(u64, u32)]) {
    let product: u128 = factors.iter().map(|&(p, k)| (p as u128).pow(k)).product();
    assert_eq!(product, n as u128, "{factors:?}");
    assert!(factors.iter().all(|&(p, _)| is_prime(p)), "{factors:?}");
    assert!(factors.windows(2).all(|w| w[0].0 < w[1].0), "{factors:?}");
}

#[test]
fn both_devices_factorise_correctly() {
    for grant in [cpu_grant(), opencl_grant()] {
        for n in [
            2,
            3,
            4,
            1024,
            600_851_475_143,
            1_000_000_007,
            2 * 3 * 3 * 5 * 7 * 7 * 7 * 11,
        ] {
            let r = factorise(n, &mut Fixed::new(grant.clone()));
            check(n, &r.output);
        }
        let r = factorise(SEMIPRIME, &mut Fixed::new(grant.clone()));
        assert_eq!(r.output, vec![(999_983, 1), (1_000_003, 1)]);
        // Divisors 2..=999983 each tested once; then 999984^2 > 1000003.
        assert_eq!(r.checkpoint.divisors_tested, 999_982);
        assert_eq!(r.checkpoint.next_divisor, 999_984);
    }
}

#[test]
fn cpu_checkpoints_every_thousand_divisors() {
    let r = factorise(1_000_000_007, &mut Fixed::new(cpu_grant()));
    assert_eq!(r.output, vec![(1_000_000_007, 1)]);
    // isqrt(1e9+7) = 31622: divisors 2..=31622 in blocks of 1000.
    assert_eq!(r.checkpoint.divisors_tested, 31_621);
    assert_eq!(r.segments[0].checkpoints, 31_621 / 1000);
}

#[test]
fn cpu_to_opencl_migration_neither_repeats_nor_skips() {
    let mut sched = Fixed::new(cpu_grant())
        .with_unit(opencl_grant())
        .answer_at(7, Rerequest::Migrate(UnitType::OpenCl));
    let r = factorise(SEMIPRIME, &mut sched);
    assert_eq!(r.output, vec![(999_983, 1), (1_000_003, 1)]);
    assert_eq!(
        (r.segments[0].grant.kind, r.segments[0].checkpoints),
        (UnitType::Cpu, 7)
    );
    assert_eq!(r.segments[1].grant.kind, UnitType::OpenCl);
    assert_eq!(r.checkpoint.divisors_tested, 999_982);
}

#[test]
fn opencl_to_cpu_migration_neither_repeats_nor_skips() {
    // 2^3 * 3 * 65537 * 999983: small factors on OpenCL, the rest on the CPU.
    let n = 8 * 3 * 65_537 * 999_983;
    let mut sched = Fixed::new(opencl_grant())
        .with_unit(cpu_grant())
        .answer_at(3, Rerequest::Migrate(UnitType::Cpu));
    let r = factorise(n, &mut sched);
    assert_eq!(r.output, vec![(2, 3), (3, 1), (65_537, 1), (999_983, 1)]);
    assert_eq!(r.segments[0].grant.kind, UnitType::OpenCl);
    assert_eq!(r.segments[0].checkpoints, 3);
    assert_eq!(r.segments[1].grant.kind, UnitType::Cpu);
    assert!(r.segments[1].checkpoints > 0);
    // Each divisor from 2 up to the end point tested exactly once.
    assert_eq!(r.checkpoint.divisors_tested, r.checkpoint.next_divisor - 2);
}

#[test]
fn n_below_two_is_an_input_error() {
    for n in [0, 1] {
        assert!(matches!(PrimeCheckpoint::start(n), Err(Error::Input(_))));
    }
}

#[test]
fn meta_info_matches_the_paper() {
    let m = PrimeFactoriser::new(config()).unwrap().meta_info();
    assert_eq!(m.affinity.get(UnitType::OpenCl), 1.0);
    assert_eq!(m.affinity.get(UnitType::Cpu), 1.0);
    assert_eq!(m.affinity.get(UnitType::Gpu), 0.0);
}

#[test]
fn miller_rabin_agrees_with_trial_division() {
    let slow = |n: u64| {
        n >= 2
            && (2..)
                .take_while(|d| d * d <= n)
                .all(|d| !n.is_multiple_of(d))
    };
    for n in 0..5000 {
        assert_eq!(is_prime(n), slow(n), "{n}");
    }
    assert!(is_prime(18_446_744_073_709_551_557)); // largest u64 prime
    assert!(!is_prime(3_215_031_751)); // strong pseudoprime to bases 2, 3, 5, 7
}

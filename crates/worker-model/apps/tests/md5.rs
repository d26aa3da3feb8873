//! MD5 cracking on the CPU, on OpenCL (PoCL) and across migrations.

mod common;

use common::{cpu_grant, opencl_grant};
use hetsched_apps::md5::{md5_hex, Md5Checkpoint, Md5Config, Md5Cracker, Md5Job};
use hetsched_core::machine::UnitType;
use hetsched_core::Error;
use hetsched_worker::{run, Fixed, Rerequest};

const ALPHABET: &str = "abcdefghijklmnop"; // 16^4 = 65536 words of length 4

fn config() -> Md5Config {
    Md5Config {
        cpu_interval: 500,
        opencl_interval: 4096,
    }
}

/// A job whose answer is word `index` of the 16-letter, length-4 space.
fn job_for_index(index: u64) -> Md5Job {
    let probe = Md5Job::new(&"0".repeat(32), ALPHABET, 4).unwrap();
    Md5Job::new(&md5_hex(&probe.word(index)), ALPHABET, 4).unwrap()
}

/// A job without answer in its space ("zzzz" is not made of a..p).
fn job_without_answer() -> Md5Job {
    Md5Job::new(&md5_hex(b"zzzz"), ALPHABET, 4).unwrap()
}

#[test]
fn cpu_finds_a_published_test_vector() {
    // RFC 1321: MD5("abc") = 900150983cd24fb0d6963f7d28e17f72.
    let job = Md5Job::new("900150983cd24fb0d6963f7d28e17f72", "abc", 3).unwrap();
    let w = Md5Cracker::new(job, config()).unwrap();
    let r = run(&w, &mut Fixed::new(cpu_grant()), Md5Checkpoint::default()).unwrap();
    assert_eq!(r.output.unwrap().word, "abc");
}

#[test]
fn opencl_finds_a_published_test_vector() {
    let job = Md5Job::new("900150983CD24FB0D6963F7D28E17F72", "cab", 3).unwrap();
    let w = Md5Cracker::new(job, config()).unwrap();
    let r = run(
        &w,
        &mut Fixed::new(opencl_grant()),
        Md5Checkpoint::default(),
    )
    .unwrap();
    assert_eq!(r.output.unwrap().word, "abc");
}

#[test]
fn cpu_stops_exactly_at_the_answer() {
    let w = Md5Cracker::new(job_for_index(20_123), config()).unwrap();
    let r = run(&w, &mut Fixed::new(cpu_grant()), Md5Checkpoint::default()).unwrap();
    let found = r.output.unwrap();
    assert_eq!(found.index, 20_123);
    assert_eq!(md5_hex(found.word.as_bytes()), w.job().target_hex());
    assert_eq!(r.checkpoint.words_hashed, 20_124);
    assert_eq!(r.segments[0].checkpoints, 20_123 / 500);
}

#[test]
fn opencl_finds_the_answer() {
    let w = Md5Cracker::new(job_for_index(50_001), config()).unwrap();
    let r = run(
        &w,
        &mut Fixed::new(opencl_grant()),
        Md5Checkpoint::default(),
    )
    .unwrap();
    let found = r.output.unwrap();
    assert_eq!(found.index, 50_001);
    assert_eq!(md5_hex(found.word.as_bytes()), w.job().target_hex());
    // Whole launches: the block holding the answer is hashed completely.
    assert_eq!(
        r.checkpoint.words_hashed,
        50_001_u64.div_ceil(4096).max(1) * 4096
    );
    assert_eq!(r.checkpoint.words_hashed, r.checkpoint.next_word);
}

#[test]
fn both_devices_search_the_whole_space_when_there_is_no_answer() {
    for grant in [cpu_grant(), opencl_grant()] {
        let w = Md5Cracker::new(job_without_answer(), config()).unwrap();
        let r = run(&w, &mut Fixed::new(grant), Md5Checkpoint::default()).unwrap();
        assert_eq!(r.output, None);
        assert_eq!(r.checkpoint.words_hashed, 65_536);
    }
}

#[test]
fn cpu_to_opencl_migration_neither_repeats_nor_skips() {
    let mut sched = Fixed::new(cpu_grant())
        .with_unit(opencl_grant())
        .answer_at(5, Rerequest::Migrate(UnitType::OpenCl));
    let w = Md5Cracker::new(job_without_answer(), config()).unwrap();
    let r = run(&w, &mut sched, Md5Checkpoint::default()).unwrap();
    assert_eq!(r.output, None);
    assert_eq!(r.segments[0].grant.kind, UnitType::Cpu);
    assert_eq!(r.segments[0].checkpoints, 5);
    assert_eq!(r.segments[1].grant.kind, UnitType::OpenCl);
    // 2500 words on the CPU, the rest in 4096-word launches from there.
    assert_eq!(
        r.segments[1].checkpoints,
        (65_536_u64 - 2500).div_ceil(4096) - 1
    );
    assert_eq!(r.checkpoint.words_hashed, 65_536);

    // The answer lies after the migration point: found on OpenCL.
    let mut sched = Fixed::new(cpu_grant())
        .with_unit(opencl_grant())
        .answer_at(5, Rerequest::Migrate(UnitType::OpenCl));
    let w = Md5Cracker::new(job_for_index(40_000), config()).unwrap();
    let r = run(&w, &mut sched, Md5Checkpoint::default()).unwrap();
    assert_eq!(r.output.unwrap().index, 40_000);
    assert_eq!(r.checkpoint.words_hashed, r.checkpoint.next_word);
}

#[test]
fn opencl_to_cpu_migration_neither_repeats_nor_skips() {
    let mut sched = Fixed::new(opencl_grant())
        .with_unit(cpu_grant())
        .answer_at(2, Rerequest::Migrate(UnitType::Cpu));
    let w = Md5Cracker::new(job_for_index(12_345), config()).unwrap();
    let r = run(&w, &mut sched, Md5Checkpoint::default()).unwrap();
    assert_eq!(r.output.unwrap().index, 12_345);
    assert_eq!(r.segments[0].grant.kind, UnitType::OpenCl);
    assert_eq!(r.segments[1].grant.kind, UnitType::Cpu);
    // 8192 words on OpenCL, then the CPU hashes 8192..=12345 one by one.
    assert_eq!(r.checkpoint.words_hashed, 12_346);
    assert_eq!(r.segments[1].checkpoints, (12_345 - 8192) / 500);
}

#[test]
fn bad_input_is_an_input_error() {
    let bad = [
        Md5Job::new("xyz", "abc", 3),
        Md5Job::new(&"g".repeat(32), "abc", 3),
        Md5Job::new(&"0".repeat(32), "", 3),
        Md5Job::new(&"0".repeat(32), "aba", 3),
        Md5Job::new(&"0".repeat(32), "abc", 0),
        Md5Job::new(&"0".repeat(32), "abc", 56),
        Md5Job::new(&"0".repeat(32), "abcdefghijklmnopqrstuvwxyz", 14),
    ];
    for r in bad {
        assert!(matches!(r, Err(Error::Input(_))), "{r:?}");
    }
}

#[test]
fn meta_info_matches_the_paper() {
    let w = Md5Cracker::new(job_without_answer(), config()).unwrap();
    use hetsched_worker::Worker;
    let m = w.meta_info();
    assert_eq!(m.affinity.get(UnitType::OpenCl), 2.0);
    assert_eq!(m.affinity.get(UnitType::Cpu), 1.0);
}

#[test]
fn a_gpu_grant_is_refused_because_there_is_no_cuda_implementation() {
    let w = Md5Cracker::new(job_without_answer(), config()).unwrap();
    let gpu = hetsched_worker::Grant {
        unit: 7,
        kind: UnitType::Gpu,
        cpus: Vec::new(),
        opencl_device: None,
    };
    let err = run(&w, &mut Fixed::new(gpu), Md5Checkpoint::default()).unwrap_err();
    assert!(matches!(err, Error::Input(_)), "{err}");
    assert!(err.to_string().contains("gpu affinity is 0"), "{err}");
}

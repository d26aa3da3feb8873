//! The paper's claims that the simulated sweeps measure, one test each, pinned to the
//! verdict `hetsched_akram::reproduce::claims` judges (the report prints the same
//! judgement). Where ours differs, docs/akram.md explains why.

use hetsched_akram::experiment::run;
use hetsched_akram::reproduce::claims;
use hetsched_study::{assert_verdict, Claim, Verdict};
use std::sync::OnceLock;

fn judged() -> &'static [Claim] {
    static C: OnceLock<Vec<Claim>> = OnceLock::new();
    C.get_or_init(|| claims(&run().expect("the experiment runs")))
}

fn pinned(id: &str, verdict: Verdict) {
    let judged: Vec<_> = judged().iter().map(Into::into).collect();
    assert_verdict(&judged, id, verdict);
}

#[test]
fn every_claim_has_a_test() {
    let ids: Vec<&str> = judged().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "remote-transfer-loss-8-instances",
            "remote-transfer-loss-1-instance",
            "remote-use-loss-with-sum-4-instances",
            "memory-stress-loss-8-instances",
            "buffered-cpio-sys-remote-transfer",
            "buffered-cpio-sys-remote-copy",
            "buffered-cpio-iowait-remote-transfer",
            "ior-read-loss",
            "ior-write-loss",
            "stream-loss-two-ssd-sets",
        ]
    );
}

/// Paper: up to 40 %; ours 20 % (the model's DMA window and latencies).
#[test]
fn remote_transfer_loses_throughput_at_8_instances_but_half_the_papers() {
    pinned("remote-transfer-loss-8-instances", Verdict::Partly);
}

#[test]
fn remote_transfer_loss_is_small_with_one_instance() {
    pinned("remote-transfer-loss-1-instance", Verdict::Holds);
}

/// Paper: 5 %; ours 0 % (the summation does not saturate a CPU).
#[test]
fn remote_use_of_summed_data_costs_no_throughput_here() {
    pinned("remote-use-loss-with-sum-4-instances", Verdict::DoesNotHold);
}

#[test]
fn memory_stress_costs_local_throughput_as_in_the_paper() {
    pinned("memory-stress-loss-8-instances", Verdict::Holds);
}

/// Paper: +40 % (fsmark), +57 % (Psearchy); ours +14 %.
#[test]
fn remote_transfer_raises_buffered_system_cpio_less_than_the_paper() {
    pinned("buffered-cpio-sys-remote-transfer", Verdict::Partly);
}

/// Paper: +15 % (fsmark); ours +24 %.
#[test]
fn remote_copy_raises_buffered_system_cpio_more_than_the_paper() {
    pinned("buffered-cpio-sys-remote-copy", Verdict::Partly);
}

/// Paper: +130 % (fsmark), +69 % (Psearchy); ours +16 %.
#[test]
fn remote_transfer_raises_buffered_iowait_cpio_less_than_the_paper() {
    pinned("buffered-cpio-iowait-remote-transfer", Verdict::Partly);
}

/// Paper: 16 % (IOR reads); ours 13 % (buffered reads, the same path).
#[test]
fn ior_reads_lose_about_the_papers_throughput() {
    pinned("ior-read-loss", Verdict::Holds);
}

/// Paper: 19 % (IOR writes); ours 13 %, the read path's (the model's costs do not depend
/// on the direction).
#[test]
fn ior_writes_lose_about_the_papers_throughput() {
    pinned("ior-write-loss", Verdict::Holds);
}

/// Paper: 14 % and 27 % on the two SSD sets; ours 13 % on both (symmetric sockets).
#[test]
fn stream_loses_throughput_but_not_asymmetrically() {
    pinned("stream-loss-two-ssd-sets", Verdict::Partly);
}

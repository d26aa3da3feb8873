//! The paper's claims that the simulated sweeps measure, one test each, pinned to the
//! verdict `hetsched_akram::reproduce::claims` grades by the one rule (the report prints
//! the same grading; `assert_verdict` grades each number against its band again). Where ours differs, docs/akram.md explains why.

use hetsched_akram::experiment::run;
use hetsched_akram::reproduce::claims;
use hetsched_study::{assert_verdict, Claim, Judged, Verdict};
use std::sync::OnceLock;

fn judged() -> &'static [Claim] {
    static C: OnceLock<Vec<Claim>> = OnceLock::new();
    C.get_or_init(|| claims(&run().expect("the experiment runs")))
}

fn pinned(id: &str, verdict: Verdict) -> Judged {
    let judged: Vec<Judged> = judged().iter().map(Into::into).collect();
    assert_verdict(&judged, id, verdict).clone()
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

/// Paper: up to 40 %; ours 19.5 %, more than 50 % below it (the model's DMA window and
/// latencies).
#[test]
fn remote_transfer_loses_half_the_papers_throughput_at_8_instances() {
    pinned("remote-transfer-loss-8-instances", Verdict::DoesNotHold);
}

#[test]
fn remote_transfer_loss_is_smaller_with_one_instance() {
    pinned("remote-transfer-loss-1-instance", Verdict::Holds);
}

/// Paper: 5 %; ours 0 % (the summation does not saturate a CPU).
#[test]
fn remote_use_of_summed_data_costs_no_throughput_here() {
    pinned("remote-use-loss-with-sum-4-instances", Verdict::DoesNotHold);
}

/// Paper: 23 %; ours 17 %, within 50 % of it but not 10 %.
#[test]
fn memory_stress_costs_local_throughput_near_the_papers() {
    pinned("memory-stress-loss-8-instances", Verdict::Partly);
}

/// Paper: +40 % (fsmark), +57 % (Psearchy); ours +14 %.
#[test]
fn remote_transfer_raises_buffered_system_cpio_far_less_than_the_paper() {
    pinned("buffered-cpio-sys-remote-transfer", Verdict::DoesNotHold);
}

/// Paper: +15 % (fsmark); ours +24 %.
#[test]
fn remote_copy_raises_buffered_system_cpio_far_more_than_the_paper() {
    pinned("buffered-cpio-sys-remote-copy", Verdict::DoesNotHold);
}

/// Paper: +130 % (fsmark), +69 % (Psearchy); ours +16 %.
#[test]
fn remote_transfer_raises_buffered_iowait_cpio_far_less_than_the_paper() {
    pinned("buffered-cpio-iowait-remote-transfer", Verdict::DoesNotHold);
}

/// Paper: 16 % (IOR reads); ours 13 % (buffered reads, the same path).
#[test]
fn ior_reads_lose_near_the_papers_throughput() {
    pinned("ior-read-loss", Verdict::Partly);
}

/// Paper: 19 % (IOR writes); ours 13 %, the read path's (the model's costs do not depend
/// on the direction).
#[test]
fn ior_writes_lose_near_the_papers_throughput() {
    pinned("ior-write-loss", Verdict::Partly);
}

/// Paper: 14 % and 27 % on the two SSD sets; ours 13 % on both (symmetric sockets): the
/// first holds, the second is more than 50 % off.
#[test]
fn stream_loses_the_first_sets_throughput_but_not_asymmetrically() {
    let c = pinned("stream-loss-two-ssd-sets", Verdict::DoesNotHold);
    assert_eq!(c.check("loss on set 1, %").verdict, Verdict::Holds);
    assert_eq!(c.check("loss on set 2, %").verdict, Verdict::DoesNotHold);
}

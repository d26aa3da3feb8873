//! `hetsched experiment ...`: one command per reproduced experiment.

use clap::Subcommand;
use hetsched_core::Result;

#[derive(Subcommand)]
pub enum Experiment {
    /// Shim et al.: remote access vs thread migration vs the predictor (θ = 2, 3, 5).
    ShimTheta(crate::nuca_cmd::ShimThetaArgs),
    /// O² (CORETIME) directory lookups on this machine: thread-based vs delegation.
    CoretimeLive(crate::o2_cmd::CoretimeLiveArgs),
    /// O² (CORETIME) directory lookups simulated on the paper's 16-core Opteron.
    CoretimeSim(crate::o2_cmd::CoretimeSimArgs),
}

pub fn run(which: Experiment) -> Result<()> {
    match which {
        Experiment::ShimTheta(a) => crate::nuca_cmd::shim_theta(a),
        Experiment::CoretimeLive(a) => crate::o2_cmd::coretime_live(a),
        Experiment::CoretimeSim(a) => crate::o2_cmd::coretime_sim(a),
    }
}

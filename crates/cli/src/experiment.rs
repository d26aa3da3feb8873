//! `hetsched experiment ...`: one command per reproduced experiment.

use clap::Subcommand;
use hetsched_core::Result;

#[derive(Subcommand)]
pub enum Experiment {
    /// Shim et al.: remote access vs thread migration vs the predictor (θ = 2, 3, 5).
    ShimTheta(crate::nuca_cmd::ShimThetaArgs),
}

pub fn run(which: Experiment) -> Result<()> {
    match which {
        Experiment::ShimTheta(a) => crate::nuca_cmd::shim_theta(a),
    }
}

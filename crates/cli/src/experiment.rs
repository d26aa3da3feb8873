//! `hetsched experiment ...`: one command per reproduced experiment.

use crate::beisel_cmd;
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
    /// Beisel et al. live: md5 / prime processes on this machine's PUs and OpenCL
    /// devices under the daemon, FCFS vs time-sharing.
    #[command(name = "beisel-live")]
    BeiselLive(beisel_cmd::LiveArgs),
    /// Beisel et al. Fig. 3: 15 MD5 tasks, GPU queue limit 5, progress over time.
    #[command(name = "beisel-fig3")]
    BeiselFig3(beisel_cmd::OutArgs),
    /// Beisel et al. Fig. 4: 25 MD5 + 50 prime tasks, FCFS vs 4 s granularity.
    #[command(name = "beisel-fig4")]
    BeiselFig4(beisel_cmd::SeedArgs),
    /// Beisel et al. Fig. 5: N prime tasks on the GPU alone vs GPU + CPU cores.
    #[command(name = "beisel-fig5")]
    BeiselFig5(beisel_cmd::OutArgs),
    /// Beisel et al. Figs. 6-7: granularity sweep on the GPU (total runtime, turnaround).
    #[command(name = "beisel-fig6-7")]
    BeiselFig67(beisel_cmd::SeedArgs),
    /// Ding et al.: PARSEC-like programs alone and in mixes on the simulated ding
    /// machine, numa-amp and cfs-cap against cfs.
    Ding(crate::ding_cmd::DingArgs),
    /// Akram et al.: zmIO-like I/O in the four NUMA configurations on the paper's server
    /// (simulator I/O model), and io-affinity vs cfs.
    Akram(crate::akram_cmd::AkramArgs),
    /// Shelepov & Fedorova §4: signature vs default scheduler (heterogeneous, balanced,
    /// uniform, and the 1.5/1.0-3 GHz projection), paper beside ours, bar chart.
    Shelepov(crate::shelepov_cmd::ShelepovArgs),
    /// Validate the signature miss-rate model against cachegrind; writes the docs table.
    SignatureValidate(crate::signature_cmd::ValidateArgs),
}

pub fn run(which: Experiment) -> Result<()> {
    match which {
        Experiment::ShimTheta(a) => crate::nuca_cmd::shim_theta(a),
        Experiment::CoretimeLive(a) => crate::o2_cmd::coretime_live(a),
        Experiment::CoretimeSim(a) => crate::o2_cmd::coretime_sim(a),
        Experiment::BeiselLive(a) => beisel_cmd::live(a),
        Experiment::BeiselFig3(a) => beisel_cmd::fig3(a),
        Experiment::BeiselFig4(a) => beisel_cmd::fig4(a),
        Experiment::BeiselFig5(a) => beisel_cmd::fig5(a),
        Experiment::BeiselFig67(a) => beisel_cmd::fig6_7(a),
        Experiment::Ding(a) => crate::ding_cmd::run(a),
        Experiment::Akram(a) => crate::akram_cmd::run(a),
        Experiment::Shelepov(a) => crate::shelepov_cmd::run(a),
        Experiment::SignatureValidate(a) => crate::signature_cmd::validate(a),
    }
}

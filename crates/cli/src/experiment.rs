//! `hetsched experiment ...`: one command per reproduced experiment.

use clap::Subcommand;
use hetsched_core::Result;

#[derive(Subcommand)]
pub enum Experiment {
    /// Validate the signature miss-rate model against cachegrind; writes the docs table.
    SignatureValidate(crate::signature_cmd::ValidateArgs),
}

pub fn run(which: Experiment) -> Result<()> {
    match which {
        Experiment::SignatureValidate(a) => crate::signature_cmd::validate(a),
    }
}

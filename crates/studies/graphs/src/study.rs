//! The task-graph experiments in the experiment registry: `hetsched experiment
//! starpu-machines`. No paper, so no section of `hetsched reproduce`.

use crate::starpu_machines::{self, Options};
use hetsched_study::{options, Experiment, Study};

pub const STUDY: Study = Study {
    key: "graphs",
    experiments: &[Experiment {
        key: "starpu-machines",
        about: "StarPU's tiled Cholesky and LU of growing size on its calibrated machines \
                (attila, hannibal, idgraf, mirage, sirocco; their own models) under eager, \
                dmda, dmdas, heft, lws and random: GFlop/s against the lower bound",
        outputs: "summary.md, results.csv, results.json, MACHINE.png",
        args: <Options as clap::Args>::augment_args,
        run: |m, out, w| starpu_machines::run(&options(m)?, out, w).map(drop),
    }],
    reproduce: None,
};

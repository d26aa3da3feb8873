//! `hetsched topology` and `hetsched machines`.

use clap::{Args, ValueEnum};
use hetsched_core::machine::UnitGranularity;
use hetsched_core::{Error, Result};
use hetsched_topology::{presets, starpu};

#[derive(Args)]
pub struct TopologyArgs {
    /// Machine: `live`, a preset name, an hwloc XML file, a sysfs dump (.tar.bz2 or
    /// directory), a TOML machine file, or a StarPU calibration (`starpu:HOST`,
    /// `starpu:DIR:HOST`).
    #[arg(long, default_value = "live")]
    pub machine: String,
    /// Print JSON (schema: docs/machine-model.md) instead of a tree.
    #[arg(long)]
    pub json: bool,
    /// What a CPU unit is.
    #[arg(long, value_enum, default_value_t = Granularity::Pu)]
    pub units: Granularity,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Granularity {
    Pu,
    Core,
}

impl From<Granularity> for UnitGranularity {
    fn from(g: Granularity) -> Self {
        match g {
            Granularity::Pu => UnitGranularity::Pu,
            Granularity::Core => UnitGranularity::Core,
        }
    }
}

pub fn topology(args: TopologyArgs) -> Result<()> {
    let machine = hetsched_topology::load(&args.machine, args.units.into())?;
    if args.json {
        let text = serde_json::to_string_pretty(&machine).map_err(Error::runtime)?;
        println!("{text}");
    } else {
        print!("{}", hetsched_topology::tree::render(&machine));
    }
    Ok(())
}

pub fn machines() -> Result<()> {
    println!("{:<10} {:<45} description", "preset", "paper");
    for p in presets::PRESETS {
        println!("{:<10} {:<45} {}", p.name, p.paper, presets::description(p));
    }
    let (dirs, found) = starpu::installed();
    let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if found.is_empty() {
        println!(
            "\nNo StarPU calibration found (looked in {}; Debian's are in the package starpu-examples).",
            searched.join(", ")
        );
    } else {
        println!(
            "\n{:<24} {:>5} {:>5} {:>7} {:>7}  directory",
            "StarPU calibration", "CPUs", "CUDA", "OpenCL", "models"
        );
        for f in &found {
            let spec = format!("starpu:{}", f.sampling.host);
            let dir = f.sampling.dir.display();
            match &f.config {
                Ok(c) => println!(
                    "{spec:<24} {:>5} {:>5} {:>7} {:>7}  {dir}",
                    c.cpus, c.cuda, c.opencl, f.models
                ),
                Err(e) => println!("{spec:<24} unreadable: {e}"),
            }
        }
        println!("(looked in {})", searched.join(", "));
    }
    println!("\nAlso: `live` (this machine, through hwloc), an hwloc XML file, a sysfs dump (.tar.bz2 or directory), a .toml machine file, starpu:DIR:HOST (a StarPU sampling directory).");
    Ok(())
}

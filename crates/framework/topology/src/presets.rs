//! Built-in machines: the ones the papers evaluate on, as TOML machine files compiled
//! into the binary (the files live in the repository's `machines/` directory).

pub struct Preset {
    pub name: &'static str,
    pub paper: &'static str,
    pub toml: &'static str,
}

pub const PRESETS: &[Preset] = &[
    Preset {
        name: "beisel",
        paper: "Beisel et al. (accelerator scheduling)",
        toml: include_str!("../../../../machines/beisel.toml"),
    },
    Preset {
        name: "shelepov",
        paper: "Shelepov & Fedorova, machine 3 (signatures)",
        toml: include_str!("../../../../machines/shelepov.toml"),
    },
    Preset {
        name: "akram",
        paper: "Akram et al. (NUMA I/O affinity)",
        toml: include_str!("../../../../machines/akram.toml"),
    },
    Preset {
        name: "coretime",
        paper: "Boyd-Wickizer et al. (O2 / CORETIME)",
        toml: include_str!("../../../../machines/coretime.toml"),
    },
    Preset {
        name: "shim",
        paper: "Shim et al., Table I (tiled NUCA)",
        toml: include_str!("../../../../machines/shim.toml"),
    },
    Preset {
        name: "ding",
        paper: "Ding et al. (NUMA-aware AMP scheduling)",
        toml: include_str!("../../../../machines/ding.toml"),
    },
];

pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The `description` line of a preset's file.
pub fn description(p: &Preset) -> &'static str {
    p.toml
        .lines()
        .find_map(|l| l.strip_prefix("description = "))
        .map(|d| d.trim_matches('"'))
        .unwrap_or("")
}

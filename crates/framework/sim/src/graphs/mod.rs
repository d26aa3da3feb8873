//! Task-graph generators: StarPU's tiled dense factorizations, task for task as its
//! examples submit them, with its examples' kernel names (the codelets' model symbols)
//! and StarPU's footprints ([`hetsched_core::footprint`]), so that the calibrations of
//! StarPU's examples (`hetsched_topology::starpu`, `--machine starpu:HOST`) time their
//! tasks unchanged.
//!
//! One file per algorithm: [`cholesky`] (`examples/cholesky/cholesky_implicit.c`) and
//! [`lu`] (`examples/lu/xlu_implicit.c`); [`qr`] is Chameleon's (StarPU ships no QR
//! example), with Chameleon's kernel names; [`wfformat`] reads WfCommons' workflows and
//! [`dot`] hand-written graphs;
//! [`tasks`] makes a graph's tasks what the simulator runs (`Simulation::graph`), timed
//! by performance models.

pub mod bound;
pub mod cholesky;
pub mod dot;
pub mod lu;
pub mod qr;
pub mod tasks;
pub mod wfformat;

pub use cholesky::cholesky;
pub use lu::lu;
pub use qr::qr;
pub use tasks::{Durations, GraphTasks};

/// A workflow file: WfFormat JSON (`.json`) or DOT (`.dot`, `.gv`), by its extension;
/// a file of neither, or none, is an input error naming it.
pub fn read_file(path: &std::path::Path) -> Result<wfformat::Instance> {
    let origin = path.display().to_string();
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => {
            let what = "a WfFormat workflow";
            let text = hetsched_util::files::read_text(path, what, wfformat::MAX_FILE_BYTES)?;
            wfformat::parse(&text, &origin)
        }
        Some("dot" | "gv") => {
            let what = "a DOT graph";
            let text = hetsched_util::files::read_text(path, what, dot::MAX_FILE_BYTES)?;
            dot::parse(&text, &origin)
        }
        _ => Err(Error::input(format!(
            "file: {origin}: expected a WfFormat workflow (.json) or a DOT graph (.dot, .gv)"
        ))),
    }
}

use hetsched_core::footprint;
use hetsched_core::graph::{GraphTask, Mode, MAX_TASKS};
use hetsched_core::{Error, Result};
use std::sync::Arc;

/// The most tiles a side ([`Tiled::tiles`]); the task count is bounded too
/// ([`MAX_TASKS`]).
pub const MAX_TILES: u32 = 1 << 16;

/// The largest tile side in elements (a 65536² double tile is 32 GiB).
pub const MAX_TILE: u32 = 1 << 16;

/// StarPU's `STARPU_MAX_PRIO` under the schedulers that sort by priority (`dmdas` sets
/// the context's maximum to `INT_MAX`).
const MAX_PRIO: i32 = i32::MAX;

/// The element type of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// `float` (StarPU's `s` examples: `starpu_slu_*`, and the Cholesky example).
    Single,
    /// `double` (`starpu_dlu_*`).
    Double,
}

impl Precision {
    pub fn bytes(self) -> u64 {
        match self {
            Precision::Single => 4,
            Precision::Double => 8,
        }
    }

    /// The letter StarPU's LU example puts in its symbols (`STARPU_LU(name)`).
    pub(crate) fn letter(self) -> char {
        match self {
            Precision::Single => 's',
            Precision::Double => 'd',
        }
    }
}

/// A square matrix of `tiles` × `tiles` tiles of `tile` × `tile` elements (StarPU's
/// examples: `-nblocks tiles -size tiles*tile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiled {
    pub tiles: u32,
    pub tile: u32,
    pub precision: Precision,
}

impl Tiled {
    /// Checks the sides, and that `tasks` (the algorithm's count, computed in u128 from
    /// the checked sides) fits a graph.
    fn check(&self, algorithm: &str, tasks: impl Fn(u128) -> u128) -> Result<()> {
        if self.tiles == 0 || self.tiles > MAX_TILES || self.tile == 0 || self.tile > MAX_TILE {
            return Err(Error::input(format!(
                "{algorithm}: {} tiles of {} elements a side; expected 1 to {MAX_TILES} tiles \
                 of 1 to {MAX_TILE} elements",
                self.tiles, self.tile
            )));
        }
        let n = tasks(u128::from(self.tiles));
        if n > MAX_TASKS as u128 {
            return Err(Error::input(format!(
                "{algorithm}: {} tiles a side make {n} tasks; a task graph has at most \
                 {MAX_TASKS}",
                self.tiles
            )));
        }
        Ok(())
    }

    /// A tile's size in bytes.
    pub fn tile_bytes(&self) -> u64 {
        u64::from(self.tile) * u64::from(self.tile) * self.precision.bytes()
    }
}

/// One of an algorithm's kernels: its name and its footprint (on `buffers` square
/// tiles).
#[derive(Clone)]
struct Kernel {
    name: Arc<str>,
    footprint: u64,
}

impl Kernel {
    fn new(name: &str, tile: u32, buffers: usize) -> Kernel {
        Kernel {
            name: Arc::from(name),
            footprint: footprint::square_tiles(tile, buffers),
        }
    }

    /// A task of this kernel on `accesses`, in its codelet's buffer order.
    fn task(&self, accesses: &[(u32, Mode)], flops: f64, priority: i32) -> GraphTask {
        GraphTask {
            flops,
            priority,
            ..GraphTask::new(self.name.clone(), self.footprint, accesses)
        }
    }
}

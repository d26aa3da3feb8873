//! Lower bounds on a task graph's makespan, printed beside every run's so that a user
//! sees how far a policy is from the best any could do:
//!
//! - the **critical path**: the longest chain of tasks, each timed on its fastest unit
//!   (the fastest CPU's capacity scaling its CPU time);
//! - the **area bound** (StarPU's `starpu_bound`): the tasks spread fractionally over the
//!   unit types so that the busiest type ends first, dependencies ignored. A linear
//!   program: for each class of tasks (equal times on every type) and type, the share
//!   of the class run there, `x[c][t] ≥ 0` with `Σ_t x[c][t] = n_c`, and for each type
//!   `Σ_c x[c][t] · time[c][t] ≤ capacity[t] · T`; minimise `T`. A type's capacity is
//!   its units (a CPU counts `capacity / 1024`). Solved by `microlp`; on one unit type
//!   it is the work over the capacity.
//!
//! Both use the durations the run uses ([`GraphTasks::times`]); copies only add to a
//! schedule, so neither counts them. The area bound is left out (and says why) when the
//! tasks fall into more than [`MAX_LP_VARIABLES`] class × type pairs (drawn or measured
//! times on several unit types make a class per task).

use super::GraphTasks;
use hetsched_core::machine::{Machine, UnitType, CAPACITY_SCALE};
use hetsched_core::task::PerUnitType;
use microlp::{ComparisonOp, OptimizationDirection, Problem};
use rustc_hash::FxHashMap;

/// The largest area-bound LP solved, in variables.
pub const MAX_LP_VARIABLES: usize = 50_000;

/// A graph's lower bounds, seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub critical_path_s: f64,
    /// `Err`: why it was not computed.
    pub area_s: Result<f64, String>,
}

impl Bound {
    /// The larger of the two: no schedule ends before it.
    pub fn makespan_s(&self) -> f64 {
        self.critical_path_s
            .max(*self.area_s.as_ref().unwrap_or(&0.0))
    }
}

/// The bounds of `tasks` on `machine` (see the module documentation).
pub fn bound(tasks: &GraphTasks, machine: &Machine) -> Bound {
    let mut capacity = PerUnitType::<f64>::default();
    let mut fastest_cpu = 0u32;
    for u in &machine.units {
        let share = match u.kind {
            UnitType::Cpu => {
                fastest_cpu = fastest_cpu.max(u.capacity);
                f64::from(u.capacity) / f64::from(CAPACITY_SCALE)
            }
            _ => 1.0,
        };
        capacity.set(u.kind, capacity.get(u.kind) + share);
    }
    let cpu_scale = f64::from(CAPACITY_SCALE) / f64::from(fastest_cpu.max(1));
    let graph = tasks.graph();
    let deps = match graph.dependencies() {
        Ok(d) => d,
        Err(e) => {
            return Bound {
                critical_path_s: 0.0,
                area_s: Err(e.to_string()),
            }
        }
    };
    let n = graph.tasks.len();
    let mut finish = vec![0.0f64; n];
    // Classes: tasks of equal times on every type (bit for bit).
    let mut classes: FxHashMap<[u64; 4], (PerUnitType<Option<f64>>, f64)> = FxHashMap::default();
    for t in 0..n {
        let times = tasks.times(t);
        let fastest = UnitType::ALL
            .iter()
            .filter(|&&k| capacity.get(k) > 0.0)
            .filter_map(|&k| {
                let s = times.get(k)?;
                Some(if k == UnitType::Cpu { s * cpu_scale } else { s })
            })
            .fold(f64::INFINITY, f64::min);
        let start = deps
            .of(t)
            .iter()
            .map(|&p| finish[p as usize])
            .fold(0.0, f64::max);
        finish[t] = start + if fastest.is_finite() { fastest } else { 0.0 };
        let key = times.0.map(|s| s.map_or(u64::MAX, f64::to_bits));
        classes.entry(key).or_insert((times, 0.0)).1 += 1.0;
    }
    let critical_path_s = finish.iter().copied().fold(0.0, f64::max);
    Bound {
        critical_path_s,
        area_s: area(classes.into_values().collect(), &capacity),
    }
}

/// The area bound's LP over `classes` (times on each type, count).
fn area(
    classes: Vec<(PerUnitType<Option<f64>>, f64)>,
    capacity: &PerUnitType<f64>,
) -> Result<f64, String> {
    let types: Vec<UnitType> = UnitType::ALL
        .into_iter()
        .filter(|&k| capacity.get(k) > 0.0)
        .collect();
    let usable = |times: &PerUnitType<Option<f64>>| -> Vec<(UnitType, f64)> {
        types
            .iter()
            .filter_map(|&k| times.get(k).map(|s| (k, s)))
            .collect()
    };
    if types.len() == 1 {
        let k = types[0];
        let work: f64 = classes
            .iter()
            .filter_map(|(times, count)| times.get(k).map(|s| s * count))
            .sum();
        return Ok(work / capacity.get(k));
    }
    let variables: usize = classes.iter().map(|(t, _)| usable(t).len()).sum();
    if variables > MAX_LP_VARIABLES {
        return Err(format!(
            "{variables} class × unit type pairs (tasks whose times differ each make a class), more than the {MAX_LP_VARIABLES} solved"
        ));
    }
    let mut lp = Problem::new(OptimizationDirection::Minimize);
    let makespan = lp.add_var(1.0, (0.0, f64::INFINITY));
    let mut load: FxHashMap<UnitType, Vec<(microlp::Variable, f64)>> = FxHashMap::default();
    for (times, count) in &classes {
        let shares: Vec<(microlp::Variable, f64)> = usable(times)
            .into_iter()
            .map(|(k, s)| {
                let x = lp.add_var(0.0, (0.0, f64::INFINITY));
                load.entry(k).or_default().push((x, s));
                (x, 1.0)
            })
            .collect();
        if shares.is_empty() {
            continue; // runs on no unit of the machine: the engine refuses it
        }
        lp.add_constraint(&shares, ComparisonOp::Eq, *count);
    }
    for (k, mut terms) in load {
        terms.push((makespan, -capacity.get(k)));
        lp.add_constraint(&terms, ComparisonOp::Le, 0.0);
    }
    match lp.solve() {
        Ok(solved) => match solved.into_solution() {
            Ok(solution) => Ok(solution.objective()),
            Err(e) => Err(format!(
                "the LP solver stopped: {:?}",
                e.termination_reason()
            )),
        },
        Err(e) => Err(format!("the LP solver: {e}")),
    }
}

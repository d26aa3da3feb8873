//! What Linux's fair class kept from CFS to EEVDF, shared by `cfs` and `eevdf`: the
//! weight of a nice value, and the count balancer (an idle unit's new-idle pull and the
//! periodic balance). Linux 6.6 replaced the pick (vruntime → eligibility and virtual
//! deadlines) but not the load balancer, so both policies balance with this one module,
//! and a comparison of the two shows the pick alone.

use crate::load::{LoadIndex, UnitRecord};
use hetsched_core::machine::UnitType;
use hetsched_core::policy::{TickAction, UnitId, View};
use hetsched_core::task::TaskId;

/// The weight of nice 0 (`NICE_0_LOAD` after `scale_load_down`); a task's `weight` is on
/// this scale.
pub const NICE_0_LOAD: u64 = 1024;

/// Linux's `sched_prio_to_weight` (kernel/sched/core.c): the weight of nice −20 to 19,
/// each step about 1.25× (a task one nice level lower gets ~10 % more CPU than one at
/// the same level beside it).
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, // −20 … −16
    29154, 23254, 18705, 14949, 11916, // −15 … −11
    9548, 7620, 6100, 4904, 3906, // −10 … −6
    3121, 2501, 1991, 1586, 1277, // −5 … −1
    1024, 820, 655, 526, 423, // 0 … 4
    335, 272, 215, 172, 137, // 5 … 9
    110, 87, 70, 56, 45, // 10 … 14
    36, 29, 23, 18, 15, // 15 … 19
];

/// The weight of a nice value in [−20, 19] (`None` outside).
pub fn weight_of_nice(nice: i32) -> Option<u32> {
    let i = usize::try_from(nice + 20).ok()?;
    SCHED_PRIO_TO_WEIGHT.get(i).copied()
}

/// New-idle balance (`SD_BALANCE_NEWIDLE`): the queued task idle `unit` pulls, and
/// from where: the unit of its type with the most tasks (at least two, and not `unit`
/// itself), its task nearest the head that can run on `unit`. Forced inline: on every
/// pick of cfs and eevdf, out of line it cost cfs 1.5 % of `bench sim`'s instructions.
#[inline(always)]
pub fn newidle_source<R: UnitRecord>(
    view: &View,
    loads: &LoadIndex<R>,
    unit: UnitId,
) -> Option<(UnitId, TaskId)> {
    // The highest load alone rules out most cases without finding that unit.
    let kind = loads.kind(unit);
    if loads.most_load(kind) < 2 {
        return None;
    }
    let (_, from) = loads.most(kind)?;
    if from == unit {
        return None;
    }
    let kind = view.unit_kind(unit);
    let t = view
        .queue(from)
        .entries()
        .find(|(_, e)| e.task.affinity.runs_on(kind))
        .map(|(_, e)| e.task.id)?;
    Some((from, t))
}

/// The periodic balance: per unit type, queued tasks move from the unit with most tasks
/// to the one with fewest (the newest queued first that can run there) until counts
/// differ by at most one. `transfer(loads, task, from, to)` moves a task's accounting
/// (and its count in `loads`) before the engine moves the task itself.
pub fn balance<R: UnitRecord>(
    view: &View,
    loads: &mut LoadIndex<R>,
    mut transfer: impl FnMut(&mut LoadIndex<R>, TaskId, UnitId, UnitId),
) -> Vec<TickAction> {
    let mut actions = Vec::new();
    for kind in UnitType::ALL {
        // Each move narrows the gap; stop when no queued task can move.
        for _ in 0..view.units().len() {
            let (Some((hi, from)), Some((lo, to))) = (loads.most(kind), loads.least_of(kind))
            else {
                break;
            };
            if hi < lo + 2 {
                break;
            }
            let moved: Vec<TaskId> = actions
                .iter()
                .map(|TickAction::Migrate { task, .. }| *task)
                .collect();
            let Some(t) = view
                .queue(from)
                .iter()
                .rev()
                .find(|&t| view.can_run(t, to) && !moved.contains(&t))
            else {
                break;
            };
            transfer(loads, t, from, to);
            actions.push(TickAction::Migrate { task: t, to });
        }
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_weights_are_the_kernels() {
        assert_eq!(weight_of_nice(0), Some(NICE_0_LOAD as u32));
        assert_eq!(weight_of_nice(-20), Some(88761));
        assert_eq!(weight_of_nice(19), Some(15));
        assert_eq!(weight_of_nice(-5), Some(3121));
        assert_eq!(weight_of_nice(5), Some(335));
        assert_eq!((weight_of_nice(-21), weight_of_nice(20)), (None, None));
        // Each step is about 1.25×.
        for w in SCHED_PRIO_TO_WEIGHT.windows(2) {
            let r = w[0] as f64 / w[1] as f64;
            assert!((1.18..1.32).contains(&r), "{w:?}");
        }
    }
}

//! The worker lifecycle against the `Fixed` scheduler, with a small summing worker
//! whose two implementations (CPU and "OpenCL", both host code) record what
//! they did, so the tests can check pinning, migration and accounting.

use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_worker::{
    run, CpuMask, Fixed, Grant, Implementation, MetaInfo, Rerequest, Step, UnitState, Worker,
};
use std::cell::RefCell;

/// Sum of 0..n, `per_step` numbers between checkpoints.
#[derive(Clone, Debug, Default, PartialEq)]
struct SumCp {
    next: u64,
    sum: u64,
    added: u64,
}

struct Summer {
    n: u64,
    per_step: u64,
    /// `main` fails once `next` reaches this.
    fail_at: u64,
    /// CPU masks seen at each init.
    seen_masks: RefCell<Vec<Vec<usize>>>,
}

struct Holder {
    summer: Summer,
    opencl_affinity: u32,
}

struct State {
    n: u64,
    per_step: u64,
    fail_at: u64,
    cp: SumCp,
}

impl UnitState<SumCp, u64> for State {
    fn main(&mut self) -> Result<Step<u64>> {
        if self.cp.next >= self.fail_at {
            return Err(Error::runtime("device lost"));
        }
        let end = (self.cp.next + self.per_step).min(self.n);
        for i in self.cp.next..end {
            self.cp.sum += i;
            self.cp.added += 1;
        }
        self.cp.next = end;
        Ok(if end == self.n {
            Step::Done(self.cp.sum)
        } else {
            Step::Checkpoint
        })
    }
    fn free(self: Box<Self>) -> Result<SumCp> {
        Ok(self.cp)
    }
}

/// Both unit types share this host-code implementation.
impl Implementation<SumCp, u64> for Summer {
    fn init(&self, cp: &SumCp, _grant: &Grant) -> Result<Box<dyn UnitState<SumCp, u64>>> {
        self.seen_masks
            .borrow_mut()
            .push(CpuMask::current()?.cpus());
        Ok(Box::new(State {
            n: self.n,
            per_step: self.per_step,
            fail_at: self.fail_at,
            cp: cp.clone(),
        }))
    }
}

impl Worker for Holder {
    type Checkpoint = SumCp;
    type Output = u64;
    fn meta_info(&self) -> MetaInfo {
        MetaInfo {
            affinity: [
                (UnitType::Cpu, 1.0),
                (UnitType::OpenCl, f64::from(self.opencl_affinity)),
            ]
            .into_iter()
            .collect(),
            bytes_out: 24,
            ..MetaInfo::default()
        }
    }
    fn implementation_for(&self, unit: UnitType) -> Option<&dyn Implementation<SumCp, u64>> {
        match unit {
            UnitType::Cpu | UnitType::OpenCl => Some(&self.summer),
            _ => None,
        }
    }
}

fn worker(n: u64, per_step: u64, opencl_affinity: u32) -> Holder {
    Holder {
        summer: Summer {
            n,
            per_step,
            fail_at: u64::MAX,
            seen_masks: RefCell::new(Vec::new()),
        },
        opencl_affinity,
    }
}

/// An OpenCL grant; the test worker's "OpenCL implementation" is host code, so no
/// device is opened.
fn opencl(unit: u32) -> Grant {
    Grant::opencl(unit, 0)
}

#[test]
fn keeps_the_unit_and_finishes() {
    let w = worker(1000, 7, 1);
    let mut s = Fixed::new(Grant::cpu(0, Vec::new()));
    let r = run(&w, &mut s, SumCp::default()).unwrap();
    assert_eq!(r.output, 999 * 1000 / 2);
    assert_eq!(r.segments.len(), 1);
    // ceil(1000 / 7) steps, the last one is Done.
    assert_eq!(r.segments[0].checkpoints, 1000_u64.div_ceil(7) - 1);
    assert_eq!(s.checkpoints(), r.segments[0].checkpoints);
}

#[test]
fn cpu_grant_pins_the_thread_and_the_mask_is_restored() {
    let before = CpuMask::current().unwrap().cpus();
    let target = *before.last().unwrap();
    let w = worker(100, 10, 1);
    let mut s = Fixed::new(Grant::cpu(3, vec![target]));
    run(&w, &mut s, SumCp::default()).unwrap();
    assert_eq!(*w.summer.seen_masks.borrow(), vec![vec![target]]);
    assert_eq!(CpuMask::current().unwrap().cpus(), before);
}

#[test]
fn scripted_migration_resumes_from_the_checkpoint() {
    let before = CpuMask::current().unwrap().cpus();
    let w = worker(10_000, 100, 2);
    let mut s = Fixed::new(Grant::cpu(0, vec![before[0]]))
        .with_unit(opencl(9))
        .answer_at(3, Rerequest::Migrate(UnitType::OpenCl));
    let r = run(&w, &mut s, SumCp::default()).unwrap();
    assert_eq!(r.output, 9_999 * 10_000 / 2);
    let kinds: Vec<_> = r
        .segments
        .iter()
        .map(|g| (g.grant.kind, g.checkpoints))
        .collect();
    assert_eq!(
        kinds,
        vec![(UnitType::Cpu, 3), (UnitType::OpenCl, 100 - 3 - 1)]
    );
    // Every number added exactly once across the two units.
    assert_eq!(r.checkpoint.added, 10_000);
    // Pinned on the CPU, unpinned (original mask) on the OpenCL.
    assert_eq!(*w.summer.seen_masks.borrow(), vec![vec![before[0]], before]);
}

#[test]
fn yield_reallocates_the_same_unit() {
    let w = worker(50, 10, 1);
    let mut s = Fixed::new(Grant::cpu(0, Vec::new())).answer_at(2, Rerequest::Yield);
    let r = run(&w, &mut s, SumCp::default()).unwrap();
    assert_eq!(r.segments.len(), 2);
    assert_eq!(r.segments[1].grant.kind, UnitType::Cpu);
    assert_eq!(r.checkpoint.added, 50);
}

#[test]
fn zero_affinity_unit_is_refused() {
    let w = worker(50, 10, 0);
    let mut s = Fixed::new(opencl(4));
    let err = run(&w, &mut s, SumCp::default()).unwrap_err();
    assert!(matches!(err, Error::Input(_)), "{err}");
    assert!(err.to_string().contains("affinity is 0"), "{err}");
}

#[test]
fn migration_to_an_unregistered_unit_type_errors() {
    let w = worker(50, 10, 1);
    let mut s =
        Fixed::new(Grant::cpu(0, Vec::new())).answer_at(1, Rerequest::Migrate(UnitType::Gpu));
    let err = run(&w, &mut s, SumCp::default()).unwrap_err();
    assert!(err.to_string().contains("no gpu unit"), "{err}");
}

#[test]
fn a_failing_implementation_releases_its_unit() {
    let mut w = worker(100, 10, 1);
    w.summer.fail_at = 30;
    let mut s = Fixed::new(Grant::cpu(0, Vec::new()));
    let err = run(&w, &mut s, SumCp::default()).unwrap_err();
    assert!(err.to_string().contains("device lost"), "{err}");
    // The unit was freed: it can be allocated again.
    use hetsched_worker::Scheduler;
    assert!(s.alloc(&w.meta_info()).is_ok());
}

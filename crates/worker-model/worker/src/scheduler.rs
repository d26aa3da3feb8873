//! The scheduler connection a worker talks to, and the standalone [`Fixed`] one.

use crate::model::{Grant, MetaInfo};
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use std::collections::BTreeMap;

/// The answer to a re-request at a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rerequest {
    /// Keep the unit and continue.
    Keep,
    /// Release the unit (write a checkpoint) and queue for a new one.
    Yield,
    /// Release the unit; the next allocation will likely be of this type.
    Migrate(UnitType),
}

/// A connection to a compute-unit scheduler (the paper's system calls; later the
/// daemon's client).
pub trait Scheduler {
    /// Block until a unit is granted for a worker with this meta info.
    fn alloc(&mut self, meta: &MetaInfo) -> Result<Grant>;
    /// At a checkpoint: may the worker keep its unit?
    fn rerequest(&mut self) -> Result<Rerequest>;
    /// Release the granted unit.
    fn free(&mut self) -> Result<()>;
}

/// A scheduler for standalone use: it always grants one given unit and answers
/// every re-request with `Keep`, unless a script says otherwise at checkpoint `k`
/// (counted from 1 over the whole run). A scripted `Migrate(t)` switches the grant
/// to the registered unit of type `t`.
#[derive(Clone, Debug)]
pub struct Fixed {
    current: Grant,
    units: BTreeMap<UnitType, Grant>,
    script: BTreeMap<u64, Rerequest>,
    checkpoints: u64,
    held: bool,
}

impl Fixed {
    /// Always grant `grant`, always answer `Keep`.
    pub fn new(grant: Grant) -> Self {
        let units = BTreeMap::from([(grant.kind, grant.clone())]);
        Fixed {
            current: grant,
            units,
            script: BTreeMap::new(),
            checkpoints: 0,
            held: false,
        }
    }

    /// Also know `grant` as the unit to move to on `Migrate(grant.kind)`.
    pub fn with_unit(mut self, grant: Grant) -> Self {
        self.units.insert(grant.kind, grant);
        self
    }

    /// Answer `answer` at the `k`-th checkpoint of the run (k >= 1).
    pub fn answer_at(mut self, k: u64, answer: Rerequest) -> Self {
        self.script.insert(k, answer);
        self
    }

    /// Checkpoints re-requested so far.
    pub fn checkpoints(&self) -> u64 {
        self.checkpoints
    }
}

impl Scheduler for Fixed {
    fn alloc(&mut self, _meta: &MetaInfo) -> Result<Grant> {
        if self.held {
            return Err(Error::runtime("alloc while the unit is still held"));
        }
        self.held = true;
        Ok(self.current.clone())
    }

    fn rerequest(&mut self) -> Result<Rerequest> {
        if !self.held {
            return Err(Error::runtime("re-request without a granted unit"));
        }
        self.checkpoints += 1;
        let answer = self
            .script
            .get(&self.checkpoints)
            .copied()
            .unwrap_or(Rerequest::Keep);
        if let Rerequest::Migrate(kind) = answer {
            self.current = self.units.get(&kind).cloned().ok_or_else(|| {
                Error::input(format!(
                    "scripted migration to {kind}, but no {kind} unit is registered"
                ))
            })?;
        }
        Ok(answer)
    }

    fn free(&mut self) -> Result<()> {
        if !self.held {
            return Err(Error::runtime("free without a granted unit"));
        }
        self.held = false;
        Ok(())
    }
}

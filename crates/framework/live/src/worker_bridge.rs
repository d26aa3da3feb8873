//! The worker programming model ([`hetsched_worker`]) on top of the daemon: a worker's
//! `alloc` / `rerequest` / `free` become requests to the daemon.

use crate::client::Client;
use crate::protocol::{MetaInfo, UnitInfo, Verdict};
use hetsched_core::machine::UnitType;
use hetsched_core::{Error, Result};
use hetsched_worker::{Grant, Rerequest, Scheduler};
use std::path::Path;

pub struct DaemonScheduler {
    client: Client,
    /// The daemon told the task to give its unit up since the last grant: the next
    /// `free` is not the end of the task.
    denied: bool,
    units: Vec<UnitInfo>,
}

impl DaemonScheduler {
    /// Connects to the daemon at `socket` as the client `name` (as the daemon's log and
    /// `stats` show it); the tasks' kinds are what the worker declares.
    pub fn connect(socket: &Path, name: &str) -> Result<DaemonScheduler> {
        let mut client = Client::connect(socket, name)?;
        let units = client.list_units()?;
        Ok(DaemonScheduler {
            client,
            denied: false,
            units,
        })
    }

    fn unit_type(&mut self, id: u32) -> Result<UnitType> {
        if !self.units.iter().any(|u| u.id == id) {
            self.units = self.client.list_units()?;
        }
        self.units
            .iter()
            .find(|u| u.id == id)
            .map(|u| u.kind)
            .ok_or_else(|| {
                Error::runtime(format!("daemon offered unit {id}, which it does not list"))
            })
    }
}

impl Scheduler for DaemonScheduler {
    fn alloc(&mut self, meta: &hetsched_worker::MetaInfo) -> Result<Grant> {
        // The worker's meta info as it declares it (a worker declares no signature).
        let wire: MetaInfo = meta.clone().map_signature(|none| match none {});
        let unit = self.client.alloc(&wire)?;
        self.denied = false;
        Ok(Grant {
            unit: unit.id,
            kind: unit.kind,
            cpus: unit.cpus.iter().map(|&c| c as usize).collect(),
            opencl_device: (unit.kind == UnitType::OpenCl)
                .then(|| unit.device.unwrap_or(0) as usize),
        })
    }

    fn rerequest(&mut self) -> Result<Rerequest> {
        Ok(match self.client.rerequest()? {
            Verdict::Keep => Rerequest::Keep,
            Verdict::Yield => {
                self.denied = true;
                Rerequest::Yield
            }
            Verdict::Migrate { to } => {
                self.denied = true;
                Rerequest::Migrate(self.unit_type(to)?)
            }
        })
    }

    fn free(&mut self) -> Result<()> {
        let finished = !self.denied;
        self.denied = false;
        self.client.free(finished)
    }
}

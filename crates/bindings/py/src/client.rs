//! The live client: a connection to a running `hetsched daemon` over the Rust client
//! library (`hetsched_live::client`). Requests and replies are the protocol's own serde
//! types, crossing as JSON text; blocking requests (`alloc` waits in the daemon's
//! queue) release the GIL.

use crate::{py_err, to_json};
use hetsched_core::{Error, Result};
use hetsched_live::client::Client as RustClient;
use hetsched_live::protocol::{MetaInfo, NewUnit, UnitChanges};
use hetsched_live::server::default_socket_path;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Mutex;

/// One connection to a daemon (one task at a time, as the protocol has it).
#[pyclass(module = "hetsched")]
pub struct Client {
    inner: Mutex<RustClient>,
}

/// `what` parsed from JSON text, or an input error naming it.
fn parse<T: serde::de::DeserializeOwned>(what: &str, json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| Error::input(format!("{what}: {e}")))
}

impl Client {
    /// Runs a request without the GIL.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut RustClient) -> Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(&mut self.inner.lock().expect("the client's lock")))
            .map_err(py_err)
    }
}

#[pymethods]
impl Client {
    /// Connects to the daemon listening on `socket`, by default where the CLI's
    /// commands look for it ([`Client::default_socket`]).
    #[new]
    #[pyo3(signature = (socket = None, name = "python".to_string()))]
    fn new(py: Python<'_>, socket: Option<PathBuf>, name: String) -> PyResult<Self> {
        let socket = socket.unwrap_or_else(default_socket_path);
        let inner = py
            .detach(|| RustClient::connect(&socket, &name))
            .map_err(py_err)?;
        Ok(Client {
            inner: Mutex::new(inner),
        })
    }
    /// Where a daemon listens unless told otherwise, as `hetsched daemon`, `hetsched
    /// run` and the C library have it: `$HETSCHED_SOCKET`, else
    /// `$XDG_RUNTIME_DIR/hetsched/daemon.sock`, else root's `/run/hetsched/daemon.sock`
    /// or another user's `/tmp/hetsched-$UID/daemon.sock` (read from the environment
    /// at each call).
    #[staticmethod]
    fn default_socket() -> PathBuf {
        default_socket_path()
    }
    /// The daemon's id for this connection.
    #[getter]
    fn id(&self) -> u64 {
        self.inner.lock().expect("the client's lock").id()
    }
    /// Blocks until a unit is granted for a task with this meta info (JSON); returns
    /// the unit (JSON).
    fn alloc(&self, py: Python<'_>, meta: &str) -> PyResult<String> {
        let meta: MetaInfo = parse("meta", meta).map_err(py_err)?;
        self.with(py, |c| c.alloc(&meta)).map(|u| to_json(&u))
    }
    /// At a checkpoint: the verdict (JSON: "keep", "yield" or {"migrate": {"to": id}}).
    fn rerequest(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |c| c.rerequest()).map(|v| to_json(&v))
    }
    /// Releases the unit; `finished`: the task is done.
    #[pyo3(signature = (finished = true))]
    fn free(&self, py: Python<'_>, finished: bool) -> PyResult<()> {
        self.with(py, |c| c.free(finished))
    }
    /// The daemon's units (JSON list).
    fn list_units(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |c| c.list_units()).map(|u| to_json(&u))
    }
    /// Control API: adds a unit (JSON of the protocol's new unit).
    fn add_unit(&self, py: Python<'_>, unit: &str) -> PyResult<()> {
        let unit: NewUnit = parse("unit", unit).map_err(py_err)?;
        self.with(py, |c| c.add_unit(unit))
    }
    /// Control API: takes a unit offline.
    fn remove_unit(&self, py: Python<'_>, id: u32) -> PyResult<()> {
        self.with(py, |c| c.remove_unit(id))
    }
    /// Control API: changes a unit (JSON of the protocol's unit changes).
    fn alter_unit(&self, py: Python<'_>, id: u32, changes: &str) -> PyResult<()> {
        let changes: UnitChanges = parse("changes", changes).map_err(py_err)?;
        self.with(py, |c| c.alter_unit(id, changes))
    }
    /// The daemon's statistics (JSON of its `stats` reply).
    fn stats(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |c| c.stats()).map(|r| to_json(&r))
    }
}

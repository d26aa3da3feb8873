//! The `hetsched._hetsched` extension module, wrapped by the `hetsched` Python package
//! (`python/hetsched`). Why a thin layer: the simulator, the policies and the live client
//! stay Rust; this crate only converts. Structured results cross the boundary as JSON
//! text (the types already serialise), which the Python side turns into DataFrames, so
//! there is one schema, serde's, and no second copy of each type in PyO3 classes. The
//! exception is a run's tables (per-task outcomes, events: millions of rows), which
//! cross as one `bytes` object per column ([`columns`]).
//!
//! Errors keep the CLI's split: bad input ([`Error::Input`], exit 2 in the CLI) is a
//! `ValueError` with the CLI's one-line message, a failure while doing valid work a
//! `RuntimeError`, a run the user stopped (Ctrl-C) a `KeyboardInterrupt`.

mod client;
mod columns;
mod policy;
mod sim;

use hetsched_core::Error;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The Python exception for a hetsched error.
pub(crate) fn py_err(e: Error) -> PyErr {
    match e {
        Error::Input(m) => PyValueError::new_err(m),
        Error::Runtime(m) => PyRuntimeError::new_err(m),
        Error::Interrupted(m) => PyKeyboardInterrupt::new_err(m),
    }
}

/// JSON text of a value whose serialisation cannot fail (plain data).
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("plain data serialises")
}

#[pymodule]
fn _hetsched(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sim::machine, m)?)?;
    m.add_function(wrap_pyfunction!(sim::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(sim::policies, m)?)?;
    m.add_class::<policy::View>()?;
    m.add_class::<policy::Reject>()?;
    m.add_class::<policy::Steal>()?;
    m.add_class::<client::Client>()?;
    Ok(())
}

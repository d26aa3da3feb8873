"""hetsched from Python: simulate scenarios, write scheduling policies in Python, talk to
a running daemon, plot results and sweep parameters (on a process pool or on Ray).

The engine, the policies and the client are hetsched's Rust code (the ``_hetsched``
extension); this package converts their results into pandas DataFrames and plots.
"""

from ._hetsched import Reject, Steal, View
from .policy import Policy
from ._sim import Machine, NotRecordedError, Result, machine, policies, simulate
from .graphs import graph
from .live import Client
from .sweep import sweep

__all__ = [
    "Client",
    "Machine",
    "NotRecordedError",
    "Policy",
    "Reject",
    "Result",
    "Steal",
    "View",
    "graph",
    "machine",
    "policies",
    "simulate",
    "sweep",
]

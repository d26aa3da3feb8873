"""A client of a running ``hetsched daemon`` (over hetsched's Rust client library).

One client is one connection, holding at most one task's grant at a time: ``alloc``
blocks until the daemon grants a unit (without holding the GIL), ``rerequest`` at a
checkpoint asks whether to keep it, ``free`` releases it. The control API (``units``,
``add_unit``, ``remove_unit``, ``alter_unit``, ``stats``) needs the daemon's uid or root.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _hetsched


def default_socket() -> str:
    """Where a daemon listens unless told otherwise, the path ``hetsched daemon``,
    ``hetsched run`` and ``hetsched client`` use: ``$HETSCHED_SOCKET``, else
    ``$XDG_RUNTIME_DIR/hetsched/daemon.sock``, else root's ``/run/hetsched/daemon.sock``
    or another user's ``/tmp/hetsched-$UID/daemon.sock``."""
    return os.fspath(_hetsched.Client.default_socket())


class Client:
    """A connection to the daemon listening on the Unix socket ``socket``; by default
    the one the ``hetsched`` commands use (:func:`default_socket`)."""

    def __init__(
        self, socket: Optional[Union[str, "os.PathLike[str]"]] = None, name: str = "python"
    ) -> None:
        path = None if socket is None else os.fspath(socket)
        self._c = _hetsched.Client(path, name)

    @property
    def id(self) -> int:
        """The daemon's id for this connection."""
        return self._c.id

    def alloc(
        self,
        kind: str = "task",
        affinity: Optional[Mapping[str, float]] = None,
        *,
        weight: int = 1024,
        memory_to_copy: int = 0,
    ) -> Dict[str, Any]:
        """Blocks until a unit is granted; returns it (id, type, name, cpus, ...).
        ``affinity`` per unit type (``{"cpu": 1, "gpu": 4}``; default CPU only)."""
        meta = {
            "kind": kind,
            "affinity": dict(affinity) if affinity is not None else {"cpu": 1.0},
            "weight": weight,
            "memory_to_copy": memory_to_copy,
        }
        return json.loads(self._c.alloc(json.dumps(meta)))

    def rerequest(self) -> Union[str, Dict[str, Any]]:
        """At a checkpoint: ``"keep"``, ``"yield"`` or ``{"migrate": {"to": unit}}``."""
        return json.loads(self._c.rerequest())

    def free(self, finished: bool = True) -> None:
        """Releases the unit (``finished``: the task is done)."""
        self._c.free(finished)

    def units(self) -> List[Dict[str, Any]]:
        """The daemon's units."""
        return json.loads(self._c.list_units())

    def add_unit(
        self,
        type: str,
        name: str,
        *,
        cpus: Sequence[int] = (),
        device: Optional[int] = None,
        capacity: int = 1024,
    ) -> None:
        unit = {"type": type, "name": name, "cpus": list(cpus), "device": device,
                "capacity": capacity}
        self._c.add_unit(json.dumps(unit))

    def remove_unit(self, id: int) -> None:
        self._c.remove_unit(id)

    def alter_unit(self, id: int, **changes: Any) -> None:
        """Changes ``capacity``, ``name``, ``link_bandwidth_bytes_per_s`` or
        ``link_latency_s`` of a unit."""
        self._c.alter_unit(id, json.dumps(changes))

    def stats(self) -> Dict[str, Any]:
        """Grants, decisions, ticks and the daemon's tasks."""
        return json.loads(self._c.stats())

    def close(self) -> None:
        """Closes the connection (the daemon frees a grant it still holds)."""
        del self._c

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

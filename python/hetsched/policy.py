"""The base class of policies written in Python.

The simulator's engine calls a policy's methods in the same situations as a Rust
policy's (see ``crates/framework/core/src/policy.rs``): ``submit`` once per arriving task,
``pick`` when a unit is idle and may have work, ``time_slice`` before a CPU run,
``checkpoint`` at a slice end or accelerator checkpoint, ``complete`` once per finished
task, ``tick`` every ``tick_interval_ns``. Each gets a read-only :class:`hetsched.View`
of the engine's state, valid during that call only.

Answers:

- ``submit``: a unit id (its queue), ``"central"`` (the central queue) or
  ``hetsched.Reject(reason)``;
- ``pick``: a task id (from the unit's own or the central queue),
  ``hetsched.Steal(from_unit, task)`` or ``None`` (stay idle);
- ``time_slice``: nanoseconds, or ``None`` (run until done);
- ``checkpoint``: ``None`` / ``"continue"``, ``"yield"`` or a unit id to migrate to;
- ``tick``: ``None`` or a list of ``(task, unit)`` migrations.

An exception in a method, or an answer of another type, stops the run and
``simulate`` raises it.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union


class Policy:
    """Subclass and override ``submit`` and ``pick`` (the others are optional)."""

    #: Period of ``tick`` in nanoseconds (``None``: never).
    tick_interval_ns: Optional[int] = None
    #: Whether ``tick`` reads its samples (building them costs a pass over the units).
    wants_samples: bool = False

    @property
    def name(self) -> str:
        """The name in results (default: the class name)."""
        return type(self).__name__

    def submit(self, view: Any, task: int) -> Union[int, str, Any]:
        raise NotImplementedError(f"{self.name}.submit")

    def pick(self, view: Any, unit: int) -> Union[int, Any, None]:
        raise NotImplementedError(f"{self.name}.pick")

    def time_slice(self, view: Any, unit: int, task: int) -> Optional[int]:
        return None

    def checkpoint(self, view: Any, task: int, unit: int) -> Union[None, str, int]:
        return None

    def complete(self, view: Any, task: int, unit: int) -> None:
        return None

    def tick(self, view: Any, samples: List[dict]) -> Optional[List[Tuple[int, int]]]:
        return None

"""Machines and simulation runs, with their results as pandas DataFrames.

numpy and pandas are imported when a table is first built, not with the package: a run
that keeps its metrics alone costs no more than the CLI's (``import pandas`` alone takes
several times the CPU time and memory of ``hetsched simulate --summary`` on a 1M-task
run)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union

from . import _hetsched
from .policy import Policy

if TYPE_CHECKING:
    import pandas as pd

#: A scenario: the path of a TOML scenario file, or a dict of the same shape (its
#: relative paths from the working directory).
Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]


@dataclass
class Machine:
    """A machine as the scheduler sees it: its units, and the full model (``raw``)."""

    name: str
    units: pd.DataFrame
    raw: Dict[str, Any] = field(repr=False)


def machine(src: Union[str, "os.PathLike[str]"], units: str = "pu") -> Machine:
    """Loads a machine: a preset name, an hwloc XML file, a sysfs dump directory, a TOML
    machine file or ``"live"`` (this machine); ``units`` is ``"pu"`` or ``"core"``."""
    import pandas as pd

    raw = json.loads(_hetsched.machine(os.fspath(src), units))
    cols = ["id", "type", "name", "capacity", "numa_node", "cpus"]
    frame = pd.DataFrame([{c: u.get(c) for c in cols} for u in raw["units"]], columns=cols)
    return Machine(raw["name"], frame, raw)


def policies() -> List[Dict[str, Any]]:
    """The built-in policies: name, about and parameters (as ``hetsched policies``)."""
    return json.loads(_hetsched.policies())


class NotRecordedError(LookupError):
    """A part of a :class:`Result` that its run did not keep (``tasks`` or ``events``);
    the message says which :func:`simulate` keyword keeps it."""


@dataclass
class Result:
    """One simulation run. Plain data (picklable): ``metrics`` is a flat dict (times in
    seconds), ``summary`` the engine's counts, ``units`` one row per unit; ``tasks`` (one
    row per task) and ``events`` (one row per scheduling event) when the run kept them
    (``simulate(..., tasks=True, events=True)``); reading one that was not kept raises
    :class:`NotRecordedError`."""

    scenario: str
    machine: str
    seed: int
    policy: str
    metrics: Dict[str, Any]
    summary: Dict[str, Any]
    #: The units, as dicts (read them as a table through ``units``).
    unit_rows: List[Dict[str, Any]] = field(repr=False)
    #: The decision log (one line per policy call and answer), when asked for.
    decisions: Optional[List[str]] = field(default=None, repr=False)
    #: The tables, None where not kept (read them through ``tasks`` and ``events``).
    task_table: Optional[pd.DataFrame] = field(default=None, repr=False)
    event_table: Optional[pd.DataFrame] = field(default=None, repr=False)

    @cached_property
    def units(self) -> pd.DataFrame:
        """One row per unit: id, type, name, capacity."""
        import pandas as pd

        return pd.DataFrame(self.unit_rows, columns=["id", "type", "name", "capacity"])

    @property
    def tasks(self) -> pd.DataFrame:
        """One row per task, in submission order (the CLI's ``tasks-POLICY.csv``)."""
        if self.task_table is None:
            raise NotRecordedError(
                "Result.tasks: this run kept no per-task outcomes; "
                "run it with hetsched.simulate(..., tasks=True)"
            )
        return self.task_table

    @property
    def events(self) -> pd.DataFrame:
        """One row per scheduling event, in the order the engine made them."""
        if self.event_table is None:
            raise NotRecordedError(
                "Result.events: this run kept no events; "
                "run it with hetsched.simulate(..., events=True)"
            )
        return self.event_table


def _flat_metrics(m: Dict[str, Any]) -> Dict[str, Any]:
    flat: Dict[str, Any] = {}
    for key, value in m.items():
        if isinstance(value, dict):  # turnaround_s / wait_s statistics
            base = key[: -len("_s")] if key.endswith("_s") else key
            for stat, v in value.items():
                flat[f"{base}_{stat}_s"] = v
        elif key == "utilisation":
            for kind, v in value:
                flat[f"utilisation_{kind}"] = v
        else:
            flat[key] = value
    return flat


def _column(dtype: str, data: bytes, mask: Optional[bytes], categories: Optional[List[str]]):
    """A column the extension made (crates/bindings/py/src/columns.rs): little-endian values read
    in place, a missing-value mask, or category codes."""
    import numpy as np
    import pandas as pd

    if dtype == "category":
        codes = np.frombuffer(data, dtype="<i4")
        return pd.Categorical.from_codes(codes, categories=categories)
    values = np.frombuffer(data, dtype="<i8" if dtype in ("int64", "Int64") else dtype)
    if mask is None:
        return values
    return pd.arrays.IntegerArray(values, np.frombuffer(mask, dtype=bool))


def _frame(columns: Dict[str, tuple]) -> Dict[str, Any]:
    return {name: _column(*c) for name, c in columns.items()}


def _tasks_frame(columns: Dict[str, tuple]) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    cols = _frame(columns)
    ns = 1e-9
    arrival = cols["arrival_ns"]
    end = cols["end_ns"]
    done = ~(cols["rejected"] | end.isna())
    ended = end.to_numpy(dtype="int64", na_value=0)
    # Integer differences, then seconds: the CLI's per-task CSV's values to the bit.
    turnaround_ns = np.where(done, ended - arrival, 0)
    cols["arrival_s"] = arrival * ns
    cols["end_s"] = end.to_numpy(dtype="float64", na_value=np.nan) * ns
    cols["turnaround_s"] = np.where(done, turnaround_ns * ns, np.nan)
    cols["wait_s"] = np.where(done, (turnaround_ns - cols["run_ns"]) * ns, np.nan)
    cols["slowdown"] = cols["turnaround_s"] / (cols["ideal_ns"] * ns)
    return pd.DataFrame(cols, copy=False)


def _events_frame(columns: Dict[str, tuple]) -> pd.DataFrame:
    import pandas as pd

    cols = _frame(columns)
    cols["t_s"] = cols["t_ns"] * 1e-9
    return pd.DataFrame(cols, copy=False)


def simulate(
    scenario: Scenario,
    policy: Union[str, Policy] = "cfs",
    seed: Optional[int] = None,
    *,
    max_time_s: Optional[float] = None,
    max_events: Optional[int] = None,
    tasks: bool = False,
    events: bool = False,
    decisions: bool = False,
) -> Result:
    """Runs one policy on a scenario in the simulator.

    ``policy`` is a registry spec (``"cfs:latency_ms=6"``) or a :class:`hetsched.Policy`
    instance; ``seed`` (default: the scenario's), ``max_time_s`` and ``max_events``
    override the scenario's as ``hetsched simulate`` does. By default the run keeps what
    ``hetsched simulate --summary`` keeps: the metrics (and the engine's counts);
    ``tasks`` keeps one row per task (``Result.tasks``), ``events`` one row per
    scheduling event (``Result.events``), ``decisions`` the decision log. Bad input
    raises ``ValueError`` with the CLI's one-line message. A run of a built-in policy
    releases the GIL.
    """
    if isinstance(scenario, Mapping):
        try:
            text, is_json = json.dumps(scenario), True
        except (TypeError, ValueError) as e:
            raise ValueError(f"<scenario dict>: {e}") from None
    else:
        text, is_json = os.fspath(scenario), False
    out = _hetsched.simulate(
        text,
        policy,
        is_json=is_json,
        seed=seed,
        max_time_s=max_time_s,
        max_events=max_events,
        decisions=decisions,
        tasks=tasks,
        events=events,
    )
    raw = json.loads(out["meta"])
    task_table = None if out["tasks"] is None else _tasks_frame(out.pop("tasks"))
    event_table = None if out["events"] is None else _events_frame(out.pop("events"))
    return Result(
        scenario=raw["scenario"],
        machine=raw["machine"],
        seed=raw["seed"],
        policy=raw["policy"],
        metrics=_flat_metrics(raw["metrics"]),
        summary=raw["summary"],
        unit_rows=raw["units"],
        decisions=raw["decisions"],
        task_table=task_table,
        event_table=event_table,
    )

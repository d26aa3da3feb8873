"""Machines and simulation runs, with their results as pandas DataFrames."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

import pandas as pd

from . import _hetsched
from .policy import Policy

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
    raw = json.loads(_hetsched.machine(os.fspath(src), units))
    cols = ["id", "type", "name", "capacity", "numa_node", "cpus"]
    frame = pd.DataFrame([{c: u.get(c) for c in cols} for u in raw["units"]], columns=cols)
    return Machine(raw["name"], frame, raw)


def policies() -> List[Dict[str, Any]]:
    """The built-in policies: name, about and parameters (as ``hetsched policies``)."""
    return json.loads(_hetsched.policies())


@dataclass
class Result:
    """One simulation run. Plain data (picklable): ``metrics`` is a flat dict (times in
    seconds), ``tasks`` one row per task, ``events`` one row per scheduling event."""

    scenario: str
    machine: str
    seed: int
    policy: str
    metrics: Dict[str, Any]
    summary: Dict[str, Any]
    units: pd.DataFrame
    tasks: pd.DataFrame
    events: pd.DataFrame
    #: The decision log (one line per policy call and answer), when asked for.
    decisions: Optional[List[str]] = field(default=None, repr=False)


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


def _tasks_frame(outcomes: List[Dict[str, Any]]) -> pd.DataFrame:
    tasks = pd.DataFrame(outcomes)
    if tasks.empty:
        return tasks
    ns = 1e-9
    tasks["unit"] = tasks["unit"].astype("Int64")
    tasks["arrival_s"] = tasks["arrival_ns"] * ns
    tasks["end_s"] = tasks["end_ns"].astype("float64") * ns
    done = ~tasks["rejected"] & tasks["end_ns"].notna()
    tasks["turnaround_s"] = (tasks["end_s"] - tasks["arrival_s"]).where(done)
    tasks["wait_s"] = (tasks["turnaround_s"] - tasks["run_ns"] * ns).where(done)
    tasks["slowdown"] = tasks["turnaround_s"] / (tasks["ideal_ns"] * ns)
    return tasks


def simulate(
    scenario: Scenario,
    policy: Union[str, Policy] = "cfs",
    seed: Optional[int] = None,
    *,
    max_time_s: Optional[float] = None,
    max_events: Optional[int] = None,
    decisions: bool = False,
) -> Result:
    """Runs one policy on a scenario in the simulator.

    ``policy`` is a registry spec (``"cfs:latency_ms=6"``) or a :class:`hetsched.Policy`
    instance; ``seed`` (default: the scenario's), ``max_time_s`` and ``max_events``
    override the scenario's as ``hetsched simulate`` does; ``decisions`` keeps the
    decision log. Bad input raises ``ValueError`` with the CLI's one-line message. A run
    of a built-in policy releases the GIL.
    """
    if isinstance(scenario, Mapping):
        try:
            text, is_json = json.dumps(scenario), True
        except (TypeError, ValueError) as e:
            raise ValueError(f"<scenario dict>: {e}") from None
    else:
        text, is_json = os.fspath(scenario), False
    raw = json.loads(
        _hetsched.simulate(
            text,
            policy,
            is_json=is_json,
            seed=seed,
            max_time_s=max_time_s,
            max_events=max_events,
            decisions=decisions,
        )
    )
    event_cols = ["t_ns", "task", "event", "unit", "queue", "reason"]
    events = pd.DataFrame(raw["events"], columns=event_cols)
    events["unit"] = events["unit"].astype("Int64")
    events["t_s"] = events["t_ns"] * 1e-9
    return Result(
        scenario=raw["scenario"],
        machine=raw["machine"],
        seed=raw["seed"],
        policy=raw["policy"],
        metrics=_flat_metrics(raw["metrics"]),
        summary=raw["summary"],
        units=pd.DataFrame(raw["units"], columns=["id", "type", "name", "capacity"]),
        tasks=_tasks_frame(raw["tasks"]),
        events=events,
        decisions=raw["decisions"],
    )

"""Figures from simulation results (matplotlib): turnaround CDFs, a per-unit Gantt
chart of one run, and a bar chart comparing policies. Each returns the Figure; nothing
is shown or saved (``fig.savefig(path)`` does that)."""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple, Union

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ._sim import Result


def turnaround_cdf(results: Iterable[Result]) -> Figure:
    """One step line per run: the fraction of tasks done within a turnaround time."""
    fig = Figure()
    ax = fig.add_subplot()
    for r in results:
        t = np.sort(r.tasks["turnaround_s"].dropna().to_numpy())
        ax.step(t, np.arange(1, len(t) + 1) / max(len(t), 1), where="post", label=r.policy)
    ax.set_xlabel("turnaround (s)")
    ax.set_ylabel("fraction of tasks")
    ax.set_title("Turnaround CDF")
    ax.legend()
    return fig


def segments(result: Result) -> pd.DataFrame:
    """Run segments of a run: unit, task, start_s, end_s (from its events)."""
    open_: dict = {}
    rows: List[Tuple[int, int, float, float]] = []
    for e in result.events.itertuples(index=False):
        if e.event == "start":
            open_[e.task] = (int(e.unit), e.t_s)
        elif e.event in ("stop", "complete") or (
            e.event == "migrate" and str(e.queue).startswith("running:")
        ):
            if e.task in open_:
                unit, start = open_.pop(e.task)
                rows.append((unit, int(e.task), start, e.t_s))
    return pd.DataFrame(rows, columns=["unit", "task", "start_s", "end_s"])


def gantt(result: Result) -> Figure:
    """One row per unit with a bar per run segment (coloured by task)."""
    fig = Figure(figsize=(8, 0.4 * len(result.units) + 1.5), layout="constrained")
    ax = fig.add_subplot()
    seg = segments(result)
    for unit in result.units.itertuples(index=False):
        mine = seg[seg["unit"] == unit.id]
        bars = list(zip(mine["start_s"], mine["end_s"] - mine["start_s"]))
        colours = [f"C{t % 10}" for t in mine["task"]]
        ax.broken_barh(bars, (unit.id - 0.4, 0.8), facecolors=colours, edgecolor="white",
                       label=unit.name)
    ax.set_yticks(list(result.units["id"]), list(result.units["name"]))
    ax.set_xlabel("time (s)")
    ax.set_title(f"{result.policy} on {result.machine}")
    return fig


def compare(
    data: Union[Iterable[Result], pd.DataFrame], metric: str = "turnaround_mean_s",
    by: str = "policy",
) -> Figure:
    """A bar per policy: ``metric`` of each run, or its mean over a sweep's rows."""
    if isinstance(data, pd.DataFrame):
        frame = data
    else:
        frame = pd.DataFrame([{"policy": r.policy, **r.metrics} for r in data])
    if metric not in frame.columns:
        raise ValueError(f"compare: unknown metric {metric!r} (known: {', '.join(frame.columns)})")
    values = frame.groupby(by, sort=False)[metric].mean()
    fig = Figure()
    ax = fig.add_subplot()
    ax.bar([str(i) for i in values.index], values.to_numpy())
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} by {by}")
    return fig

"""Example policies written in Python: twins of two of hetsched's built-in Rust policies
(``crates/framework/policies/src/fcfs.rs`` and ``ws.rs``). They make the same decisions as the
Rust ones, which ``python/tests/test_policies.py`` checks on the example scenarios.
"""

from __future__ import annotations

from typing import Dict

from . import Policy, Reject, Steal


class Fcfs(Policy):
    """First come, first served from the central queue: an idle unit runs the oldest
    task it can run."""

    name = "py-fcfs"

    def submit(self, view, task):
        return "central"

    def pick(self, view, unit):
        for t in view.central():
            if view.can_run(t, unit):
                return t
        return None


class WorkStealing(Policy):
    """Work stealing: a task goes to the least-loaded unit that can run it (ties: lowest
    id); a unit runs its own queue oldest first, and an idle unit with an empty queue
    steals the newest task it can run from the longest queue (ties: lowest id)."""

    name = "py-ws"

    def __init__(self) -> None:
        # Queued + running tasks per unit, counted by the policy itself (as ws's
        # LoadIndex does).
        self.loads: Dict[int, int] = {}

    def submit(self, view, task):
        affinity = view.task(task)["affinity"]
        best = None
        for u in range(view.unit_count):
            if affinity[view.unit_type(u)] > 0:
                key = (self.loads.get(u, 0), u)
                if best is None or key < best:
                    best = key
        if best is None:
            return Reject("no unit can run it")
        self.loads[best[1]] = best[0] + 1
        return best[1]

    def pick(self, view, unit):
        own = view.queue(unit)
        if own:
            return own[0]
        best = None  # (queue length, unit, task)
        for v in range(view.unit_count):
            q = view.queue(v)
            if v == unit or len(q) <= (best[0] if best else 0):
                continue
            for t in reversed(q):
                if view.can_run(t, unit):
                    best = (len(q), v, t)
                    break
        if best is None:
            return None
        _, source, task = best
        self.loads[source] -= 1
        self.loads[unit] = self.loads.get(unit, 0) + 1
        return Steal(source, task)

    def complete(self, view, task, unit):
        self.loads[unit] -= 1

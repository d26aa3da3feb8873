"""``python -m hetsched.bench``: the cost of a policy written in Python. Runs the same
generated scenario with the Rust ``fcfs`` and with a trivial Python policy (the Python
twin of fcfs) and prints events per second of each (the engine's run alone, timed in
Rust, without converting the results; the best of ``--repeat`` runs) and their ratio."""

from __future__ import annotations

import argparse

from . import simulate
from .examples import Fcfs


def scenario(tasks: int) -> dict:
    """``tasks`` CPU tasks (exponential sizes, mean 0.1 s) at 90 % load of 8 cores."""
    return {
        "machine": "coretime",
        "seed": 1,
        "generator": [
            {
                "count": tasks,
                "rate": 0.9 * 8 / 0.1,
                "size": {"dist": "exponential", "mean": 0.1},
                "mix": [{"share": 1.0}],
            }
        ],
    }


def events_per_s(policy, tasks: int, repeat: int) -> float:
    """The best of ``repeat`` runs (the least disturbed by other work on the machine)."""
    runs = [simulate(scenario(tasks), policy).summary for _ in range(repeat)]
    return max(r["events"] / r["run_s"] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rust = events_per_s("fcfs", args.tasks, args.repeat)
    python = events_per_s(Fcfs(), args.tasks, args.repeat)
    print(f"rust fcfs:   {rust:12.0f} events/s")
    print(f"python fcfs: {python:12.0f} events/s")
    print(f"ratio:       {rust / python:12.1f}x")


if __name__ == "__main__":
    main()

"""Parameter sweeps: every combination of scenarios × policies × parameters × seeds,
one simulation each, collected into one DataFrame.

``backend="process"`` runs them on a local process pool; ``backend="ray"`` runs them as
Ray tasks on the cluster ``ray.init(address="auto")`` finds (started with ``ray start``),
else on a local Ray instance. Each row is computed from its job alone, so both backends
return the same table (rows in grid order).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

if TYPE_CHECKING:
    import pandas as pd

Job = Tuple[str, Any, Any, Optional[int], Dict[str, Any]]


def _as_list(v: Any) -> List[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _jobs(grid: Mapping[str, Any]) -> List[Job]:
    unknown = set(grid) - {"scenario", "policy", "seed", "params"}
    if unknown:
        raise ValueError(
            f"sweep grid: unknown keys {sorted(unknown)} (known: scenario, policy, seed, params)"
        )
    for key in ("scenario", "policy"):
        if key not in grid:
            raise ValueError(f"sweep grid: {key}: missing")
    scenarios = grid["scenario"]
    if isinstance(scenarios, Mapping) and "machine" not in scenarios:
        named = list(scenarios.items())  # {label: scenario}
    else:
        named = [
            (s if isinstance(s, str) else f"scenario[{i}]", s)
            for i, s in enumerate(_as_list(scenarios))
        ]
    policies = _as_list(grid["policy"])
    seeds = _as_list(grid.get("seed", [None]))
    params = _as_list(grid.get("params", [{}]))
    return [
        (label, scenario, policy, seed, dict(p))
        for (label, scenario), policy, p, seed in itertools.product(named, policies, params, seeds)
    ]


def _run(job: Job) -> Dict[str, Any]:
    from . import simulate

    label, scenario, policy, seed, params = job
    r = simulate(scenario, policy, seed, **params)
    row: Dict[str, Any] = {"scenario": label, "policy": r.policy, "seed": r.seed}
    row.update(params)
    row.update({k: v for k, v in r.metrics.items() if k != "policy"})
    row["events"] = r.summary["events"]
    return row


def _ray_rows(jobs: Sequence[Job]) -> List[Dict[str, Any]]:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("backend=\"ray\" needs the extra: pip install './python[ray]'") from e
    if not ray.is_initialized():
        try:
            ray.init(address="auto")
        except ConnectionError:
            ray.init(include_dashboard=False)
    remote = ray.remote(_run)
    return ray.get([remote.remote(job) for job in jobs])


def sweep(
    grid: Mapping[str, Any], backend: str = "process", workers: Optional[int] = None
) -> pd.DataFrame:
    """Runs the grid and returns one row per run.

    ``grid`` keys: ``scenario`` (a path, a dict, a list of them or ``{label: scenario}``),
    ``policy`` (specs or picklable :class:`hetsched.Policy` objects), ``seed`` (a list;
    default the scenarios' own) and ``params`` (a list of dicts of further
    :func:`hetsched.simulate` keywords, e.g. ``{"max_time_s": 10}``). Columns: scenario,
    policy, seed, the params' keys, then the metrics.
    """
    import pandas as pd

    jobs = _jobs(grid)
    if backend == "ray":
        rows = _ray_rows(jobs)
    elif backend == "process":
        # Imported here, not with the package (a few MB and ms every import would pay).
        import concurrent.futures
        import multiprocessing

        # Spawned workers: forking a process that runs Ray's threads is not safe.
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            rows = list(pool.map(_run, jobs))
    else:
        raise ValueError(f"sweep: backend: expected \"process\" or \"ray\", got {backend!r}")
    return pd.DataFrame(rows)

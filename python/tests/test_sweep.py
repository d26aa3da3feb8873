import pandas as pd
import pytest

import hetsched
from conftest import SCENARIOS

GRID = {
    "scenario": [str(SCENARIOS / "fast-slow-mixed.toml")],
    "policy": ["fcfs", "dmda"],
    "seed": [1, 2],
    "params": [{"max_time_s": 60.0}],
}


def test_process_sweep_is_the_runs_one_by_one():
    table = hetsched.sweep(GRID, backend="process", workers=2)
    assert list(table.columns[:5]) == ["scenario", "policy", "seed", "max_time_s", "completed"]
    assert list(zip(table["policy"], table["seed"])) == [
        ("fcfs", 1), ("fcfs", 2), ("dmda", 1), ("dmda", 2)]
    one = hetsched.simulate(GRID["scenario"][0], "dmda", seed=2, max_time_s=60.0)
    assert table.iloc[3]["makespan_s"] == one.metrics["makespan_s"]


def test_ray_sweep_returns_the_process_table():
    pytest.importorskip("ray")
    ray_table = hetsched.sweep(GRID, backend="ray")
    process_table = hetsched.sweep(GRID, backend="process", workers=2)
    pd.testing.assert_frame_equal(ray_table, process_table)


def test_bad_grids():
    with pytest.raises(ValueError, match="unknown keys"):
        hetsched.sweep({**GRID, "seeds": [1]})
    with pytest.raises(ValueError, match="policy: missing"):
        hetsched.sweep({"scenario": GRID["scenario"]})
    with pytest.raises(ValueError, match="backend"):
        hetsched.sweep(GRID, backend="dask")

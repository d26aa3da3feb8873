"""What a run keeps: the metrics by default (those of `hetsched simulate --summary`),
per-task outcomes and events when asked, each equal to what the CLI's real binary
writes for the same run."""

import json
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

import hetsched
from conftest import SCENARIOS, hetsched_binary
from hetsched._sim import _flat_metrics

# A scenario some of whose tasks no unit can run (GPU-only on a CPU machine): cfs
# rejects them.
REJECTING = """
machine = "ding"
seed = 5

[[generator]]
count = 400
rate = 30.0
size = { dist = "exponential", mean = 0.2 }

[[generator.mix]]
type = "cpu"
share = 0.9

[[generator.mix]]
type = "gpu-only"
share = 0.1
affinity = { cpu = 0, gpu = 1 }
"""

# (scenario, policy, max_time_s): yields and migrations (cfs, dmda on a GPU), steals
# (ws), rejections, and tasks cut off by the time limit (never started, or unfinished).
RUNS = [
    ("fast-slow-mixed.toml", "cfs", None),
    ("fast-slow-mixed.toml", "ws", 40.0),
    ("beisel-gpu.toml", "dmda", 10.0),
    ("rejecting.toml", "cfs", None),
]


def scenario_path(name, tmp_path):
    if name == "rejecting.toml":
        path = tmp_path / name
        path.write_text(REJECTING)
        return path
    return SCENARIOS / name


def cli(path, policy, max_time_s, out, *extra):
    """The CLI's metrics of the run (metrics.json), its per-task CSV if written."""
    binary = hetsched_binary()
    if not binary.exists():
        pytest.fail(f"{binary} not found: build it with `cargo build --bin hetsched`")
    args = [binary, "simulate", path, "--policy", policy, "--out", out, "--json", *extra]
    if max_time_s is not None:
        args += ["--max-time-s", str(max_time_s)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (run,) = json.loads((out / "metrics.json").read_text())["runs"]
    csv = out / f"tasks-{policy}.csv"
    table = pd.read_csv(csv, dtype=str, keep_default_na=False) if csv.exists() else None
    return _flat_metrics(run), table


def ns(text):
    """A CSV time (seconds with nine decimals) in ns, or None for an empty field."""
    return None if text == "" else int(Decimal(text) * 10**9)


@pytest.mark.parametrize("name, policy, max_time_s", RUNS)
def test_default_result_is_the_clis_summary(name, policy, max_time_s, tmp_path):
    path = scenario_path(name, tmp_path)
    metrics, _ = cli(path, policy, max_time_s, tmp_path / "out", "--summary")
    r = hetsched.simulate(path, policy, max_time_s=max_time_s)
    assert r.metrics == metrics
    assert r.summary["submitted"] == metrics["tasks"]
    with pytest.raises(hetsched.NotRecordedError, match=r"simulate\(\.\.\., tasks=True\)"):
        r.tasks
    with pytest.raises(hetsched.NotRecordedError, match=r"simulate\(\.\.\., events=True\)"):
        r.events


@pytest.mark.parametrize("name, policy, max_time_s", RUNS)
def test_tasks_are_the_clis_per_task_csv(name, policy, max_time_s, tmp_path):
    path = scenario_path(name, tmp_path)
    metrics, csv = cli(path, policy, max_time_s, tmp_path / "out")
    r = hetsched.simulate(path, policy, max_time_s=max_time_s, tasks=True)
    t = r.tasks
    assert r.metrics == metrics
    assert len(t) == len(csv) == metrics["tasks"]
    assert list(t["task"]) == [int(v) for v in csv["task"]]
    assert list(t["kind"].astype(str)) == list(csv["type"])
    for col, mine in [("arrival_s", "arrival_ns"), ("first_start_s", "first_start_ns"),
                      ("end_s", "end_ns"), ("run_s", "run_ns"), ("ideal_s", "ideal_ns")]:
        want = [ns(v) for v in csv[col]]
        got = [None if v is pd.NA else int(v) for v in t[mine].astype(object)]
        assert got == want, col
    # The derived seconds print as the CSV's: the same nanoseconds, the same float.
    for col in ("turnaround_s", "wait_s"):
        got = ["" if np.isnan(v) else f"{v:.9f}" for v in t[col]]
        assert got == list(csv[col]), col
    for col in ("runs", "migrations"):
        assert list(t[col]) == [int(v) for v in csv[col]], col
    names = dict(zip(r.units["id"], r.units["name"]))
    assert [("" if u is pd.NA else names[u]) for u in t["unit"].astype(object)] == list(csv["unit"])
    assert list(t["rejected"]) == [v == "true" for v in csv["rejected"]]
    # The runs cover what the parametrisation promises.
    if name == "rejecting.toml":
        assert t["rejected"].sum() > 0
    if max_time_s is not None:
        assert t["end_ns"].isna().sum() > 0
    with pytest.raises(hetsched.NotRecordedError, match="events=True"):
        r.events


@pytest.mark.parametrize("name, policy, max_time_s", RUNS)
def test_events_on_request_agree_with_the_tasks(name, policy, max_time_s, tmp_path):
    path = scenario_path(name, tmp_path)
    r = hetsched.simulate(path, policy, max_time_s=max_time_s, tasks=True, events=True)
    e, t = r.events, r.tasks
    assert r.metrics == hetsched.simulate(path, policy, max_time_s=max_time_s).metrics
    assert list(e.columns) == ["t_ns", "task", "event", "unit", "queue", "reason", "t_s"]
    counts = e["event"].value_counts()
    # One submit per task, in submission order (the tasks' order); one start per run
    # segment, a migrate per migration, a complete or reject per ended task.
    submits = e[e["event"] == "submit"]
    assert list(submits["task"]) == list(t["task"])
    assert list(submits["t_ns"]) == list(t["arrival_ns"])
    assert counts["start"] == t["runs"].sum()
    assert counts.get("migrate", 0) == t["migrations"].sum() == r.metrics["migrations"]
    assert counts.get("complete", 0) == r.metrics["completed"]
    assert counts.get("reject", 0) == r.metrics["rejected"] == t["rejected"].sum()
    stops = counts.get("stop", 0)
    running_at_end = (t["end_ns"].isna() & (t["runs"] > 0)).sum()
    assert counts["start"] == stops + counts.get("complete", 0) + running_at_end
    # Time never goes back; each task's first event is its submit, and each task's
    # first start and end are its outcome's.
    assert (np.diff(e["t_ns"].to_numpy()) >= 0).all()
    assert (e.groupby("task", sort=False)["event"].first() == "submit").all()
    first_start = e[e["event"] == "start"].groupby("task")["t_ns"].first()
    have = t.set_index("task")["first_start_ns"].dropna().astype("int64")
    pd.testing.assert_series_equal(first_start.sort_index(), have.sort_index(),
                                   check_names=False)
    ends = e[e["event"].isin(["complete", "reject"])].set_index("task")["t_ns"]
    have = t.set_index("task")["end_ns"].dropna().astype("int64")
    pd.testing.assert_series_equal(ends.sort_index(), have.sort_index(), check_names=False)
    # Units, queues and reasons where the event has them, missing elsewhere.
    with_unit = e["event"].isin(["start", "stop", "migrate", "complete"])
    assert e["unit"].notna().to_numpy().tolist() == with_unit.tolist()
    with_queue = e["event"].isin(["enqueue", "start", "migrate"])
    assert e["queue"].notna().to_numpy().tolist() == with_queue.tolist()
    assert (e["reason"].notna() == (e["event"] == "reject")).all()
    assert (e["t_s"] == e["t_ns"] * 1e-9).all()


def test_events_alone_keep_no_tasks():
    r = hetsched.simulate(SCENARIOS / "hand.toml", "fcfs", events=True)
    assert len(r.events) == 12
    with pytest.raises(hetsched.NotRecordedError, match="tasks=True"):
        r.tasks


def test_a_python_policys_run_keeps_the_same():
    from hetsched.examples import Fcfs

    path = SCENARIOS / "fast-slow-mixed.toml"
    rust = hetsched.simulate(path, "fcfs", tasks=True, events=True)
    python = hetsched.simulate(path, Fcfs(), tasks=True, events=True)
    python_default = hetsched.simulate(path, Fcfs())
    assert python.metrics == {**rust.metrics, "policy": python.policy}
    assert python_default.metrics == python.metrics
    cols = [c for c in rust.tasks.columns]
    pd.testing.assert_frame_equal(python.tasks[cols], rust.tasks[cols])
    pd.testing.assert_frame_equal(python.events, rust.events)


def test_a_run_that_keeps_no_table_imports_neither_numpy_nor_pandas():
    # import pandas alone costs several times the CPU time and memory of the CLI's whole
    # 1M-task --summary run (python -m hetsched.bench simulate).
    code = (
        "import sys, hetsched\n"
        f"r = hetsched.simulate({str(SCENARIOS / 'hand.toml')!r}, 'fcfs')\n"
        "assert r.metrics['completed'] == 3\n"
        "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))\n"
        "r.units\n"
        "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.split("\n")[:2] == ["[]", "['numpy', 'pandas']"]

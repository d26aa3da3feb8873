"""The benchmark programs run, on small scenarios, and their output parses: the figures
are not checked against a bound here (that takes a release build and the 1M-task bag:
`python -m hetsched.bench simulate`), only against each other."""

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT, SCENARIOS, hetsched_binary

FLOAT = r"([0-9.]+)"


def bench(*args):
    out = subprocess.run([sys.executable, "-m", "hetsched.bench", *map(str, args)],
                         cwd=ROOT, check=True, capture_output=True, text=True)
    return out.stdout


def test_policy_bench_prints_the_ratio():
    out = bench("--tasks", 2000, "--repeat", 1)
    rust, python, ratio = (float(re.search(rf"{k}:\s+{FLOAT}", out).group(1))
                           for k in ("rust fcfs", "python fcfs", "ratio"))
    assert rust > 0 and python > 0
    assert ratio == pytest.approx(rust / python, rel=0.01, abs=0.1)


@pytest.mark.parametrize("tables", [[], ["--tasks"], ["--tasks", "--events"]])
def test_simulate_bench_prints_the_cli_and_python_figures(tables, tmp_path):
    scenario = SCENARIOS / "fast-slow-mixed.toml"  # 2,000 tasks
    binary = hetsched_binary()
    if not binary.exists():
        pytest.fail(f"{binary} not found: build it with `cargo build --bin hetsched`")
    figures = tmp_path / "bench.json"
    out = bench("simulate", scenario, "--cli", binary, "--rounds", 3, "--json", figures,
                *tables)
    rounds = re.findall(
        rf"^round (\d) \((cli then python|python then cli)\): CLI {FLOAT} s, {FLOAT} MB \| "
        rf"simulate call {FLOAT} s, \+{FLOAT} MB \(process {FLOAT} s, {FLOAT} MB(.*)\)$",
        out, re.M)
    assert [r[:2] for r in rounds] == [("1", "cli then python"), ("2", "python then cli"),
                                       ("3", "cli then python")]
    cli = re.search(rf"CLI --summary \(whole process\):\s+{FLOAT} s CPU\s+{FLOAT} MB", out)
    call = re.search(rf"hetsched\.simulate call:\s+{FLOAT} s CPU\s+{FLOAT} MB\s+"
                     rf"ratio to the CLI: CPU {FLOAT}x, memory {FLOAT}x", out)
    proc = re.search(rf"Python process \(.*\): {FLOAT} s CPU {FLOAT} MB\s+"
                     rf"ratio: CPU {FLOAT}x, memory {FLOAT}x", out)
    assert cli and call and proc, out
    assert re.search(r"^load average \(1, 5, 15 min\): before [0-9.]+ [0-9.]+ [0-9.]+, "
                     r"after [0-9.]+ [0-9.]+ [0-9.]+$", out, re.M)
    assert re.search(r"^CPU: .+, \d+ CPUs$", out, re.M)
    cli_cpu, cli_mb = map(float, cli.groups())
    call_cpu, call_mb, call_rcpu, call_rmb = map(float, call.groups())
    proc_cpu, proc_mb, proc_rcpu, proc_rmb = map(float, proc.groups())
    # The medians are the rounds' (printed to 3 decimals and 1 decimal).
    med = lambda i: sorted(float(r[i]) for r in rounds)[1]  # noqa: E731
    assert (cli_cpu, call_cpu, proc_cpu) == (med(2), med(4), med(6))
    assert (cli_mb, call_mb, proc_mb) == (med(3), med(5), med(7))
    assert cli_cpu > 0 and cli_mb > 0 and proc_cpu >= call_cpu and proc_mb > call_mb
    # The JSON holds the same figures unrounded; the printed ratios are theirs.
    got = json.loads(figures.read_text())
    m, r = got["median"], got["ratio"]
    # Half the printed unit (a value like 21.25 prints as 21.2: rounding half to even),
    # and slack for the binary fractions.
    assert m["cli_cpu_s"] == pytest.approx(cli_cpu, abs=5e-4 + 1e-9)
    assert m["process_mb"] == pytest.approx(proc_mb, abs=0.05 + 1e-9)
    assert r["call_cpu"] == pytest.approx(m["call_cpu_s"] / m["cli_cpu_s"])
    assert r["process_mb"] == pytest.approx(m["process_mb"] / m["cli_mb"])
    assert (call_rcpu, call_rmb, proc_rcpu, proc_rmb) == tuple(
        round(r[k], 2) for k in ("call_cpu", "call_mb", "process_cpu", "process_mb"))
    assert len(got["rounds"]) == 3
    # The tables kept are counted: one row per task, four or more events per task.
    kept = {k: int(n.replace(",", "")) for n, k in re.findall(r", ([0-9,]+) (\w+) rows",
                                                              rounds[0][8])}
    assert kept == got["rows"]
    assert set(kept) == {t.lstrip("-") for t in tables}
    if "tasks" in kept:
        assert kept["tasks"] == 2000
    if "events" in kept:
        assert kept["events"] >= 4 * 2000

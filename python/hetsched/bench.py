"""``python -m hetsched.bench``: benchmark programs.

``python -m hetsched.bench [policy] [--tasks N] [--repeat N]``: the cost of a policy
written in Python. Runs the same generated scenario with the Rust ``fcfs`` and with a
trivial Python policy (the Python twin of fcfs) and prints events per second of each (the
engine's run alone, timed in Rust, without converting the results; the best of
``--repeat`` runs) and their ratio.

``python -m hetsched.bench simulate [SCENARIO] [--cli PATH] [--policy P] [--rounds N]
[--tasks] [--events]``: the cost of ``hetsched.simulate`` beside the CLI's ``hetsched
simulate SCENARIO --summary`` on the same run (default ``scenarios/bench/bag1m.toml``,
1M tasks). Each round runs both, in turn, each in a process of its own, and prints their
CPU time (user + system) and peak resident memory: the CLI's whole process, the
``simulate`` call of the Python process (its CPU time, and how far its peak resident
memory rose over what the interpreter held with ``hetsched`` imported, and pandas too
when a table is kept), and that whole Python process. Then the medians, the ratios to
the CLI, and the load average. Both runs must give the same metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

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


def policy_main(argv: Sequence[str]) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m hetsched.bench [policy]",
        description="The cost of a policy written in Python (see the module's docs).",
    )
    ap.add_argument("--tasks", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rust = events_per_s("fcfs", args.tasks, args.repeat)
    python = events_per_s(Fcfs(), args.tasks, args.repeat)
    print(f"rust fcfs:   {rust:12.0f} events/s")
    print(f"python fcfs: {python:12.0f} events/s")
    print(f"ratio:       {rust / python:12.1f}x")


# --- python -m hetsched.bench simulate -------------------------------------------------

MB = 1024.0  # ru_maxrss and /proc figures are in KiB


# The Python side of a round, in its own process, which imports what a script calling
# simulate imports (hetsched; pandas too when a table is kept, its cost measured apart
# from the tables'): simulate timed and its peak memory measured, the figures as JSON on
# stdout. The peak so far (the imports') is reset to the current size where Linux allows
# it (clear_refs), so that the peak after the call is the call's; otherwise ru_maxrss,
# which can only overstate what the call added.
_CHILD = r"""
import json, resource, sys, time
import hetsched
path, policy, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if options:
    import pandas


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])


try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    peak_source = "VmHWM"
except OSError:
    peak_source = "ru_maxrss"
before_kb = status_kb("VmRSS")
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
r = hetsched.simulate(path, policy, **options)
wall = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
peak_kb = status_kb("VmHWM") if peak_source == "VmHWM" else r1.ru_maxrss
rows = {k: len(getattr(r, k)) for k in ("tasks", "events") if options.get(k)}
cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
json.dump({"cpu_s": cpu, "wall_s": wall, "before_kb": before_kb, "peak_kb": peak_kb,
           "peak_source": peak_source, "metrics": r.metrics, "rows": rows}, sys.stdout)
"""


# Runs a command to its end from a small process of its own (an interpreter without
# site packages), its stdout to a file, and prints its CPU time and peak memory (wait4).
# Why not from the bench itself: a child's ru_maxrss counts the memory of the process it
# was forked from as it was when it exec'd, and the bench holds pandas (70 MB); from the
# launcher, the floor is the launcher's own size (printed as the floor).
_LAUNCHER = r"""
import json, os, sys
pid = os.fork()
if pid == 0:
    try:
        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, u = os.wait4(pid, 0)
print(json.dumps({"status": os.waitstatus_to_exitcode(status),
                  "cpu_s": u.ru_utime + u.ru_stime, "maxrss_kb": u.ru_maxrss}))
"""


def _run(args: List[str], out_path: str) -> Dict[str, Any]:
    """Runs ``args`` (stdout to ``out_path``) from the launcher: its CPU time and peak
    memory."""
    launch = [sys.executable, "-I", "-S", "-c", _LAUNCHER, out_path, *map(str, args)]
    p = subprocess.run(launch, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    try:
        got = json.loads(p.stdout)
    except ValueError:
        sys.exit(f"bench simulate: the launcher failed ({p.returncode}): {err}")
    if got["status"] != 0:
        sys.exit(f"bench simulate: {' '.join(map(str, args))} failed ({got['status']}): {err}")
    return got


def _default_cli() -> str:
    if "HETSCHED_BIN" in os.environ:
        return os.environ["HETSCHED_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    built = os.path.join(target, "release", "hetsched")
    return built if os.path.exists(built) else (shutil.which("hetsched") or built)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _flat(run: Dict[str, Any]) -> Dict[str, Any]:
    from ._sim import _flat_metrics

    return _flat_metrics(run)


def simulate_main(argv: Sequence[str]) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m hetsched.bench simulate",
        description="hetsched.simulate beside `hetsched simulate --summary` (see the module's docs).",
    )
    ap.add_argument("scenario", nargs="?", default="scenarios/bench/bag1m.toml")
    ap.add_argument("--cli", default=None,
                    help="the hetsched binary, a release build (default: $HETSCHED_BIN, "
                    "else $CARGO_TARGET_DIR or ./target's release/hetsched, else PATH's)")
    ap.add_argument("--policy", default="fcfs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", action="store_true", help="simulate(..., tasks=True)")
    ap.add_argument("--events", action="store_true", help="simulate(..., events=True)")
    ap.add_argument("--json", metavar="PATH", default=None,
                    help="also write every round's figures and the medians to PATH as JSON")
    args = ap.parse_args(argv)
    cli = args.cli or _default_cli()
    if not os.path.exists(args.scenario):
        sys.exit(f"bench simulate: {args.scenario}: no such file (run from the repository "
                 "root, or name a scenario)")
    if not os.path.exists(cli):
        sys.exit(f"bench simulate: {cli}: no such file (build it: "
                 "cargo build --release --bin hetsched, or pass --cli)")
    options = {k: True for k in ("tasks", "events") if getattr(args, k)}
    call = ", ".join([repr(args.policy)] + [f"{k}=True" for k in options])
    print(f"`{cli} simulate {args.scenario} --policy {args.policy} --summary`")
    print(f"  vs `hetsched.simulate({args.scenario!r}, {call})` ({sys.executable})")
    print(f"CPU: {_cpu_model()}, {os.cpu_count()} CPUs")
    load_before = os.getloadavg()
    rows: List[Dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="hetsched-bench-") as tmp:
        true = shutil.which("true") or "/bin/true"
        floor_kb = _run([true], os.path.join(tmp, "true.out"))["maxrss_kb"]
        for i in range(args.rounds):
            order = ["cli", "python"] if i % 2 == 0 else ["python", "cli"]
            row: Dict[str, float] = {}
            for side in order:
                out_path = os.path.join(tmp, f"{side}.json")
                if side == "cli":
                    u = _run([cli, "simulate", args.scenario, "--policy", args.policy,
                              "--summary", "--json", "--out", os.path.join(tmp, "out")],
                             out_path)
                    row["cli_cpu"], row["cli_kb"] = u["cpu_s"], u["maxrss_kb"]
                else:
                    u = _run([sys.executable, "-c", _CHILD, args.scenario, args.policy,
                              json.dumps(options)], out_path)
                    row["proc_cpu"], row["proc_kb"] = u["cpu_s"], u["maxrss_kb"]
                with open(out_path) as f:
                    got = json.load(f)
                if side == "cli":
                    cli_metrics = _flat(got["runs"][0])
                else:
                    py = got
                    row["call_cpu"] = py["cpu_s"]
                    row["call_kb"] = py["peak_kb"] - py["before_kb"]
                    row["before_kb"] = py["before_kb"]
            if py["metrics"] != cli_metrics:
                sys.exit("bench simulate: the CLI's and simulate's metrics differ:\n"
                         f"  {cli_metrics}\n  {py['metrics']}")
            rows.append(row)
            extra = "".join(f", {n:,} {k} rows" for k, n in py["rows"].items())
            print(f"round {i + 1} ({' then '.join(order)}): "
                  f"CLI {row['cli_cpu']:.3f} s, {row['cli_kb'] / MB:.1f} MB | "
                  f"simulate call {row['call_cpu']:.3f} s, +{row['call_kb'] / MB:.1f} MB "
                  f"(process {row['proc_cpu']:.3f} s, {row['proc_kb'] / MB:.1f} MB{extra})")
    load_after = os.getloadavg()

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    cli_cpu, cli_mb = med("cli_cpu"), med("cli_kb") / MB
    call_cpu, call_mb = med("call_cpu"), med("call_kb") / MB
    proc_cpu, proc_mb = med("proc_cpu"), med("proc_kb") / MB
    print(f"medians of {len(rows)} rounds (CPU time = user + system; memory = peak RSS, "
          f"the call's as the rise over the {med('before_kb') / MB:.1f} MB the interpreter "
          f"held before it{' with pandas imported' if options else ''}, "
          f"by {py['peak_source']}):")
    print(f"  CLI --summary (whole process): {cli_cpu:8.3f} s CPU {cli_mb:8.1f} MB   "
          f"(the launcher's floor: {floor_kb / MB:.1f} MB)")
    print(f"  hetsched.simulate call:        {call_cpu:8.3f} s CPU {call_mb:8.1f} MB   "
          f"ratio to the CLI: CPU {call_cpu / cli_cpu:.2f}x, memory {call_mb / cli_mb:.2f}x")
    print(f"  Python process (interpreter, imports and the call): {proc_cpu:.3f} s CPU "
          f"{proc_mb:.1f} MB   ratio: CPU {proc_cpu / cli_cpu:.2f}x, memory "
          f"{proc_mb / cli_mb:.2f}x")
    if cli_mb < 1.1 * floor_kb / MB:
        print("  (the CLI's peak is near the launcher's floor: its own may be less)")
    print("load average (1, 5, 15 min): before {:.2f} {:.2f} {:.2f}, after {:.2f} {:.2f} {:.2f}"
          .format(*load_before, *load_after))
    if args.json:
        figures = {
            "scenario": args.scenario, "policy": args.policy, "cli": cli,
            "python": sys.executable, "options": options, "cpu_model": _cpu_model(),
            "cpus": os.cpu_count(), "load_before": load_before, "load_after": load_after,
            "peak_source": py["peak_source"], "floor_mb": floor_kb / MB,
            "rows": py["rows"],
            "rounds": [{(k[:-3] + "_mb" if k.endswith("_kb") else k):
                        (v / MB if k.endswith("_kb") else v) for k, v in r.items()}
                       for r in rows],
            "median": {"cli_cpu_s": cli_cpu, "cli_mb": cli_mb, "call_cpu_s": call_cpu,
                       "call_mb": call_mb, "process_cpu_s": proc_cpu,
                       "process_mb": proc_mb},
            "ratio": {"call_cpu": call_cpu / cli_cpu, "call_mb": call_mb / cli_mb,
                      "process_cpu": proc_cpu / cli_cpu, "process_mb": proc_mb / cli_mb},
        }
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


def main(argv: Optional[Sequence[str]] = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["simulate"]:
        simulate_main(argv[1:])
    else:
        policy_main(argv[1:] if argv[:1] == ["policy"] else argv)


if __name__ == "__main__":
    main()

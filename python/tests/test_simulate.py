import os
import pickle
import threading
import time

import pytest

import hetsched
from conftest import SCENARIOS

HAND = str(SCENARIOS / "hand.toml")


def test_hand_computed_fcfs():
    # The numbers of scenarios/hand.toml's comment (crates/framework/sim/tests/hand_computed.rs).
    r = hetsched.simulate(HAND, policy="fcfs", tasks=True, events=True)
    assert r.metrics["makespan_s"] == pytest.approx(3.0)
    assert list(r.tasks["turnaround_s"]) == pytest.approx([2.0, 2.0, 2.5])
    assert r.metrics["completed"] == 3 and r.policy == "fcfs"
    assert list(r.units["type"]) == ["cpu", "cpu"]
    complete = r.events[r.events["event"] == "complete"]
    assert list(complete["task"]) == [0, 1, 2]
    assert list(complete["unit"]) == [0, 1, 0]


def test_dict_scenario_is_the_file():
    machine = str(SCENARIOS / "hand-fast-slow.toml")
    scenario = {
        "machine": machine,
        "task": [{"work": 2.0}, {"work": 1.0}, {"work": 1.0, "arrival": 0.5}],
    }
    a = hetsched.simulate(scenario, policy="ws", events=True)
    b = hetsched.simulate(HAND, policy="ws", events=True)
    assert a.metrics == b.metrics
    assert a.events.equals(b.events)


def test_results_pickle():
    r = hetsched.simulate(SCENARIOS / "fast-slow-mixed.toml", policy="dmda", seed=3,
                          tasks=True, events=True)
    back = pickle.loads(pickle.dumps(r))
    assert back.metrics == r.metrics and back.seed == 3
    assert back.tasks.equals(r.tasks) and back.events.equals(r.events)
    assert len(r.tasks) == 2000


def test_seed_changes_generated_tasks():
    a = hetsched.simulate(SCENARIOS / "fast-slow-mixed.toml", "fcfs", seed=1, tasks=True)
    b = hetsched.simulate(SCENARIOS / "fast-slow-mixed.toml", "fcfs", seed=2, tasks=True)
    assert not a.tasks["arrival_ns"].equals(b.tasks["arrival_ns"])


@pytest.mark.parametrize(
    "kwargs, needles",
    [
        ({"scenario": "no/such.toml"}, ["no/such.toml: cannot read"]),
        ({"policy": "lottery"}, ['unknown policy "lottery" (known: fcfs, cfs']),
        ({"policy": "cfs:latency_ms=-1"}, ["latency_ms: expected a number in [0.1, 1000], got -1"]),
        ({"max_events": 0}, ["max_events: expected an integer in [1, "]),
        ({"max_time_s": float("nan")}, ["max_time_s: expected a number in [0, "]),
        ({"scenario": {"machine": "ding", "task": [{"work": -1}]}}, ["<scenario dict>", "work"]),
        ({"scenario": {"machine": "ding", "bogus": 1}}, ["<scenario dict>", "bogus"]),
        ({"scenario": {"machine": "nowhere.toml"}}, ["<scenario dict>: machine"]),
        ({"scenario": {"machine": "ding", "seed": object()}}, ["<scenario dict>"]),
    ],
)
def test_bad_input_is_a_value_error_with_the_cli_message(kwargs, needles):
    kwargs = {"scenario": HAND, **kwargs}
    with pytest.raises(ValueError) as e:
        hetsched.simulate(**kwargs)
    message = str(e.value)
    assert "\n" not in message
    for n in needles:
        assert n in message, message


def test_a_fifo_as_a_scenario_or_a_machine_is_a_value_error_at_once(tmp_path):
    # A FIFO has no end and, without a writer, no beginning: opening one to read would
    # wait forever. It is refused at once, naming it.
    start = time.monotonic()
    scenario = tmp_path / "scenario.toml"
    os.mkfifo(scenario)
    with pytest.raises(ValueError, match="scenario.toml: is a FIFO; a scenario must be a regular file"):
        hetsched.simulate(scenario)
    machine = tmp_path / "machine.toml"
    os.mkfifo(machine)
    with pytest.raises(ValueError, match="machine.toml: is a FIFO"):
        hetsched.machine(machine)
    assert time.monotonic() - start < 10


def test_bad_policy_object_is_a_type_error():
    with pytest.raises(TypeError, match="hetsched.Policy instance"):
        hetsched.simulate(HAND, policy=42)


def test_machine_presets_and_errors():
    m = hetsched.machine("ding")
    assert m.name and len(m.units) == 8
    assert set(m.units["capacity"]) == {1024, 512}
    assert len(hetsched.machine(SCENARIOS / "hand-fast-slow.toml").units) == 2
    with pytest.raises(ValueError, match="units"):
        hetsched.machine("ding", units="socket")
    with pytest.raises(ValueError):
        hetsched.machine("no-such-preset")


def test_policies_lists_the_registry():
    names = [p["name"] for p in hetsched.policies()]
    assert names[:2] == ["fcfs", "cfs"]
    cfs = next(p for p in hetsched.policies() if p["name"] == "cfs")
    assert cfs["params"][0]["key"] == "latency_ms"


def test_a_rust_policy_run_releases_the_gil():
    # While the run is in Rust, this thread keeps running Python; with the GIL held it
    # could not count at all until the run returned.
    big = {
        "machine": "ding",
        "generator": [{"count": 20000, "rate": 30.0,
                       "size": {"dist": "exponential", "mean": 0.2}, "mix": [{"share": 1}]}],
    }
    done = threading.Event()
    t = threading.Thread(target=lambda: (hetsched.simulate(big, "fcfs"), done.set()))
    t.start()
    spins = 0
    while t.is_alive() and not done.is_set():
        spins += 1
    t.join()
    assert done.is_set()
    assert spins > 1000, spins


def test_ctrl_c_stops_a_run_at_once_with_keyboard_interrupt(tmp_path):
    # A run of many seconds in a child Python; SIGINT after it started must end it within
    # moments as KeyboardInterrupt (the run is stopped, not left going in Rust).
    import signal
    import subprocess
    import sys

    script = tmp_path / "long.py"
    script.write_text(
        "import sys, time, hetsched\n"
        "big = {'machine': 'ding', 'generator': [{'count': 50_000_000, 'rate': 1e6,"
        " 'size': {'dist': 'exponential', 'mean': 1e-5}, 'mix': [{'share': 1}]}]}\n"
        "print('started', flush=True)\n"
        "t = time.monotonic()\n"
        "try:\n"
        "    hetsched.simulate(big, 'fcfs')\n"
        "    print('finished', flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print(f'interrupted after {time.monotonic() - t:.2f} s', flush=True)\n"
        "    sys.exit(3)\n"
    )
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    time.sleep(1.0)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=30)
    stopped_in = time.monotonic() - sent
    assert child.returncode == 3, out
    assert out.startswith("interrupted after"), out
    assert stopped_in < 2.0, stopped_in

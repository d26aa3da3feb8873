import threading

import pytest

import hetsched
from conftest import SCENARIOS
from hetsched.examples import Fcfs, WorkStealing

EXAMPLES = ["hand.toml", "fast-slow-mixed.toml", "beisel-gpu.toml"]


@pytest.mark.parametrize("scenario", EXAMPLES)
@pytest.mark.parametrize("twin, spec", [(Fcfs, "fcfs"), (WorkStealing, "ws")])
def test_python_twin_makes_the_rust_policys_decisions(scenario, twin, spec):
    path = SCENARIOS / scenario
    rust = hetsched.simulate(path, spec, decisions=True)
    python = hetsched.simulate(path, twin(), decisions=True)
    assert len(rust.decisions) > 0
    assert python.decisions == rust.decisions
    assert python.metrics | {"policy": spec} == rust.metrics
    assert python.policy == twin.name


class Raises(Fcfs):
    def pick(self, view, unit):
        raise KeyError("boom")


class BadAnswer(Fcfs):
    def submit(self, view, task):
        return 2.5


class KeepsView(Fcfs):
    kept = None

    def submit(self, view, task):
        KeepsView.kept = view
        return "central"


class NoUnit(Fcfs):
    def submit(self, view, task):
        return 99


def test_an_exception_in_a_python_policy_stops_the_run_and_is_raised():
    with pytest.raises(KeyError, match="boom"):
        hetsched.simulate(SCENARIOS / "hand.toml", Raises())


def test_an_answer_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match=r'submit: expected a unit id, "central"'):
        hetsched.simulate(SCENARIOS / "hand.toml", BadAnswer())


def test_an_answer_that_breaks_the_contract_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="99"):
        hetsched.simulate(SCENARIOS / "hand.toml", NoUnit())


def test_a_kept_view_is_invalid_after_the_call():
    hetsched.simulate(SCENARIOS / "hand.toml", KeepsView())
    with pytest.raises(RuntimeError, match="valid only during"):
        KeepsView.kept.central()


class ViewFromAThread(Fcfs):
    """Hands the view to another thread during the call, which reads it."""

    raised = None

    def submit(self, view, task):
        def read():
            try:
                view.unit_count
            except BaseException as e:  # noqa: B036 - what escapes is the point
                ViewFromAThread.raised = e

        t = threading.Thread(target=read)
        t.start()
        t.join()
        return "central"


def test_a_view_used_from_another_thread_raises_a_runtime_error():
    hetsched.simulate(SCENARIOS / "hand.toml", ViewFromAThread())
    e = ViewFromAThread.raised
    assert type(e) is RuntimeError, repr(e)
    assert "only on the thread of the policy call" in str(e)


class Slicing(hetsched.Policy):
    """Round robin with 100 ms slices (a yield at each slice end), a tick that reads the view."""

    tick_interval_ns = 250_000_000
    ticks = 0

    def submit(self, view, task):
        assert view.task(task)["affinity"]["cpu"] > 0
        return "central"

    def pick(self, view, unit):
        q = view.queue(unit) + view.central()  # a yielded task waits on its unit
        return q[0] if q else None

    def time_slice(self, view, unit, task):
        return 100_000_000

    def checkpoint(self, view, task, unit):
        return "yield"

    def tick(self, view, samples):
        Slicing.ticks += 1
        assert len(samples) == 0  # wants_samples is False
        assert view.unit_count == 2 and view.unit(0)["type"] == "cpu"
        with pytest.raises(IndexError):
            view.queue(7)
        return None


def test_slices_and_ticks_reach_a_python_policy():
    r = hetsched.simulate(SCENARIOS / "hand.toml", Slicing(), events=True)
    assert r.metrics["completed"] == 3
    assert (r.events["event"] == "stop").sum() > 0  # sliced runs
    assert Slicing.ticks >= 3 * 4 - 1  # every 250 ms of a ~3 s run

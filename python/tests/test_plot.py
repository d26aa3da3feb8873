import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

import hetsched
from conftest import SCENARIOS
from hetsched import plot

HAND = SCENARIOS / "hand.toml"


def test_turnaround_cdf_has_one_line_per_run_ending_at_one():
    runs = [hetsched.simulate(HAND, p, tasks=True) for p in ("fcfs", "ws")]
    fig = plot.turnaround_cdf(runs)
    assert isinstance(fig, Figure)
    lines = fig.axes[0].get_lines()
    assert [l.get_label() for l in lines] == ["fcfs", "ws"]
    assert list(lines[0].get_xdata()) == pytest.approx([2.0, 2.0, 2.5])
    assert lines[0].get_ydata()[-1] == pytest.approx(1.0)


def test_gantt_has_a_bar_per_segment_on_its_unit():
    r = hetsched.simulate(HAND, "fcfs", events=True)
    seg = plot.segments(r)
    assert list(map(tuple, seg[["unit", "task"]].to_numpy())) == [(0, 0), (1, 1), (0, 2)]
    fig = plot.gantt(r)
    bars = [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]
    assert len(bars) == 2  # one collection per unit
    assert [len(b.get_paths()) for b in bars] == [2, 1]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(r.units["name"])


def test_compare_bars_are_the_metric():
    runs = [hetsched.simulate(HAND, p) for p in ("fcfs", "cfs")]
    fig = plot.compare(runs, "makespan_s")
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == pytest.approx([r.metrics["makespan_s"] for r in runs])
    with pytest.raises(ValueError, match="unknown metric"):
        plot.compare(runs, "speed")


def test_figures_of_what_a_run_did_not_keep_say_how_to_keep_it():
    r = hetsched.simulate(HAND, "fcfs")
    with pytest.raises(hetsched.NotRecordedError, match="tasks=True"):
        plot.turnaround_cdf([r])
    with pytest.raises(hetsched.NotRecordedError, match="events=True"):
        plot.gantt(r)

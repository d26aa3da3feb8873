import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading

import pytest

import hetsched
from conftest import ROOT, hetsched_binary


def test_alloc_rerequest_free_and_control_against_a_real_daemon(daemon):
    with hetsched.Client(daemon, "py") as c:
        units = c.units()
        assert [u["type"] for u in units] == ["cpu", "cpu"]
        unit = c.alloc("md5", {"cpu": 1.0})
        assert unit["type"] == "cpu" and unit["id"] in (0, 1)
        assert c.rerequest() == "keep"
        stats = c.stats()
        assert stats["reply"] == "stats" and stats["grants"] >= 1
        assert any(t["kind"] == "md5" and t["state"] == "running" for t in stats["tasks"])
        c.free()
        c.alter_unit(1, capacity=512, name="slow")
        assert [(u["capacity"], u["name"]) for u in c.units()][1] == (512, "slow")
        c.add_unit("cpu", "extra", cpus=[0])
        assert len(c.units()) == 3
        c.remove_unit(2)
        assert [u["name"] for u in c.units()] == ["cpu0", "slow"]


def test_alloc_blocks_without_the_gil_until_a_unit_is_free(daemon):
    holders = [hetsched.Client(daemon, f"h{i}") for i in range(2)]
    for h in holders:
        h.alloc()
    waiter = hetsched.Client(daemon, "waiter")
    granted = []
    t = threading.Thread(target=lambda: granted.append(waiter.alloc()))
    t.start()
    t.join(timeout=0.5)  # not a timing assertion: the daemon cannot grant yet
    assert t.is_alive() and not granted
    holders[0].free()
    t.join(timeout=60)
    assert not t.is_alive() and granted[0]["type"] == "cpu"


def test_daemon_errors_are_python_errors(daemon, tmp_path):
    c = hetsched.Client(daemon)
    with pytest.raises(ValueError, match="unknown field `fpga`"):
        c.alloc(affinity={"fpga": 1})
    with pytest.raises(ValueError, match="no online unit 99"):
        c.remove_unit(99)
    with pytest.raises(RuntimeError, match="OutOfOrder: free without a task"):
        c.free()
    with pytest.raises(ValueError, match="no hetsched daemon"):
        hetsched.Client(tmp_path / "none.sock")


def where_the_cli_looks(env):
    """The socket `hetsched client units` tries under `env`, from the error it prints
    when no daemon is there; None when one answered (a daemon the user runs)."""
    cli = subprocess.run(
        [hetsched_binary(), "client", "units"], capture_output=True, text=True, env=env
    )
    if cli.returncode == 0:
        return None
    m = re.search(r"start one with `hetsched daemon --socket (.+)`$", cli.stderr.strip())
    assert cli.returncode == 2 and m, cli.stderr
    return m.group(1)


@pytest.mark.parametrize("case", ["HETSCHED_SOCKET", "XDG_RUNTIME_DIR", "neither"])
def test_client_defaults_to_the_socket_the_commands_use(case, monkeypatch, tmp_path):
    """hetsched.Client() looks where the CLI does, under each of the environments that
    choose the default (the path is never written here: the CLI says it)."""
    monkeypatch.delenv("HETSCHED_SOCKET", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    if case == "HETSCHED_SOCKET":
        monkeypatch.setenv("HETSCHED_SOCKET", str(tmp_path / "named.sock"))
    elif case == "XDG_RUNTIME_DIR":
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    cli = where_the_cli_looks(dict(os.environ))
    if cli is None:  # a daemon is running at this user's default: both reach it
        hetsched.Client().close()
        return
    assert hetsched.live.default_socket() == cli
    with pytest.raises(ValueError, match=re.escape(f"no hetsched daemon at {cli} ")):
        hetsched.Client()


def test_client_with_no_argument_reaches_the_default_daemon(daemon, monkeypatch):
    monkeypatch.setenv("HETSCHED_SOCKET", str(daemon))
    with hetsched.Client() as c:
        assert len(c.units()) == 2


def test_docs_python_md_live_example_runs(daemon, monkeypatch):
    """docs/python.md's live client example, as written, against a daemon at the
    default socket."""
    text = (ROOT / "docs" / "python.md").read_text()
    live = text[text.index("## Live client"):]
    block = re.search(r"```py\n(.*?)```", live, re.S).group(1)
    monkeypatch.setenv("HETSCHED_SOCKET", str(daemon))
    steps = []
    scope = {
        "work_left": lambda: len(steps) < 3,
        "step": lambda unit: steps.append(unit["id"]),
    }
    exec(compile(block, "docs/python.md", "exec"), scope)
    assert len(steps) == 3
    with hetsched.Client() as c:
        assert c.stats()["grants"] >= 1


SQUATTER = """
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
print("listening", flush=True)
time.sleep(120)
"""


# The squatter runs as `nobody`, who may not reach an interpreter under root's home.
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to listen as another uid")
@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason=f"no {SYSTEM_PYTHON}")
def test_a_socket_squatted_by_another_user_is_refused():
    """Another user listening where a client looks for its daemon: refused before a
    byte is sent (a ValueError naming the uid)."""
    # Not pytest's tmp_path: its parent is root's alone, and `nobody` must reach it.
    top = pathlib.Path(tempfile.mkdtemp())
    top.chmod(0o755)
    sock_dir = top / "hetsched-0"
    sock_dir.mkdir()
    os.chown(sock_dir, 65534, 65534)
    socket = sock_dir / "daemon.sock"
    squatter = subprocess.Popen(
        [SYSTEM_PYTHON, "-c", SQUATTER, str(socket)],
        user=65534,
        group=65534,
        stdout=subprocess.PIPE,
    )
    try:
        assert squatter.stdout.readline() == b"listening\n"
        with pytest.raises(ValueError, match="runs as uid 65534, neither root nor you"):
            hetsched.Client(socket)
    finally:
        squatter.kill()
        squatter.wait()
        shutil.rmtree(top)

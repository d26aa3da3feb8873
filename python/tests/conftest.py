"""Shared fixtures: the repository's paths and a real daemon (the `hetsched` binary that
cargo built, on a Unix socket in a temporary directory)."""

import os
import pathlib
import subprocess
import time

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def hetsched_binary() -> pathlib.Path:
    """$HETSCHED_BIN, else cargo's debug build in $CARGO_TARGET_DIR or ./target."""
    if "HETSCHED_BIN" in os.environ:
        return pathlib.Path(os.environ["HETSCHED_BIN"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "hetsched"


@pytest.fixture
def daemon(tmp_path):
    """A daemon over a 2-CPU machine file running fcfs; yields its socket path."""
    import hetsched

    binary = hetsched_binary()
    if not binary.exists():
        pytest.fail(f"{binary} not found: build it with `cargo build --bin hetsched`")
    machine = tmp_path / "m.toml"
    machine.write_text('name = "py-test"\n[[package]]\ncores = 2\n')
    socket = tmp_path / "run" / "daemon.sock"
    proc = subprocess.Popen(
        [binary, "daemon", "--socket", socket, "--machine", machine, "--policy", "fcfs"],
        stderr=subprocess.PIPE,
        env={**os.environ, "HETSCHED_HOME": str(tmp_path)},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            hetsched.Client(socket, "probe").close()
            break
        except ValueError:  # no daemon there yet
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"daemon did not start: {proc.stderr.read().decode()}")
            time.sleep(0.02)
    yield socket
    proc.terminate()
    proc.wait(timeout=60)

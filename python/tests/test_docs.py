"""The worked example of docs/python.md runs as written (from the repository root)."""

import os
import re

from conftest import ROOT


def test_docs_python_md_examples_run():
    text = (ROOT / "docs" / "python.md").read_text()
    figures = [ROOT / "hetsched-out" / "python" / f for f in ("cdf.png", "p95.png", "gantt.png")]
    for f in figures:
        f.unlink(missing_ok=True)
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        scope = {"__name__": "__docs__"}
        for block in blocks:
            exec(compile(block, "docs/python.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    assert all(f.stat().st_size > 0 for f in figures)

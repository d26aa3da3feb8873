"""The worked example of docs/python.md runs as written (from the repository root)."""

import os
import re

from conftest import ROOT


def test_docs_python_md_examples_run(tmp_path):
    text = (ROOT / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        scope = {"__name__": "__docs__", "OUT": str(tmp_path)}
        for block in blocks:
            exec(compile(block, "docs/python.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    assert (tmp_path / "cdf.png").stat().st_size > 0

"""The GitHub workflows stay valid: checked by actionlint (installed by the dev extra)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def _actionlint() -> str | None:
    beside = Path(sys.executable).with_name("actionlint")
    return str(beside) if beside.exists() else shutil.which("actionlint")


def test_workflows_exist() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "release.yml", "rules-pr.yml"}


def test_workflows_pass_actionlint() -> None:
    tool = _actionlint()
    if tool is None:
        pytest.skip("actionlint is not installed (pip install -e '.[dev]' provides it)")
    done = subprocess.run([tool, *map(str, WORKFLOWS)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr

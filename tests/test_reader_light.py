"""The reader stays light: no builder-only library is imported to answer a query."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ["marko", "pygit2", "model2vec", "torch", "yaml", "transformers"]
NETWORK = ["http.client", "ssl", "urllib.request", "email.parser"]
"""~40 ms of every process: imported only to download a pinned release or to ask a configured local model."""

PROBE = """
import json, sys
from ruledex.reader.cli import main
import ruledex.reader.pin  # what a query without --index reads the project's pin with
code = main(["query", "Add user registration API endpoint", "--index", sys.argv[1], "--json"])
sys.stdout.flush()
print(json.dumps({"code": code, "heavy": [m for m in %r if m in sys.modules], "mcp": "mcp" in sys.modules}), file=sys.stderr)
"""


def test_query_imports_no_builder_dependency_and_no_mcp(bundled_index: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE % [*HEAVY, *NETWORK], str(bundled_index)],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("RULEDEX_LLM")},  # no local model configured
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": [], "mcp": False}
    assert "security#input-validation-1" in done.stdout


def test_cli_help_imports_nothing_heavy() -> None:
    probe = (
        "import sys\nfrom ruledex.reader.cli import build_parser\nbuild_parser()\nprint([m for m in %r if m in sys.modules])"
        % ([*HEAVY, "mcp", "numpy", "importlib.metadata"])
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", "importlib.metadata costs ~30 ms a process: read the version only for --version"


def test_version_is_read_when_asked() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from ruledex.reader.cli import main; main(['--version'])"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.startswith("ruledex ") and done.stdout.split()[1][0].isdigit()

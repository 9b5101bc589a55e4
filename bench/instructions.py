"""``python -m bench.instructions INDEX...``: CPU instructions per warm query, counted by valgrind.

On a shared virtual machine two timings of the same code differ by more than a 5% change, and
hardware counters (``perf stat``) are not available. Valgrind's callgrind counts the instructions a
process executes, the same from run to run: this runs the bench tasks under it twice, after one
warm-up pass, once with no further rounds and once with ``--rounds``, and reports the difference
per query, so imports, index opening and the warm-up cancel out. About 20 s per index and count.
Needs ``valgrind`` on the PATH; Python's hash seed is fixed so both runs take the same paths.

Example: python -m bench.instructions /tmp/bundled.ruledex /tmp/synth-1k.ruledex
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .tasks import TASKS

RUN = """
import sys
from pathlib import Path
from bench.tasks import TASKS
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
index = Index(Path(sys.argv[1]))
for _ in range(1 + int(sys.argv[2])):  # one warm-up pass, then the counted rounds
    for task in TASKS:
        query_directives(index, task)
"""


def instructions(index: Path, rounds: int) -> int:
    """Instructions callgrind counts for a whole process answering the tasks ``1 + rounds`` times."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "-q"]
        subprocess.run([*command, sys.executable, "-c", RUN, str(index), str(rounds)], env=env, check=True)
        found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise SystemExit(f"{out}: no instruction total in callgrind's output")
        return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    """Print thousands of instructions per query for each index."""
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.split("\n\n")[0])
    parser.add_argument("indexes", nargs="+", type=Path, help="index files to query")
    parser.add_argument("--rounds", type=int, default=2, help="counted rounds over the bench tasks (default 2)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("bench.instructions: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    for index in args.indexes:
        per_query = (instructions(index, args.rounds) - instructions(index, 0)) / (args.rounds * len(TASKS))
        print(f"{index}: {per_query / 1000:,.0f}k instructions per query ({args.rounds} x {len(TASKS)} queries)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

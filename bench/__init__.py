"""ruledex's benchmark (issue #7): ``python -m bench`` prints a table and writes a JSON file of results.

Modules: :mod:`bench.synth` (seeded synthetic rule repositories), :mod:`bench.tasks` (the fixed
task set), :mod:`bench.buildbench`, :mod:`bench.querybench`, :mod:`bench.mcpbench` (what is
measured), :mod:`bench.baselines` (SQLite FTS5, a Memory-MCP-style scan, bm25s),
:mod:`bench.measure` (statistics and /proc memory) and :mod:`bench.report` (targets and tables).
See bench/README.md for how to run it and the latest results.
"""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see ``python -m bench --help``)."""
    from .__main__ import main as run

    return run(argv)

"""ruledex reader: open an index file and answer "which rules matter for this task?".

Light dependencies only (numpy, msgpack, tokenizers; mcp for the server). Never imports the
builder's. Names load on first use, so ``ruledex --help`` and the CLI start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ArtifactError": "errors",
    "ConfigError": "errors",
    "RuleError": "errors",
    "RuledexError": "errors",
    "Index": "index",
    "QueryOptions": "options",
    "query_directives": "query",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the public names lazily (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ruledex.reader' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)

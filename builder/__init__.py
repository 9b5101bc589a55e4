"""ruledex builder: compile rule documents into an index file (needs the ``[build]`` extra)."""

__all__ = ["build"]


def __getattr__(name: str) -> object:
    """Load the build pipeline on first use, so ``ruledex.builder.commands`` stays light."""
    if name == "build":
        from .build import build

        return build
    raise AttributeError(name)

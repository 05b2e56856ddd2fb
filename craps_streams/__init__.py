"""craps-streams: event-sourced settlement of craps side wagers (58 Pa. Code ch. 623a, 623c)."""

# The one place the version is written: the package's metadata takes it from here (pyproject.toml,
# `dynamic`), and the report's provenance and `--version` read it without importlib.metadata (its
# import, email's parser with it, is 0.015 s of CPU a command).
__version__ = "0.1.0"

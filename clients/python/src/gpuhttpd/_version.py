"""The package's version, read from its VERSION file: a link to the
repository's VERSION, the one version source (CMake reads it too); built
packages carry a copy."""

from pathlib import Path

__version__ = (Path(__file__).parent / "VERSION").read_text(encoding="utf-8").strip()

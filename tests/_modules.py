"""A user module written to a file and imported: code whose frames are in
another file than the test's, for the tests of which user line an error or
warning names."""

import importlib.util
import types
from pathlib import Path


def module_from_source(path: Path, source: str) -> types.ModuleType:
    """The module ``path`` (written with ``source``), imported under its stem."""
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

"""Doctests of docs/*.md: a page whose examples need an optional package is
skipped, with the reason, where that package is missing."""

import importlib

import pytest

#: Page -> (the optional package its examples use, the extra that installs it).
NEEDS = {"mixed_precision.md": ("ml_dtypes", "bfloat16")}


def _missing(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return True
    return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        need = NEEDS.get(item.path.name) if item.path.parent.name == "docs" else None
        if need is not None and _missing(need[0]):
            item.add_marker(pytest.mark.skip(
                reason=f"docs/{item.path.name} needs the optional package {need[0]} "
                       f"(pip install 'functrans[{need[1]}]')"))

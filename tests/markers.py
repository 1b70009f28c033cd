"""Parameter lists whose costly values run only in the full suite (marked ``slow``).

The quick subset (``pytest -m "not slow"``) must stay short from a cold kernel cache, and
most of a cold run is Numba compiling; so a test parametrized over executors keeps the cheap
ones (and a representative compiled one where it names it) in the quick subset, and the other
values run in the full suite and CI (``.ci/run``), where nothing is left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

#: The executors that compile with Numba (seconds per kernel from a cold cache).
COMPILED = frozenset({"numba", "jit"})


def quick_only(values: Iterable[Any], quick: Iterable[Any]) -> list[Any]:
    """``values`` as parameters, those not in ``quick`` marked ``slow`` (a tuple is the values
    of several argument names)."""
    keep = list(quick)
    return [
        value
        if value in keep
        else pytest.param(
            *(value if isinstance(value, tuple) else (value,)), marks=pytest.mark.slow
        )
        for value in values
    ]


def cheap_paths(paths: Iterable[str], also: Iterable[str] = ()) -> list[Any]:
    """Executor names as parameters: the compiling ones (except ``also``) marked ``slow``."""
    paths = list(paths)
    return quick_only(paths, [p for p in paths if p not in COMPILED or p in set(also)])

"""Every live ``kx.function`` of the process (weakly held), for the notebook UI and sidebar."""

from __future__ import annotations

import itertools
import weakref
from typing import Any

_functions: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
_ids = itertools.count(1)


def register(function: Any) -> int:
    """Remember ``function``; returns its stable id for this process."""
    fid = next(_ids)
    _functions[fid] = function
    return fid


def live_functions() -> list[Any]:
    """The Functions still alive, oldest first."""
    return [f for _, f in sorted(_functions.items())]

"""Which line of the user's code made each graph node, recorded once per node at trace time.

Every graph a trace builds asks :func:`user_line` for the :attr:`~kernel_ext.ir.Node.source`
of each node it makes (:func:`record_lines` installs it on the graph). The answer is the
innermost frame outside kernel_ext, NumPy and the standard library: the user's function (or,
where AutoGraph converted it, the converted code, which is compiled under the original file
name with the original line numbers, so the line is the user's own). Notebook cells keep
IPython's file name here; the views name them ``cell [5], line 7`` when they show the line.

Cost: one walk up a few frames per node, with the "is this file ours?" answer cached per file
name, so tracing does not grow noticeably.

A backward pass makes the nodes of a forward node's gradient from inside kernel_ext: while
:func:`attributed_to` is active, new nodes take that forward node's line instead (the gradient
of ``h = np.maximum(...)`` belongs to ``h``'s line, not to ``tape.gradient``'s).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import sysconfig
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, NamedTuple

from ..ir import Graph, Node

__all__ = ["SourceLine", "attributed_to", "record_lines", "user_line"]


class SourceLine(NamedTuple):
    """A line of the user's code: its file (IPython's name for a cell), number and text."""

    file: str
    line: int
    #: The line's text, stripped ("" when the file cannot be read).
    text: str


_OWN_DIR = (
    os.path.normcase(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
)  # kernel_ext/
_NUMPY_DIR = os.sep + "numpy" + os.sep
_STDLIB = tuple(
    {
        os.path.normcase(p) + os.sep
        for p in (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib"))
        if p
    }
)
# file name -> True for files of ours / NumPy / the standard library (never the user's)
_not_user: dict[str, bool] = {}
_state = threading.local()


def _is_not_user(filename: str) -> bool:
    hit = _not_user.get(filename)
    if hit is None:
        name = os.path.normcase(filename)
        hit = (
            name.startswith(_OWN_DIR)
            or _NUMPY_DIR in name
            or ("site-packages" not in name and name.startswith(_STDLIB))
        )
        _not_user[filename] = hit
    return hit


def user_line() -> SourceLine | None:
    """The line of user code running now (the innermost frame that is not kernel_ext's,
    NumPy's or the standard library's), or the forward node's under :func:`attributed_to`;
    None when there is none (a graph built by hand)."""
    forced = getattr(_state, "forced", None)
    if forced:
        return forced[-1]
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not _is_not_user(code.co_filename):
            lineno = frame.f_lineno
            return SourceLine(
                code.co_filename, lineno, linecache.getline(code.co_filename, lineno).strip()
            )
        frame = frame.f_back
    return None


def record_lines(graph: Graph) -> Graph:
    """Make every node ``graph`` creates from now on record its user line; returns it."""
    graph.source_of = user_line
    return graph


@contextlib.contextmanager
def attributed_to(node: Node) -> Iterator[None]:
    """Nodes made inside the block take ``node``'s line (a backward rule's nodes: the line
    of the forward op they differentiate). Nodes without a line leave lines as they are."""
    source: Any = node.source
    if source is None:
        yield
        return
    stack = getattr(_state, "forced", None)
    if stack is None:
        stack = _state.forced = []
    stack.append(source)
    try:
        yield
    finally:
        stack.pop()

"""``Source``: the lines of a generated Python function, written at an indentation level.

Every code generator writes statements into a list of lines at some depth: a loop body one
level in, a branch two. Passing the list and an indentation string side by side to every
emitter (``lines.append(f"{indent}x = ...")``) makes each call site responsible for the
prefix and for adding four spaces at the right moments. A :class:`Source` carries both: the
shared list of lines and its own depth. ``out.line(text)`` writes one statement at that depth,
``out.block(header)`` writes a compound statement's header and is the :class:`Source` of its
body, and :meth:`Source.nested` is the same lines one level in (what an emitter passes to a
helper that writes inside a block it opened itself). Views of one list stay in step: what
one writes, the others see, in order.

    out = Source()
    with out.block("for i in range(n):") as body:
        body.line("s += x[i]")
    out.line("return s")
    out.text() == "for i in range(n):\\n    s += x[i]\\nreturn s\\n"
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

#: One level of indentation (PEP 8's four spaces: every generator writes this).
STEP = "    "


class Source:
    """Lines of Python at one indentation depth; views made by :meth:`nested` and
    :meth:`block` share the lines."""

    __slots__ = ("indent", "lines")

    def __init__(self, lines: list[str] | None = None, indent: str = "") -> None:
        #: The lines written so far, by this view and every view sharing them.
        self.lines: list[str] = [] if lines is None else lines
        #: The prefix of every line this view writes.
        self.indent = indent

    def line(self, text: str) -> None:
        """Write one line (a statement, or a comment) at this depth."""
        self.lines.append(self.indent + text)

    def extend(self, texts: Iterable[str]) -> None:
        """Write several lines at this depth (each may carry indentation of its own)."""
        self.lines.extend(self.indent + t for t in texts)

    def nested(self, levels: int = 1) -> Source:
        """The same lines, ``levels`` deeper: for a body whose header was written already."""
        return Source(self.lines, self.indent + STEP * levels)

    @contextmanager
    def block(self, header: str) -> Iterator[Source]:
        """Write ``header`` (``"for i in range(n):"``, ``"if bad:"``, ...) and give the view
        its body is written through."""
        self.line(header)
        yield self.nested()

    def __len__(self) -> int:
        return len(self.lines)

    def text(self) -> str:
        """The source, one line per line written, ending in a newline."""
        return "\n".join(self.lines) + "\n"

"""How errors name traced values and the user's code: ``describe_tensor``, the leaked-value
error, and the user's frame on the stack (where a traced value was used, and whether AutoGraph
converted that code).

Below :mod:`.tensor` (it needs only a value's ``node`` and ``context``), so that the members of
:class:`~kernel_ext.trace.tensor.Tensor` kept in their own modules can name it too.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .. import errors
from .state import UNCONVERTED, format_location

if TYPE_CHECKING:
    from types import FrameType

    from .tensor import Tensor


def describe_tensor(tensor: Tensor) -> str:
    """``%name (float32[2, None])``: how error messages name a traced value."""
    node = tensor.node
    return f"%{node.name} ({node.aval})"


def leaked_error(tensor: Tensor) -> errors.LeakedTensorError:
    """The error for ``tensor`` used outside the trace (or the branch/body) that made it."""
    ctx = tensor.context
    if ctx.parent is not None:
        return errors.LeakedTensorError(
            f"The traced value {describe_tensor(tensor)} was created inside the loop body or "
            f"branch '{ctx.graph.name}' of '{ctx.function_name}' and used outside it (for "
            "example appended to a Python list in a loop over a traced value: the body is "
            "traced only once). Fix: collect per-iteration values in a kx.TensorArray "
            "(ta = ta.write(i, value); ta.stack()), or carry the value as a loop variable."
        )
    return errors.LeakedTensorError(
        f"The traced value {describe_tensor(tensor)} was created while tracing "
        f"'{ctx.function_name}' and has leaked out of that trace (it was stored in a global, an "
        "attribute or a list and used later). Outside its trace it has no value. Fix: return "
        "it from the function (results come back as NumPy arrays), or keep state in a "
        "kx.Variable and assign to it."
    )


def _stdlib_prefix() -> str:
    import sysconfig

    return sysconfig.get_paths()["stdlib"].replace("\\", "/") + "/"


def usage_site() -> tuple[str, bool]:
    """Where the user's code used a traced value, and whether AutoGraph converted that code.

    Code AutoGraph generated reads its runtime operators through the free variable ``ag__``;
    any such frame on the stack means the trace runs with AutoGraph on (the trace layer asks
    the frames rather than importing the autograph layer above it).
    """
    converted = False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if "ag__" in frame.f_code.co_freevars:
            converted = True
            break
        frame = frame.f_back
    return user_frame_description(), converted


def refused_conversion() -> tuple[str, str] | None:
    """The innermost function on the stack that AutoGraph declined to convert (its name and
    the reason), stopping at the first converted frame (code inside it was converted)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if "ag__" in code.co_freevars:
            return None
        reason = UNCONVERTED.get(code)
        if reason is not None:
            return code.co_qualname, reason
        frame = frame.f_back
    return None


def user_frame_description(line: int | None = None, skip_stdlib: bool = False) -> str:
    """``file:line: source`` of the innermost frame outside kernel_ext and NumPy (``line``:
    that line of the frame's file instead of the one running, e.g. a loop statement's;
    ``skip_stdlib``: outside the standard library too, for a use inside ``collections``)."""
    import linecache

    stdlib = _stdlib_prefix() if skip_stdlib else None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        fname = frame.f_code.co_filename.replace("\\", "/")
        if (
            "/kernel_ext/" not in fname
            and "/numpy/" not in fname
            and not (stdlib and fname.startswith(stdlib) and "site-packages" not in fname)
        ):
            lineno = frame.f_lineno if line is None else line
            text = linecache.getline(fname, lineno).strip()
            where = format_location(f"{fname}:{lineno}")
            return where + (f": `{text}`" if text else "")
        frame = frame.f_back
    return "<unknown location>"

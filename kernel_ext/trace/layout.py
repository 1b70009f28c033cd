"""Memory layout, which a trace cannot see: whether ``x.shape = ...`` reshapes a traced array
in place, and whether an update through a reshape of a view may go ahead.

A reshape is a view only of an array whose memory layout allows it (NumPy copies otherwise).
The trace takes a reshape of a root as a view and runs the function only on C-contiguous
arguments (``TraceContext.layout_roots``); a reshape of a view depends on the view's strides,
so what needs to know whether it shares memory is refused here instead of guessed (see
:class:`~kernel_ext.trace.tensor.ViewStep`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..ir import DynamicIndex, OpKind
from .describe import describe_tensor, user_frame_description
from .state import current_context

if TYPE_CHECKING:
    from .tensor import Tensor, ViewStep


def check_layout(root: Tensor, steps: tuple[ViewStep, ...], what: str) -> None:
    """An update that depends on a reshape sharing memory: guard or refuse (see ViewStep)."""
    for step in steps:
        if step.op is not OpKind.RESHAPE:
            continue
        if step.layout_dependent:
            raise errors.UnsupportedOpError(
                f"{what} a reshape of a view of {describe_tensor(root)}: NumPy makes such a "
                "reshape a view or a copy depending on the memory layout, which a trace "
                f"cannot see ({user_frame_description()}). Fix: take the reshape of a "
                "contiguous array (x.copy().reshape(...)), or update the array itself."
            )
        root.context.note_layout_root(root)


def in_place_shape(tensor: Tensor, steps: tuple[ViewStep, ...], value: Any) -> tuple:
    """The shape ``tensor.shape = value`` gives (``tensor``: an array, reached from its root
    by the view ``steps``), decided as NumPy decides it: the view's strides are those NumPy
    would have for a C-contiguous root (the trace assumes it, and the function then runs only
    on C-contiguous arguments, ``TraceContext.layout_roots``), and a stand-in array with those
    strides and no data of its own (never read) takes the shape."""
    root = tensor.storage_root
    ctx = current_context()
    fix = "Fix: y = x.reshape(...) makes a new name for the reshaped array."
    if root is tensor and any(t is root for _, t in root.context.top().inputs):
        raise errors.UnsupportedOpError(
            f"x.shape = ... on {describe_tensor(tensor)} at {user_frame_description()} would "
            "change the shape of the caller's array, which a kx.function does not do (the "
            f"caller's arrays keep their shapes). {fix}"
        )
    if ctx is not None and ctx.parent is not None:
        raise errors.UnsupportedOpError(
            f"x.shape = ... on {describe_tensor(tensor)} at {user_frame_description()} inside "
            "a branch or loop on a traced value: the array's shape would depend on the data. "
            f"{fix}"
        )
    shape = root.shape
    if shape is None or any(d is None for d in shape):
        if root is tensor:  # a root is contiguous: any shape of its size is a view
            return tuple(np.reshape(tensor, value).shape)
        raise errors.UnsupportedOpError(
            f"x.shape = ... on a view of {describe_tensor(root)} at {user_frame_description()}"
            ": whether NumPy can reshape it in place depends on its sizes, which are only "
            f"known at run time. {fix}"
        )
    itemsize = root.dtype.itemsize
    strides = tuple(
        int(np.prod(shape[k + 1 :], dtype=np.int64)) * itemsize for k in range(len(shape))
    )
    stand_in = np.lib.stride_tricks.as_strided(
        np.empty(1, root.dtype), shape=shape, strides=strides, writeable=False
    )
    for step in steps:
        stand_in = _stand_in_step(step, stand_in, root, fix)
    stand_in.shape = value  # NumPy's own check (ValueError, or AttributeError: a copy needed)
    return tuple(stand_in.shape)


def _stand_in_step(step: ViewStep, array: np.ndarray, root: Tensor, fix: str) -> np.ndarray:
    """``array`` (a data-less stand-in, see :func:`in_place_shape`) taken through ``step``."""
    if step.layout_dependent:
        raise errors.UnsupportedOpError(
            f"x.shape = ... on a reshape of a view of {describe_tensor(root)} at "
            f"{user_frame_description()}: NumPy makes such a reshape a view or a copy depending "
            f"on the memory layout. {fix}"
        )
    params = step.params
    if step.op is OpKind.GETITEM:
        template = params.index
        if any(
            isinstance(c, slice)
            and any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step))
            for c in template
        ):
            raise errors.UnsupportedOpError(
                f"x.shape = ... on a slice with traced bounds of {describe_tensor(root)} at "
                f"{user_frame_description()}: its strides depend on run-time data. {fix}"
            )
        return array[tuple(0 if isinstance(c, DynamicIndex) else c for c in template)]
    if step.op is OpKind.RESHAPE:
        return array.reshape(params.shape)  # (of the C-contiguous root: a view)
    if step.op is OpKind.TRANSPOSE:
        return np.transpose(array, params.axes)
    if step.op is OpKind.EXPAND_DIMS:
        return np.expand_dims(array, params.axis)
    if step.op is OpKind.SQUEEZE:
        return np.squeeze(array, params.axis)
    return np.broadcast_to(array, params.shape)

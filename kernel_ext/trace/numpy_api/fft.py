"""``np.fft``: one ``fft`` op per call, the transform named in its attrs; the shifts are rolls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import OpKind
from ..context import bind
from ..opaque import numpy_call
from ..signatures import numpy_signature
from ..zero_d import mark_array
from .common import (
    Opaque,
    array_arg,
    bound_arguments,
    composition,
    declare,
    implements,
    is_traced,
    static_attr,
    static_shape,
)
from .shape import roll


def _fft_handler(name: str) -> Callable:
    func = getattr(np.fft, name)

    # (out= is NumPy's: it normalizes inside the buffer it writes, other bits than a new
    # array; the call then runs as NumPy's own, writing into out)
    @declare.numpy_writes_out
    @declare.parameters(*numpy_signature(func).parameters.keys() - {"out"})
    def handler(*args: Any, **kwargs: Any) -> Any:
        p = bound_arguments(func, args, kwargs)
        p.pop("out", None)
        a = p.pop("a")
        if is_traced(p):
            return numpy_call(func, args, kwargs)
        # fft2 and friends with an explicit ``axes=None`` transform every axis (NumPy's
        # ``_raw_fftnd``), not their default (-2, -1): they are then the n-d transform
        attrs = {
            "transform": name[:-1] + "n"
            if name.endswith("2") and "axes" in p and p["axes"] is None
            else name
        }
        attrs.update(
            (k, static_attr(v)) for k, v in p.items() if v is not None and v is not np._NoValue
        )
        return mark_array(bind(OpKind.FFT, (a,), attrs))  # (a transform builds an array)

    handler.__name__ = f"_fft_{name}"
    return handler


for _name in (
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
):
    implements(getattr(np.fft, _name))(_fft_handler(_name))


@composition(np.fft.fftshift)
def _fftshift(x: Any, axes: Any = None) -> Any:
    x = array_arg(x)
    shape = static_shape(x)
    if not shape:
        raise Opaque  # (NumPy's own error for a 0-d input)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift: Any = [d // 2 for d in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = shape[axes] // 2
    else:
        shift = [shape[ax] // 2 for ax in axes]
    return roll(x, shift, axes)


@composition(np.fft.ifftshift)
def _ifftshift(x: Any, axes: Any = None) -> Any:
    x = array_arg(x)
    shape = static_shape(x)
    if not shape:
        raise Opaque  # (NumPy's own error for a 0-d input)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift: Any = [-(d // 2) for d in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = -(shape[axes] // 2)
    else:
        shift = [-(shape[ax] // 2) for ax in axes]
    return roll(x, shift, axes)

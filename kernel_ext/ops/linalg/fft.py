"""FFT: the one ``fft`` op (the ``np.fft`` transform named in its attrs), every layer's rules.

Its NumPy entry points (every ``np.fft`` transform records it), abstract evaluation and
reference lowering (see :mod:`kernel_ext.ops`); the shifts are compositions (rolls) in
:mod:`kernel_ext.trace.numpy_api.fft`. It has no VJP
(``autodiff.backward.NO_GRADIENT_REASONS``: complex results), no whole-graph form (NumPy's
pocketfft has no exact form to call) and no ONNX form (``onnx/rules/refusals.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue
from ...ir.abstract.core import known_rank, normalize_axis
from ...ir.interpreter import LOWER
from ...ir.params import FftParams
from ...trace.context import bind
from ...trace.numpy_api.common import (
    bound_arguments,
    declare,
    implements,
    is_traced,
    static_attr,
)
from ...trace.opaque import numpy_call
from ...trace.signatures import numpy_signature
from ...trace.zero_d import mark_array

K = OpKind


# --- fft ---


def _fft_handler(name: str) -> Callable[..., Any]:
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


#: np.fft transforms that take one axis (``n``, ``axis``) and their result length along it
#: given the length ``n`` asked for (or ``None``: from the input's length ``m``)
_FFT_1D: dict[str, Callable[[int | None, int | None], int | None]] = {
    "fft": lambda n, m: n or m,
    "ifft": lambda n, m: n or m,
    "rfft": lambda n, m: _half(n or m),
    "ihfft": lambda n, m: _half(n or m),
    "irfft": lambda n, m: n or _twice(m),
    "hfft": lambda n, m: n or _twice(m),
}


def _half(n: int | None) -> int | None:
    return None if n is None else n // 2 + 1


def _twice(m: int | None) -> int | None:
    return None if m is None else 2 * (m - 1)


@ABSTRACT_EVAL.register(K.FFT)
def _fft_aval(params: FftParams, x: AbstractValue) -> AbstractValue:
    """Shapes by ``np.fft``'s rules (``_cook_nd_args``): each transformed axis takes its
    ``n``/``s`` entry or keeps its length; rfft halves the last axis (``n // 2 + 1``), irfft
    and hfft double it back (``2 * (m - 1)``) unless ``n``/``s`` says. Dtype and NumPy's
    errors (bad axes, ``n < 1``, a bad ``norm``) from the transform of a small stand-in."""
    transform = params.transform
    # the keywords given (n, s, axis, axes, norm): an absent one is NumPy's default
    kw = params.kwargs("transform")
    shape = list(known_rank(x, f"fft.{transform}"))
    probe = getattr(np.fft, transform)(np.ones((2,) * len(shape), x.dtype), **kw)
    if transform in _FFT_1D:
        axis = normalize_axis(kw.get("axis", -1), len(shape))
        shape[axis] = _FFT_1D[transform](kw.get("n"), shape[axis])
        return AbstractValue(tuple(shape), probe.dtype)
    s, axes = kw.get("s"), kw.get("axes")
    if axes is None:
        axes = (
            (-2, -1)
            if transform.endswith("2")
            else range(-len(s), 0)
            if s is not None
            else range(len(shape))
        )
    axes = [normalize_axis(a, len(shape)) for a in axes]
    sizes = list(s) if s is not None else [shape[a] for a in axes]
    real = transform.startswith(("rfft", "irfft"))
    if real and s is None and transform.startswith("irfft"):
        sizes[-1] = _twice(shape[axes[-1]])
    for a, n in zip(axes, sizes):
        shape[a] = n
    if real and transform.startswith("rfft"):
        shape[axes[-1]] = _half(sizes[-1])
    return AbstractValue(tuple(shape), probe.dtype)


@LOWER.register(K.FFT)
def _lower_fft(node: Node) -> Callable[..., Any]:
    params = cast("FftParams", node.params)
    transform = getattr(np.fft, params.transform)
    return functools.partial(transform, **params.kwargs("transform"))


NOTES.add(K.FFT, "complex results: gradients are real only (a path through complex values raises)")

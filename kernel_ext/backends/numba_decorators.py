"""What every generated CPU kernel module imports: its decorators and the NumPy-loop call.

Kept in one small, stable module so that generated kernels stay self-contained text (their
cache key covers this module's version through :data:`ABI`), and Numba is imported only here
and in the other ``numba_*`` modules, lazily (``import kernel_ext`` never loads Numba).

Compilation flags, and why:

* ``error_model="numpy"``: float division by zero gives inf/nan as in NumPy instead of
  raising (integer division never reaches Numba's check: the generated helpers guard it);
* ``nogil=True``: a kernel releases the GIL, so the parallel runner's threads and the user's
  own threads really run at once (we never use Numba's ``parallel=True``: no threading layer
  is ever loaded, so the ``workqueue`` layer cannot abort the process when two Python threads
  call kernels concurrently);
* ``cache=True``: compiled code is stored next to the generated source (or under
  ``NUMBA_CACHE_DIR``), so a new process loads a kernel instead of compiling it;
* no ``fastmath``: it would let LLVM reassociate and contract float arithmetic, changing
  results. Reductions get their SIMD parallelism from explicit independent lanes instead.

Integer arithmetic wraps as NumPy's does. Numba lowers ``a + b``, ``a - b`` and ``a * b`` on
signed integers with LLVM's ``nsw`` flag ("no signed wrap": overflow is undefined), which
lets the optimiser fold ``(x + 1) > x`` to ``True``, assume ``abs(x - 5) >= 0`` or reorder a
sum on the assumption that nothing overflows; NumPy's integers wrap modulo ``2**bits``. So
generated kernels never use those operators on integers: they call :func:`wrapping_add`,
:func:`wrapping_sub` and :func:`wrapping_mul`, which emit the same instruction without the
flag, in the operands' own width (no widening to ``int64`` either). Vectorisation is
unaffected: LLVM vectorises a plain ``add`` as it does an ``add nsw``.

Importing this module also stops Numba's error messages from replacing ``sys.stdout``. With
colorama installed, every error message Numba builds enters ``numba.core.errors.ColorShell``,
whose ``colorama.init()`` swaps ``sys.stdout``/``sys.stderr`` for wrappers and whose
``deinit()`` puts back the streams it saw on entry; Numba raises and catches such errors
while compiling normally (``ConstantInferenceError`` while it infers constants). Kernels
compile on a background thread (:mod:`.compiler`) while Jupyter swaps ``sys.stdout`` for
each cell and pytest's ``capsys`` for each test: a compile that entered ``ColorShell``
before the swap and left it after put the old stream back, and a cell's ``print`` and
``kx.print`` output went to the cell before (in tests: ``capsys`` read nothing). So
``ColorShell`` becomes :class:`StreamsLeftAlone` (the messages keep their markup).
"""

from __future__ import annotations

from typing import Any

import numba
import numba.core.errors
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


class StreamsLeftAlone:
    """Numba's ``ColorShell`` without colorama's ``init()``/``deinit()``: a context that
    leaves ``sys.stdout`` and ``sys.stderr`` as they are (see the module docstring)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


if hasattr(numba.core.errors, "ColorShell"):  # (absent when colorama is not installed)
    numba.core.errors.ColorShell = StreamsLeftAlone

#: Bump when the code below changes meaning: it is part of every kernel's cache key.
ABI = "3"

kernel = numba.njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
inline = numba.njit(inline="always", error_model="numpy", nogil=True)


@intrinsic
def call_loop(typingctx, fptr, args, dims, steps, data):
    """Call a NumPy ufunc inner loop ``void loop(char **args, npy_intp const *dimensions,
    npy_intp const *steps, void *data)`` given as an address (see :mod:`.ufunc_loops`).

    All five arguments are ``uintp`` addresses; passing addresses as arguments (rather than
    baking them into the code) keeps compiled kernels valid in every process, so they can be
    cached on disk.
    """
    sig = types.void(types.uintp, types.uintp, types.uintp, types.uintp, types.uintp)

    def codegen(context, builder, signature, values):
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, ptr])
        fn = builder.inttoptr(values[0], fnty.as_pointer())
        builder.call(fn, [builder.inttoptr(v, ptr) for v in values[1:]])
        return context.get_dummy_value()

    return sig, codegen


def wrapping_intrinsic(name: str, doc: str, decorator: Any = intrinsic) -> Any:
    """An intrinsic ``f(a, b)`` of two integers of one type: LLVM's ``name`` instruction
    (``add``, ``sub``, ``mul``) without ``nsw``/``nuw``, so it wraps modulo ``2**bits`` as
    NumPy's integers do. ``decorator``: the target's ``intrinsic`` (the CUDA backend passes
    ``numba.cuda.extending.intrinsic``)."""

    def typer(typingctx, a, b):
        a, b = types.unliteral(a), types.unliteral(b)
        if not isinstance(a, types.Integer) or a != b:
            return None  # codegen casts both operands to the loop dtype first
        sig = a(a, b)

        def codegen(context, builder, signature, values):
            return getattr(builder, name)(values[0], values[1])

        return sig, codegen

    typer.__name__ = typer.__qualname__ = f"wrapping_{name}"
    typer.__doc__ = doc
    return decorator(typer)


WRAPPING_DOCS = {
    "add": "``a + b`` modulo ``2**bits`` (two integers of one type).",
    "sub": "``a - b`` modulo ``2**bits`` (two integers of one type).",
    "mul": "``a * b`` modulo ``2**bits`` (two integers of one type).",
}
wrapping_add = wrapping_intrinsic("add", WRAPPING_DOCS["add"])
wrapping_sub = wrapping_intrinsic("sub", WRAPPING_DOCS["sub"])
wrapping_mul = wrapping_intrinsic("mul", WRAPPING_DOCS["mul"])


def _float_layout(t: Any) -> tuple[Any, Any, int, int] | None:
    """``(float LLVM type, integer LLVM type, mantissa bits, exponent bias)`` of a Numba
    float type, or None."""
    if t == types.float32:
        return ir.FloatType(), ir.IntType(32), 23, 127
    if t == types.float64:
        return ir.DoubleType(), ir.IntType(64), 52, 1023
    return None


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``fma``: one ``vfmadd`` per vector), for three
    floats of one type. Kernels are compiled without ``fastmath``, so LLVM never contracts
    ``a * b + c`` by itself; the fast-math polynomials ask for it explicitly."""
    a, b, c = (types.unliteral(v) for v in (a, b, c))
    if _float_layout(a) is None or not a == b == c:
        return None

    def codegen(context, builder, signature, values):
        return builder.fma(*values)

    return a(a, b, c), codegen


@intrinsic
def pow2(typingctx, n):
    """``2.0 ** n`` for a float ``n`` holding an integer in the normal exponent range (the
    fast-math helpers keep it there), built from its bits: ``(n + bias) << mantissa``. One
    convert, add, shift and bitcast per element, which LLVM vectorises in the float's own
    width (Numba's integer arithmetic would widen a float32 lane's integer to int64)."""
    n = types.unliteral(n)
    layout = _float_layout(n)
    if layout is None:
        return None
    fty, ity, mbits, bias = layout

    def codegen(context, builder, signature, values):
        k = builder.fptosi(values[0], ity)
        k = builder.add(k, ir.Constant(ity, bias))
        return builder.bitcast(builder.shl(k, ir.Constant(ity, mbits)), fty)

    return n(n), codegen


@intrinsic
def frexp_mantissa(typingctx, x):
    """The mantissa of a positive normal float ``x`` scaled into ``[0.5, 1)`` (its exponent
    bits replaced by those of 0.5); see :func:`frexp_exponent`."""
    x = types.unliteral(x)
    layout = _float_layout(x)
    if layout is None:
        return None
    fty, ity, mbits, bias = layout
    keep = ((1 << mbits) - 1) | (1 << (ity.width - 1))
    half = (bias - 1) << mbits

    def codegen(context, builder, signature, values):
        bits = builder.bitcast(values[0], ity)
        bits = builder.or_(builder.and_(bits, ir.Constant(ity, keep)), ir.Constant(ity, half))
        return builder.bitcast(bits, fty)

    return x(x), codegen


@intrinsic
def frexp_exponent(typingctx, x):
    """The exponent ``e`` of a positive normal float ``x = m * 2**e``, ``m`` in ``[0.5, 1)``,
    as a float of ``x``'s type (so the arithmetic on it stays in that width)."""
    x = types.unliteral(x)
    layout = _float_layout(x)
    if layout is None:
        return None
    fty, ity, mbits, bias = layout
    emask = (1 << (ity.width - 1 - mbits)) - 1

    def codegen(context, builder, signature, values):
        bits = builder.bitcast(values[0], ity)
        e = builder.and_(builder.lshr(bits, ir.Constant(ity, mbits)), ir.Constant(ity, emask))
        e = builder.sub(e, ir.Constant(ity, bias - 1))
        return builder.sitofp(e, fty)

    return x(x), codegen


__all__ = [
    "ABI",
    "WRAPPING_DOCS",
    "call_loop",
    "fma",
    "frexp_exponent",
    "frexp_mantissa",
    "inline",
    "kernel",
    "pow2",
    "wrapping_add",
    "wrapping_intrinsic",
    "wrapping_mul",
    "wrapping_sub",
]

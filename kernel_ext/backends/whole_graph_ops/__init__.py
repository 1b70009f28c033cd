"""More of NumPy in the whole-graph compiler (``jit_compile=True``): the table of per-op rules.

:mod:`.whole_graph` compiles a graph into one Numba function; this package holds the table of
how it computes every op that is neither graph structure, control flow, basic indexing nor a
kernel op of a fused segment, keyed by :class:`~kernel_ext.ir.OpKind`, and the toolkit its
rules share. Each
:class:`Rule` says

* ``claims(node)`` — whether this rule handles the node (every node of its op but for
  ``getitem``/``setitem``: an advanced index is a rule's, a basic one the writer's own, whose
  views and in-place writes are the buffers it plans);
* ``check(node)`` — raises :class:`~.codegen.Unsupported` naming what cannot be compiled
  *exactly* (the writer then refuses the whole graph, which runs as fused segments);
* ``emit(writer, node, args, t, out)`` — writes the Numba source computing the node into
  variable ``t`` through ``out`` (an :class:`~.emit.source.Source` at the depth of the code
  around it) and returns what ``t`` is: ``"fresh"`` (a new C-contiguous array
  the function owns), ``"view"`` (a view of the first argument) or ``"scalar"``.

The contract is :mod:`.whole_graph`'s: the result is NumPy's to the bit. Where bits depend
on an order NumPy picks (float sums, BLAS calls, sorting ties), the generated code makes the
very call NumPy makes — its own inner loops, located with :func:`~.ufunc_loops.find_loop`
and called through ``_call_loop`` — or checks at run time that the case is one whose result
is unique, and otherwise *signals* (``raise FloatingPointError(SIGNAL)``): the call is then
rerun by the fused executor, which is NumPy's own result (or error, or warning).

How each op keeps NumPy's bits:

* ``dot``/``matmul`` (1-D, 2-D, batched 3-D; mixed dtypes cast first, as NumPy casts):
  float products call NumPy's ``matmul`` gufunc loop with NumPy's dims and strides (a
  missing dimension has stride 0, as in NumPy), so the same BLAS call runs (``np.dot`` of
  ≤ 2-D float operands is bitwise ``np.matmul`` where ``np.dot`` copies nothing — C- or
  F-contiguous matrices, vectors of positive stride — and the other layouts signal);
  integers wrap in a loop (exact: wrapping arithmetic is associative), bools are
  an OR of ANDs.
* ``stack``/``concatenate``/``pad`` (constant, edge)/``expand_dims``/``flip``: data
  movement (safe casts only), views where NumPy returns views; ``outer``: NumPy's
  ``multiply`` loop once per row.
* ``cumsum``/``cumprod``: NumPy's ``add``/``multiply`` loop in accumulate form, per lane.
* ``var``/``std``/``nanmean``: NumPy's own algorithm (``numpy/_core/_methods.py``), with
  its sums made by NumPy's ``add`` loop called as a reduction calls it (pairwise along the
  last axis, row by row along another); C-contiguous (or 1-D) inputs only, others signal.
* advanced indexing, ``getitem`` (a gather) and ``setitem`` (a scatter) with integer
  arrays (any rank, constant or traced, broadcast) or bool masks (their ``nonzero()``):
  every index checked and wrapped before anything is read or written (out of range, shapes
  that do not broadcast, a mask of the wrong shape: signal); writes in C order of the index
  tuples, so a repeated index keeps the last write, as in NumPy.
* ``nonzero``/``argwhere``, ``squeeze`` (a view), ``ufunc.accumulate`` (NumPy's own loop).
* ``searchsorted``/``digitize``: NumPy's binary search step for step (unsorted input too).
* ``median`` (NumPy's mean of the middle values), ``percentile``/``quantile`` (linear, of
  float64: NumPy's virtual index and ``_lerp``) on sorted lanes; ``unique`` (values, first
  indices, counts); ``interp`` (NumPy's formula, sorted ``xp``); ``histogram`` (equal bins,
  a static range: NumPy's fast path); ``convolve``/``correlate`` (NumPy's
  ``_pyarray_correlate``: ``small_correlate`` or its BLAS ``dot`` through the matmul loop).
  Where NumPy's partition or sort picks among equal values of different bits, or NaNs, the
  call signals.
* ``sort``/``argsort``: a stable merge sort with NumPy's order (NaNs last); where NumPy's
  result is not unique (``sort`` ties of different bits, ``-0.0``/``0.0`` or two NaNs;
  default-kind ``argsort`` ties) the call signals.
* ``max``/``min`` over several axes, ``maximum``/``minimum.reduce``: the extreme in any
  order; a NaN, or zeros of both signs at the top, signal (NumPy's order decides those).
* ``linalg.solve``/``inv``/``det`` of a 2-D matrix: one call of the ``_umath_linalg``
  gufunc loop ``np.linalg`` calls (its LAPACK call, its copies); singular or non-finite
  input signals.
* Not here: ``einsum`` (NumPy's ``c_einsum`` sums products in its own order, not BLAS's:
  no exact form to call), ``fft`` (pocketfft), ``lstsq``/``eig``/``svd``.

Each rule is registered by its op's definition in :mod:`kernel_ext.ops`, beside the op's other
rules. Here: the table and the helpers the rules share (``common``), the matrix products more
than one rule and the writer call (``linalg``), and the Numba form of a loop's literal operands
(``loop_operands``).
"""

from __future__ import annotations

from . import linalg
from .common import RULES, Rule, Writer, rule_for
from .loop_operands import loop_literal

__all__ = [
    "RULES",
    "Rule",
    "Writer",
    "linalg",
    "loop_literal",
    "rule_for",
]

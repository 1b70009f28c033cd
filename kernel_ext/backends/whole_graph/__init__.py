"""``jit_compile=True``: a whole graph, control flow included, compiled into one Numba function.

Where the fused executor runs Python between kernels, here the graph's ``while`` loops and
``cond`` branches, its fused segments, matrix products and shape ops all live in one
``nopython`` function, so a loop over small arrays costs what the arithmetic costs (the seed's
``while np.sum(x) > 1: x = np.tanh(x)`` runs its ~40 iterations without touching Python).

The generated module is self-contained text, cached like any kernel: every fused segment's
kernel core (:mod:`.codegen`, with its block buffers passed in, so the function allocates them
once for all iterations), then ``graph(inputs..., constants..., loop addresses...)``:

* 0-d values are Numba scalars, everything else arrays; array values carried through a loop
  or out of a branch are fresh C-contiguous arrays (copies where needed), so every path of
  the control flow has one Numba type;
* a segment's domain is broadcast from its inputs' run-time shapes; whatever NumPy would
  answer with an error or a value only it defines (incompatible shapes, an index out of
  range, a NaN cast to int) raises a private signal, and the call is rerun by the fused
  executor, so the result — or the error — is NumPy's own;
* float matrix products call NumPy's own ``matmul`` inner loop (same BLAS path, same bits);
  integer and bool products are plain loops (exact: wrapping arithmetic is associative).

Graphs with ops this compiler does not cover (prints, variable writes, random draws,
``einsum``, ...; :mod:`.whole_graph_ops` holds the rules of many more) run on the fused executor
instead, with a warning that names the op, as TensorFlow's ``jit_compile=True`` names the
op XLA cannot compile. The first call of a new graph runs on the fused executor while the
whole-graph function compiles in the background
(:func:`~kernel_ext.backends.compiler.set_synchronous` makes it synchronous).

The package: :mod:`.writer` (``GraphWriter``, the graph walk, and :func:`compiles`: each
node's check and emission resolved once — its op's rule in :mod:`..whole_graph_ops`, else
the writer's own form, else a kernel op of a fused segment) with its parts :mod:`.segments`
(fused segments), :mod:`.indexing` (basic indexing and writes in place) and
:mod:`.control_flow` (``cond``, ``while``), over :mod:`.base` (the writer's state) and
:mod:`.values`; :mod:`.tiling` (row tiles), :mod:`.support` (limits, fallback reasons) and
:mod:`.build` (:func:`compile_whole_graph`: the module, its runner and the handover by
measurement).
"""

from .build import compile_whole_graph, unsupported_reason
from .support import FALLBACK_REASONS, MAX_OPS, SIGNAL
from .tiling import TILE_ELEMENTS, TILE_MIN_ROWS, row_tile, row_tiling
from .writer import compiles

__all__ = [
    "FALLBACK_REASONS",
    "MAX_OPS",
    "SIGNAL",
    "TILE_ELEMENTS",
    "TILE_MIN_ROWS",
    "compile_whole_graph",
    "compiles",
    "row_tile",
    "row_tiling",
    "unsupported_reason",
]

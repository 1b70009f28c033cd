"""The Dask backend: traced functions on Dask arrays, fused per block.

* :mod:`.graph` builds, at every call, a Dask array graph from the optimised IR graph
  (:func:`compile_dask`): fused segments become one ``blockwise`` task per block, reductions
  Dask tree reductions of fused per-block partials, other ops Dask's own functions,
  data-independent loops run per iteration while the graph is built;
* :mod:`.blocks` is what a task runs on its blocks (:class:`~.blocks.BlockProgram`): the
  segment's Numba kernel, compiled once per process (or loaded from the disk cache), or its
  ops through NumPy. It pickles small and imports no Dask, so it runs on any worker.

Dask and distributed are an optional extra (``pip install "jupyterlab-tffunction[dask]"``);
this package is imported only when a trace runs on Dask, and only it imports them (an
import-linter contract in pyproject).
"""

from .blocks import COMPILES, BlockProgram
from .graph import (
    ALONG_AXIS,
    COMBINE,
    DASK_NATIVE,
    MAX_ITERATIONS,
    can_fuse,
    compile_dask,
    dashboard_link,
    task_count,
    unsupported,
)

__all__ = [
    "ALONG_AXIS",
    "COMBINE",
    "COMPILES",
    "DASK_NATIVE",
    "MAX_ITERATIONS",
    "BlockProgram",
    "can_fuse",
    "compile_dask",
    "dashboard_link",
    "task_count",
    "unsupported",
]

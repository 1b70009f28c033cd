"""Indexing: getitem, setitem, tensor-array writes, bincount, nonzero, argwhere, compress,
trim_zeros, ufunc.at, ravel_multi_index and unravel_index.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`), its NumPy entry
points first (``np.argwhere``, ``np.compress``, ``np.bincount``, ``ufunc.at``, ...; getitem and
setitem are recorded by ``Tensor.__getitem__``/``__setitem__``, tensor_array_write by
``kx.TensorArray``, nonzero by ``trace.numpy_api.indexing``), one module per group of ops:

* :mod:`.subscripts` — ``getitem``, ``setitem`` (the whole-graph compiler's gather and
  scatter for advanced indexes in :mod:`.fancy_indexing`);
* :mod:`.tensor_arrays` — ``tensor_array_write``;
* :mod:`.scatter_adds` — ``ufunc_at``, ``bincount``;
* :mod:`.data_dependent` — ``nonzero``, ``argwhere``, ``compress``, ``trim_zeros``;
* :mod:`.index_arithmetic` — ``ravel_multi_index``, ``unravel_index``.
"""

from __future__ import annotations

from . import data_dependent, index_arithmetic, scatter_adds, subscripts, tensor_arrays

__all__ = ["data_dependent", "index_arithmetic", "scatter_adds", "subscripts", "tensor_arrays"]

"""Products with a Python number as one operand (``np.dot(a, 2)``, ``np.outer(a, 2.5)``).

``np.dot`` and ``np.outer`` turn a Python number into an array of its default dtype first, so
unlike a ufunc's operand it is not weak: ``np.dot(int32_array, 2)`` is ``int64``. Every case
runs eagerly and traced, on each executor, and must match bitwise with NumPy's dtype and form
(or raise its error: ``np.vdot(a, 2)``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from same_as_numpy import assert_same

import kernel_ext as kx

PRODUCTS = {
    "dot_number_right": lambda a: np.dot(a, 2),
    "dot_number_left": lambda a: np.dot(3.5, a),
    "dot_bool": lambda a: np.dot(a, True),
    "dot_complex": lambda a: np.dot(a, 1j),
    "dot_method": lambda a: a.dot(2),
    "inner_number": lambda a: np.inner(a, 2),
    "vdot_number": lambda a: np.vdot(a, 2),
    "outer_number": lambda a: np.outer(a, 2),
    "outer_number_left": lambda a: np.outer(2.5, a),
    "kron_number": lambda a: np.kron(a, 2),
    "tensordot_number": lambda a: np.tensordot(a, 2, 0),
    "dot_then_add": lambda a: np.dot(a, 2) + np.ones(a.shape[-1], np.int32),
}
ARRAYS = {
    "float64_matrix": np.arange(6.0).reshape(2, 3),
    "int32_vector": np.arange(3, dtype=np.int32),
    "float32_vector": np.arange(3, dtype=np.float32) - 1.5,
    "int8_vector": np.array([-128, 5, 127], dtype=np.int8),
}
PATHS = {"numpy": {"backend": "numpy"}, "auto": {}}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("array", ARRAYS)
@pytest.mark.parametrize("product", PRODUCTS)
def test_a_python_number_operand_gives_numpys_dtype_and_values(product, array, path):
    fn, a = PRODUCTS[product], ARRAYS[array]
    traced = kx.function(fn, autograph=False, **PATHS[path])
    try:
        expected = fn(a.copy())
    except ValueError as error:  # (np.vdot(a, 2): sizes differ) the same error, traced
        with pytest.raises(type(error)):
            traced(a.copy())
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (lambdas: AutoGraph cannot read their source)
        got = traced(a.copy())
    assert_same(got, expected)
    graph = traced.concrete_functions[0].graph
    for node in graph.nodes:  # the recorded dtype is the one the executors give
        if node.op.name in ("DOT", "OUTER"):
            assert node.dtype == np.asarray(expected).dtype or product == "dot_then_add"

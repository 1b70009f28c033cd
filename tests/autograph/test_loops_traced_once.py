"""Index loops traced once: a Python ``range`` longer than ``loops.SHORT_RANGE`` is one graph
loop from its first item, its body traced once with a symbolic index (``WeakInt``).

So the traced graph — loop bodies included — has the same size for 10 rows as for 1000, and
slices whose length depends on the index (``A[i, :i]``, ``x[i + 1:]``, ``x[-i:]``) are values
of unknown length inside the loop, computed as NumPy computes them at run time. The textbook
kernels below (Cholesky, LU, Gram-Schmidt, a recursive filter, an edit-distance table, forward
and back substitution, a histogram through ``int()``) are traced at 10 and 1000 rows (node
counts compared, nothing run) and run at sizes on both sides of ``SHORT_RANGE`` on every
executor, compiled synchronously, bitwise against eager NumPy, arguments after the call
included. Fused kernels are kept to the reductions whose bits NumPy fixes
(``codegen.BITWISE_ONLY``, as the loop fuzzer does); ``jit_compile=True`` refuses graphs with
traced slice bounds (``whole_graph.unsupported_reason``) and runs them as fused segments.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from markers import cheap_paths
from same_as_numpy import assert_same

import kernel_ext as kx
from kernel_ext.autograph import loops
from kernel_ext.backends import codegen, compiler, whole_graph
from kernel_ext.ir import OpKind
from tests.autograph.test_loop_factorizations import lu_doolittle as lu_scalar

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


@pytest.fixture
def compiled(monkeypatch):
    """Kernels compiled before the call that needs them (the executor asked for runs), with
    only the fused reductions that are bitwise NumPy's."""
    monkeypatch.setattr(codegen, "BITWISE_ONLY", True)
    old = compiler.set_synchronous(True)
    yield
    compiler.set_synchronous(old)


# -- textbook kernels -----------------------------------------------------------------------


def cholesky(A):
    n = A.shape[0]
    for j in range(n):
        A[j, j] = np.sqrt(A[j, j] - np.dot(A[j, :j], A[j, :j]))
        for i in range(j + 1, n):
            A[i, j] = (A[i, j] - np.dot(A[i, :j], A[j, :j])) / A[j, j]
    return A


def lu_outer(A):
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1 :, k] /= A[k, k]
        A[k + 1 :, k + 1 :] -= np.outer(A[k + 1 :, k], A[k, k + 1 :])
    return A


def gram_schmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for k in range(n):
        v = A[:, k].copy()
        for j in range(k):
            R[j, k] = np.dot(Q[:, j], A[:, k])
            v -= R[j, k] * Q[:, j]
        R[k, k] = np.sqrt(np.dot(v, v))
        Q[:, k] = v / R[k, k]
    return Q, R


def recursive_filter(x):
    y = np.zeros_like(x)
    y[0] = 0.25 * x[0]
    for i in range(1, x.shape[0]):
        y[i] = 0.25 * x[i] + 0.5 * x[i - 1] + 0.75 * y[i - 1]
    return y


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), np.int64)
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + cost)
    return D[n, m]


def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


def back_substitution(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
    return x


def histogram(x):
    counts = np.zeros(10, np.int64)
    for i in range(x.shape[0]):
        counts[int(x[i] * 10)] += 1
    return counts


def _spd(n: int, rng: np.random.Generator) -> np.ndarray:
    M = rng.standard_normal((n, n))
    return M @ M.T + n * np.eye(n)


def _triangular(n: int, rng: np.random.Generator, lower: bool) -> np.ndarray:
    M = rng.standard_normal((n, n))
    return (np.tril(M) if lower else np.triu(M)) + n * np.eye(n)


#: kernel -> (its inputs for n rows, the TensorSpecs of inputs of n rows)
def running_extremes(x):
    """Python's max and min of loop-carried NumPy scalars: the picks stay NumPy scalars, so
    the loop is a graph loop (the buffer comes from np.empty, fully written)."""
    hi = x[0]
    lo = x[0]
    spread = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        hi = max(hi, x[i])
        lo = min(lo, x[i])
        spread[i] = hi - lo
    return spread, hi, lo


KERNELS = {
    cholesky: (lambda n, r: (_spd(n, r),), lambda n: [kx.TensorSpec((n, n), np.float64)]),
    lu_outer: (lambda n, r: (_spd(n, r),), lambda n: [kx.TensorSpec((n, n), np.float64)]),
    lu_scalar: (lambda n, r: (_spd(n, r),), lambda n: [kx.TensorSpec((n, n), np.float64)]),
    gram_schmidt: (
        lambda n, r: (r.standard_normal((n, n)) + n * np.eye(n),),
        lambda n: [kx.TensorSpec((n, n), np.float64)],
    ),
    recursive_filter: (
        lambda n, r: (r.standard_normal(n),),
        lambda n: [kx.TensorSpec((n,), np.float64)],
    ),
    edit_distance: (
        lambda n, r: (r.integers(0, 3, n), r.integers(0, 3, n + 2)),
        lambda n: [kx.TensorSpec((n,), np.int64), kx.TensorSpec((n + 2,), np.int64)],
    ),
    forward_substitution: (
        lambda n, r: (_triangular(n, r, True), r.standard_normal(n)),
        lambda n: [kx.TensorSpec((n, n), np.float64), kx.TensorSpec((n,), np.float64)],
    ),
    back_substitution: (
        lambda n, r: (_triangular(n, r, False), r.standard_normal(n)),
        lambda n: [kx.TensorSpec((n, n), np.float64), kx.TensorSpec((n,), np.float64)],
    ),
    histogram: (lambda n, r: (r.random(n),), lambda n: [kx.TensorSpec((n,), np.float64)]),
    running_extremes: (
        lambda n, r: (r.standard_normal(n),),
        lambda n: [kx.TensorSpec((n,), np.float64)],
    ),
}


def _check(kernel, args: tuple, options: dict) -> kx.Function:
    eager_args = [a.copy() for a in args]
    expected = kernel(*eager_args)
    traced_args = [a.copy() for a in args]
    f = kx.function(kernel, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jit_compile's fallback note
        got = f(*traced_args)
    assert_same(got, expected)
    for g, e in zip(traced_args, eager_args):
        assert_same(g, e)
    return f


@pytest.mark.parametrize("kernel", list(KERNELS), ids=lambda k: k.__name__)
def test_the_graph_of_an_index_loop_kernel_is_the_same_for_10_and_1000_rows(kernel):
    specs = KERNELS[kernel][1]
    f = kx.function(kernel, backend="numpy")
    small, large = (f.get_concrete_function(*specs(n)) for n in (10, 1000))
    assert small.graph.count_ops() == large.graph.count_ops()
    # every loop statement is graph loops, with at most one peeled iteration per loop
    for note in large.loops:
        assert "graph loop" in note and ("unrolled" not in note or "peeled" in note), note


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize(
    "kernel",
    # (running_extremes' compiles join the full suite: the quick subset's budget is spent)
    [pytest.param(k, marks=pytest.mark.slow) if k is running_extremes else k for k in KERNELS],
    ids=lambda k: k.__name__,
)
def test_an_index_loop_kernel_is_bitwise_numpy_on_both_sides_of_the_short_range(
    kernel, path, compiled
):
    make = KERNELS[kernel][0]
    for n in (loops.SHORT_RANGE - 2, loops.SHORT_RANGE + 3):
        _check(kernel, make(n, np.random.default_rng(n)), PATHS[path])


def test_nested_long_ranges_are_nested_graph_loops_from_their_first_items():
    f = kx.function(lu_scalar, backend="numpy")
    cf = f.get_concrete_function(*KERNELS[lu_scalar][1](30))
    assert len(cf.loops) == 5 and all(note.endswith("— a graph loop") for note in cf.loops)
    (outer,) = [n for n in cf.graph.nodes if n.op is OpKind.WHILE]  # the i loop
    body = outer.params["body"]
    assert sum(n.op is OpKind.WHILE for n in body.nodes) == 2  # the two j loops, nested


# -- slices whose length depends on the index -------------------------------------------------


def slice_reads(x, A):
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = x[:i].sum() + x[i:].sum() + x[-i:].sum() + x[:-i].sum()  # -0 is 0, as in NumPy
        s += x[i::2].sum() + x[::-1][:i].sum() + x[i:0:-1].sum() + x[n - i - 1 :: -3].sum()
        s += x[i - n :].sum() + x[: i + n].sum() + x[i : i - 3].sum() + x[i + 2 * n :].sum()
        s += A[i, :i] @ A[:i, i] + np.dot(A[i, i + 1 :], A[i + 1 :, i]) + A[:i, :i].max(initial=0)
        out[i] = s
    return out


def slice_writes(x, A):
    n = x.shape[0]
    for i in range(n):
        A[i, :i] -= A[i, i] * 0.5
        A[:i, i] *= 2.0
        A[i, i + 1 :] = x[i + 1 :] + A[i, i + 1 :]
        x[i::3] += 1.0
        x[-i:] *= 0.5
    return x, A


def windows(x):
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(n):
        for j in range(i):
            out[i] += np.sum(x[j:i] * 2.0) - np.max(x[j : i + 1])
    return out


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("kernel", [slice_reads, slice_writes, windows], ids=lambda k: k.__name__)
def test_slices_with_traced_bounds_are_numpys_slices(kernel, path, compiled):
    # bounds past either end, negative bounds meaning "from the end" (and -0 meaning 0),
    # steps of either sign and empty slices, decided at run time as NumPy decides them
    for n in (loops.SHORT_RANGE - 1, loops.SHORT_RANGE + 4):
        rng = np.random.default_rng(n)
        args = (rng.standard_normal(n), rng.standard_normal((n, n)))
        _check(kernel, args[:1] if kernel is windows else args, PATHS[path])


def test_a_slice_with_traced_bounds_has_an_unknown_length_in_the_loop_body():
    f = kx.function(forward_substitution, backend="numpy")
    graph = f.get_concrete_function(*KERNELS[forward_substitution][1](20)).graph
    (loop,) = [n for n in graph.nodes if n.op is OpKind.WHILE]
    shapes = {n.aval.shape for n in loop.params["body"].nodes if n.op is OpKind.GETITEM}
    assert (None,) in shapes  # L[i, :i] and x[:i]


def test_jit_compile_compiles_a_graph_with_traced_slice_bounds_whole(compiled):
    # slices whose bounds are loop indices compile to native slices with Python's clamping
    # (backends/whole_graph.py): the whole graph serves, NumPy's bits and arguments
    f = kx.function(cholesky, jit_compile=True)
    A = _spd(12, np.random.default_rng(0))
    mine, theirs = A.copy(), A.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (no hand-over to fused segments)
        got = f(mine)
    assert whole_graph.unsupported_reason(f.concrete_functions[0].graph) is None
    np.testing.assert_array_equal(got, cholesky(theirs), strict=True)
    np.testing.assert_array_equal(mine, theirs, strict=True)


def reduce_empty(A):
    n = A.shape[0]
    out = np.zeros(n)
    for i in range(n):
        out[i] = A[i, :i].max()
    return out


@pytest.mark.parametrize("path", list(PATHS))
def test_a_reduction_of_an_empty_traced_slice_raises_as_numpy_does(path, compiled):
    A = np.random.default_rng(1).standard_normal((loops.SHORT_RANGE + 2,) * 2)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        reduce_empty(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
            kx.function(reduce_empty, **PATHS[path])(A)


# -- where a loop still unrolls, and why the note says it did ---------------------------------

TABLE = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5]


def python_list_by_index(x):
    s = x * 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * TABLE[i]  # a Python list needs the Python int
    return s


def python_container_grows(x):
    out = []
    for i in range(x.shape[0]):
        out.append(x[i] * 2.0)
    return np.stack(out)


def carried_python_counter(x):
    count = 0
    for i in range(x.shape[0]):
        count += 1  # Python int arithmetic: a graph loop would make it an array
        x[i] += count
    return x, count


def carried_python_float(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s * 0.5 + x[i]
    return s


def short_range(x):
    for i in range(4):
        x[i] *= 2.0
    return x


@pytest.mark.parametrize(
    "kernel, why",
    [
        (
            python_list_by_index,
            r"\d+ iterations unrolled \(line \d+: `s = s \+ x\[i\] \* TABLE\[i\]"
            r".*` needs the loop index as a Python int",
        ),
        (
            python_container_grows,
            r"\d+ iterations unrolled \(the body grows a Python container "
            r"\(line \d+: `out.append\(...\)`\)\)",
        ),
        (
            carried_python_counter,
            r"\d+ iterations unrolled \(the body changes `count`, a Python "
            r"number it carries\)",
        ),
        (
            carried_python_float,
            r"1 iteration unrolled \(peeled: `s` starts as a Python float\), "
            r"then a graph loop",
        ),
        (short_range, r"4 iterations unrolled \(a range of at most \d+ items\)"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_loop_note_says_why_iterations_unrolled(kernel, why):
    x = np.random.default_rng(2).standard_normal(loops.SHORT_RANGE + 4)
    f = _check(kernel, (x,), PATHS["numpy"])
    (note,) = f.concrete_functions[0].loops
    assert note.startswith("loop at ") and "test_loops_traced_once.py:" in note
    assert re.search(why, note), note


@pytest.mark.parametrize("n", [loops.SHORT_RANGE, loops.SHORT_RANGE + 1])
def test_the_short_range_threshold_decides_unrolling(n):
    def scale(x):
        for i in range(x.shape[0]):
            x[i] *= 2.0
        return x

    x = np.arange(float(n))
    f = _check(scale, (x,), PATHS["numpy"])
    (note,) = f.concrete_functions[0].loops
    unrolled = n <= loops.SHORT_RANGE
    assert note.endswith(
        f"— {n} iterations unrolled (a range of at most {n} items)"
        if unrolled
        else "— a graph loop"
    ), note


# -- int() of a traced float in a loop body ---------------------------------------------------


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_a_histogram_through_int_of_a_traced_float_is_numpys(path, compiled):
    for n in (loops.SHORT_RANGE - 3, 40):
        x = np.random.default_rng(n).random(n)
        x[:3] = (-0.05, 0.999, 0.0)  # -0.5 truncates toward zero: bin 0, as int() does
        _check(histogram, (x,), PATHS[path])


@pytest.mark.parametrize("path", list(PATHS))
def test_int_of_nan_or_infinity_in_a_graph_loop_raises_pythons_error(path, compiled):
    for bad, error in ((np.nan, ValueError), (np.inf, OverflowError)):
        x = np.random.default_rng(0).random(loops.SHORT_RANGE + 4)
        x[5] = bad
        with pytest.raises(error):
            histogram(x.copy())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with pytest.raises(error, match="cannot convert float"):
                kx.function(histogram, **PATHS[path])(x.copy())


def test_int_of_a_traced_float_is_an_index_a_python_list_cannot_take():
    def pick(x):
        return TABLE[int(x[0] * 10)]

    with pytest.raises(kx.errors.TracedBoolError, match=r"TABLE\[int\(x\[0\] \* 10\)\]"):
        kx.function(pick)(np.array([0.3]))


# -- reversed ranges --------------------------------------------------------------------------


def reversed_ranges(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in reversed(range(n)):
        x[i] = (b[i] - U[i, i + 1 :] @ x[i + 1 :]) / U[i, i]
        for j in reversed(range(i)):  # a range with a traced bound, reversed
            U[i, j] += U[i, j + 1] * 0.5
    return x, U


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_a_reversed_range_is_a_graph_loop_too(path, compiled):
    for n in (loops.SHORT_RANGE - 2, loops.SHORT_RANGE + 3):
        f = _check(
            reversed_ranges, KERNELS[back_substitution][0](n, np.random.default_rng(n)), PATHS[path]
        )
    assert all(note.endswith("— a graph loop") for note in f.concrete_functions[-1].loops)


def keeps_its_iterator(x):
    it = reversed(range(x.shape[0]))
    for i in it:
        x[i] += i
    return x, list(it)  # empty: the loop used every item, as in Python


def test_a_range_iterator_the_loop_exhausts_is_left_exhausted():
    _check(keeps_its_iterator, (np.zeros(loops.SHORT_RANGE + 3),), PATHS["numpy"])

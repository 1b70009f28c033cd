"""Conversions converted code makes on traced values, as eager NumPy makes them.

``np.float64(t)`` & co. (NumPy's scalar types), ``np.asarray``/``np.array`` with ``copy=``,
``dtype=``, ``ndmin=``, ``np.from_dlpack``, ``len`` of a dimension known only at run time, and
the builtins (``any``, ``all``, ``sum``, ``max``, ``min``, ``abs``, ``round``) of values computed
from constants alone (``kernel_ext/autograph/py_builtins.py``). Every case runs eagerly and
traced on fresh copies of the same arguments and compares values bitwise, dtypes, shapes, the
0-d form (NumPy scalar or 0-d array), the exception type, and the arguments after the call.
"""

from __future__ import annotations

import copy
import itertools
import warnings

import numpy as np
import pytest
from same_as_numpy import assert_same

import kernel_ext as kx
from kernel_ext import errors

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}
rng = np.random.default_rng(24)


def _outcome(fn, args):
    """What ``fn(*args)`` does: ("ok", result, args after) or ("raises", exception type)."""
    args = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (casts that lose data warn, eagerly and traced)
        try:
            return "ok", fn(*args), args
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return "raises", type(e), str(e)


def like_numpy(fn, *args, path="numpy", calls=2, **options):
    """``fn`` traced on ``path`` does what eager NumPy does (twice: the trace, then the graph)."""
    traced = kx.function(fn, **PATHS[path], **options)
    for _ in range(calls):
        expected, got = _outcome(fn, args), _outcome(traced, args)
        if expected[0] == "raises":
            assert got[0] == "raises" and issubclass(got[1], expected[1]), (got, expected)
            continue
        assert got[0] == "ok", got
        assert_same(got[1], expected[1])
        assert_same(got[2], expected[2])  # the arguments after the call
    return traced


# -- NumPy scalar types are casts ---------------------------------------------------------------


def _numpys_own(t: type) -> bool:
    """Is ``t`` the type NumPy's own dtype string names? (A library imported by another test
    module, ml_dtypes through onnx, registers float8 types whose strings NumPy cannot read.)"""
    try:
        return np.dtype(np.dtype(t).str).type is t
    except TypeError:
        return False


SCALAR_TYPES = sorted(
    {
        t
        for t in np.sctypeDict.values()
        if np.dtype(t).kind in "biufc" and np.dtype(t).char not in "gG" and _numpys_own(t)
    },
    key=lambda t: np.dtype(t).str,
)
SOURCES = (np.bool_, np.int8, np.uint8, np.int64, np.float32, np.float64, np.complex128)


def _values(dtype) -> np.ndarray:
    """Values every target type holds exactly or casts the same way everywhere: small
    integers, fractions, negatives (no NaN or out-of-range floats, whose cast to an integer
    C leaves undefined)."""
    base = (
        np.array([0, 1, -1, 2.5, -3.75, 100, 7.125])
        if np.dtype(dtype).kind in "fc"
        else rng.integers(-128, 127, 7)
    )
    if np.dtype(dtype).kind == "c":
        base = base + 1j * base[::-1]
    return base.astype(dtype)


@pytest.mark.parametrize("target", SCALAR_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("source", SOURCES, ids=lambda t: t.__name__)
def test_numpy_scalar_type_casts_a_traced_value(target, source):
    def f(x):
        # a 0-d element and a 0-d reduction become NumPy scalars of the type; an array
        # becomes np.asarray(x, dtype=target) (x itself when the dtype matches)
        return target(x[0]), target(np.max(x)), target(x), target(x[1:2])

    like_numpy(f, _values(source))


@pytest.mark.parametrize("path", PATHS)
def test_scalar_types_on_every_executor(path):
    def f(x):
        loss = np.sum(x * x)
        y = np.float64(x)  # x itself: the write below reaches the caller's array
        y[0] = np.float64(loss)
        return (
            np.float64(loss),
            np.float32(loss),
            np.int64(x[1]),
            np.bool_(x[2]),
            np.complex128(x[3]),
            np.uint8(x),
            np.float32(x),
            np.float64(np.asarray(loss)),
        )

    # whole numbers: their squares sum exactly in any order, so the compiled paths' float
    # sums (which may add in another order, docs/backends.md) give NumPy's bits
    like_numpy(f, np.round(rng.standard_normal(5) * 10), path=path)


def test_scalar_type_of_an_unknown_rank_says_why():
    f = kx.function(lambda x: np.float64(x), input_signature=[kx.TensorSpec(None, np.float64)])
    with pytest.raises(TypeError, match="rank is unknown"):
        f(np.ones(2))


# -- np.asarray / np.array: NumPy's copy rule ---------------------------------------------------

MAKERS = {"asarray": np.asarray, "array": np.array}
COPIES = (True, False, None)
DTYPES = (None, np.float64, np.float32)


@pytest.mark.parametrize("maker,copy_,dtype", list(itertools.product(MAKERS, COPIES, DTYPES)))
def test_asarray_copy_rule_on_a_traced_array(maker, copy_, dtype):
    make = MAKERS[maker]

    def f(x):
        y = make(x, dtype=dtype, copy=copy_)
        y[0] = -1  # reaches x exactly when no copy was made
        y += 2  # (an in-place operator, the conformance suites' pattern)
        y[y > 2] = 0  # (masking)
        return y, x * 1

    like_numpy(f, rng.standard_normal(6))


@pytest.mark.parametrize("maker,copy_", list(itertools.product(MAKERS, COPIES)))
def test_asarray_copy_rule_on_a_0d_value(maker, copy_):
    make = MAKERS[maker]

    def f(x):
        s = np.sum(x)  # a NumPy scalar: copy=False cannot avoid a copy
        a = make(s, copy=copy_)
        return a, make(a, copy=copy_)  # a 0-d array, and it again (or a copy of it)

    like_numpy(f, rng.standard_normal(3))


def test_array_ndmin_without_a_copy_is_a_view():
    def f(x):
        y = np.array(x, copy=False, ndmin=3)
        y[0, 0, 1] = 7.0
        z = np.array(x, ndmin=2)  # a copy
        z[0, 0] = -7.0
        return y, z

    like_numpy(f, rng.standard_normal(4))


@pytest.mark.parametrize("path", PATHS)
def test_asarray_copy_on_every_executor(path):
    def f(x):
        a = np.asarray(x, copy=True)
        a *= 3
        b = np.asarray(x, copy=False)
        b[1] = 100.0
        c = np.array(x, dtype=np.float32)
        c[2] = 5.0
        return a, b, c, np.asarray(np.sum(x))

    like_numpy(f, rng.standard_normal(5), path=path)


def test_asarray_order_without_a_copy_is_refused_not_guessed():
    f = kx.function(lambda x: np.asarray(x, order="F"))
    with pytest.raises(errors.UnsupportedOpError, match="memory layout"):
        f(np.ones((2, 3)))
    like_numpy(lambda x: np.array(x, order="F") + 0, np.ones((2, 3)))  # with a copy: fine


# -- np.from_dlpack -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_from_dlpack_of_a_traced_value_shares_its_memory(path):
    def f(x):
        y = x * 2
        z = np.from_dlpack(y)  # a view: the write shows through y
        z[0] = 9.0
        w = np.from_dlpack(y, copy=True)
        w[1] = -5.0  # a copy: y keeps its element
        v = np.from_dlpack(x)
        v += 1  # reaches the caller's array
        return y, z, w

    like_numpy(f, rng.standard_normal(4), path=path)


def test_from_dlpack_without_autograph_names_the_fix():
    f = kx.function(lambda x: np.from_dlpack(x), autograph=False)
    with pytest.raises(errors.TracingConversionError, match="AutoGraph on"):
        f(np.ones(3))


# -- len of a run-time dimension ----------------------------------------------------------------


def _class_means(X, labels):
    out = []
    for k in range(3):
        sel = X[labels == k]
        total = np.sum(sel, axis=0)
        out.append(total / len(sel))  # len: the selection's size, known at run time
    return out[0], out[1], out[2], len(X[labels == 1]), len(X)


@pytest.mark.parametrize("path", PATHS)
def test_len_of_a_runtime_dimension_is_a_traced_python_int(path):
    X = rng.standard_normal((12, 3))
    labels = rng.integers(0, 3, 12)
    labels[:3] = [0, 1, 2]
    like_numpy(_class_means, X, labels, path=path)


def test_len_of_a_static_dimension_stays_a_python_int():
    seen = []

    def f(x):
        seen.append(type(len(x)))
        return x[: len(x) - 1]

    like_numpy(f, np.arange(5.0))
    assert set(seen) == {int}


# -- builtins of values computed from constants -------------------------------------------------


def _pad(x, pad_width=(1, 2)):
    """A padding helper in the style of an ML library: validates a constant, pads the data."""
    if any(np.array(pad_width) < 0):
        raise ValueError(f"negative padding {pad_width}")
    if not all(np.array(pad_width) < 100):
        raise ValueError("padding too large")
    return np.pad(x, pad_width)


@pytest.mark.parametrize("path", PATHS)
def test_padding_helper_validating_a_constant_pads_a_traced_array(path):
    like_numpy(_pad, rng.standard_normal(5), path=path)


@pytest.mark.parametrize("pad_width", [(1, -2), (-1, 0), (0, 100)])
def test_padding_helper_raises_for_a_bad_constant_as_eagerly(pad_width):
    like_numpy(lambda x: _pad(x, pad_width), rng.standard_normal(5))


def test_builtins_of_constants_give_plain_values():
    p = (3, -1, 2)
    seen: list = []

    def f(x):
        a = np.array(p)
        got = (
            any(a < 0),
            all(a < 5),
            sum(a),
            max(a),
            min(a),
            abs(np.sum(a) * -2),
            round(np.float64(np.mean(a)), 2),
            max(np.sum(a), 1),
            min(a[0], a[2]),
            len(a),
            sum(a, 0.5),
            any([a[0] > 2, a[1] > 2]),
        )
        seen.append([(type(v), v) for v in got])
        return x * got[2]

    like_numpy(f, rng.standard_normal(3))
    eager, traced = seen[0], seen[1]
    assert eager == traced, (eager, traced)


def test_builtins_of_traced_values_stay_traced():
    # only values computed from constants alone are plain: data-dependent ones stay graph ops
    def f(x):
        flags = x > 0
        return any(flags), all(flags), max(x[0], x[1]), abs(x[0])

    like_numpy(f, rng.standard_normal(3))
    like_numpy(f, -np.abs(rng.standard_normal(3)))


def test_augmented_assignment_on_a_traced_python_int_keeps_python_rules():
    def f(x):
        n = len(x[x > 0])  # a Python int eagerly, a traced one here
        m = n
        n += 1  # rebinds n only (ints are immutable), stays a Python int
        k = int(np.sum(x > 0))
        k *= 2
        return n, m, k, n / 2, x[0] * n

    like_numpy(f, np.array([1.0, -1.0, 2.0], np.float32))
    like_numpy(f, np.array([-1.0, -1.0, -2.0], np.float32))


def test_python_sequence_with_a_traced_python_int_is_python_not_numpy():
    def repeat(x):
        return [0] * len(x[x > 0])  # eagerly a list of zeros; its length is not known here

    def concatenate(x):
        return [1] + len(x[x > 0])  # Python's TypeError, never NumPy's elementwise add

    with pytest.raises(errors.TracedBoolError, match="Repeating a Python list"):
        kx.function(repeat)(np.array([1.0, -1.0]))
    like_numpy(concatenate, np.array([1.0, -1.0]))


def test_scalar_types_other_packages_register_with_numpy_leave_the_import_working(tmp_path):
    # `import onnx` brings in ml_dtypes, whose float8 and complex32 types join np.sctypeDict
    # with dtype strings NumPy cannot read back; kernel_ext imported after it must still load
    # and convert with NumPy's own scalar types.
    import subprocess
    import sys

    pytest.importorskip("ml_dtypes")
    program = (
        "import ml_dtypes, numpy as np\n"
        "import kernel_ext as kx\n"
        "def f(x):\n"
        "    return np.float32(x.sum()) * 2\n"
        "traced = kx.function(f)(np.arange(3.0))\n"
        "assert type(traced) is np.float32 and traced == np.float32(6.0), traced\n"
    )
    script = tmp_path / "after_ml_dtypes.py"  # (a file: AutoGraph reads the source)
    script.write_text(program)
    import os
    from pathlib import Path

    checkout = str(Path(__file__).parents[2])  # (this checkout's kernel_ext, not an installed one)
    env = dict(os.environ, PYTHONPATH=checkout)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]

"""A generator of random NumPy programs, for differential tests of every executor.

A program is a list of steps; each step reads earlier values and produces a new one with one
NumPy operation (ufuncs with broadcasting and weak scalars, reductions, shape ops, indexing,
where, casts, matmul). Inputs cover dtypes, 0-d and size-0 shapes, broadcasting, and
non-contiguous and read-only arrays. Every step is checked eagerly while the program is built,
so the program is valid NumPy; running it under ``kx.function`` must give identical results.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]
UNARY = [
    np.negative,
    np.absolute,
    np.tanh,
    np.exp,
    np.sqrt,
    np.floor,
    np.sign,
    np.square,
    np.isnan,
    np.logical_not,
    np.sin,
    np.log1p,
    np.invert,
]
BINARY = [
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.maximum,
    np.minimum,
    np.less,
    np.equal,
    np.floor_divide,
    np.power,
    np.logical_and,
    np.bitwise_and,
    np.arctan2,
    np.fmax,
    np.hypot,
]
REDUCTIONS = [np.sum, np.mean, np.max, np.min, np.prod, np.any, np.all, np.argmax, np.std]
LITERALS = [0, 1, 2, -1, 0.5, 2.5, True]

# -- ufunc methods and the nan family ---------------------------------------------------------
NAN_UNARY = [np.spacing, np.degrees, np.radians, np.bitwise_count]
NAN_BINARY = [np.nextafter, np.ldexp]
MULTI_OUTPUT = [np.frexp, np.modf, np.divmod]
NAN_REDUCTIONS = [
    np.nansum,
    np.nanprod,
    np.nanmean,
    np.nanmax,
    np.nanmin,
    np.nanstd,
    np.nanvar,
    np.nanargmax,
    np.nanargmin,
    np.median,
    np.nanmedian,
]
METHOD_UFUNCS = [
    np.add,
    np.subtract,
    np.multiply,
    np.maximum,
    np.minimum,
    np.fmax,
    np.logical_xor,
    np.bitwise_or,
    np.true_divide,
    np.hypot,
    np.less,
]


def _ufunc_method_or_nan_step(
    rng: np.random.Generator, env: list[Any], i: int, j: int
) -> tuple[str, Callable]:
    """One of the ufunc-method and nan-family ops: elementwise additions, one output of a
    multi-output ufunc, a nan reduction or quantile, or a ufunc method (reduce, accumulate,
    reduceat, outer, at) of a binary ufunc, with random axes."""
    nd = np.ndim(env[i])
    axis = None if nd == 0 or rng.random() < 0.4 else int(rng.integers(-nd, nd))
    kind = rng.integers(0, 9)
    if kind == 0:
        uf = NAN_UNARY[rng.integers(len(NAN_UNARY))]
        return f"{uf.__name__}(v{i})", lambda e, uf=uf, i=i: uf(e[i])
    if kind == 1:
        return _binary_step(rng, NAN_BINARY, [0, 1, 2, -1, 0.5], i, j)
    if kind == 2:
        uf = MULTI_OUTPUT[rng.integers(len(MULTI_OUTPUT))]
        k = int(rng.integers(0, 2))
        if uf.nin == 1:
            return f"{uf.__name__}(v{i})[{k}]", lambda e, uf=uf, i=i, k=k: uf(e[i])[k]
        return (
            f"{uf.__name__}(v{i}, v{j})[{k}]",
            lambda e, uf=uf, i=i, j=j, k=k: uf(e[i], e[j])[k],
        )
    if kind == 3:
        red = NAN_REDUCTIONS[rng.integers(len(NAN_REDUCTIONS))]
        keep = bool(rng.random() < 0.3)
        return (
            f"{red.__name__}(v{i}, axis={axis}, keepdims={keep})",
            lambda e, r=red, i=i, a=axis, k=keep: r(e[i], axis=a, keepdims=k),
        )
    if kind == 4:
        q = [0.25, 0.5] if rng.random() < 0.5 else 0.3
        fn = np.nanquantile if rng.random() < 0.5 else np.quantile
        return (
            f"{fn.__name__}(v{i}, {q}, axis={axis})",
            lambda e, fn=fn, i=i, q=q, a=axis: fn(e[i], q, axis=a),
        )
    uf = METHOD_UFUNCS[rng.integers(len(METHOD_UFUNCS))]
    ax = 0 if axis is None else axis
    if kind == 5:
        if rng.random() < 0.3:
            return (
                f"{uf.__name__}.reduce(v{i}, axis=None)",
                lambda e, uf=uf, i=i: uf.reduce(e[i], axis=None),
            )
        return (
            f"{uf.__name__}.reduce(v{i}, axis={ax})",
            lambda e, uf=uf, i=i, a=ax: uf.reduce(e[i], axis=a),
        )
    if kind == 6:
        if rng.random() < 0.5:
            return (
                f"{uf.__name__}.accumulate(v{i}, axis={ax})",
                lambda e, uf=uf, i=i, a=ax: uf.accumulate(e[i], axis=a),
            )
        return (
            f"{uf.__name__}.reduceat(v{i}, [0, 1, 0], axis={ax})",
            lambda e, uf=uf, i=i, a=ax: uf.reduceat(e[i], [0, 1, 0], axis=a),
        )
    if kind == 7:
        return (f"{uf.__name__}.outer(v{i}, v{j})", lambda e, uf=uf, i=i, j=j: uf.outer(e[i], e[j]))

    def at(e: list[Any], uf: np.ufunc = uf, i: int = i, j: int = j) -> Any:
        out = np.copy(e[i])  # (0-d: no index to update, NumPy raises and the step is dropped)
        uf.at(out, [0, 0, -1], e[j])
        return out

    return f"{uf.__name__}.at(copy(v{i}), [0, 0, -1], v{j})", at


@dataclass
class Program:
    inputs: list[np.ndarray]
    steps: list[tuple[str, Callable[[list[Any]], Any]]] = field(default_factory=list)
    n_outputs: int = 1

    def __call__(self, *xs: Any) -> tuple:
        env = list(xs)
        for _, step in self.steps:
            env.append(step(env))
        return tuple(env[-self.n_outputs :])

    def describe(self) -> str:
        shapes = ", ".join(
            f"{a.dtype}{list(a.shape)}" if hasattr(a, "dtype") else f"{type(a).__name__} {a!r}"
            for a in self.inputs
        )
        return f"inputs({shapes}): " + "; ".join(name for name, _ in self.steps)


class Batch:
    """Several programs as one function (inputs and outputs concatenated): one trace, and
    under ``jit_compile=True`` one compiled function, for all of them."""

    def __init__(self, programs: list[Program]) -> None:
        self.programs = programs
        self.inputs = [x for p in programs for x in p.inputs]

    def __call__(self, *xs: Any) -> tuple:
        out: list[Any] = []
        k = 0
        for p in self.programs:
            out.extend(p(*xs[k : k + len(p.inputs)]))
            k += len(p.inputs)
        return tuple(out)

    def describe(self) -> str:
        return " || ".join(p.describe() for p in self.programs)


def _random_shape(rng: np.random.Generator) -> tuple[int, ...]:
    kind = rng.integers(0, 10)
    if kind == 0:
        return ()
    if kind == 1:
        return (0, 3)
    ndim = int(rng.integers(1, 4))
    return tuple(int(d) for d in rng.integers(1, 5, ndim))


def _random_array(rng: np.random.Generator, shape: tuple[int, ...] | None = None) -> np.ndarray:
    shape = _random_shape(rng) if shape is None else shape
    dtype = DTYPES[rng.integers(len(DTYPES))]
    if dtype is np.bool_:
        arr = rng.random(shape) > 0.5
    elif np.issubdtype(dtype, np.integer):
        arr = rng.integers(0 if dtype is np.uint8 else -9, 10, shape).astype(dtype)
    else:
        arr = (rng.standard_normal(shape) * 3).astype(dtype)
    flavour = rng.integers(0, 4)
    if flavour == 0 and arr.ndim >= 1 and arr.shape[-1] > 0:
        # non-contiguous: every other element of a twice-as-long array
        wide = np.repeat(arr, 2, axis=-1)
        arr = wide[..., ::2]
    elif flavour == 1:
        arr = arr.copy()
        arr.setflags(write=False)
    return np.asarray(arr) if arr.ndim else arr[()] if flavour == 2 else arr


def _binary_step(
    rng: np.random.Generator, ufuncs: list, literals: list, i: int, j: int
) -> tuple[str, Callable]:
    """A binary ufunc on two values, or (30 %) on a value and a weak literal, either side."""
    uf = ufuncs[rng.integers(len(ufuncs))]
    if rng.random() < 0.3:
        lit = literals[rng.integers(len(literals))]
        if rng.random() < 0.5:
            return f"{uf.__name__}(v{i}, {lit!r})", lambda e, uf=uf, i=i, c=lit: uf(e[i], c)
        return f"{uf.__name__}({lit!r}, v{i})", lambda e, uf=uf, i=i, c=lit: uf(c, e[i])
    return f"{uf.__name__}(v{i}, v{j})", lambda e, uf=uf, i=i, j=j: uf(e[i], e[j])


def _candidate(rng: np.random.Generator, env: list[Any]) -> tuple[str, Callable]:
    i = int(rng.integers(len(env)))
    j = int(rng.integers(len(env)))
    choice = rng.integers(0, 9)
    if rng.random() < 0.25:
        return _ufunc_method_or_nan_step(rng, env, i, j)
    if choice <= 1:
        uf = UNARY[rng.integers(len(UNARY))]
        return f"{uf.__name__}(v{i})", lambda e, uf=uf, i=i: uf(e[i])
    if choice <= 3:
        return _binary_step(rng, BINARY, LITERALS, i, j)
    if choice == 4:
        red = REDUCTIONS[rng.integers(len(REDUCTIONS))]
        nd = np.ndim(env[i])
        axis = None if nd == 0 or rng.random() < 0.4 else int(rng.integers(-nd, nd))
        keep = bool(rng.random() < 0.3) and red is not np.argmax
        if red is np.argmax:
            return (f"argmax(v{i}, axis={axis})", lambda e, i=i, a=axis: np.argmax(e[i], axis=a))
        return (
            f"{red.__name__}(v{i}, axis={axis}, keepdims={keep})",
            lambda e, r=red, i=i, a=axis, k=keep: r(e[i], axis=a, keepdims=k),
        )
    if choice == 5:
        k = int(rng.integers(len(env)))
        return (
            f"where(v{i} > 0, v{j}, v{k})",
            lambda e, i=i, j=j, k=k: np.where(e[i] > 0, e[j], e[k]),
        )
    if choice == 6:
        dt = DTYPES[rng.integers(len(DTYPES))]
        return f"v{i}.astype({np.dtype(dt).name})", lambda e, i=i, dt=dt: e[i].astype(dt)
    if choice == 7:
        nd = np.ndim(env[i])
        op = rng.integers(0, 4)
        if op == 0:
            return f"reshape(v{i}, -1)", lambda e, i=i: np.reshape(e[i], (-1,))
        if op == 1:
            return f"transpose(v{i})", lambda e, i=i: np.transpose(e[i])
        if op == 2 and nd >= 1:
            return f"v{i}[::-1]", lambda e, i=i: e[i][::-1]
        if nd >= 1 and np.shape(env[i])[0] > 0:
            return f"v{i}[0]", lambda e, i=i: e[i][0]
        return f"expand_dims(v{i}, 0)", lambda e, i=i: np.expand_dims(e[i], 0)
    return f"v{i} @ v{j}", lambda e, i=i, j=j: np.matmul(e[i], e[j])


def make_program(seed: int, n_steps: int = 6) -> Program:
    rng = np.random.default_rng(seed)
    n_inputs = int(rng.integers(1, 4))
    inputs = [_random_array(rng) for _ in range(n_inputs)]
    if rng.random() < 0.5 and n_inputs > 1:
        inputs[1] = _random_array(rng, np.shape(inputs[0])[-1:])  # broadcasting partner
    prog = Program(inputs)
    env = list(inputs)
    attempts = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(prog.steps) < n_steps and attempts < 200:
            attempts += 1
            name, step = _candidate(rng, env)
            try:
                value = step(env)
            except Exception:
                continue
            if np.size(value) > 10_000 or getattr(np.asarray(value), "dtype", None) == object:
                continue
            prog.steps.append((name, step))
            env.append(value)
    prog.n_outputs = int(min(len(prog.steps), rng.integers(1, 3))) or 1
    return prog


# ---------------------------------------------------------------------------------------------
# Fusible programs: chains of elementwise ops over one broadcast domain, optionally ending in a
# reduction (what the Numba backends fuse into one kernel)
# ---------------------------------------------------------------------------------------------

FUSIBLE_DTYPES = [
    np.float32,
    np.float64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
]
FUSIBLE_UNARY = [
    np.negative,
    np.absolute,
    np.square,
    np.sqrt,
    np.exp,
    np.tanh,
    np.log1p,
    np.sin,
    np.floor,
    np.ceil,
    np.rint,
    np.trunc,
    np.sign,
    np.isnan,
    np.isinf,
    np.isfinite,
    np.logical_not,
    np.invert,
    np.reciprocal,
    np.signbit,
    np.expm1,
    np.cbrt,
    np.positive,
    np.fabs,
    np.arctan,
    np.cos,
    np.log,
    np.spacing,
    np.degrees,
    np.radians,
]
FUSIBLE_BINARY = [
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.floor_divide,
    np.remainder,
    np.fmod,
    np.power,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.equal,
    np.not_equal,
    np.logical_and,
    np.logical_or,
    np.logical_xor,
    np.bitwise_and,
    np.bitwise_or,
    np.bitwise_xor,
    np.left_shift,
    np.right_shift,
    np.arctan2,
    np.hypot,
    np.copysign,
    np.heaviside,
    np.logaddexp,
    np.nextafter,
]
FUSIBLE_REDUCTIONS = [np.sum, np.mean, np.max, np.min, np.prod, np.any, np.all]
FUSIBLE_SHAPES = [(), (0,), (7,), (3, 4), (2, 3, 5), (1500,), (3, 1100), (0, 4)]
FUSIBLE_LITERALS = [0, 1, 2, -1, 3, 0.5, -2.5, 2.0, True, 1e10]


def _edge_values(dtype: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """Random values of ``dtype`` sprinkled with the dtype's edge cases."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(size) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = 0 if dtype.kind == "u" else -9
        vals = rng.integers(lo, 10, size).astype(dtype)
        edges = np.array(
            [info.min, info.max, 0, 1, info.max - 1, info.min + 1, dtype.itemsize * 8, 3],
            dtype=object,
        )
    else:
        vals = (rng.standard_normal(size) * 3).astype(dtype)
        edges = np.array(
            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 3e38, 0.5, -1.0, 2.0], dtype=object
        )
    if size:
        k = max(1, size // 10)
        pos = rng.integers(0, size, k)
        with np.errstate(all="ignore"):
            vals[pos] = np.array(
                list(rng.choice(edges, k)), dtype=np.float64 if dtype.kind == "f" else object
            ).astype(dtype)
    return vals


def _fusible_input(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    dtype = FUSIBLE_DTYPES[rng.integers(len(FUSIBLE_DTYPES))]
    size = int(np.prod(shape)) if shape else 1
    arr = _edge_values(dtype, size, rng).reshape(shape)
    flavour = rng.integers(0, 5)
    if flavour == 0 and arr.ndim >= 1 and arr.shape[-1] > 0:
        arr = np.repeat(arr, 2, axis=-1)[..., ::2]  # non-contiguous
    elif flavour == 1:
        arr = arr.copy()
        arr.setflags(write=False)
    elif flavour == 2 and arr.ndim == 0:
        return arr[()]  # a NumPy scalar
    return arr


def _partner_shape(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape`` (dims set to 1, leading dims dropped)."""
    if not shape:
        return ()
    out = [1 if rng.random() < 0.3 else d for d in shape]
    drop = int(rng.integers(0, len(out) + 1)) if rng.random() < 0.3 else 0
    return tuple(out[drop:])


def make_fusible_program(seed: int, n_steps: int = 6, reduce: bool | None = None) -> Program:
    """A random chain of elementwise ops (then maybe a reduction) that fuses into kernels.

    Inputs share one domain shape (some broadcast into it, some 0-d); steps are ufuncs with
    weak literals, ``where``, ``astype`` and ``clip``, each validated eagerly (no errors, no
    object results). ``program.reduced`` holds the value the final reduction consumed (for
    the float summation bound), or None.
    """
    rng = np.random.default_rng(10_000 + seed)
    shape = FUSIBLE_SHAPES[rng.integers(len(FUSIBLE_SHAPES))]
    n_inputs = int(rng.integers(1, 4))
    inputs = [_fusible_input(rng, shape)]
    for _ in range(n_inputs - 1):
        inputs.append(_fusible_input(rng, _partner_shape(rng, shape)))
    prog = Program(inputs)
    prog.reduced = None  # type: ignore[attr-defined]
    env: list[Any] = list(inputs)
    attempts = 0

    def candidate() -> tuple[str, Callable]:
        i, j = int(rng.integers(len(env))), int(rng.integers(len(env)))
        choice = rng.integers(0, 10)
        if choice <= 2:
            uf = FUSIBLE_UNARY[rng.integers(len(FUSIBLE_UNARY))]
            return f"{uf.__name__}(v{i})", lambda e, uf=uf, i=i: uf(e[i])
        if choice <= 6:
            return _binary_step(rng, FUSIBLE_BINARY, FUSIBLE_LITERALS, i, j)
        if choice == 7:
            k = int(rng.integers(len(env)))
            return (
                f"where(v{i} > 0, v{j}, v{k})",
                lambda e, i=i, j=j, k=k: np.where(e[i] > 0, e[j], e[k]),
            )
        if choice == 8:
            dt = FUSIBLE_DTYPES[rng.integers(len(FUSIBLE_DTYPES))]
            return f"v{i}.astype({np.dtype(dt).name})", lambda e, i=i, dt=dt: e[i].astype(dt)
        lo, hi = sorted(rng.integers(-3, 4, 2).tolist())
        return f"clip(v{i}, {lo}, {hi})", lambda e, i=i, lo=lo, hi=hi: np.clip(e[i], lo, hi)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(prog.steps) < n_steps and attempts < 300:
            attempts += 1
            name, step = candidate()
            try:
                with np.errstate(all="ignore"):
                    value = step(env)
            except Exception:
                continue
            if np.asarray(value).dtype == object:
                continue
            prog.steps.append((name, step))
            env.append(value)
        do_reduce = rng.random() < 0.5 if reduce is None else reduce
        if do_reduce and prog.steps:
            red = FUSIBLE_REDUCTIONS[rng.integers(len(FUSIBLE_REDUCTIONS))]
            last = len(env) - 1
            nd = np.ndim(env[last])
            axis = None if nd == 0 or rng.random() < 0.5 else int(rng.integers(-nd, nd))
            keep = bool(rng.random() < 0.3)
            step = lambda e, r=red, i=last, a=axis, k=keep: r(e[i], axis=a, keepdims=k)
            try:
                with np.errstate(all="ignore"):
                    value = step(env)
                prog.steps.append((f"{red.__name__}(v{last}, axis={axis}, keepdims={keep})", step))
                prog.reduced = env[last]  # type: ignore[attr-defined]
                env.append(value)
            except Exception:
                pass
    prog.n_outputs = 2 if len(prog.steps) >= 2 and rng.random() < 0.4 else 1
    return prog


# ---------------------------------------------------------------------------------------------
# Named NumPy functions and data-dependent shapes: programs mixing graph ops such as
# np.pad, np.einsum, np.diff, np.unique and np.nonzero with ufuncs, over the inputs above
# ---------------------------------------------------------------------------------------------

PAD_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "maximum", "mean"]
EINSUM_FORMS = {
    1: ["i->i", "i->", "i"],
    2: ["ij->ji", "ij->i", "ij->j", "ij", "ii->i", "ii"],
    3: ["ijk->kji", "ijk->j", "...k->..."],
}


def _named_step(rng: np.random.Generator, env: list[Any]) -> tuple[str, Callable]:
    """One step applying a named NumPy function (or a ufunc, to mix them) to earlier values."""
    i = int(rng.integers(len(env)))
    j = int(rng.integers(len(env)))
    nd = np.ndim(env[i])
    axis = int(rng.integers(-nd, nd)) if nd else 0
    k = int(rng.integers(-2, 3))
    choice = int(rng.integers(0, 20))
    if choice == 0:
        mode = PAD_MODES[rng.integers(len(PAD_MODES))]
        width = (
            int(rng.integers(0, 3))
            if rng.random() < 0.5
            else tuple((int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(nd))
        )
        return (
            f"pad(v{i}, {width}, {mode!r})",
            lambda e, i=i, w=width, m=mode: np.pad(e[i], w, mode=m),
        )
    if choice == 1:
        n = int(rng.integers(0, 3))
        return f"diff(v{i}, {n}, axis={axis})", lambda e, i=i, n=n, a=axis: np.diff(e[i], n, a)
    if choice == 2:
        fn = np.triu if rng.random() < 0.5 else np.tril
        return f"{fn.__name__}(v{i}, {k})", lambda e, i=i, fn=fn, k=k: fn(e[i], k)
    if choice == 3 and nd in EINSUM_FORMS:
        forms = EINSUM_FORMS[nd]
        form = forms[rng.integers(len(forms))]
        if np.size(env[i]) == 0 and "ii" in form:
            # NumPy's diagonal of an empty zero-strided array reads memory it does not own
            form = forms[0]
        return f"einsum({form!r}, v{i})", lambda e, i=i, s=form: np.einsum(s, e[i])
    if choice == 4:
        return (
            f"einsum('...i,...i', v{i}, v{j})",
            lambda e, i=i, j=j: np.einsum("...i,...i", e[i], e[j]),
        )
    if choice == 5:
        return (
            f"insert(v{i}, {k}, v{j}, axis={axis if nd else None})",
            lambda e, i=i, j=j, k=k, a=(axis if nd else None): np.insert(e[i], k, e[j], a),
        )
    if choice == 6:
        return (
            f"argpartition(v{i}, 0, axis={axis if nd else None})",
            lambda e, i=i, a=(axis if nd else None): np.argpartition(e[i], 0, axis=a),
        )
    if choice == 7:
        mode = ["valid", "same", "full"][rng.integers(3)]
        fn = np.correlate if rng.random() < 0.5 else np.convolve
        return (
            f"{fn.__name__}(v{i}, v{j}, {mode!r})",
            lambda e, i=i, j=j, fn=fn, m=mode: fn(e[i], e[j], m),
        )
    if choice == 8:
        return f"vdot(v{i}, v{j})", lambda e, i=i, j=j: np.vdot(e[i], e[j])
    if choice == 9:
        return (
            f"interp(v{i}, [-2, 0, 3], [1, -1, 4])",
            lambda e, i=i: np.interp(e[i], [-2.0, 0.0, 3.0], [1.0, -1.0, 4.0]),
        )
    if choice == 10:
        return f"diagflat(v{i}, {k})", lambda e, i=i, k=k: np.diagflat(e[i], k)
    if choice == 11:
        return f"nonzero(v{i})[-1]", lambda e, i=i: np.nonzero(e[i])[-1]
    if choice == 12:
        return f"argwhere(v{i})", lambda e, i=i: np.argwhere(e[i])
    if choice == 13:
        return f"flatnonzero(v{i} > 0)", lambda e, i=i: np.flatnonzero(np.greater(e[i], 0))
    if choice == 14:
        flags = [bool(f) for f in rng.random(3) < 0.5]
        return (f"unique(v{i}, *{flags})[-1]", lambda e, i=i, f=flags: _last(np.unique(e[i], *f)))
    if choice == 15:
        return (
            f"compress(v{i} > 0 along {axis})",
            lambda e, i=i, a=axis: (
                np.compress(
                    np.greater(
                        np.take(e[i], 0, axis=a - 1 if a else -1).ravel()[: np.shape(e[i])[a]], 0
                    ),
                    e[i],
                    axis=a,
                )
                if np.ndim(e[i]) >= 2
                else np.compress(np.greater(e[i], 0), e[i])
            ),
        )
    if choice == 16:
        return f"extract(v{i} > 0, v{i})", lambda e, i=i: np.extract(np.greater(e[i], 0), e[i])
    if choice == 17:
        return (
            f"bincount(abs(v{i}).astype(int) % 7)",
            lambda e, i=i: np.bincount(np.remainder(np.absolute(e[i]).astype(np.int64), 7)),
        )
    if choice == 18:
        return (
            f"histogram(v{i}, 3, (-2, 2))[0]",
            lambda e, i=i: np.histogram(e[i], bins=3, range=(-2, 2))[0],
        )
    if choice == 19 and nd == 1:
        return f"trim_zeros(v{i})", lambda e, i=i: np.trim_zeros(e[i])
    uf = UNARY[rng.integers(len(UNARY))] if rng.random() < 0.5 else None
    if uf is not None:
        return f"{uf.__name__}(v{i})", lambda e, uf=uf, i=i: uf(e[i])
    return _binary_step(rng, BINARY, LITERALS, i, j)


def _last(value: Any) -> Any:
    return value[-1] if isinstance(value, tuple) else value


def make_named_program(seed: int, n_steps: int = 5) -> Program:
    """A random program of named NumPy functions (pad, einsum, diff, unique, nonzero, ...) and
    ufuncs over random inputs (dtypes, 0-d, size-0, non-contiguous, read-only); every step was
    run eagerly while building, so the program is valid NumPy."""
    rng = np.random.default_rng(50_000 + seed)
    inputs = [_random_array(rng) for _ in range(int(rng.integers(1, 3)))]
    prog = Program(inputs)
    env = list(inputs)
    attempts = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(prog.steps) < n_steps and attempts < 200:
            attempts += 1
            name, step = _named_step(rng, env)
            try:
                with np.errstate(all="ignore"):
                    value = step(env)
            except Exception:
                continue
            if np.size(value) > 10_000 or np.asarray(value).dtype == object:
                continue
            prog.steps.append((name, step))
            env.append(value)
    prog.n_outputs = int(min(len(prog.steps), rng.integers(1, 3))) or 1
    return prog


# ---------------------------------------------------------------------------------------------
# Numeric edge programs: what NumPy defines to the bit and compiled code gets wrong most easily
# (integer overflow on every width, signed zeros, NaN payloads, NEP 50 weak Python scalars),
# with every step kept only where NumPy itself is deterministic, so results compare bitwise
# ---------------------------------------------------------------------------------------------

NUMERIC_DTYPES = [
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float32,
    np.float64,
    np.bool_,
]
NUMERIC_SHAPES = [(), (1,), (5,), (3, 4), (19,), (2, 3, 4), (2, 1)]
#: Weak Python scalars at the edges of the widths they meet (NEP 50: a literal that does not
#: fit the array's dtype is an error, so those steps are dropped by the eager check).
NUMERIC_LITERALS: list[Any] = [
    0,
    1,
    -1,
    2,
    3,
    7,
    8,
    31,
    63,
    64,
    127,
    128,
    255,
    256,
    -128,
    -129,
    32767,
    65535,
    2**31 - 1,
    2**31,
    -(2**31),
    2**32 - 1,
    2**63 - 1,
    -(2**63),
    2**64 - 1,
    0.0,
    -0.0,
    0.5,
    -2.5,
    1e300,
    -1e-310,
    float("inf"),
    float("-inf"),
    float("nan"),
    True,
    False,
]
NUMERIC_UNARY = [
    np.negative,
    np.absolute,
    np.square,
    np.sign,
    np.positive,
    np.invert,
    np.logical_not,
    np.signbit,
    np.isnan,
    np.isinf,
    np.isfinite,
    np.floor,
    np.ceil,
    np.trunc,
    np.rint,
    np.sqrt,
    np.reciprocal,
    np.fabs,
    np.exp,
    np.tanh,
]
NUMERIC_BINARY = [
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.floor_divide,
    np.remainder,
    np.fmod,
    np.power,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.less,
    np.greater_equal,
    np.equal,
    np.not_equal,
    np.logical_and,
    np.logical_xor,
    np.bitwise_and,
    np.bitwise_or,
    np.bitwise_xor,
    np.left_shift,
    np.right_shift,
    np.copysign,
    np.heaviside,
    np.arctan2,
]
NUMERIC_REDUCTIONS = [np.sum, np.prod, np.max, np.min, np.any, np.all, np.mean]


def nan_with_payload(dtype: Any, payload: int, negative: bool = False) -> Any:
    """A quiet NaN of ``dtype`` whose mantissa carries ``payload`` (and the sign bit)."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        bits = 0x7FF8000000000000 | (payload & 0x7FFFFFFFFFFFF) | (negative << 63)
        return np.array(bits, np.uint64).view(np.float64)[()]
    bits = 0x7FC00000 | (payload & 0x3FFFFF) | (negative << 31)
    return np.array(bits, np.uint32).view(np.float32)[()]


def numeric_values(dtype: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` values of ``dtype``, about half of them edges: each integer width's MIN, MAX
    and neighbours, shift counts at the width; for floats ±0.0, ±inf, NaNs with payloads and
    either sign, subnormals and values that overflow when doubled."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(size) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        bits = dtype.itemsize * 8
        edges = [
            info.min,
            info.max,
            info.min + 1,
            info.max - 1,
            0,
            1,
            2,
            bits - 1,
            bits,
            info.max // 2 + 1,
            3,
        ]
        if dtype.kind == "i":
            edges += [-1, -2, info.min // 2]
        vals = rng.integers(max(info.min, -9), min(info.max, 10), size, endpoint=True)
        vals = vals.astype(object)
    else:
        f = np.finfo(dtype)
        edges = [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            float(f.max),
            -float(f.max),
            float(f.tiny),
            float(f.smallest_subnormal),
            -float(f.smallest_subnormal),
            1.0,
            -1.0,
            0.5,
        ]
        edges += [
            nan_with_payload(dtype, int(rng.integers(0, 1 << 20)), bool(rng.random() < 0.5))
            for _ in range(3)
        ]
        vals = (rng.standard_normal(size) * 4).astype(dtype).astype(object)
    for k in range(size):
        if rng.random() < 0.5:
            vals[k] = edges[int(rng.integers(len(edges)))]
    if dtype.kind == "f":  # NaN payloads survive only a bit-level copy, not float() -> astype
        out = np.empty(size, dtype)
        for k in range(size):
            out[k] = vals[k] if isinstance(vals[k], np.floating) else dtype.type(vals[k])
        return out
    return np.array(list(vals), dtype=object).astype(dtype) if size else np.zeros(0, dtype)


def _numeric_input(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    """An array (sometimes strided, read-only, or a NumPy scalar; rarely a Python scalar)."""
    dtype = NUMERIC_DTYPES[rng.integers(len(NUMERIC_DTYPES))]
    size = int(np.prod(shape)) if shape else 1
    arr = numeric_values(dtype, size, rng).reshape(shape)
    flavour = rng.integers(0, 6)
    if flavour == 0 and arr.ndim >= 1 and arr.shape[-1] > 0:
        arr = np.repeat(arr, 2, axis=-1)[..., ::2]  # non-contiguous
    elif flavour == 1:
        arr = arr.copy()
        arr.setflags(write=False)
    elif flavour == 2 and arr.ndim == 0:
        return arr[()]  # a NumPy scalar
    elif (
        flavour == 3
        and arr.ndim == 0
        and arr.dtype.kind in "if"
        and not np.isnan(arr)
        and rng.random() < 0.3
    ):
        return arr.item()  # a Python scalar argument: traced as a weak literal
    return arr


def _layouts(value: Any) -> list[Any]:
    """Other memory layouts of one operand: a contiguous copy, a reversed view of a reversed
    copy, a strided view (NumPy's SIMD loops take some and scalar loops others)."""
    if not isinstance(value, np.ndarray) or value.ndim == 0 or value.size == 0:
        return [value]
    c = np.ascontiguousarray(value)
    rev = c[..., ::-1].copy()[..., ::-1]
    strided = np.repeat(c, 2, axis=-1)[..., ::2]
    return [c, rev, strided]


def bit_pattern(value: Any) -> tuple:
    """What "bitwise equal" compares: type, dtype, shape and the raw bytes (NaN payloads
    and the sign of zero included)."""
    a = np.asarray(value)
    return (
        type(value).__name__ if np.ndim(value) == 0 else "ndarray",
        a.dtype.str,
        a.shape,
        np.ascontiguousarray(a).tobytes(),
    )


def deterministic(
    step: Callable[[list[Any]], Any], env: list[Any], value: Any, operands: list[int]
) -> bool:
    """Does NumPy give ``value``'s bits for this step whatever the operands' layouts? (Two
    NaNs meeting in ``add``, ``fmax`` of ``-0.0`` and ``0.0`` ... come out of NumPy's SIMD
    lanes and its scalar tail differently; no executor can promise those bits.)"""
    want = bit_pattern(value)
    for k in range(3):
        trial = list(env)
        for i in operands:
            options = _layouts(env[i])
            trial[i] = options[min(k, len(options) - 1)]
        try:
            with np.errstate(all="ignore"):
                got = step(trial)
        except Exception:
            return False
        if bit_pattern(got)[1:] != want[1:]:
            return False
    return True


def make_numeric_program(seed: int, n_steps: int = 4) -> Program:
    """A short fusible program over numeric edge values (see :func:`numeric_values`) with
    weak Python literals at every width's edges (:data:`NUMERIC_LITERALS`), ``clip`` with
    scalar and array bounds (NaN and ``-0.0`` among them), ``where``, casts and, half of the
    time, a final reduction. Every step is run eagerly; a step NumPy rejects, or whose bits
    depend on the operands' memory layout (:func:`deterministic`), is dropped, so every
    executor must reproduce every result bitwise."""
    rng = np.random.default_rng(50_000 + seed)
    shape = NUMERIC_SHAPES[rng.integers(len(NUMERIC_SHAPES))]
    n_inputs = int(rng.integers(1, 4))
    inputs = [_numeric_input(rng, shape)]
    for _ in range(n_inputs - 1):
        inputs.append(_numeric_input(rng, _partner_shape(rng, shape)))
    prog = Program(inputs)
    env: list[Any] = list(inputs)

    def literal() -> Any:
        return NUMERIC_LITERALS[rng.integers(len(NUMERIC_LITERALS))]

    def candidate() -> tuple[str, Callable, list[int]]:
        i, j = int(rng.integers(len(env))), int(rng.integers(len(env)))
        choice = rng.integers(0, 10)
        if choice <= 1:
            uf = NUMERIC_UNARY[rng.integers(len(NUMERIC_UNARY))]
            return f"{uf.__name__}(v{i})", lambda e, uf=uf, i=i: uf(e[i]), [i]
        if choice <= 5:
            uf = NUMERIC_BINARY[rng.integers(len(NUMERIC_BINARY))]
            if rng.random() < 0.4:
                c = literal()
                if rng.random() < 0.5:
                    return (
                        f"{uf.__name__}(v{i}, {c!r})",
                        lambda e, uf=uf, i=i, c=c: uf(e[i], c),
                        [i],
                    )
                return f"{uf.__name__}({c!r}, v{i})", lambda e, uf=uf, i=i, c=c: uf(c, e[i]), [i]
            return (f"{uf.__name__}(v{i}, v{j})", lambda e, uf=uf, i=i, j=j: uf(e[i], e[j]), [i, j])
        if choice == 6:
            k = int(rng.integers(len(env)))
            return (
                f"where(v{i} > 0, v{j}, v{k})",
                lambda e, i=i, j=j, k=k: np.where(e[i] > 0, e[j], e[k]),
                [i, j, k],
            )
        if choice == 7:
            dt = NUMERIC_DTYPES[rng.integers(len(NUMERIC_DTYPES))]
            return (f"v{i}.astype({np.dtype(dt).name})", lambda e, i=i, dt=dt: e[i].astype(dt), [i])
        # clip: scalar bounds (NumPy's stride-0 loop), array bounds, or one bound missing
        form = rng.integers(0, 4)
        if form == 0:
            lo, hi = literal(), literal()
            return (
                f"clip(v{i}, {lo!r}, {hi!r})",
                lambda e, i=i, lo=lo, hi=hi: np.clip(e[i], lo, hi),
                [i],
            )
        if form == 1:
            k = int(rng.integers(len(env)))
            return (
                f"clip(v{i}, v{j}, v{k})",
                lambda e, i=i, j=j, k=k: np.clip(e[i], e[j], e[k]),
                [i, j, k],
            )
        if form == 2:
            hi = literal()
            return (
                f"clip(v{i}, v{j}, {hi!r})",
                lambda e, i=i, j=j, hi=hi: np.clip(e[i], e[j], hi),
                [i, j],
            )
        lo = literal()
        return (f"clip(v{i}, {lo!r}, None)", lambda e, i=i, lo=lo: np.clip(e[i], lo, None), [i])

    attempts = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(prog.steps) < n_steps and attempts < 300:
            attempts += 1
            name, step, operands = candidate()
            try:
                with np.errstate(all="ignore"):
                    value = step(env)
            except Exception:
                continue
            if np.asarray(value).dtype.kind not in "biuf" or not deterministic(
                step, env, value, operands
            ):
                continue
            prog.steps.append((name, step))
            env.append(value)
        if prog.steps and rng.random() < 0.5:
            last = len(env) - 1
            red = NUMERIC_REDUCTIONS[rng.integers(len(NUMERIC_REDUCTIONS))]
            nd = np.ndim(env[last])
            axis = None if nd == 0 or rng.random() < 0.5 else int(rng.integers(-nd, nd))
            keep = bool(rng.random() < 0.3)
            step = lambda e, r=red, i=last, a=axis, k=keep: r(e[i], axis=a, keepdims=k)
            try:
                with np.errstate(all="ignore"):
                    value = step(env)
                if deterministic(step, env, value, [last]):
                    prog.steps.append(
                        (f"{red.__name__}(v{last}, axis={axis}, keepdims={keep})", step)
                    )
                    env.append(value)
            except Exception:
                pass
    prog.n_outputs = 2 if len(prog.steps) >= 2 and rng.random() < 0.4 else 1
    return prog


# ---------------------------------------------------------------------------------------------
# Coverage programs: the linalg, fft and array-helper functions traced natively
# (``numpy_api``'s compositions) mixed with ufuncs, with random axes, counts and orders
# ---------------------------------------------------------------------------------------------

COVERAGE_UNARY = [
    np.negative,
    np.absolute,
    np.sqrt,
    np.exp,
    np.square,
    np.sign,
    np.conjugate,
    np.isfinite,
]
COVERAGE_BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.less]


def _coverage_input(rng: np.random.Generator) -> Any:
    """A :func:`_random_array` (dtypes, 0-d, size-0, strided, read-only, NumPy scalars), or
    (15 %) a complex64/complex128 array, strided half of the time; a third are square stacks
    (``(n, n)``, ``(2, n, n)``, n in 0..3), what np.linalg takes."""
    n = int(rng.integers(0, 4))
    shape = _random_shape(rng) if rng.random() < 0.67 else ((n, n), (2, n, n))[rng.integers(2)]
    if rng.random() >= 0.15:
        return _random_array(rng, shape)
    dtype = np.complex64 if rng.random() < 0.5 else np.complex128
    arr = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if arr.ndim and arr.shape[-1] and rng.random() < 0.5:
        arr = np.repeat(arr, 2, axis=-1)[..., ::2]
    return arr


def _hermitian(x: Any) -> Any:
    """A Hermitian positive definite stack from a square stack ``x``: ``x @ x^H + n I``."""
    n = np.shape(x)[-1]
    s = np.matmul(x, np.conj(np.swapaxes(x, -1, -2)))
    return np.add(s, np.multiply(np.eye(n, dtype=np.float32), n))


def _linalg_step(
    rng: np.random.Generator, i: int, j: int, nd: int, axis: int
) -> tuple[str, Callable]:
    """np.linalg (and matrix products) on earlier values; invalid shapes fail eagerly."""
    k = int(rng.integers(0, 2))
    c = int(rng.integers(0, 16))
    if c == 0:
        up = bool(rng.random() < 0.5)
        return (
            f"cholesky(herm(v{i}), upper={up})",
            lambda e, i=i, u=up: np.linalg.cholesky(_hermitian(e[i]), upper=u),
        )
    if c == 1:
        mode = ["reduced", "complete", "r"][rng.integers(3)]
        return (
            f"qr(v{i}, {mode!r})[{k}]",
            lambda e, i=i, m=mode, k=k: _pick(np.linalg.qr(e[i], m), k),
        )
    if c == 2:
        uplo = "L" if rng.random() < 0.5 else "U"
        return (
            f"eigh(herm(v{i}), {uplo!r})[{k}]",
            lambda e, i=i, u=uplo, k=k: np.linalg.eigh(_hermitian(e[i]), u)[k],
        )
    if c == 3:
        return (f"eigvalsh(herm(v{i}))", lambda e, i=i: np.linalg.eigvalsh(_hermitian(e[i])))
    if c == 4:
        return (f"lstsq(v{i}, v{j})[{k}]", lambda e, i=i, j=j, k=k: np.linalg.lstsq(e[i], e[j])[k])
    if c == 5:
        herm = bool(rng.random() < 0.3)
        return (
            f"pinv(v{i}, hermitian={herm})",
            lambda e, i=i, h=herm: np.linalg.pinv(_hermitian(e[i]) if h else e[i], hermitian=h),
        )
    if c == 6:
        ords = [None, 1, 2, -1, np.inf, -np.inf, 0, 3, "fro", "nuc", -2]
        o = ords[rng.integers(len(ords))]
        ax = [None, axis, (0, 1), (-1, 0)][rng.integers(4)]
        keep = bool(rng.random() < 0.3)
        return (
            f"norm(v{i}, {o!r}, axis={ax}, keepdims={keep})",
            lambda e, i=i, o=o, a=ax, kd=keep: np.linalg.norm(e[i], o, a, kd),
        )
    if c == 7:
        n = int(rng.integers(-1, 4))
        return (f"matrix_power(v{i}, {n})", lambda e, i=i, n=n: np.linalg.matrix_power(e[i], n))
    if c == 8:
        return (
            f"multi_dot([v{i}, v{j}, v{i}.T])",
            lambda e, i=i, j=j: np.linalg.multi_dot([e[i], e[j], np.transpose(e[i])]),
        )
    if c == 9:
        fn = [np.linalg.svdvals, np.linalg.matrix_rank, np.linalg.cond, np.linalg.matrix_transpose][
            rng.integers(4)
        ]
        return f"{fn.__name__}(v{i})", lambda e, i=i, fn=fn: fn(e[i])
    if c == 10:
        o = [2, 1, np.inf, 0, -1][rng.integers(5)]
        return (
            f"vector_norm(v{i}, axis={axis}, ord={o})",
            lambda e, i=i, a=axis, o=o: np.linalg.vector_norm(e[i], axis=a, ord=o),
        )
    if c == 11:
        o = ["fro", "nuc", 1, -1, np.inf, 2][rng.integers(6)]
        return (
            f"matrix_norm(v{i}, ord={o!r})",
            lambda e, i=i, o=o: np.linalg.matrix_norm(e[i], ord=o),
        )
    if c == 12:
        ax = int(rng.integers(0, 3))
        return (
            f"tensordot(v{i}, v{j}, {ax})",
            lambda e, i=i, j=j, a=ax: np.tensordot(e[i], e[j], a),
        )
    if c == 13:
        fn = [np.inner, np.kron, np.outer, np.linalg.vecdot, np.cross][rng.integers(5)]
        return f"{fn.__name__}(v{i}, v{j})", lambda e, i=i, j=j, fn=fn: fn(e[i], e[j])
    if c == 14:
        off = int(rng.integers(-1, 2))
        return (f"trace(v{i}, {off})", lambda e, i=i, o=off: np.trace(e[i], o))
    off = int(rng.integers(-1, 2))
    return (f"diagonal(v{i}, {off}, 0, -1)", lambda e, i=i, o=off: np.diagonal(e[i], o, 0, -1))


def _pick(value: Any, k: int) -> Any:
    return value[k] if isinstance(value, tuple) else value


FFTS = [np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.hfft, np.fft.ihfft]
FFTNS = [np.fft.fftn, np.fft.ifftn, np.fft.rfftn, np.fft.irfftn, np.fft.fft2, np.fft.ifft2]


def _fft_step(rng: np.random.Generator, i: int, nd: int, axis: int) -> tuple[str, Callable]:
    """np.fft transforms with random ``n``/``s``, axes and norms, and the shifts."""
    norm = [None, "ortho", "forward", "backward"][rng.integers(4)]
    c = int(rng.integers(0, 4))
    if c == 0:
        fn = FFTS[rng.integers(len(FFTS))]
        n = [None, 1, 4, 5][rng.integers(4)]
        return (
            f"{fn.__name__}(v{i}, {n}, {axis}, {norm!r})",
            lambda e, i=i, fn=fn, n=n, a=axis, m=norm: fn(e[i], n, a, m),
        )
    if c == 1:
        fn = FFTNS[rng.integers(len(FFTNS))]
        axes = None if rng.random() < 0.5 else (axis,) if nd < 2 else (0, -1)
        s = None if axes is None or rng.random() < 0.5 else tuple(3 for _ in axes)
        return (
            f"{fn.__name__}(v{i}, s={s}, axes={axes}, norm={norm!r})",
            lambda e, i=i, fn=fn, s=s, a=axes, m=norm: fn(e[i], s=s, axes=a, norm=m),
        )
    fn = np.fft.fftshift if c == 2 else np.fft.ifftshift
    axes = None if rng.random() < 0.5 else axis
    return f"{fn.__name__}(v{i}, {axes})", lambda e, i=i, fn=fn, a=axes: fn(e[i], a)


def _search_step(
    rng: np.random.Generator, i: int, j: int, nd: int, axis: int
) -> tuple[str, Callable]:
    """Sorting, searching, set and index functions."""
    c = int(rng.integers(0, 12))
    if c == 0:
        side = "left" if rng.random() < 0.5 else "right"
        return (
            f"searchsorted(sort(ravel(v{j})), v{i}, {side!r})",
            lambda e, i=i, j=j, s=side: np.searchsorted(np.sort(np.ravel(e[j])), e[i], s),
        )
    if c == 1:
        right = bool(rng.random() < 0.5)
        bins = [-2.0, 0.0, 0.5, 3.0] if rng.random() < 0.5 else [3, 1, 0, -1]
        return (
            f"digitize(v{i}, {bins}, right={right})",
            lambda e, i=i, b=bins, r=right: np.digitize(e[i], b, r),
        )
    if c == 2:
        kth = int(rng.integers(-2, 3))
        ax = None if rng.random() < 0.3 else axis
        return (
            f"partition(v{i}, {kth}, axis={ax})",
            lambda e, i=i, k=kth, a=ax: np.partition(e[i], k, axis=a),
        )
    if c == 3:
        return (f"lexsort((v{i}, v{j}))", lambda e, i=i, j=j: np.lexsort((e[i], e[j])))
    if c == 4:
        inv = bool(rng.random() < 0.3)
        return (
            f"isin(v{i}, v{j}, invert={inv})",
            lambda e, i=i, j=j, v=inv: np.isin(e[i], e[j], invert=v),
        )
    if c == 5:
        fn = [np.setdiff1d, np.intersect1d, np.setxor1d, np.union1d][rng.integers(4)]
        return f"{fn.__name__}(v{i}, v{j})", lambda e, i=i, j=j, fn=fn: fn(e[i], e[j])
    if c == 6:
        mode = ["raise", "wrap", "clip"][rng.integers(3)]
        dims = (3, 4)
        return (
            f"ravel_multi_index((v{i}, v{j}), {dims}, {mode!r})",
            lambda e, i=i, j=j, d=dims, m=mode: np.ravel_multi_index((e[i], e[j]), d, mode=m),
        )
    if c == 7:
        order = "C" if rng.random() < 0.5 else "F"
        k = int(rng.integers(0, 2))
        return (
            f"unravel_index(abs(v{i}) % 12, (3, 4), {order!r})[{k}]",
            lambda e, i=i, o=order, k=k: np.unravel_index(
                np.remainder(np.absolute(e[i]), 12), (3, 4), order=o
            )[k],
        )
    if c == 8:
        ax = None if rng.random() < 0.4 else axis
        bo = "big" if rng.random() < 0.5 else "little"
        return (f"packbits(v{i}, {ax}, {bo!r})", lambda e, i=i, a=ax, b=bo: np.packbits(e[i], a, b))
    if c == 9:
        ax = None if rng.random() < 0.4 else axis
        cnt = [None, 3, -2][rng.integers(3)]
        return (
            f"unpackbits(v{i}, {ax}, {cnt})",
            lambda e, i=i, a=ax, n=cnt: np.unpackbits(e[i], a, n),
        )
    if c == 10:
        return (
            f"take_along_axis(v{i}, argsort(v{i}, {axis}), {axis})",
            lambda e, i=i, a=axis: np.take_along_axis(e[i], np.argsort(e[i], a), a),
        )
    return (
        f"choose(abs(v{i}) % 2, (v{i}, v{j}))",
        lambda e, i=i, j=j: np.choose(np.remainder(np.absolute(e[i]), 2), (e[i], e[j])),
    )


def _shape_step(
    rng: np.random.Generator, i: int, j: int, nd: int, axis: int
) -> tuple[str, Callable]:
    """Splits, stacks, tiling, rotation and the other shape helpers."""
    k = int(rng.integers(0, 2))
    c = int(rng.integers(0, 16))
    if c == 0:
        fn = [np.split, np.array_split][rng.integers(2)]
        sec = [1, 2, 3, [1, 2], [0, -1]][rng.integers(5)]
        return (
            f"{fn.__name__}(v{i}, {sec}, {axis})[{k}]",
            lambda e, i=i, fn=fn, s=sec, a=axis, k=k: fn(e[i], s, a)[k],
        )
    if c == 1:
        fn = [np.hsplit, np.vsplit, np.dsplit, np.unstack][rng.integers(4)]
        if fn is np.unstack:
            return (
                f"unstack(v{i}, axis={axis})[{k}]",
                lambda e, i=i, a=axis, k=k: np.unstack(e[i], axis=a)[k],
            )
        return f"{fn.__name__}(v{i}, 1)[0]", lambda e, i=i, fn=fn: fn(e[i], 1)[0]
    if c == 2:
        reps = [2, (2, 1), (1, 0, 2), 0][rng.integers(4)]
        return f"tile(v{i}, {reps})", lambda e, i=i, r=reps: np.tile(e[i], r)
    if c == 3:
        reps = [2, 0, [1, 0, 2]][rng.integers(3)]
        ax = None if rng.random() < 0.4 else axis
        return f"repeat(v{i}, {reps}, {ax})", lambda e, i=i, r=reps, a=ax: np.repeat(e[i], r, a)
    if c == 4:
        shift = [1, -2, 5, (1, -1)][rng.integers(4)]
        ax = None if rng.random() < 0.4 else axis if np.ndim(shift) == 0 else (0, -1)
        return f"roll(v{i}, {shift}, {ax})", lambda e, i=i, s=shift, a=ax: np.roll(e[i], s, a)
    if c == 5:
        n = int(rng.integers(-1, 4))
        axes = (0, 1) if rng.random() < 0.5 else (-1, 0)
        return f"rot90(v{i}, {n}, {axes})", lambda e, i=i, n=n, a=axes: np.rot90(e[i], n, a)
    if c == 6:
        fn = [np.fliplr, np.flipud, np.atleast_1d, np.atleast_2d, np.atleast_3d][rng.integers(5)]
        return f"{fn.__name__}(v{i})", lambda e, i=i, fn=fn: fn(e[i])
    if c == 7:
        fn = [np.column_stack, np.dstack, np.vstack, np.hstack, np.stack][rng.integers(5)]
        return f"{fn.__name__}((v{i}, v{j}))", lambda e, i=i, j=j, fn=fn: fn((e[i], e[j]))
    if c == 8:
        return (f"block([[v{i}, v{j}]])", lambda e, i=i, j=j: np.block([[e[i], e[j]]]))
    if c == 9:
        src, dst = int(rng.integers(-nd, nd)) if nd else 0, axis
        fn = np.moveaxis if rng.random() < 0.5 else np.swapaxes
        return (
            f"{fn.__name__}(v{i}, {src}, {dst})",
            lambda e, i=i, fn=fn, s=src, d=dst: fn(e[i], s, d),
        )
    if c == 10:
        ax = None if rng.random() < 0.5 else axis
        if rng.random() < 0.5:
            return (f"append(v{i}, v{j}, {ax})", lambda e, i=i, j=j, a=ax: np.append(e[i], e[j], a))
        obj = [0, -1, [0, 1], slice(None, None, 2)][rng.integers(4)]
        return f"delete(v{i}, {obj}, {ax})", lambda e, i=i, o=obj, a=ax: np.delete(e[i], o, a)
    if c == 11:
        shape = [(5,), (2, 3), (0,), ()][rng.integers(4)]
        return f"resize(v{i}, {shape})", lambda e, i=i, s=shape: np.resize(e[i], s)
    if c == 12:
        return (
            f"broadcast_arrays(v{i}, v{j})[{k}]",
            lambda e, i=i, j=j, k=k: np.broadcast_arrays(e[i], e[j])[k],
        )
    if c == 13:
        ix = "xy" if rng.random() < 0.5 else "ij"
        sparse = bool(rng.random() < 0.3)
        return (
            f"meshgrid(v{i}, v{j}, indexing={ix!r}, sparse={sparse})[{k}]",
            lambda e, i=i, j=j, x=ix, s=sparse, k=k: np.meshgrid(e[i], e[j], indexing=x, sparse=s)[
                k
            ],
        )
    if c == 14:
        off = int(rng.integers(-1, 2))
        return f"diag(v{i}, {off})", lambda e, i=i, o=off: np.diag(e[i], o)
    fn = [np.tril_indices_from, np.triu_indices_from, np.diag_indices_from][rng.integers(3)]
    return (f"v{i}[{fn.__name__}(v{i})]", lambda e, i=i, fn=fn: e[i][fn(e[i])])


def _stats_step(
    rng: np.random.Generator, i: int, j: int, nd: int, axis: int
) -> tuple[str, Callable]:
    """Statistics, comparisons, polynomials and the complex/real helpers."""
    ax = None if rng.random() < 0.4 else axis
    c = int(rng.integers(0, 16))
    if c == 0:
        rowvar = bool(rng.random() < 0.7)
        if rng.random() < 0.5:
            ddof = [None, 0, 1][rng.integers(3)]
            return (
                f"cov(v{i}, rowvar={rowvar}, ddof={ddof})",
                lambda e, i=i, r=rowvar, d=ddof: np.cov(e[i], rowvar=r, ddof=d),
            )
        return (
            f"corrcoef(v{i}, rowvar={rowvar})",
            lambda e, i=i, r=rowvar: np.corrcoef(e[i], rowvar=r),
        )
    if c == 1:
        if rng.random() < 0.5:
            return (
                f"average(v{i}, {ax}, weights=v{j})",
                lambda e, i=i, j=j, a=ax: np.average(e[i], a, weights=e[j]),
            )
        keep = bool(rng.random() < 0.3)
        return (
            f"average(v{i}, {ax}, keepdims={keep})",
            lambda e, i=i, a=ax, k=keep: np.average(e[i], a, keepdims=k),
        )
    if c == 2:
        return f"ptp(v{i}, {ax})", lambda e, i=i, a=ax: np.ptp(e[i], a)
    if c == 3:
        fn = [np.allclose, np.isclose, np.array_equal, np.array_equiv][rng.integers(4)]
        return f"{fn.__name__}(v{i}, v{j})", lambda e, i=i, j=j, fn=fn: fn(e[i], e[j])
    if c == 4:
        return (
            f"select([v{i} > 0, v{j} < 0], [v{i}, v{j}], -1)",
            lambda e, i=i, j=j: np.select(
                [np.greater(e[i], 0), np.less(e[j], 0)], [e[i], e[j]], -1
            ),
        )
    if c == 5:
        return (
            f"piecewise(v{i}, [v{i} > 0], [-1, 1])",
            lambda e, i=i: np.piecewise(e[i], [np.greater(e[i], 0)], [-1, 1]),
        )
    if c == 6:
        dec = int(rng.integers(-1, 3))
        return f"round(v{i}, {dec})", lambda e, i=i, d=dec: np.round(e[i], d)
    if c == 7:
        if rng.random() < 0.5:
            edge = int(rng.integers(1, 3))
            return (
                f"gradient(v{i}, axis={ax}, edge_order={edge})",
                lambda e, i=i, a=ax, g=edge: _pick(np.gradient(e[i], axis=a, edge_order=g), 0),
            )
        return (
            f"gradient(v{i}, 0.5, axis={axis})",
            lambda e, i=i, a=axis: np.gradient(e[i], 0.5, axis=a),
        )
    if c == 8:
        fn = [
            np.real,
            np.imag,
            np.angle,
            np.iscomplex,
            np.isreal,
            np.sinc,
            np.fix,
            np.isneginf,
            np.isposinf,
            np.nan_to_num,
            np.sort_complex,
        ][rng.integers(11)]
        return f"{fn.__name__}(v{i})", lambda e, i=i, fn=fn: fn(e[i])
    if c == 9:
        return (f"trapezoid(v{i}, axis={axis})", lambda e, i=i, a=axis: np.trapezoid(e[i], axis=a))
    if c == 10:
        return (
            f"ediff1d(v{i}, [1], [-1, 2])",
            lambda e, i=i: np.ediff1d(e[i], to_end=[1], to_begin=[-1, 2]),
        )
    if c == 11:
        return (f"unwrap(v{i}, axis={axis})", lambda e, i=i, a=axis: np.unwrap(e[i], axis=a))
    if c == 12:
        return f"polyval(v{j}, v{i})", lambda e, i=i, j=j: np.polyval(e[j], e[i])
    if c == 13:
        fn = [np.polyder, np.polyint][rng.integers(2)]
        m = int(rng.integers(0, 3))
        return f"{fn.__name__}(v{i}, {m})", lambda e, i=i, fn=fn, m=m: fn(e[i], m)
    if c == 14:
        n = [None, 0, 3][rng.integers(3)]
        inc = bool(rng.random() < 0.5)
        return (f"vander(v{i}, {n}, {inc})", lambda e, i=i, n=n, c=inc: np.vander(e[i], n, c))
    return (
        f"histogram_bin_edges(v{i}, 4, (-2, 2))",
        lambda e, i=i: np.histogram_bin_edges(e[i], 4, (-2, 2)),
    )


def _coverage_step(rng: np.random.Generator, env: list[Any]) -> tuple[str, Callable]:
    """One step applying a coverage function (or a ufunc, to mix them) to earlier values."""
    i = int(rng.integers(len(env)))
    j = int(rng.integers(len(env)))
    nd = np.ndim(env[i])
    axis = int(rng.integers(-nd, nd)) if nd else 0
    group = int(rng.integers(0, 6))
    if group == 0:
        return _linalg_step(rng, i, j, nd, axis)
    if group == 1:
        return _fft_step(rng, i, nd, axis)
    if group == 2:
        return _search_step(rng, i, j, nd, axis)
    if group == 3:
        return _shape_step(rng, i, j, nd, axis)
    if group == 4:
        return _stats_step(rng, i, j, nd, axis)
    if rng.random() < 0.5:
        uf = COVERAGE_UNARY[rng.integers(len(COVERAGE_UNARY))]
        return f"{uf.__name__}(v{i})", lambda e, uf=uf, i=i: uf(e[i])
    return _binary_step(rng, COVERAGE_BINARY, [0, 2, -1, 0.5, 1j], i, j)


def make_coverage_program(seed: int, n_steps: int = 5) -> Program:
    """A random program of the functions traced natively as compositions (linalg, fft,
    searching, sets, shape helpers, statistics, polynomials) and ufuncs over random inputs
    (dtypes incl. complex, 0-d, size-0, non-contiguous, read-only); every step was run eagerly
    while building, so the program is valid NumPy."""
    rng = np.random.default_rng(70_000 + seed)
    inputs = [_coverage_input(rng) for _ in range(int(rng.integers(1, 3)))]
    return grow_program(
        rng,
        inputs,
        _coverage_step,
        n_steps,
        lambda value: (
            isinstance(value, (np.ndarray, np.generic, bool, int, float, complex))
            and np.size(value) <= 10_000
            and np.asarray(value).dtype != object
        ),
    )


def grow_program(
    rng: np.random.Generator,
    inputs: list[Any],
    make_step: Callable[[np.random.Generator, list[Any]], tuple[str, Callable]],
    n_steps: int,
    keep: Callable[[Any], bool],
) -> Program:
    """A program of ``n_steps`` steps drawn by ``make_step``, each run eagerly while building
    and kept when NumPy accepts it and ``keep`` its value (so the program is valid NumPy)."""
    prog = Program(inputs)
    env = list(inputs)
    attempts = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(prog.steps) < n_steps and attempts < 200:
            attempts += 1
            name, step = make_step(rng, env)
            try:
                with np.errstate(all="ignore"):
                    value = step(env)
            except Exception:
                continue
            if not keep(value):
                continue
            prog.steps.append((name, step))
            env.append(value)
    prog.n_outputs = int(min(len(prog.steps), rng.integers(1, 3))) or 1
    return prog


# ---------------------------------------------------------------------------------------------
# Keyword programs: native functions called with the keywords of their NumPy signature, on
# integer inputs to float-looking functions (round, mean, std), mixed-rank operands with
# ``axis=``, and 0-d inputs and outputs (NumPy scalars and 0-d arrays): what a traced call that
# drops or approximates an argument gets wrong
# ---------------------------------------------------------------------------------------------

KEYWORD_DTYPES = [np.float64, np.float32, np.int8, np.int16, np.int32, np.int64, np.uint8]
KEYWORD_SHAPES = [(), (5,), (3, 4), (2, 3, 4)]


def _keyword_input(rng: np.random.Generator) -> Any:
    dtype = KEYWORD_DTYPES[rng.integers(len(KEYWORD_DTYPES))]
    shape = KEYWORD_SHAPES[rng.integers(len(KEYWORD_SHAPES))]
    if np.dtype(dtype).kind == "f":
        value = np.round(rng.standard_normal(shape) * 40, int(rng.integers(0, 3)))
    else:
        info = np.iinfo(dtype)
        value = rng.integers(max(info.min, -120), min(info.max, 120), shape, endpoint=True)
    value = np.asarray(value).astype(dtype)
    if shape == () and rng.random() < 0.5:
        return value[()]  # a NumPy scalar
    return value


def _axis_of(rng: np.random.Generator, nd: int) -> Any:
    return None if nd == 0 or rng.random() < 0.3 else int(rng.integers(-nd, nd))


def _keyword_step(rng: np.random.Generator, env: list[Any]) -> tuple[str, Callable]:
    """One native function with a random choice of its keywords (valid or not for this
    input: a call NumPy rejects is dropped while building)."""
    i = int(rng.integers(len(env)))
    j = int(rng.integers(len(env)))
    nd = np.ndim(env[i])
    axis = _axis_of(rng, nd)
    kind = int(rng.integers(0, 10))
    kw: dict[str, Any] = {}
    if kind == 0:
        fn = [np.std, np.var][rng.integers(2)]
        kw = {"axis": axis, ["ddof", "correction"][rng.integers(2)]: int(rng.integers(0, 3))}
    elif kind == 1:
        fn = [np.mean, np.sum, np.prod, np.max, np.min][rng.integers(5)]
        kw = {"axis": axis, "keepdims": bool(rng.random() < 0.5)}
        if rng.random() < 0.4:
            kw["where"] = np.asarray(env[i]) > 0 if rng.random() < 0.5 else True
        if fn in (np.sum, np.prod, np.max, np.min) and rng.random() < 0.4:
            kw["initial"] = int(rng.integers(-3, 4))
        if fn in (np.mean, np.sum, np.prod) and rng.random() < 0.3:
            kw["dtype"] = [np.float32, np.int64, np.float64][rng.integers(3)]
    elif kind == 2:
        fn = [np.round, np.around][rng.integers(2)]
        kw = {"decimals": int(rng.integers(-3, 3))}
    elif kind == 3:
        fn = np.clip
        lo, hi = sorted(int(v) for v in rng.integers(-50, 50, 2))
        kw = {"a_min": lo, "a_max": hi}
        if rng.random() < 0.4:
            kw["dtype"] = [np.float64, np.int64][rng.integers(2)]
    elif kind == 4:
        fn = np.linalg.vecdot
        # mixed rank: the other operand is v_i reduced by one leading axis, or v_j
        other = f"v{i}[0]" if nd >= 2 and rng.random() < 0.6 else f"v{j}"
        ax = int(rng.integers(-max(nd, 1), max(nd, 1))) if nd else -1
        return (
            f"linalg.vecdot(v{i}, {other}, axis={ax})",
            lambda e, i=i, j=j, ax=ax, o=other: np.linalg.vecdot(
                e[i], e[i][0] if o.endswith("[0]") else e[j], axis=ax
            ),
        )
    elif kind == 5:
        fn = [np.cumsum, np.cumprod][rng.integers(2)]
        kw = {"axis": axis if nd else None}
        if rng.random() < 0.5:
            kw["dtype"] = [np.float64, np.int64, np.float32][rng.integers(3)]
    elif kind == 6:
        fn = [np.median, np.percentile, np.quantile][rng.integers(3)]
        if fn is not np.median:
            kw["q"] = float(rng.integers(0, 100)) / (100 if fn is np.quantile else 1)
            kw["method"] = ["linear", "lower", "nearest", "midpoint"][rng.integers(4)]
        kw.update(axis=axis, keepdims=bool(rng.random() < 0.5))
    elif kind == 7:
        fn = [np.sort, np.argsort][rng.integers(2)]
        kw = {
            "axis": axis if axis is not None else -1,
            "kind": [None, "stable", "quicksort"][rng.integers(3)],
        }
    elif kind == 8:
        fn = np.nan_to_num
        kw = {"nan": float(rng.integers(-5, 5)), "posinf": 9.0, "neginf": -9.0}
    else:
        fn = [np.argmax, np.argmin, np.any, np.all, np.count_nonzero][rng.integers(5)]
        kw = {"axis": axis, "keepdims": bool(rng.random() < 0.5)}
    text = ", ".join(f"{k}={_describe(v)}" for k, v in kw.items())
    return (
        f"{fn.__name__}(v{i}, {text})",
        lambda e, fn=fn, i=i, kw=kw: fn(
            e[i],
            **{k: (np.greater(e[i], 0) if isinstance(v, np.ndarray) else v) for k, v in kw.items()},
        ),
    )


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return "<v > 0>"
    return getattr(value, "__name__", None) or repr(value)


def make_keyword_program(seed: int, n_steps: int = 4) -> Program:
    """A random program of native functions called with keywords of their NumPy signature
    (``correction=``, ``where=``, ``initial=``, ``decimals=`` on integers, ``axis=`` of
    mixed-rank operands, ...) over integer, float and 0-d inputs; every step was run eagerly
    while building, so the program is valid NumPy."""
    rng = np.random.default_rng(90_000 + seed)
    inputs = [_keyword_input(rng) for _ in range(int(rng.integers(1, 3)))]
    return grow_program(
        rng,
        inputs,
        _keyword_step,
        n_steps,
        lambda value: isinstance(value, (np.ndarray, np.generic)),
    )

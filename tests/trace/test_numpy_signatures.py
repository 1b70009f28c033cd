"""No argument is ever dropped: every natively traced NumPy function, every parameter.

The walk (:func:`test_every_parameter_of_every_native_function_matches_eager`) takes each
function of ``kx.trace.HANDLERS``, finds a base call NumPy accepts (required arguments drawn
from :data:`BASE` by parameter name), then calls it once per parameter of NumPy's signature
with a non-default value from :data:`SAMPLES` (also by name), through ``kx.function`` and
eagerly, and compares everything a caller can see: the value (bitwise, NaN-equal, the sign of
zeros), dtype, shape, 0-d form (NumPy scalar or 0-d array), the arguments after the call, and
the exception type where NumPy raises. The array methods get the same walk. The numpy
backend runs the whole walk; a smaller sample runs on ``auto``, ``numba`` and ``jit_compile``.
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.ir import interpret
from kernel_ext.trace.signatures import is_default, numpy_signature

_rng = np.random.default_rng(7)
F2 = np.round(_rng.standard_normal((3, 4)) * 4, 1)
F2[0, 1] = 0.5
F2[1, 2] = -2.5
F1 = np.array([0.5, -1.5, 2.0, 3.25, -0.0, 7.0])
SQ = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]])
I2 = _rng.integers(-9, 9, (3, 4))
I1 = np.array([3, 0, 2, 2, 5, 1])
C1 = F1 + 1j * F1[::-1]
B2 = F2 > 0
B1 = F1 > 0
IDX = np.array([0, 1, 1, 0, 1, 0])
F3 = np.round(_rng.standard_normal((2, 2, 4)) * 4, 1)
T3 = np.eye(6).reshape(6, 2, 3) * 2.0 + 0.25
U1 = np.array([3, 255, 0, 17], np.uint8)
DATA = (F2, F1, SQ, I2, I1, C1, IDX, F3, T3, U1)

#: Candidate values of a required parameter, by its name: the walk takes the first
#: combination NumPy accepts as the base call.
BASE: dict[str, tuple] = {
    **{
        n: DATA
        for n in (
            "a",
            "x",
            "m",
            "ar",
            "arr",
            "array",
            "ary",
            "f",
            "p",
            "v",
            "filt",
            "val",
            "x1",
            "x2",
            "a1",
            "a2",
            "b",
            "A",
            "z",
            "element",
            "ar1",
            "ar2",
            "y",
            "prototype",
            "M",
            "c",
            "u",
        )
    },
    "test_elements": (F1, I1),
    "condition": (B1, B2),
    "condlist": ([B1],),
    "mask": (B2, B1),
    "choicelist": ([F1],),
    "funclist": ([1.0, 2.0],),
    "choices": ([F1, -F1],),
    "indices": (np.array([0, 2, 1]), np.array([[0, 1, 2, 0]] * 3), 1),
    "ind": (np.array([0, 2]),),
    "obj": (1, np.array([0, 2])),
    "values": (F1[:3], 9.0),
    "vals": (F1[:2],),
    "kth": (1,),
    "q": (50.0, 0.5),
    "shape": ((4, 3), (12,), (2, 3, 4)),
    "new_shape": ((4, 3),),
    "newshape": ((4, 3),),
    "reps": (2,),
    "repeats": (2,),
    "shift": (1,),
    "source": (0,),
    "destination": (1,),
    "axis1": (0,),
    "axis2": (1,),
    "indices_or_sections": (2, 3),
    "deg": (1,),
    "bins": (np.array([-1.0, 0.0, 2.0]),),
    "xp": (np.linspace(-2.0, 8.0, 6),),
    "fp": (F1,),
    "pad_width": (1,),
    "fill_value": (7,),
    "dst": (F2.copy(), F1.copy()),
    "src": (F2, F1),
    "dims": ((3, 4),),
    "multi_index": ((np.array([0, 2]), np.array([1, 3])),),
    "keys": ((F1, I1),),
    "k": (1,),
    "dtype": (np.float32,),
    "axis": (0,),
    "axes": (1,),
    "func1d": (np.sum,),
    "func": (np.sum,),
    "tup": ((F1, F1), (F2, F2)),
    "arrays": ((F1, F1), (F2, F2), [SQ, SQ]),
    "xi": ((F1, I1),),
    "arys": ((F2,), (F1,)),
    "args": ((F2, F1[:4]), (F1,)),
    "operands": (("ij,jk->ik", SQ, SQ), ("i,i", F1, F1)),
    "subscripts": ("ij,jk->ik",),
    "to_begin": (None,),
    "N": (3,),
    "n": (2,),
}

#: Non-default values of a parameter, by its name (``callable(base_kwargs)`` where the
#: value depends on the data). At most two are tried per parameter.
SAMPLES: dict[str, tuple] = {
    "axis": (0, -1),
    "axes": ((1, 0), 0),
    "dtype": (np.float32, np.int32),
    "keepdims": (True,),
    "ddof": (1,),
    "correction": (1, 2),
    "out": ("out",),
    "casting": ("unsafe", "no"),
    "order": ("F", "A"),
    "decimals": (1, -1),
    "mode": ("wrap", "clip"),
    "kind": ("stable", "mergesort"),
    "stable": (True,),
    "side": ("right",),
    "copy": (False,),
    "subok": (True, False),
    "device": ("cpu",),
    "fill_value": (7,),
    "k": (1, -1),
    "offset": (1,),
    "rtol": (0.5,),
    "atol": (0.5,),
    "equal_nan": (True, False),
    "return_index": (True,),
    "return_inverse": (True,),
    "return_counts": (True,),
    "invert": (True,),
    "assume_unique": (True,),
    "minlength": (10,),
    "prepend": (0.0,),
    "append": (9.0,),
    "n": (2,),
    "bins": (3,),
    "range": ((-1.0, 1.0),),
    "density": (True,),
    "left": (-1.0,),
    "right": (-2.0, True),
    "period": (3.0,),
    "full_matrices": (False,),
    "compute_uv": (False,),
    "hermitian": (True,),
    "UPLO": ("U",),
    "rcond": (1e-3,),
    "ord": (1, np.inf),
    "nan": (1.5,),
    "posinf": (9.0,),
    "neginf": (-9.0,),
    "overwrite_input": (True,),
    "method": ("nearest", "lower"),
    "include_initial": (True,),
    "edge_order": (2,),
    "bitorder": ("little",),
    "count": (3,),
    "to_end": (np.array([9.0]),),
    "to_begin": (np.array([-9.0]),),
    "discont": (1.0,),
    "increasing": (True,),
    "rowvar": (False,),
    "bias": (True,),
    "returned": (True,),
    "initial": (10.0, -3.0),
    "where": (lambda b: _mask_like(b),),
    "weights": (lambda b: _weights_like(b),),
    "mean": (lambda b: np.mean(b["_data"], keepdims=True),),
    "sorted": (False,),
    "min": (0.0,),
    "max": (1.0,),
    "a_min": (0.0, None),
    "a_max": (1.0, None),
    "optimize": (True, "greedy"),
    "shape": ((2, 2),),
    "repeats": (3,),
    "reps": (3,),
    "shift": (2,),
    "trim": ("f",),
    "sparse": (True,),
    "indexing": ("ij",),
    "dx": (0.5,),
    "x": (lambda b: np.linspace(0.0, 1.0, np.shape(b["_data"])[-1]),),
    "upper": (True,),
    "rtol_": (),
    "tol": (0.5,),
    "p": (1, "fro"),
    "mode_qr": (),
    "include": (),
    "m": (2,),
    "N": (4,),
    "deg": (2,),
    "full": (True,),
    "wrap": (True,),
    "num": (),
    "s": ((4,),),
    "norm": ("ortho", "forward"),
    "kth": (2,),
    "obj": (np.array([1]),),
    "values": (5.0,),
    "equal_nan_": (),
    "ind": (1,),
    "y": (lambda b: np.asarray(b["_data"])[::-1].copy(),),
    "axis1": (1,),
    "axis2": (0,),
    "axisa": (0,),
    "axisb": (0,),
    "axisc": (0,),
    "fweights": (lambda b: np.arange(np.shape(b["_data"])[-1]) % 3 + 1,),
    "aweights": (lambda b: np.linspace(0.5, 2.0, np.shape(b["_data"])[-1]),),
    "return_indices": (True,),
    "w": (lambda b: np.linspace(0.5, 2.0, len(b["_data"])),),
    "cov": (True,),
    "start": (1,),
    "sorter": (lambda b: np.argsort(b["_data"]),),
    "default": (5.0,),
}
#: Parameters the walk never samples, with the reason.
NOT_SAMPLED = {
    "interpolation": "deprecated alias of method= (NumPy warns and maps it)",
    "like": "the array-creation dispatch protocol (no traced functions take it)",
}

#: Natively traced functions the generic walk cannot call, each with its reason.
SKIP = {
    "apply_along_axis": "calls a Python function per slice: covered in test_numpy_ops",
    "apply_over_axes": "calls a Python function per axis: covered in test_numpy_ops",
    "piecewise": "its functions are Python callables: covered in test_numpy_ops",
    "row_stack": "deprecated alias of vstack (NumPy warns on every call)",
}


#: Functions whose result values NumPy leaves unspecified: only dtype, shape, form compared.
UNSPECIFIED_VALUES = {"empty_like": "NumPy leaves the contents uninitialized"}


def _mask_like(base: dict) -> np.ndarray:
    data = np.asarray(base["_data"])
    return (np.arange(data.size).reshape(data.shape) % 3) != 1


def _weights_like(base: dict) -> np.ndarray:
    data = np.asarray(base["_data"])
    return (np.arange(data.size).reshape(data.shape) % 4 + 1).astype(float)


# -- comparing eager and traced ---------------------------------------------------------------


def _same(eager: Any, traced: Any, where: str, values: bool = True) -> None:
    if isinstance(eager, (tuple, list)):
        assert type(traced) is type(eager), f"{where}: {type(traced)} != {type(eager)}"
        assert len(traced) == len(eager), where
        for i, (e, t) in enumerate(zip(eager, traced)):
            _same(e, t, f"{where}[{i}]", values)
        return
    assert type(traced) is type(eager), (
        f"{where}: type {type(traced).__name__} != eager {type(eager).__name__}"
    )
    if isinstance(eager, (np.ndarray, np.generic)):
        assert traced.dtype == eager.dtype, f"{where}: dtype {traced.dtype} != {eager.dtype}"
        assert traced.shape == eager.shape, f"{where}: shape {traced.shape} != {eager.shape}"
        if not values:
            return
        if eager.dtype.kind in "fc":
            assert np.array_equal(traced, eager, equal_nan=True), (
                f"{where}: values\n{traced!r}\n!= eager\n{eager!r}"
            )
            for part in (np.real, np.imag) if eager.dtype.kind == "c" else (np.asarray,):
                assert np.array_equal(np.signbit(part(traced)), np.signbit(part(eager))), (
                    f"{where}: signs of zeros differ"
                )
        else:
            assert np.array_equal(traced, eager), f"{where}: {traced!r} != eager {eager!r}"
    else:
        assert traced == eager, f"{where}: {traced!r} != eager {eager!r}"


def _copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
        return type(value)(_copy(v) for v in value)
    return value


def _traced_slot(value: Any) -> bool:
    return (isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, np.dtype)) or (
        isinstance(value, (list, tuple))
        and len(value) > 0
        and all(isinstance(v, np.ndarray) for v in value)
    )


def _call(func: Callable, args: tuple, kwargs: dict) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return func(*args, **kwargs)


def compare_call(
    func: Callable, args: tuple, kwargs: dict, options: dict, label: str, values: bool = True
) -> None:
    """``func(*args, **kwargs)`` through ``kx.function(**options)`` against eager NumPy: the
    arrays among the arguments are traced inputs, everything else is static."""
    flat = list(args) + list(kwargs.values())
    slots = [i for i, v in enumerate(flat) if _traced_slot(v)]
    names = list(kwargs)

    def rebuild(filled: list) -> tuple[tuple, dict]:
        full = list(flat)
        for i, v in zip(slots, filled):
            full[i] = v
        return tuple(full[: len(args)]), dict(zip(names, full[len(args) :]))

    def program(*filled: Any) -> Any:
        a, k = rebuild(list(filled))
        return func(*a, **k)

    eager_inputs = [_copy(flat[i]) for i in slots]
    traced_inputs = [_copy(flat[i]) for i in slots]
    try:
        eager = _call(program, tuple(eager_inputs), {})
    except Exception as e:  # NumPy raises: so must the traced call, with its type
        with pytest.raises(type(e)):
            _call(kx.function(program, **options), tuple(traced_inputs), {})
        return
    traced = _call(kx.function(program, **options), tuple(traced_inputs), {})
    _same(eager, traced, f"{label}: result", values)
    _same(eager_inputs, traced_inputs, f"{label}: arguments after the call")


# -- the walk ----------------------------------------------------------------------------------


def _name(func: Callable) -> str:
    module = getattr(func, "__module__", "numpy")
    prefix = (
        ""
        if module in ("numpy", "numpy._core.numeric") or not module.startswith("numpy.")
        else module.replace("numpy.", "").split(".")[0] + "."
    )
    if prefix not in ("", "linalg.", "fft."):
        prefix = ""
    return prefix + func.__name__


def _functions() -> list[Callable]:
    seen = sorted(kx.trace.HANDLERS, key=_name)
    return [f for f in seen if _name(f) not in SKIP]


def _base_call(func: Callable) -> tuple[tuple, dict] | None:
    """The first combination of :data:`BASE` candidates NumPy accepts for ``func``'s
    required parameters (None if none does)."""
    params = list(numpy_signature(func).parameters.values())
    required = [
        p
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind is not inspect.Parameter.VAR_KEYWORD
        and not (p.kind is inspect.Parameter.VAR_POSITIONAL and p.name not in BASE)
    ]
    choices = []
    for p in required:
        candidates = BASE.get(p.name)
        if candidates is None:
            return None
        choices.append([(p, c) for c in candidates])
    for combo in itertools.islice(itertools.product(*choices), 400):
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p, value in combo:
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                args.extend(value)
            elif p.kind is inspect.Parameter.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        try:
            result = _call(func, tuple(_copy(a) for a in args), dict(kwargs))
        except Exception:
            continue
        if result is None and func.__name__ not in (
            "copyto",
            "place",
            "put",
            "put_along_axis",
            "putmask",
            "fill_diagonal",
        ):
            continue
        return tuple(args), kwargs
    return None


def _data_of(args: tuple) -> Any:
    for a in args:
        if isinstance(a, np.ndarray):
            return a
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray):
            return a[0]
    return F2


def _samples(func: Callable, base: tuple[tuple, dict]) -> list[tuple[str, tuple, dict]]:
    """``(parameter, args, kwargs)`` of each call the walk makes for ``func``."""
    args, kwargs = base
    sig = numpy_signature(func)
    bound = sig.bind_partial(*args, **kwargs).arguments
    context = {"_data": _data_of(args)}
    calls = []
    for p in sig.parameters.values():
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if p.name in bound and p.default is inspect.Parameter.empty:
            continue
        if p.name in NOT_SAMPLED or (
            p.kind is inspect.Parameter.POSITIONAL_ONLY and p.default is inspect.Parameter.empty
        ):
            continue
        for sample in SAMPLES.get(p.name, ())[:2]:
            value = (
                sample(context)
                if callable(sample)
                and not isinstance(sample, type)
                and not isinstance(sample, np.ufunc)
                else sample
            )
            if p.default is not inspect.Parameter.empty and is_default(value, p.default):
                continue
            call_args = list(args)
            call_kwargs = dict(kwargs)
            if value == "out" if isinstance(value, str) else False:
                try:
                    result = _call(func, tuple(_copy(a) for a in args), dict(kwargs))
                except Exception:
                    continue
                if not isinstance(result, (np.ndarray, np.generic)):
                    continue
                value = np.zeros_like(np.asarray(result))
            if p.kind is inspect.Parameter.POSITIONAL_ONLY:
                continue
            names = list(sig.parameters)
            index = names.index(p.name)
            if index < len(call_args) and p.kind is not inspect.Parameter.KEYWORD_ONLY:
                call_args[index] = value
            else:
                call_kwargs[p.name] = value
            calls.append((p.name, tuple(call_args), call_kwargs))
    return calls


def walk_plan() -> list[tuple[str, Callable, str, tuple, dict]]:
    """Every call of the walk: ``(function name, function, parameter, args, kwargs)``."""
    plan = []
    for func in _functions():
        base = _base_call(func)
        if base is None:
            continue
        plan.append((_name(func), func, "(base)", base[0], base[1]))
        plan.extend((_name(func), func, param, a, k) for param, a, k in _samples(func, base))
    return plan


_PLAN = walk_plan()
NUMPY = {"backend": "numpy"}


def test_the_walk_covers_every_native_function_and_its_parameters():
    functions = {name for name, *_ in _PLAN}
    missing = sorted(_name(f) for f in _functions() if _name(f) not in functions)
    assert not missing, f"no base call found for {missing}: add candidates to BASE"
    pairs = {(name, param) for name, _, param, _, _ in _PLAN if param != "(base)"}
    print(
        f"signature walk: {len(functions)} functions, {len(pairs)} parameters, {len(_PLAN)} calls"
    )
    assert len(functions) >= 227 and len(pairs) >= 470


@pytest.mark.parametrize("name", sorted({name for name, *_ in _PLAN}))
def test_every_parameter_of_every_native_function_matches_eager(name):
    for fname, func, param, args, kwargs in _PLAN:
        if fname == name:
            compare_call(
                func,
                args,
                kwargs,
                NUMPY,
                f"np.{name}({param}=...)",
                values=name not in UNSPECIFIED_VALUES,
            )


# -- 0-d inputs: NumPy scalars and 0-d arrays ------------------------------------------------


def _zero_d_variants(args: tuple) -> list[tuple]:
    """``args`` with each array argument made 0-d: a NumPy scalar, then a 0-d array, of its
    first element (so the 0-d form of every result is compared too)."""
    variants = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.ndim:
            first = a.reshape(-1)[0]
            for zero_d in (first, np.array(first)):
                variants.append(args[:i] + (zero_d,) + args[i + 1 :])
            break
    return variants


#: 0-d calls the walk leaves out, with the reason (none: a NumPy scalar destination, which
#: NumPy refuses, is told apart per call: tests/trace/test_array_targets.py).
ZERO_D_SKIP: dict[str, str] = {}

_ZERO_D_PLAN = [
    (name, func, args, kwargs)
    for name, func, param, base_args, kwargs in _PLAN
    if param == "(base)" and name not in ZERO_D_SKIP
    for args in _zero_d_variants(base_args)
]


def test_the_zero_d_walk_covers_every_native_function():
    assert len({name for name, *_ in _ZERO_D_PLAN}) >= 200


@pytest.mark.parametrize("name", sorted({name for name, *_ in _ZERO_D_PLAN}))
def test_zero_d_inputs_of_every_native_function_match_eager(name):
    for fname, func, args, kwargs in _ZERO_D_PLAN:
        if fname == name:
            compare_call(
                func,
                args,
                kwargs,
                NUMPY,
                f"np.{name}(0-d {type(args[0]).__name__})",
                values=name not in UNSPECIFIED_VALUES,
            )


# -- the array methods ------------------------------------------------------------------------

#: ndarray's documented method parameters (C methods have no inspect signature).
METHOD_PARAMETERS = {
    "sum": "axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True",
    "prod": "axis=None, dtype=None, out=None, keepdims=False, initial=1, where=True",
    "mean": "axis=None, dtype=None, out=None, keepdims=False, *, where=True",
    "std": "axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=0",
    "var": "axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=0",
    "max": "axis=None, out=None, keepdims=False, initial=0, where=True",
    "min": "axis=None, out=None, keepdims=False, initial=0, where=True",
    "argmax": "axis=None, out=None, *, keepdims=False",
    "argmin": "axis=None, out=None, *, keepdims=False",
    "any": "axis=None, out=None, keepdims=False, *, where=True",
    "all": "axis=None, out=None, keepdims=False, *, where=True",
    "round": "decimals=0, out=None",
    "clip": "min=None, max=None, out=None, *, dtype=None",
    "take": "indices, axis=None, out=None, mode='raise'",
    "cumsum": "axis=None, dtype=None, out=None",
    "cumprod": "axis=None, dtype=None, out=None",
    "argsort": "axis=-1, kind=None, order=None, *, stable=None",
    "sort": "axis=-1, kind=None, order=None, *, stable=None",
    "diagonal": "offset=0, axis1=0, axis2=1",
    "trace": "offset=0, axis1=0, axis2=1, dtype=None, out=None",
    "repeat": "repeats, axis=None",
    "searchsorted": "v, side='left', sorter=None",
    "compress": "condition, axis=None, out=None",
    "choose": "choices, out=None, mode='raise'",
    "argpartition": "kth, axis=-1, kind='introselect', order=None",
    "partition": "kth, axis=-1, kind='introselect', order=None",
    "squeeze": "axis=None",
    "swapaxes": "axis1, axis2",
    "copy": "order='C'",
    "dot": "b, out=None",
    "flatten": "order='C'",
    "ravel": "order='C'",
    "astype": "dtype, order='K', casting='unsafe', subok=True, copy=True",
    "reshape": "shape, /, *, order='C', copy=None",
    "put": "indices, values, mode='raise'",
    "fill": "value",
    "nonzero": "",
    "conj": "",
    "transpose": "",
}
#: The data each method is walked on (the first that NumPy accepts for the base call).
METHOD_DATA = (F2, I2, IDX, F1, SQ)


def _method_signature(name: str) -> inspect.Signature:
    namespace: dict[str, Any] = {}
    exec(f"def method(self, {METHOD_PARAMETERS[name]}): pass", {}, namespace)  # noqa: S102
    return inspect.Signature(list(inspect.signature(namespace["method"]).parameters.values())[1:])


def _method_plan() -> list[tuple[str, Callable, str, tuple, dict]]:
    plan = []
    extra = {
        "shape": ((4, 3),),
        "value": (2.5,),
        "condition": ([True, False, True],),
        "b": (F2.T.copy(), F1),
    }
    for name in sorted(METHOD_PARAMETERS):
        sig = _method_signature(name)

        def method(x: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            return getattr(x, _name)(*args, **kwargs)

        method.__name__ = name
        required = [p for p in sig.parameters.values() if p.default is inspect.Parameter.empty]
        base = None
        for data in METHOD_DATA:
            for combo in itertools.product(
                *[extra.get(p.name, BASE.get(p.name, ())) for p in required]
            ):
                try:
                    _call(method, (_copy(data), *combo), {})
                except Exception:
                    continue
                base = (data, *combo)
                break
            if base is not None:
                break
        assert base is not None, f"no base call for x.{name}"
        plan.append((name, method, "(base)", base, {}))
        context = {"_data": base[0]}
        for p in sig.parameters.values():
            if p.default is inspect.Parameter.empty:
                continue
            for sample in SAMPLES.get(p.name, ())[:2]:
                value = (
                    sample(context) if callable(sample) and not isinstance(sample, type) else sample
                )
                if is_default(value, p.default):
                    continue
                if isinstance(value, str) and value == "out":
                    try:
                        result = _call(method, tuple(_copy(a) for a in base), {})
                    except Exception:
                        continue
                    if not isinstance(result, (np.ndarray, np.generic)):
                        continue
                    value = np.zeros_like(np.asarray(result))
                plan.append((name, method, p.name, base, {p.name: value}))
    return plan


_METHOD_PLAN = _method_plan()


def test_the_method_walk_covers_every_array_method():
    assert {name for name, *_ in _METHOD_PLAN} == set(METHOD_PARAMETERS)
    pairs = {(name, param) for name, _, param, _, _ in _METHOD_PLAN if param != "(base)"}
    print(f"method walk: {len(METHOD_PARAMETERS)} methods, {len(pairs)} parameters")
    assert len(pairs) >= 100


@pytest.mark.parametrize("name", sorted(METHOD_PARAMETERS))
def test_every_parameter_of_every_array_method_matches_eager(name):
    for mname, method, param, args, kwargs in _METHOD_PLAN:
        if mname == name:
            compare_call(method, args, kwargs, NUMPY, f"x.{name}({param}=...)")


# -- named behaviours, on every executor --------------------------------------------------------

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}
executors = pytest.mark.parametrize("path", sorted(PATHS))


def _each(path: str, cases: list[tuple[Callable, tuple]]) -> None:
    for i, (fn, args) in enumerate(cases):
        compare_call(fn, args, {}, PATHS[path], f"case {i} on {path}")


@executors
def test_std_and_var_take_correction_as_ddof(path):
    x = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    _each(
        path,
        [
            (lambda a: np.std(a, axis=1, correction=1), (x,)),
            (lambda a: np.var(a, correction=2), (x,)),
            (lambda a: np.var(a, axis=0, correction=2), (x,)),  # n - correction = 0: inf/nan
            (lambda a: np.std(a, axis=0, correction=3), (x,)),  # negative: nan
            (lambda a: np.std(a, ddof=1, correction=1), (x,)),  # NumPy's ValueError
            (lambda a: a.std(correction=1), (x,)),  # the method has no correction=: TypeError
        ],
    )


@executors
def test_round_of_integers_keeps_their_dtype_and_exact_values(path):
    big = np.array([1, 25, -35, 9007199254740993, -9007199254740995])
    cases = [
        (lambda a: np.round(a, -1), (big,)),
        (lambda a: np.around(a), (big,)),
        (lambda a: np.round(a, 2), (np.int16(7),)),
        (lambda a: np.round(a), (np.array(9),)),
        (lambda a: a.round(-2), (big,)),
        (lambda a: np.round(a, 2), (big,)),
    ]
    for dtype in (np.int8, np.int16, np.uint8, np.int32, np.uint64):
        small = np.array([0, 5, 15, 25, 35, 104, 127], dtype)
        cases += [(lambda a: np.round(a), (small,)), (lambda a: np.round(a, -1), (small,))]
    _each(path, cases)


@executors
def test_round_with_negative_decimals_divides_then_multiplies(path):
    # (values where multiplying by 10.0**-d first rounds differently from NumPy's division)
    x = np.array([1234.5678, -0.000123, 8241988343.87, 841331567918.0, 1e300, -2.5e-5])
    x32 = np.array([-32073314205696.0, 194979248.0, 996312448.0, 11647.5439453125, 0.5], np.float32)
    _each(
        path,
        [
            (lambda a: np.round(a, -5), (x,)),
            (lambda a: np.round(a, 3), (x,)),
            (lambda a: np.round(a, -1), (x32,)),
            (lambda a: np.round(a, -2), (x32,)),
            (lambda a: np.round(a, -3), (x32,)),
        ],
    )


@executors
def test_linalg_vecdot_pairs_each_operands_own_axis(path):
    a, b1, b2 = np.arange(6.0).reshape(2, 3), np.arange(3.0), np.arange(2.0)
    c = np.arange(24.0).reshape(2, 3, 4) - 7
    _each(
        path,
        [
            (lambda p, q: np.linalg.vecdot(p, q, axis=0), (a, b2)),  # NumPy: fine, shape (3,)
            (lambda p, q: np.linalg.vecdot(p, q, axis=0), (a, b1)),  # NumPy: ValueError
            (lambda p, q: np.linalg.vecdot(p, q, axis=1), (a, b1)),  # NumPy: AxisError
            (lambda p, q: np.linalg.vecdot(p, q, axis=-1), (a, b1)),
            (lambda p, q: np.linalg.vecdot(p, q, axis=-2), (c, a)),
            (lambda p, q: np.linalg.vecdot(p, q, axis=1), (c, a[:, :, None][0])),
        ],
    )


@executors
def test_vecdot_shape_errors_are_value_errors(path):
    a = np.ones((2, 3))
    _each(
        path,
        [
            (lambda p, q: np.vecdot(p, q), (a, np.ones(4))),
            (lambda p, q: np.vecdot(p, q, axis=0), (a, np.ones((2, 4)))),
            (lambda p, q: np.vecdot(p, q, axis=0), (a, np.ones((3, 2)))),
        ],
    )


@executors
def test_zero_d_forms_of_unique_results_and_broadcast_arrays(path):
    _each(
        path,
        [
            (lambda a: np.unique_inverse(a).inverse_indices, (np.float64(3.0),)),
            (lambda a: np.unique_all(a).inverse_indices, (np.array(3.0),)),
            (lambda a: np.unique(a, return_inverse=True)[1], (np.float64(3.0),)),
            (lambda a: np.broadcast_arrays(a), (np.int16(0),)),
            (lambda a: np.broadcast_arrays(a, a), (np.array(2.5),)),
        ],
    )


@executors
def test_power_takes_numpys_fast_paths_for_float_and_complex_arrays(path):
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(64) + 1j * rng.standard_normal(64)) * 1e3
    f = rng.standard_normal(64).astype(np.float32) * 100

    def inplace(a: Any) -> Any:
        a **= 2
        return a

    _each(
        path,
        [
            (lambda a: a**2, (z,)),
            (lambda a: a**-1, (z,)),
            (lambda a: a**0.5, (z,)),
            (lambda a: a**2.0, (z,)),
            (lambda a: a**3, (z,)),
            (lambda a: a[0] ** 2, (z,)),  # a NumPy scalar: np.power
            (lambda a: a[...] ** 2, (z[:1].reshape(()),)),  # a 0-d array: np.square
            (inplace, (z,)),
            (lambda a: a**0.5, (f,)),
            (lambda a: a**-1, (f,)),
        ],
    )
    # a 0-d complex argument: one trace serves a NumPy scalar (np.power) and a 0-d array
    # (the fast path), at a value where the two differ
    v = z[np.nonzero(np.square(z) != np.power(z, 2))[0][0]]
    for zero_d in (np.complex128(v), np.array(v)):
        compare_call(
            lambda a: (a**2, a**-1, a**0.5),
            (zero_d,),
            {},
            PATHS[path],
            f"{type(zero_d).__name__} ** on {path}",
        )
    f0 = kx.function(lambda a: a**2, **PATHS[path])
    for zero_d in (np.complex128(v), np.array(v), np.float64(-0.0), np.array(-0.0)):
        _same(zero_d**2, f0(zero_d), f"{zero_d!r} ** 2 on {path}, one trace per dtype")


@executors
def test_clip_honours_dtype_where_and_numpys_argument_rules(path):
    x = np.array([[-2.0, 0.5, 3.0], [1.5, 7.0, -0.25]])
    _each(
        path,
        [
            (lambda a: np.clip(a, 0, 1, dtype=np.float32), (x,)),
            (lambda a, o: np.clip(a, 0, 1, where=a > 0, out=o), (x, np.full_like(x, 9.0))),
            (lambda a: np.clip(a, 0), (x,)),  # NumPy: TypeError (a_max missing)
            (lambda a: np.clip(a, 0, 1, min=0), (x,)),  # NumPy: ValueError
            (lambda a: np.clip(a, None, None), (x,)),
            (lambda a: a.clip(0.5), (x,)),
            (lambda a: a.clip(max=1, dtype=np.float32), (x,)),
        ],
    )


@executors
def test_nan_to_num_copy_false_writes_into_the_argument(path):
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    z = np.array([complex(np.nan, np.inf), 1 + 2j])
    _each(
        path,
        [
            (lambda a: np.nan_to_num(a, copy=False), (x,)),
            (lambda a: (np.nan_to_num(a, copy=False, nan=-1.0), a), (x,)),
            (lambda a: np.nan_to_num(a, copy=False), (z,)),
        ],
    )


@executors
def test_overwrite_input_leaves_the_argument_as_numpy_does(path):
    x = np.array([[9.0, 1.0, 7.0, 3.0, 5.0], [2.0, 8.0, 4.0, 6.0, 0.0]])
    _each(
        path,
        [
            (lambda a: np.median(a, overwrite_input=True), (x,)),
            (lambda a: np.median(a, axis=1, overwrite_input=True), (x,)),
            (lambda a: np.percentile(a, 30, overwrite_input=True), (x,)),
            (lambda a: np.quantile(a, [0.2, 0.9], axis=0, overwrite_input=True), (x,)),
        ],
    )


@executors
def test_parameters_without_a_rule_run_numpys_own_call(path):
    x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    _each(
        path,
        [
            (lambda a: np.sum(a, where=a > 0), (x,)),
            (lambda a: np.max(a, initial=10.0), (x,)),
            (lambda a: np.reshape(a, (3, 2), order="F"), (x,)),
            (lambda a: np.take(a, [0, 7], mode="wrap"), (x,)),
            (lambda a: np.mean(a, axis=0, where=a > 0), (x,)),
            (lambda a: np.concatenate([a, a], casting="no"), (x,)),
            (lambda a: np.stack([a, a], dtype=np.float32), (x,)),
        ],
    )


def test_a_parameter_without_a_rule_is_an_opaque_call_in_the_graph():
    f = kx.function(lambda a: np.sum(a, where=a > 0), backend="numpy")
    graph = f.get_concrete_function(np.ones(3)).graph
    assert any(node.op.value == "numpy_call" for node in graph.nodes)
    g = kx.function(lambda a: np.sum(a, axis=0, keepdims=False), backend="numpy")
    assert not any(
        node.op.value == "numpy_call" for node in g.get_concrete_function(np.ones(3)).graph.nodes
    )


def test_a_keyword_numpy_does_not_know_raises_its_type_error():
    x = np.ones(3)
    for fn in (
        lambda a: np.sum(a, foo=1),
        lambda a: np.clip(a, 0, 1, foo=1),
        lambda a: a.round(foo=1),
        lambda a: np.linalg.vecdot(a, a, foo=1),
    ):
        with pytest.raises(TypeError):
            fn(x)
        with pytest.raises(TypeError):
            kx.function(fn, backend="numpy")(x)


# -- generated keyword programs (tests/programs.py), on every executor --------------------------

#: Keyword programs per path (batches of 8 traced as one function; numba compiles every fused
#: segment, so it runs fewer).
KEYWORD_PROGRAMS = {"numpy": 160, "auto": 64, "numba": 32, "jit": 64}


def _close(got: Any, expected: Any, where: str, path: str) -> None:
    """Exact (value, dtype, shape, 0-d form) on the numpy executor and auto; on numba and
    jit a float result may come from a fused sum in another order (the documented bound)."""
    if path in ("numpy", "auto") or np.asarray(expected).dtype.kind not in "fc":
        return _same(expected, got, where)
    assert type(got) is type(expected), f"{where}: {type(got)} != {type(expected)}"
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype and g.shape == e.shape, f"{where}: {g.dtype}{g.shape}"
    tol = 2e-6 if e.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True, err_msg=where)


@executors
def test_generated_keyword_programs_agree_on_every_path(path):
    from programs import Batch, make_keyword_program

    for start in range(0, KEYWORD_PROGRAMS[path], 8):
        prog = Batch([make_keyword_program(seed) for seed in range(start, start + 8)])
        inputs = [_copy(x) for x in prog.inputs]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = prog(*[_copy(x) for x in prog.inputs])
            got = kx.function(prog, **PATHS[path])(*inputs)
        where = f"programs {start}..{start + 7} on {path}: {prog.describe()}"
        assert len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected)):
            _close(g, e, f"{where} -> output {k}", path)
        _same([_copy(x) for x in prog.inputs], inputs, f"{where}: arguments after the call")
        if path == "numpy":  # and the reference interpreter runs the same graph to NumPy's bits
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                graph = kx.function(prog, backend="numpy").get_concrete_function(*prog.inputs).graph
                interpreted = interpret(graph, [_copy(x) for x in prog.inputs])
            for k, (g, e) in enumerate(zip(interpreted, expected)):
                _same(np.asarray(e), np.asarray(g), f"{where} -> output {k} (interpreter)")


#: Every WALK_SAMPLE-th call of the walk (and of the method walk) also runs on the other paths.
WALK_SAMPLE = 3


@pytest.mark.parametrize("path", ["auto", "numba", "jit"])
def test_a_sample_of_the_walk_matches_eager_on_every_executor(path):
    sample = (
        _PLAN[::WALK_SAMPLE]
        + _METHOD_PLAN[::WALK_SAMPLE]
        + [(n, f, "0-d", a, k) for n, f, a, k in _ZERO_D_PLAN[::WALK_SAMPLE]]
    )
    for name, func, param, args, kwargs in sample:
        if name in UNSPECIFIED_VALUES:
            continue
        try:
            compare_call(func, args, kwargs, PATHS[path], f"{name}({param}=...) on {path}")
        except AssertionError as e:
            # a fused float sum may round differently on numba/jit (the documented bound)
            if path == "auto" or "values" not in str(e):
                raise
            _compare_within_the_sum_bound(func, args, kwargs, PATHS[path])


def _compare_within_the_sum_bound(func: Callable, args: tuple, kwargs: dict, options: dict) -> None:
    expected = _call(func, tuple(_copy(a) for a in args), dict(kwargs))
    got = _call(
        kx.function(lambda *a: func(*a, **kwargs), **options), tuple(_copy(a) for a in args), {}
    )
    for e, g in zip(*(v if isinstance(v, (tuple, list)) else (v,) for v in (expected, got))):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape
        tol = 2e-6 if e.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True)


@executors
def test_out_given_by_position_is_written_as_numpy_writes_it(path):
    a = np.arange(6.0).reshape(2, 3) - 2.5
    _each(
        path,
        [
            (lambda x, o: (np.sum(x, 0, None, o, True), o), (a, np.zeros((1, 3)))),
            (lambda x, o: (np.fft.fft(x, None, -1, None, o), o), (a, np.zeros((2, 3), complex))),
            (lambda x, o: (np.clip(x, 0, 1, o), o), (a, np.zeros((2, 3)))),
            (lambda x, o: (np.cumsum(x, 1, None, o), o), (a, np.zeros((2, 3)))),
        ],
    )


# -- ufunc keywords ---------------------------------------------------------------------------


def _ufunc_calls(ufuncs: list) -> list[tuple[Callable, tuple]]:
    """Each ufunc with ``where=`` into ``out`` (out keeps its values where False), with
    ``casting=``/``dtype=``, and with ``order=``, on float inputs (ints for integer ufuncs)."""
    x = np.array([[0.5, -1.5, 2.0], [3.25, -0.0, 7.0]])
    calls = []
    for uf in ufuncs:
        for data in (x, np.array([[1, 2, 3], [4, 5, 6]])):  # (the first NumPy takes)
            inputs = (data,) * uf.nin
            try:
                results = _call(uf, inputs, {})
            except TypeError:
                continue
            break
        else:
            continue
        outs = tuple(
            np.full_like(np.asarray(r), 9) for r in ([results] if uf.nout == 1 else results)
        )
        calls.append(
            (
                lambda *a, uf=uf: uf(*a[: uf.nin], out=a[uf.nin :], where=np.greater(a[0], 1)),
                inputs + outs,
            )
        )
        calls.append((lambda *a, uf=uf: uf(*a, casting="unsafe", dtype=np.float32), inputs))
        calls.append((lambda *a, uf=uf: uf(*a, order="F"), inputs))
    return calls


def _ufuncs() -> list:
    from kernel_ext.ir import UFUNC_OPS

    return sorted((uf for uf in UFUNC_OPS if uf.signature is None), key=lambda u: u.__name__)


def test_ufunc_keywords_without_an_op_run_numpys_ufunc():
    calls = _ufunc_calls(_ufuncs())
    assert len(calls) >= 150
    _each("numpy", calls)


@executors
def test_ufunc_where_into_out_keeps_out_where_false(path):
    _each(
        path,
        _ufunc_calls([np.divide, np.add, np.sqrt, np.divmod])
        + [
            (
                lambda a, b: np.divide(a, b, out=np.zeros_like(a), where=b != 0),
                (np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0, 0.0])),
            )
        ],
    )


# -- the handlers' own signatures -----------------------------------------------------------


def test_every_handler_names_numpys_parameters_in_numpys_order():
    """What the binding rule relies on: a handler implements only parameters NumPy's function
    has, and its positional parameters are NumPy's, in NumPy's order, some left out (a
    positional-only one of NumPy's may have any name: it goes by position)."""
    from kernel_ext.trace.signatures import implemented_parameters

    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for func, handler in kx.trace.HANDLERS.items():
        numpy_params = numpy_signature(func).parameters
        ours = [p for p in inspect.signature(handler).parameters.values() if p.kind in positional]
        by_position = {
            p.name
            for p, q in zip(ours, numpy_params.values())
            if q.kind is inspect.Parameter.POSITIONAL_ONLY
        }
        extra = implemented_parameters(handler, func) - set(numpy_params) - {"*"} - by_position
        assert not extra, f"{_name(func)}: the handler names {extra}, which NumPy lacks"
        theirs = [p for p in numpy_params.values() if p.kind in positional]
        at = -1
        for i, mine in enumerate(ours):
            if i < len(theirs) and theirs[i].kind is inspect.Parameter.POSITIONAL_ONLY:
                at = i
                continue
            names = [p.name for p in theirs]
            if mine.name in numpy_params and mine.name not in names:
                continue  # keyword-only in NumPy: always passed by name
            assert mine.name in names[at + 1 :], (
                f"{_name(func)}: positional {mine.name!r} is not NumPy's, or out of its order"
            )
            at = names.index(mine.name)

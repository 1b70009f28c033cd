"""The case registry and the differential check of one corpus case against eager NumPy.

A case is a plain NumPy function plus ``make(rng) -> (args, kwargs)``, registered with
``@case(...)``. ``check(case, path)`` runs it eagerly and under ``kx.function`` on identical
inputs twice (the second time with new values, so values frozen at trace time show up) and
compares the return value and every argument after the call. Nothing in here raises: every
failure, the harness's own included, becomes a ``Result``.
"""

from __future__ import annotations

import importlib
import math
import signal
import statistics
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import kernel_ext as kx

Args = tuple[tuple[Any, ...], dict[str, Any]]
Maker = Callable[[np.random.Generator], Args]

CATEGORIES = (
    "inplace",
    "containers",
    "buffers",
    "random",
    "autograph",
    "opaque",
    "nn",
    "numerics",
    "exercises",
    "outside_style",
)
CORPUS_MODULES = tuple(f"corpus_{c}" for c in CATEGORIES)
PATHS = ("numpy", "auto", "jit")
PATH_OPTIONS: dict[str, dict[str, Any]] = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "jit": {"jit_compile": True},
}
# Fused float sums and means may reorder additions, within the bound docs/backends.md states,
# on the paths that fuse: auto, and jit (its fused fallback, e.g. for ops the whole-graph
# compiler leaves out); the numpy path is exact.
TOLERANT_PATHS = frozenset({"auto", "jit"})
CLOSE_RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
CALL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    make: Maker
    category: str
    tags: tuple[str, ...]


@dataclass
class Result:
    case: str
    path: str
    status: str  # "PASS" | "WRONG" | "ERROR"
    detail: str = ""  # what differs, or "ExcType: first line"
    exact: bool | None = None  # PASS only: bitwise equal (False: within CLOSE_RTOL)
    traces: int | None = None  # tracing count after both calls
    eager_s: float | None = None  # median per-call times, when timed
    traced_s: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.eager_s and self.traced_s is not None:
            return self.traced_s / self.eager_s
        return None


REGISTRY: dict[str, Case] = {}


def case(
    *, make: Maker, category: str, tags: tuple[str, ...] = (), name: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as a corpus case; the function itself is unchanged."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = name or fn.__name__
        old = REGISTRY.get(key)
        # Re-importing a module re-registers its cases; two different cases may not share a name.
        if old is not None and (old.fn.__module__, old.fn.__qualname__) != (
            fn.__module__,
            fn.__qualname__,
        ):
            raise ValueError(f"duplicate case name {key!r}")
        REGISTRY[key] = Case(key, fn, make, category, tuple(tags))
        return fn

    return register


def all_cases() -> list[Case]:
    """Every case of the corpus, in category order then definition order."""
    for mod in CORPUS_MODULES:
        importlib.import_module(f"{__package__}.{mod}")
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return sorted(REGISTRY.values(), key=lambda c: order[c.category])


def case_seed(name: str) -> int:
    # Stable across processes (hash() is salted), so a failure reproduces.
    return zlib.crc32(name.encode()) % (2**31 - 2)


# ---------------------------------------------------------------------------------------------
# Comparison


@dataclass
class Diff:
    problem: str | None = None  # first difference found, or None
    close_only: bool = False  # some float array matched only within tolerance


def _float_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # NaNs equal each other (any payload); zeros must agree in sign.
    both_nan = np.isnan(a) & np.isnan(b)
    return both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))


def _array_problem(exp: np.ndarray, act: Any, where: str, tolerant: bool, diff: Diff) -> None:
    if type(act) is not np.ndarray:
        diff.problem = f"{where}: expected ndarray, got {type(act).__name__}"
        return
    if act.dtype != exp.dtype:
        diff.problem = f"{where}: dtype {act.dtype} != {exp.dtype}"
        return
    if act.shape != exp.shape:
        diff.problem = f"{where}: shape {act.shape} != {exp.shape}"
        return
    kind = exp.dtype.kind
    if kind == "f":
        eq = _float_equal(exp, act)
    elif kind == "c":
        eq = _float_equal(exp.real, act.real) & _float_equal(exp.imag, act.imag)
    elif kind == "O":
        eq = np.array(
            [_values_equal(x, y) for x, y in zip(exp.flat, act.flat)], dtype=bool
        ).reshape(exp.shape)
    else:
        eq = exp == act
    if bool(np.all(eq)):
        return
    if tolerant and kind == "f":
        rtol = CLOSE_RTOL.get(exp.dtype, 1e-5)
        finite = exp[np.isfinite(exp)]
        scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
        if np.allclose(act, exp, rtol=rtol, atol=rtol * scale, equal_nan=True):
            diff.close_only = True
            return
    bad = int(np.size(eq) - np.count_nonzero(eq))
    idx = tuple(int(i) for i in np.argwhere(~np.asarray(eq))[0]) if exp.ndim else ()
    diff.problem = (
        f"{where}: {bad}/{exp.size} elements differ, first at {list(idx)}: "
        f"{act[idx]!r} != {exp[idx]!r}"
    )


def _values_equal(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or (
            x == y and math.copysign(1, x) == math.copysign(1, y)
        )
    try:
        return bool(x == y)
    except Exception:
        return False


def compare(
    exp: Any, act: Any, where: str = "result", tolerant: bool = False, diff: Diff | None = None
) -> Diff:
    """The first difference between an eager value and a traced one (recursing into containers)."""
    diff = Diff() if diff is None else diff
    if diff.problem is not None:
        return diff
    if isinstance(exp, np.ndarray):
        _array_problem(exp, act, where, tolerant, diff)
    elif isinstance(exp, np.generic):
        if type(act) is not type(exp):
            diff.problem = f"{where}: type {type(act).__name__} != {type(exp).__name__}"
        else:
            _array_problem(
                np.asarray(exp),
                np.asarray(act),
                where,
                tolerant and isinstance(exp, np.floating),
                diff,
            )
    elif isinstance(exp, (tuple, list)):
        if type(act) is not type(exp):
            diff.problem = f"{where}: type {type(act).__name__} != {type(exp).__name__}"
        elif len(act) != len(exp):
            diff.problem = f"{where}: length {len(act)} != {len(exp)}"
        else:
            for i, (e, a) in enumerate(zip(exp, act)):
                compare(e, a, f"{where}[{i}]", tolerant, diff)
    elif isinstance(exp, dict):
        if not isinstance(act, dict):
            diff.problem = f"{where}: type {type(act).__name__} != dict"
        elif list(act) != list(exp):
            # in order: Python code iterating the dict sees its order
            diff.problem = f"{where}: keys {list(act)!r} != {list(exp)!r} (in order)"
        else:
            for k in exp:
                compare(exp[k], act[k], f"{where}[{k!r}]", tolerant, diff)
    elif isinstance(exp, np.random.Generator):
        # A Generator passed in must have advanced exactly as the eager draws advanced it.
        if not isinstance(act, np.random.Generator):
            diff.problem = f"{where}: type {type(act).__name__} != Generator"
        elif act.bit_generator.state != exp.bit_generator.state:
            diff.problem = f"{where}: Generator state differs from eager's after the call"
    elif exp is None or isinstance(exp, (bool, int, float, complex, str)):
        if type(act) is not type(exp):
            diff.problem = f"{where}: type {type(act).__name__} != {type(exp).__name__}"
        elif not _values_equal(exp, act):
            diff.problem = f"{where}: {act!r} != {exp!r}"
    elif not _values_equal(exp, act):
        diff.problem = f"{where}: {act!r} != {exp!r}"
    return diff


def compare_call(
    exp_out: Any, exp_args: Args, act_out: Any, act_args: Args, tolerant: bool
) -> Diff:
    """Compare the return value, then every positional and keyword argument after the call."""
    diff = compare(exp_out, act_out, "result", tolerant)
    for i, (e, a) in enumerate(zip(exp_args[0], act_args[0])):
        compare(e, a, f"arg {i}", tolerant, diff)
    for k in exp_args[1]:
        compare(exp_args[1][k], act_args[1][k], f"arg {k!r}", tolerant, diff)
    return diff


# ---------------------------------------------------------------------------------------------
# Running


class CallTimeout(Exception):
    """A traced call ran past CALL_TIMEOUT_S (say, a loop whose condition froze at trace time)."""


class _Deadline:
    """SIGALRM deadline around one call, only where no one else (pytest-timeout) uses the timer."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False

    def __enter__(self) -> None:
        try:
            if signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0):
                return
            self.previous = signal.signal(signal.SIGALRM, self._fire)
        except (ValueError, AttributeError):  # not the main thread, or no SIGALRM
            return
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self.armed = True

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)

    @staticmethod
    def _fire(signum: int, frame: object) -> None:
        raise CallTimeout(f"call ran longer than {CALL_TIMEOUT_S:.0f} s")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def call_seeded(fn: Callable[..., Any], args: Args, seed: int) -> Any:
    # Cases that draw from the global RNG see the same stream on both sides.
    np.random.seed(seed)
    return fn(*args[0], **args[1])


def inputs_for(case_: Case, seed: int) -> Args:
    args, kwargs = case_.make(np.random.default_rng(seed))
    return tuple(args), dict(kwargs)


#: The random generators of each (case, seed)'s first inputs, given to every timed call.
_GENERATORS: dict[tuple[str, int], tuple[Any, ...]] = {}


def _median_time(fn: Callable[..., Any], case_: Case, seed: int, repeats: int) -> float:
    times = []
    first = _GENERATORS.setdefault((case_.name, seed), inputs_for(case_, seed)[0])
    for _ in range(repeats):
        args = inputs_for(case_, seed)  # fresh inputs: calls may update them in place
        # ... but the same random generator, in every batch of calls too, as a notebook
        # passes its one `rng` to every call (a new Generator object is a new trace each
        # time: identity is its type)
        args = (
            tuple(f if isinstance(f, np.random.Generator) else a for a, f in zip(args[0], first)),
            args[1],
        )
        np.random.seed(seed)
        start = time.perf_counter()
        fn(*args[0], **args[1])
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def warm_up(
    traced: Callable[..., Any], case_: Case, seed: int, rounds: int = 20, budget_s: float = 90.0
) -> None:
    """Call ``traced`` as a notebook's hot loop would until every trace has settled: its
    kernels compiled and, under tiered ``auto``, the faster executor chosen (the issue's
    "after warm-up"); at most ``rounds`` batches of calls and about ``budget_s`` seconds
    (a graph whose compile takes longer is measured as a user would find it by then)."""
    deadline = time.monotonic() + budget_s
    for _ in range(rounds):
        _median_time(traced, case_, seed, 24)
        busy = False
        for cf in getattr(traced, "concrete_functions", ()):
            executable = getattr(cf, "executable", None)
            if executable is None:
                continue
            executable.wait(max(0.0, deadline - time.monotonic()))
            tier = getattr(executable, "tier", None)
            if tier is not None and tier.whole is not None:
                # (also once decided: a decision recalled from the disk cache serves the
                # whole graph before its function is compiled, through its fallback)
                tier.whole.wait(max(0.0, deadline - time.monotonic()))
            if tier is not None and tier.state in ("counting", "compiling", "trial"):
                busy = True
        if not busy or time.monotonic() > deadline:
            return


def make_traced(fn: Callable[..., Any], path: str) -> Callable[..., Any]:
    return kx.function(fn, **PATH_OPTIONS[path])


def check(
    case_: Case,
    path: str,
    *,
    timing: int = 0,
    traced_factory: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None,
) -> Result:
    """Run ``case_`` eagerly and on ``path``; ``timing`` > 0 also times that many calls of each.

    ``traced_factory`` replaces ``kx.function`` (the harness's own tests feed it wrong ones).
    """
    result = Result(case_.name, path, "PASS")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _check(case_, path, timing, traced_factory, result)
        except Exception as exc:  # the harness's own failure must not end the run
            result.status, result.detail = "ERROR", f"harness: {_first_line(exc)}"
    return result


def _check(
    case_: Case,
    path: str,
    timing: int,
    traced_factory: Callable[[Callable[..., Any]], Callable[..., Any]] | None,
    result: Result,
) -> None:
    traced = (traced_factory or (lambda f: make_traced(f, path)))(case_.fn)
    seed = case_seed(case_.name)
    close_only = False
    for call, s in enumerate((seed, seed + 1)):
        eager_args, traced_args = inputs_for(case_, s), inputs_for(case_, s)
        try:
            expected = call_seeded(case_.fn, eager_args, s)
        except Exception as exc:
            result.status, result.detail = "ERROR", f"eager: {_first_line(exc)}"
            return
        try:
            with _Deadline(CALL_TIMEOUT_S):
                actual = call_seeded(traced, traced_args, s)
        except Exception as exc:
            result.status, result.detail = "ERROR", _first_line(exc)
            if call:
                result.detail += " (on the second call)"
            return
        diff = compare_call(
            expected, eager_args, actual, traced_args, tolerant=path in TOLERANT_PATHS
        )
        if diff.problem is not None:
            result.status = "WRONG"
            result.detail = diff.problem + (" (on the second call, new values)" if call else "")
            return
        close_only |= diff.close_only
    result.exact = not close_only
    count = getattr(traced, "experimental_get_tracing_count", None)
    result.traces = count() if count else None
    if timing:
        result.eager_s = _median_time(case_.fn, case_, seed + 2, timing)
        warm_up(traced, case_, seed + 2)
        result.traced_s = _median_time(traced, case_, seed + 2, timing)


def run_all(cases: list[Case], paths: tuple[str, ...] = PATHS, timing: int = 0) -> Iterator[Result]:
    for c in cases:
        for p in paths:
            yield check(c, p, timing=timing)


def render_known(results: list[Result]) -> str:
    """The text of ``expected.py`` recording every outcome other than PASS."""
    lines = [
        '"""Recorded outcomes of the real-code corpus: every (case, path) that does not PASS.',
        "",
        "Regenerate with ``python benchmarks/realcode.py --write-known`` after a change that",
        "fixes cases; the test suite fails until a case that now passes is removed here.",
        '"""',
        "",
        "KNOWN: dict[tuple[str, str], str] = {",
    ]
    for r in sorted(results, key=lambda r: (r.case, r.path)):
        if r.status != "PASS":
            lines.append(f'    ("{r.case}", "{r.path}"): "{r.status}",')
    lines.append("}")
    return "\n".join(lines) + "\n"

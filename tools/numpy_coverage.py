"""How much of NumPy traces natively: the coverage table ``docs/numpy-coverage.md`` (issue 14).

Every public function of NumPy's main namespace, ``numpy.linalg`` and ``numpy.fft`` is
classified by *tracing a small call of it* with ``kx.function`` (never by reading a list):

* **native** — the call became graph ops of its own (the optimiser, fusion, whole-graph
  compilation and the graph view see inside it);
* **opaque** — it ran as a ``numpy_call`` node (NumPy's own function at each call: correct,
  but a wall for the optimiser);
* **trace time** — it takes no array (``np.zeros(3)``, ``np.result_type``, ``np.fft.fftfreq``):
  it runs in Python while tracing and its result is a constant of the graph;
* **error** — every sample call failed while tracing (the message is in the table).

For native calls, *fuses* says whether the Numba backends compile the call's ops into fused
kernels (``yes``: every compute op; ``partly``; ``no``: it runs through NumPy in the executor),
for the float64 sample. The ufunc methods (``reduce``, ``accumulate``, ``reduceat``, ``outer``,
``at``) are classified for every ufunc where NumPy defines them. The anchor is jax.numpy's list:
read from ``jax.numpy`` when jax is importable (an optional comparison tool, never a
dependency), else from the checked-in ``tools/numpy_coverage_jax.txt`` (its header says where
it came from).

Usage: ``python tools/numpy_coverage.py`` writes the doc; ``--check`` compares its totals with
the doc's; ``--jax-list`` rewrites the jax list from an installed jax.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import kernel_ext as kx  # noqa: E402
from kernel_ext.backends import codegen  # noqa: E402
from kernel_ext.ir import FUSIBLE_REDUCTIONS, OPAQUE_CALLS, OpGroup, OpKind, subgraphs  # noqa: E402

DOC = ROOT / "docs" / "numpy-coverage.md"
JAX_LIST = Path(__file__).with_name("numpy_coverage_jax.txt")
MODULES = {"": np, "linalg.": np.linalg, "fft.": np.fft}
#: Public names that are not array functions at all (test runners, docs helpers).
SKIP = frozenset({"test", "show_config", "show_runtime", "info", "get_include"})

_rng = np.random.default_rng(0)
X = _rng.random((3, 4)) + 0.5  # float64, positive
S = _rng.random((3, 3)) + 3 * np.eye(3)  # square, well conditioned, positive
SPD = S @ S.T  # symmetric positive definite
V = _rng.random(4) + 0.5  # 1-D
I = _rng.integers(0, 4, (3, 4))  # int64, small non-negative  # noqa: E741
B = _rng.random((3, 4)) > 0.5  # bool
C = X + 1j * X[::-1]  # complex128

#: Sample calls for functions the generic attempts do not fit: traced inputs, then the call.
SAMPLES: dict[str, tuple[tuple, Callable[..., Any]]] = {
    "where": ((B, X, X), lambda b, x, y: np.where(b, x, y)),
    "choose": ((I % 2, X, X), lambda i, x, y: np.choose(i, [x, y])),
    "select": ((B, X), lambda b, x: np.select([b, ~b], [x, -x])),
    "piecewise": ((X,), lambda x: np.piecewise(x, [x < 1, x >= 1], [0.0, 1.0])),
    "take": ((X, I), lambda x, i: np.take(x, i)),
    "take_along_axis": ((X, I), lambda x, i: np.take_along_axis(x, i % 3, axis=0)),
    "put_along_axis": ((X, I), lambda x, i: np.put_along_axis(x, i % 3, 1.0, axis=0)),
    "put": ((X,), lambda x: np.put(x, [0, 1], 2.0)),
    "place": ((X, B), lambda x, b: np.place(x, b, 1.0)),
    "fill_diagonal": ((S,), lambda s: np.fill_diagonal(s, 0.0)),
    "reshape": ((X,), lambda x: np.reshape(x, (4, 3))),
    "resize": ((X,), lambda x: np.resize(x, (2, 6))),
    "broadcast_to": ((V,), lambda v: np.broadcast_to(v, (3, 4))),
    "expand_dims": ((X,), lambda x: np.expand_dims(x, 0)),
    "swapaxes": ((X,), lambda x: np.swapaxes(x, 0, 1)),
    "moveaxis": ((X,), lambda x: np.moveaxis(x, 0, 1)),
    "rollaxis": ((X,), lambda x: np.rollaxis(x, 1)),
    "permute_dims": ((X,), lambda x: np.permute_dims(x, (1, 0))),
    "roll": ((X,), lambda x: np.roll(x, 1)),
    "repeat": ((X,), lambda x: np.repeat(x, 2)),
    "tile": ((X,), lambda x: np.tile(x, 2)),
    "split": ((X,), lambda x: np.split(x, 2, axis=1)),
    "array_split": ((X,), lambda x: np.array_split(x, 2)),
    "hsplit": ((X,), lambda x: np.hsplit(x, 2)),
    "vsplit": ((S,), lambda s: np.vsplit(s, 3)),
    "dsplit": ((X,), lambda x: np.dsplit(x.reshape(3, 2, 2), 2)),
    "insert": ((V,), lambda v: np.insert(v, 1, 5.0)),
    "delete": ((V,), lambda v: np.delete(v, 1)),
    "append": ((V,), lambda v: np.append(v, v)),
    "pad": ((X,), lambda x: np.pad(x, 1)),
    "clip": ((X,), lambda x: np.clip(x, 0.6, 1.0)),
    "astype": ((X,), lambda x: np.astype(x, np.float32)),
    "full_like": ((X,), lambda x: np.full_like(x, 2.0)),
    "around": ((X,), lambda x: np.around(x, 2)),
    "round": ((X,), lambda x: np.round(x, 2)),
    "searchsorted": ((V, X), lambda v, x: np.searchsorted(np.sort(v), x)),
    "digitize": ((X, V), lambda x, v: np.digitize(x, np.sort(v))),
    "interp": ((X, V), lambda x, v: np.interp(x, np.sort(v), v)),
    "partition": ((V,), lambda v: np.partition(v, 1)),
    "argpartition": ((V,), lambda v: np.argpartition(v, 1)),
    "percentile": ((X,), lambda x: np.percentile(x, 30)),
    "nanpercentile": ((X,), lambda x: np.nanpercentile(x, 30)),
    "quantile": ((X,), lambda x: np.quantile(x, 0.3)),
    "nanquantile": ((X,), lambda x: np.nanquantile(x, 0.3)),
    "histogram": ((V,), lambda v: np.histogram(v, 3)),
    "histogram_bin_edges": ((V,), lambda v: np.histogram_bin_edges(v, 3)),
    "histogram2d": ((V, V), lambda a, b: np.histogram2d(a, b, 3)),
    "histogramdd": ((X,), lambda x: np.histogramdd(x.T, 3)),
    "bincount": ((I,), lambda i: np.bincount(i.ravel())),
    "einsum": ((X, X), lambda a, b: np.einsum("ij,kj->ik", a, b)),
    "einsum_path": ((X, X), lambda a, b: np.einsum_path("ij,kj->ik", a, b)),
    "tensordot": ((X, X), lambda a, b: np.tensordot(a, b, axes=([1], [1]))),
    "matmul": ((X, X), lambda a, b: np.matmul(a, b.T)),
    "dot": ((X, X), lambda a, b: np.dot(a, b.T)),
    "inner": ((X, X), lambda a, b: np.inner(a, b)),
    "vecdot": ((X, X), lambda a, b: np.vecdot(a, b)),
    "matvec": ((S, V), lambda s, v: np.matvec(s, v[:3])),
    "vecmat": ((V, S), lambda v, s: np.vecmat(v[:3], s)),
    "cross": ((X, X), lambda a, b: np.cross(a[:, :3], b[:, :3])),
    "apply_along_axis": ((X,), lambda x: np.apply_along_axis(np.sum, 0, x)),
    "apply_over_axes": ((X,), lambda x: np.apply_over_axes(np.sum, x, [0])),
    "vectorize": ((X,), lambda x: np.vectorize(lambda a: a)(x)),
    "compress": ((B, X), lambda b, x: np.compress(b[0], x, axis=1)),
    "extract": ((B, X), lambda b, x: np.extract(b, x)),
    "ravel_multi_index": ((I,), lambda i: np.ravel_multi_index((i[0], i[1]), (4, 4))),
    "unravel_index": ((I,), lambda i: np.unravel_index(i, (4, 4))),
    "ix_": ((I,), lambda i: np.ix_(i[0], i[1])),
    "diag_indices_from": ((S,), lambda s: np.diag_indices_from(s)),
    "tril_indices_from": ((S,), lambda s: np.tril_indices_from(s)),
    "triu_indices_from": ((S,), lambda s: np.triu_indices_from(s)),
    "polyval": ((V, X), lambda p, x: np.polyval(p, x)),
    "polyfit": ((V, V), lambda x, y: np.polyfit(x, y, 1)),
    "polydiv": ((V, V), lambda a, b: np.polydiv(a, b[:2])),
    "roots": ((V,), lambda v: np.roots(v)),
    "poly": ((S,), lambda s: np.poly(s)),
    "convolve": ((V, V), lambda a, b: np.convolve(a, b)),
    "correlate": ((V, V), lambda a, b: np.correlate(a, b)),
    "unwrap": ((V,), lambda v: np.unwrap(v)),
    "sort_complex": ((C,), lambda c: np.sort_complex(c)),
    "real_if_close": ((C,), lambda c: np.real_if_close(c)),
    "unstack": ((X,), lambda x: np.unstack(x)),
    "trim_zeros": ((V,), lambda v: np.trim_zeros(v)),
    "lexsort": ((X,), lambda x: np.lexsort(x)),
    "packbits": ((B,), lambda b: np.packbits(b)),
    "unpackbits": ((I,), lambda i: np.unpackbits(i.astype(np.uint8))),
    "gradient": ((X,), lambda x: np.gradient(x)),
    "ldexp": ((X, I), lambda x, i: np.ldexp(x, i)),
    "linalg.matrix_power": ((S,), lambda s: np.linalg.matrix_power(s, 3)),
    "linalg.tensorsolve": ((S, V), lambda s, v: np.linalg.tensorsolve(s, v[:3])),
    "linalg.tensorinv": ((S,), lambda s: np.linalg.tensorinv(s, ind=1)),
    "linalg.lstsq": ((X, V), lambda x, v: np.linalg.lstsq(x.T, v)),
    "linalg.multi_dot": ((S, S), lambda a, b: np.linalg.multi_dot([a, b, a])),
    "linalg.cholesky": ((SPD,), lambda s: np.linalg.cholesky(s)),
    "linalg.eigh": ((SPD,), lambda s: np.linalg.eigh(s)),
    "linalg.eigvalsh": ((SPD,), lambda s: np.linalg.eigvalsh(s)),
    "linalg.cross": ((X, X), lambda a, b: np.linalg.cross(a[:, :3], b[:, :3])),
    "linalg.vecdot": ((X, X), lambda a, b: np.linalg.vecdot(a, b)),
    "linalg.tensordot": ((X, X), lambda a, b: np.linalg.tensordot(a, b, axes=([1], [1]))),
}

#: Functions that take no array (shapes, dtypes, Python numbers) with a sample call: they run
#: at trace time and their results are constants of the graph.
TRACE_TIME: dict[str, Callable[[], Any]] = {
    "arange": lambda: np.arange(3),
    "zeros": lambda: np.zeros(3),
    "ones": lambda: np.ones(3),
    "empty": lambda: np.empty(3),
    "full": lambda: np.full(3, 1.0),
    "eye": lambda: np.eye(3),
    "identity": lambda: np.identity(3),
    "linspace": lambda: np.linspace(0, 1, 5),
    "logspace": lambda: np.logspace(0, 1, 5),
    "geomspace": lambda: np.geomspace(1, 2, 5),
    "tri": lambda: np.tri(3),
    "indices": lambda: np.indices((2, 3)),
    "bartlett": lambda: np.bartlett(5),
    "blackman": lambda: np.blackman(5),
    "hamming": lambda: np.hamming(5),
    "hanning": lambda: np.hanning(5),
    "kaiser": lambda: np.kaiser(5, 1.0),
    "diag_indices": lambda: np.diag_indices(3),
    "tril_indices": lambda: np.tril_indices(3),
    "triu_indices": lambda: np.triu_indices(3),
    "mask_indices": lambda: np.mask_indices(3, np.triu),
    "fromfunction": lambda: np.fromfunction(lambda i, j: i + j, (2, 2)),
    "frombuffer": lambda: np.frombuffer(b"\x00\x01", np.uint8),
    "fromstring": lambda: np.fromstring("1 2", sep=" "),
    "fromiter": lambda: np.fromiter(range(3), np.int64),
    "can_cast": lambda: np.can_cast(np.int8, np.int16),
    "promote_types": lambda: np.promote_types(np.int8, np.float32),
    "result_type": lambda: np.result_type(np.int8, 1.0),
    "min_scalar_type": lambda: np.min_scalar_type(10),
    "mintypecode": lambda: np.mintypecode("d"),
    "isdtype": lambda: np.isdtype(np.float32, "real floating"),
    "issubdtype": lambda: np.issubdtype(np.float32, np.floating),
    "broadcast_shapes": lambda: np.broadcast_shapes((3, 1), (4,)),
    "iterable": lambda: np.iterable([1]),
    "typename": lambda: np.typename("d"),
    "base_repr": lambda: np.base_repr(5, 2),
    "binary_repr": lambda: np.binary_repr(5),
    "format_float_positional": lambda: np.format_float_positional(1.5),
    "format_float_scientific": lambda: np.format_float_scientific(1.5),
    "get_printoptions": lambda: np.get_printoptions(),
    "printoptions": lambda: np.printoptions(),
    "getbufsize": lambda: np.getbufsize(),
    "geterr": lambda: np.geterr(),
    "geterrcall": lambda: np.geterrcall(),
    "fft.fftfreq": lambda: np.fft.fftfreq(4),
    "fft.rfftfreq": lambda: np.fft.rfftfreq(4),
}

#: The generic attempts, in order: the first that traces decides (inputs of each).
ATTEMPTS: tuple[tuple[np.ndarray, ...], ...] = (
    (X,),
    (X, X),
    (S,),
    (V,),
    (V, V),
    (I,),
    (B,),
    (I, I),
    (B, B),
    (C,),
    (S, S),
    (X, V),
)


@dataclass
class Row:
    name: str
    status: str  # native | opaque | trace time | error | skipped
    fuses: str = ""  # yes | partly | no | "" (not native)
    jax: bool = False
    note: str = ""


def _nodes(graph: Any) -> list[Any]:
    out = []
    for node in graph.nodes:
        out.append(node)
        for sub in subgraphs(node):
            out.extend(_nodes(sub))
    return out


_NEUTRAL = (OpKind.PLACEHOLDER, OpKind.CONSTANT, OpKind.GET_OUTPUT)


def _fusion(nodes: list[Any]) -> str:
    """Do the Numba backends fuse these ops? (views and structure are neutral)"""
    compute = [
        n
        for n in nodes
        if n.op not in _NEUTRAL
        and n.op.group not in (OpGroup.SHAPE, OpGroup.STRUCTURAL)
        and n.op is not OpKind.GETITEM
    ]
    if not compute:
        return "no"
    fused = 0
    for n in compute:
        if n.op in FUSIBLE_REDUCTIONS:
            fused += 1
        elif n.op.group is OpGroup.ELEMENTWISE and not isinstance(n.aval, tuple):
            try:  # (multi-output ufuncs never fuse: a kernel writes one result)
                codegen.lower(n, "cpu")
                fused += 1
            except codegen.Unsupported:
                pass
    return "yes" if fused == len(compute) else "partly" if fused else "no"


def classify_call(fn: Callable[..., Any], inputs: tuple) -> tuple[str, str, str]:
    """(status, fuses, note) of ``fn(*inputs)`` traced with ``kx.function``."""
    f = kx.function(fn, backend="numpy")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cf = f.get_concrete_function(*[np.array(a, copy=True) for a in inputs])
    nodes = _nodes(cf.graph)
    opaque = [n for n in nodes if n.op in OPAQUE_CALLS]
    if opaque:
        return "opaque", "", ""
    compute = [n for n in nodes if n.op not in _NEUTRAL]
    if not compute:
        return "native", "no", "no graph op: a static result (shape, dtype, constant)"
    return "native", _fusion(nodes), ""


def _first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".splitlines()[0]
    # the error names a location in this file: say which line, not where the checkout is
    text = re.sub(r"\S*[/\\]([\w.-]+\.py):(\d+)", r"\1:\2", text)
    return text[:90] + ("..." if len(text) > 90 else "")


def classify(qualified: str, fn: Callable[..., Any]) -> Row:
    """Classify one public function by tracing its sample call (or the generic attempts)."""
    if qualified in TRACE_TIME:
        make = TRACE_TIME[qualified]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kx.function(lambda x: (x, make()))(V)
            return Row(qualified, "trace time", note="no array argument: a constant")
        except Exception as e:  # noqa: BLE001 - the table reports it
            return Row(qualified, "error", note=_first_line(e))
    if qualified in SAMPLES:
        inputs, call = SAMPLES[qualified]
        attempts: list[tuple[tuple, Callable[..., Any]]] = [(inputs, call)]
    else:
        attempts = [(inputs, lambda *a: fn(*a)) for inputs in ATTEMPTS]
    first_error: BaseException | None = None
    for inputs, call in attempts:
        try:  # valid eagerly first: a failing sample says nothing about tracing
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                call(*[np.array(a, copy=True) for a in inputs])
        except Exception:  # noqa: BLE001
            continue
        try:
            status, fuses, note = classify_call(call, inputs)
            return Row(qualified, status, fuses, note=note)
        except Exception as e:  # noqa: BLE001
            first_error = first_error or e
    if first_error is None:
        return Row(qualified, "skipped", note="no sample call runs eagerly (needs a sample)")
    return Row(qualified, "error", note=_first_line(first_error))


def public_functions() -> list[tuple[str, Callable[..., Any]]]:
    out = []
    for prefix, mod in MODULES.items():
        for name in sorted(dir(mod)):
            obj = getattr(mod, name)
            if name.startswith("_") or not callable(obj) or isinstance(obj, type) or name in SKIP:
                continue
            out.append((prefix + name, obj))
    return out


def jax_names() -> tuple[set[str], str]:
    """The names jax.numpy implements (its namespace where importable) and the source."""
    try:
        import jax.numpy as jnp  # noqa: PLC0415 - optional comparison tool
    except ImportError:
        names = {
            line.strip()
            for line in JAX_LIST.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        }
        return names, f"`{JAX_LIST.relative_to(ROOT)}` (jax not installed)"
    names = set()
    for prefix, mod in (("", jnp), ("linalg.", jnp.linalg), ("fft.", jnp.fft)):
        names |= {prefix + n for n in dir(mod) if not n.startswith("_")}
    return names, f"jax.numpy {getattr(jnp, '__version__', '')} (installed)"


UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")


def _method_sample(ufunc: np.ufunc, method: str) -> tuple[tuple, Callable[..., Any]]:
    x = (I % 3 + 1) if ufunc.types and not any(t[0] in "efdgFDG" for t in ufunc.types) else X
    if method == "reduce":
        return (x,), lambda a: ufunc.reduce(a, axis=0)
    if method == "accumulate":
        return (x,), lambda a: ufunc.accumulate(a, axis=1)
    if method == "reduceat":
        return (x,), lambda a: ufunc.reduceat(a, [0, 2], axis=1)
    if method == "outer":
        return (x, x), lambda a, b: ufunc.outer(a[0], b[1])

    def at(a: Any) -> Any:
        y = a.copy()
        if ufunc.nin == 1:
            ufunc.at(y, [0, 0])
        else:
            ufunc.at(y, [0, 0], a[1])
        return y

    return (x,), at


def ufunc_method_rows() -> list[Row]:
    ufuncs = sorted(
        {id(u): (n, u) for n in dir(np) if isinstance(u := getattr(np, n), np.ufunc)}.values()
    )
    rows = []
    for name, uf in ufuncs:
        if uf.signature is not None:  # gufuncs (matmul, vecdot): NumPy defines no methods
            continue
        for method in UFUNC_METHODS:
            inputs, call = _method_sample(uf, method)
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    call(*[np.array(a, copy=True) for a in inputs])
            except Exception:  # noqa: BLE001 - NumPy does not define it for this ufunc
                continue
            try:
                status, fuses, note = classify_call(call, inputs)
            except Exception as e:  # noqa: BLE001
                status, fuses, note = "error", "", _first_line(e)
            rows.append(Row(f"{name}.{method}", status, fuses, note=note))
    return rows


def totals(rows: list[Row], names: set[str] | None = None) -> dict[str, int]:
    out = {"total": 0, "native": 0, "trace time": 0, "opaque": 0, "error": 0, "skipped": 0}
    for r in rows:
        if names is not None and r.name not in names:
            continue
        out["total"] += 1
        out[r.status] += 1
    return out


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "n/a"


def render(rows: list[Row], method_rows: list[Row], jax_source: str) -> str:
    jax_set = {r.name for r in rows if r.jax}
    all_t, jax_t, meth_t = totals(rows), totals(rows, jax_set), totals(method_rows)
    ok = jax_t["native"] + jax_t["trace time"]
    lines = [
        "# NumPy coverage",
        "",
        "Generated by `python tools/numpy_coverage.py` (do not edit by hand): every public "
        "function of NumPy's main namespace, `numpy.linalg` and `numpy.fft`, classified by "
        "tracing a small call of it with `kx.function` (NumPy " + np.__version__ + "). "
        "**native**: graph ops of its own; **opaque**: one `numpy_call` node (NumPy's function "
        "at each call: correct, not optimised); **trace time**: takes no array, runs while "
        "tracing into a constant; **error**: the sample call fails while tracing. *fuses*: the "
        "Numba backends compile the native call's ops into fused kernels (float64 sample; "
        "`no`: the ops run through NumPy in the executor). *jax*: jax.numpy implements it "
        f"(list from {jax_source}).",
        "",
        "## Totals",
        "",
        "| set | functions | native | trace time | opaque | error | native or trace time |",
        "|-----|----------:|-------:|-----------:|-------:|------:|---------------------:|",
    ]
    for label, t in (
        ("all public functions", all_t),
        ("jax.numpy's list", jax_t),
        ("ufunc methods", meth_t),
    ):
        lines.append(
            f"| {label} | {t['total']} | {t['native']} | {t['trace time']} | "
            f"{t['opaque']} | {t['error']} | "
            f"{_pct(t['native'] + t['trace time'], t['total'])} |"
        )
    lines += [
        "",
        f"Native coverage of jax.numpy's list: **{_pct(ok, jax_t['total'])}** "
        f"({ok} of {jax_t['total']}).",
        "",
    ]
    for title, subset in (
        ("Main namespace", [r for r in rows if "." not in r.name]),
        ("numpy.linalg", [r for r in rows if r.name.startswith("linalg.")]),
        ("numpy.fft", [r for r in rows if r.name.startswith("fft.")]),
    ):
        lines += [
            f"## {title}",
            "",
            "| function | status | fuses | jax | note |",
            "|----------|--------|-------|-----|------|",
        ]
        for r in subset:
            note = r.note.replace("|", "\\|")
            lines.append(
                f"| `{r.name}` | {r.status} | {r.fuses} | {'yes' if r.jax else ''} | {note} |"
            )
        lines.append("")
    lines += [
        "## ufunc methods",
        "",
        "Every ufunc and method where NumPy defines it (the sample runs eagerly).",
        "",
        "| method | defined | native | opaque | error |",
        "|---|---:|---:|---:|---:|",
    ]
    for method in UFUNC_METHODS:
        sub = [r for r in method_rows if r.name.endswith("." + method)]
        t = totals(sub)
        lines.append(
            f"| `{method}` | {t['total']} | {t['native']} | {t['opaque']} | {t['error']} |"
        )
    others = [r for r in method_rows if r.status != "native"]
    if others:
        lines += ["", "Not native: " + ", ".join(f"`{r.name}` ({r.status})" for r in others)]
    lines.append("")
    return "\n".join(lines)


def build(names: list[tuple[str, Callable[..., Any]]] | None = None) -> tuple[list[Row], str]:
    jax_set, source = jax_names()
    rows = []
    for qualified, fn in names if names is not None else public_functions():
        row = classify(qualified, fn)
        row.jax = qualified in jax_set
        rows.append(row)
    return rows, source


def doc_totals(text: str) -> list[str]:
    """The totals rows of a rendered doc (what ``--check`` compares)."""
    return [
        line
        for line in text.splitlines()
        if line.startswith("| all public")
        or line.startswith("| jax.numpy's")
        or line.startswith("| ufunc methods")
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if regenerating changes the doc's totals"
    )
    parser.add_argument(
        "--jax-list",
        action="store_true",
        help="rewrite tools/numpy_coverage_jax.txt from an installed jax",
    )
    args = parser.parse_args(argv)
    if args.jax_list:
        import jax.numpy  # noqa: F401, PLC0415 - fails clearly without jax

        names, source = jax_names()
        ours = {q for q, _ in public_functions()}
        header = [line for line in JAX_LIST.read_text().splitlines() if line.startswith("#")]
        JAX_LIST.write_text("\n".join(header + sorted(names & ours)) + "\n")
        print(f"wrote {JAX_LIST} from {source}")
        return 0
    rows, source = build()
    text = render(rows, ufunc_method_rows(), source)
    if args.check:
        same = DOC.exists() and doc_totals(DOC.read_text()) == doc_totals(text)
        print("\n".join(doc_totals(text)))
        return 0 if same else 1
    DOC.write_text(text)
    print("\n".join(doc_totals(text)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

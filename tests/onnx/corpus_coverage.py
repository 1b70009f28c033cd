"""How much of the real-code corpus (tests/realcode) exports to ONNX and runs right.

For each corpus case: trace it on its inputs with ``kx.function`` (NumPy executor), export
that concrete function, run the model in onnxruntime on the same inputs, and compare the
returned arrays with eager NumPy within the "program" tolerance (``onnx_support.TOLERANCE``).
Outcomes: PASS, REFUSED (an op without an ONNX form: named), NOT TRACED (kx.function itself
does not trace the case), EMPTY (the function computes no array: Python-number arguments are
constants of the trace), ALIASED (arguments share memory, which ONNX inputs, being values,
cannot express), RUN ERROR (onnxruntime failed) and WRONG (exported, ran, and differs from
NumPy: never allowed). Run ``python tests/onnx/corpus_coverage.py`` to print
the table docs/onnx.md records; ``test_corpus_coverage.py`` holds the corpus to it. The
generated programs of tests/programs.py (random NumPy steps over every dtype and layout) are
checked the same way.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
for _path in (HERE, HERE.parent, HERE.parents[1]):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from onnx_support import TOLERANCE, session  # noqa: E402 (found through sys.path above)
from realcode import harness  # noqa: E402

import kernel_ext as kx  # noqa: E402


@dataclass
class Outcome:
    case: str
    category: str
    status: str  # PASS | REFUSED | NOT TRACED | EMPTY | ALIASED | RUN ERROR | WRONG
    detail: str = ""  # the refused op, or the first line of the failure
    exact: bool = False  # PASS only: bit for bit NumPy's


def _leaves(structure: Any, value: Any, out: list[Any]) -> None:
    """The eager values at the places ``structured_outputs`` holds a TensorSpec."""
    if isinstance(structure, kx.TensorSpec):
        out.append(value)
    elif isinstance(structure, (tuple, list)):
        for s, v in zip(structure, value):
            _leaves(s, v, out)
    elif isinstance(structure, dict):
        for key, s in structure.items():
            _leaves(s, value[key], out)
    elif hasattr(structure, "__dataclass_fields__"):
        for key in structure.__dataclass_fields__:
            _leaves(getattr(structure, key), getattr(value, key), out)


def _difference(got: np.ndarray, want: Any) -> tuple[str | None, bool]:
    """(the first problem or None, bit for bit) of onnxruntime's value against NumPy's."""
    want = np.asarray(want)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}", False
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}", False
    if np.array_equal(got, want, equal_nan=want.dtype.kind == "f"):
        return None, True
    rtol = TOLERANCE["program"].get(want.dtype)
    if rtol is None:
        return "not bitwise equal", False
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    with np.errstate(invalid="ignore"):
        ok = np.isnan(want) | (got == want) | (np.abs(got - want) <= rtol * scale)
    if not np.array_equal(np.isnan(got), np.isnan(want)) or not ok.all():
        return f"beyond rtol {rtol}: max |diff| {np.nanmax(np.abs(got - want)):.3g}", False
    return None, False


def _arrays(value: Any, scalars: bool = False) -> list[Any]:
    """Every ndarray (and NumPy scalar, with ``scalars``) inside the arguments (tuples,
    lists, dicts, object attributes)."""
    if isinstance(value, np.ndarray) or (scalars and isinstance(value, np.generic)):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v, scalars)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v, scalars)]
    if scalars and hasattr(value, "__dict__") and not callable(value):
        return [a for v in vars(value).values() for a in _arrays(v, scalars)]
    return []


def _refused_op(message: str) -> str:
    found = re.match(r"op '([^']+)'", message)
    return found.group(1) if found else message.splitlines()[0][:60]


def _export(cf: Any, out: Outcome) -> Any:
    """The ONNX model of ``cf``, or None with ``out`` saying why (refused, or rejected)."""
    try:
        return kx.onnx.export(cf)
    except kx.onnx.OnnxExportError as exc:
        out.status, out.detail = "REFUSED", _refused_op(str(exc))
    except Exception as exc:  # noqa: BLE001 - a model the checker rejects is an outcome
        out.status, out.detail = "RUN ERROR", f"export: {str(exc).splitlines()[0][:120]}"
    return None


def check_case(case: harness.Case) -> Outcome:
    out = Outcome(case.name, case.category, "PASS")
    seed = harness.case_seed(case.name)
    args, kwargs = harness.inputs_for(case, seed)
    try:
        np.random.seed(seed)
        cf = kx.function(case.fn, backend="numpy").get_concrete_function(*args, **kwargs)
        _ = cf.graph
    except Exception as exc:  # noqa: BLE001 - the case's own trace failure (test_corpus has it)
        out.status, out.detail = "NOT TRACED", f"{type(exc).__name__}"
        return out
    if not cf.graph.outputs:
        out.status = "EMPTY"
        return out
    arrays = [a for a in _arrays((args, kwargs))]
    if any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1 :]):
        out.status = "ALIASED"
        return out
    model = _export(cf, out)
    if model is None:
        return out
    feed_args, feed_kwargs = harness.inputs_for(case, seed)
    try:
        got = session(model).run(None, kx.onnx.input_feed(cf, *feed_args, **feed_kwargs))
    except Exception as exc:  # noqa: BLE001 - any onnxruntime failure is an outcome
        out.status, out.detail = "RUN ERROR", str(exc).splitlines()[0][:120]
        return out
    eager_args, eager_kwargs = harness.inputs_for(case, seed)
    with np.errstate(all="ignore"):
        expected = harness.call_seeded(case.fn, (eager_args, eager_kwargs), seed)
    wanted: list[Any] = []
    _leaves(cf.structured_outputs, expected, wanted)
    exact = True
    for i, (g, w) in enumerate(zip(got, wanted)):
        problem, bitwise = _difference(g, w)
        if problem is not None:
            out.status, out.detail = "WRONG", f"output {i}: {problem}"
            return out
        exact &= bitwise
    # the outputs past the returned ones: new contents of arguments updated in place, each
    # equal to one argument array after the eager call
    updated = _arrays((eager_args, eager_kwargs), scalars=True)
    for i, g in enumerate(got[len(wanted) :], start=len(wanted)):
        found = [_difference(g, u) for u in updated]
        if not any(problem is None for problem, _ in found):
            out.status = "WRONG"
            out.detail = f"output {i} (an updated argument) matches no argument's eager contents"
            return out
        exact &= any(problem is None and bitwise for problem, bitwise in found)
    out.exact = exact
    return out


def run_corpus() -> list[Outcome]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [check_case(c) for c in harness.all_cases()]


#: The generated NumPy programs (tests/programs.py) checked too: (maker, seeds).
GENERATED = (("make_program", range(300)), ("make_named_program", range(120)))


def check_program(kind: str, seed: int) -> Outcome:
    """One generated program (random steps over random dtypes, shapes and layouts),
    exported for its inputs and compared with NumPy (outputs are arrays in a tuple)."""
    import programs

    prog = getattr(programs, kind)(seed)
    out = Outcome(f"{kind}({seed})", kind, "PASS")
    try:
        cf = kx.function(prog, backend="numpy").get_concrete_function(*prog.inputs)
        _ = cf.graph
    except Exception as exc:  # noqa: BLE001 - the program's own trace failure
        out.status, out.detail = "NOT TRACED", type(exc).__name__
        return out
    if not cf.graph.outputs:
        out.status = "EMPTY"
        return out
    model = _export(cf, out)
    if model is None:
        return out
    try:
        got = session(model).run(None, kx.onnx.input_feed(cf, *prog.inputs))
    except Exception as exc:  # noqa: BLE001 - any onnxruntime failure is an outcome
        out.status, out.detail = "RUN ERROR", str(exc).splitlines()[0][:120]
        return out
    with np.errstate(all="ignore"):
        expected = prog(*prog.inputs)
    wanted: list[Any] = []
    _leaves(cf.structured_outputs, expected, wanted)
    out.exact = True
    for i, (g, w) in enumerate(zip(got, wanted)):
        problem, bitwise = _difference(g, w)
        if problem is not None:
            out.status, out.detail = "WRONG", f"output {i}: {problem} ({prog.describe()})"
            return out
        out.exact &= bitwise
    return out


def run_generated() -> list[Outcome]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [check_program(kind, seed) for kind, seeds in GENERATED for seed in seeds]


def render_generated(outcomes: list[Outcome]) -> str:
    counts = Counter(o.status for o in outcomes)
    exact = sum(o.exact for o in outcomes if o.status == "PASS")
    stops = Counter(o.detail for o in outcomes if o.status == "REFUSED")
    lines = [
        f"{len(outcomes)} generated programs (tests/programs.py: make_program seeds 0-299, "
        f"make_named_program seeds 0-119): {counts['PASS']} export and run within "
        f"tolerance ({exact} bit for bit), {counts['REFUSED']} refused, "
        f"{counts['NOT TRACED']} not traced, {counts['RUN ERROR']} onnxruntime errors, "
        f"{counts['WRONG']} wrong. Most frequent stops: "
        + ", ".join(f"`{op}` {n}" for op, n in stops.most_common(12))
        + "."
    ]
    lines += [
        f"- {o.case} ({o.status}): {o.detail}"
        for o in outcomes
        if o.status in ("RUN ERROR", "WRONG")
    ]
    return "\n".join(lines)


def render(outcomes: list[Outcome]) -> str:
    """The coverage table (Markdown): counts by outcome and category, then the stopping ops."""
    statuses = ["PASS", "REFUSED", "NOT TRACED", "EMPTY", "ALIASED", "RUN ERROR", "WRONG"]
    counts = Counter(o.status for o in outcomes)
    exact = sum(o.exact for o in outcomes if o.status == "PASS")
    summary = (
        f"{len(outcomes)} corpus programs: {counts['PASS']} export and run within "
        f"tolerance ({exact} bit for bit), {counts['REFUSED']} refused, "
        f"{counts['NOT TRACED']} not traced by kx.function, {counts['EMPTY']} with no "
        f"array to compute, {counts['ALIASED']} with aliased arguments, "
        f"{counts['RUN ERROR']} onnxruntime errors, {counts['WRONG']} wrong."
    )
    lines = [
        summary,
        "",
        "| category | " + " | ".join(s.lower() for s in statuses) + " |",
        "|---|" + "---:|" * len(statuses),
    ]
    for category in harness.CATEGORIES:
        row = Counter(o.status for o in outcomes if o.category == category)
        lines.append(f"| {category} | " + " | ".join(str(row[s]) for s in statuses) + " |")
    stops = Counter(o.detail for o in outcomes if o.status == "REFUSED")
    lines += ["", "| op that stops the rest | programs |", "|---|---:|"]
    lines += [f"| `{op}` | {n} |" for op, n in stops.most_common()]
    others = [o for o in outcomes if o.status in ("RUN ERROR", "WRONG")]
    if others:
        lines += ["", "Other failures:"] + [f"- {o.case} ({o.status}): {o.detail}" for o in others]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(run_corpus()))
    print()
    print(render_generated(run_generated()))

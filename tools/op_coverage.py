"""Which executor computes which op: the table ``docs/op_coverage.md``.

For every op of the graph IR (:class:`kernel_ext.ir.OpKind`) and every executor, the table says
whether the executor has a form of its own for the op, read from the executor's own tables
(never from a list kept here):

* **NumPy** — the reference interpreter's lowering (``ir.interpreter.LOWER``), which the NumPy
  executor's generated code calls; every op has one.
* **fused CPU / CUDA** — a form in a fused Numba kernel (``backends.codegen.kernel_form``);
  an op without one runs between the kernels as NumPy's function.
* **whole graph** — ``jit_compile=True`` and tiered ``auto`` (``backends.whole_graph.compiles``);
  a graph holding an op without one runs as fused segments.
* **Dask** — a per-chunk or Dask form (``backends.dask_backend.graph.runs_on_dask``); a graph
  holding an op without one is refused with the reason.
* **gradient** — a VJP rule, a zero gradient or a leaf (``autodiff.backward.rule_kinds``);
  the others raise ``NonDifferentiableError`` with the reason.
* **ONNX** — a translation (``onnx.rules``); the others are refused with the reason.

"Some operands" is the unit: a form may still decline a node for its dtypes or parameters
(the executors decide per node and fall back the same way). Where an executor has no form,
the table gives the reason the executor states (``FALLBACK_REASONS`` and the like, kept
beside each executor's op table); ``tests/tools/test_op_coverage.py`` fails when an op has
neither, when a reason is kept for an op that has a form, or when this doc is out of date.

Usage: ``python tools/op_coverage.py`` writes the doc; ``--check`` exits 1 when it differs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kernel_ext.backends import codegen, whole_graph  # noqa: E402
from kernel_ext.ir import LOWER, FallbackReasons, OpGroup, OpKind, fallback_reason  # noqa: E402
from kernel_ext.onnx import rules as onnx_rules  # noqa: E402

DOC = ROOT / "docs" / "op_coverage.md"

# ``kernel_ext.autodiff`` re-exports a function named ``backward`` over its module
backward = importlib.import_module("kernel_ext.autodiff.backward")

#: Ops the NumPy executor writes itself (graph structure and control flow), not through LOWER.
NUMPY_STRUCTURE = frozenset(
    {OpKind.PLACEHOLDER, OpKind.CONSTANT, OpKind.GET_OUTPUT, OpKind.COND, OpKind.WHILE}
)


@dataclass(frozen=True)
class Executor:
    """One column: its title, the cell of an op it has a form for, and its stated reasons."""

    title: str
    form: Callable[[OpKind], str | None]  # the cell ("yes", "rule", ...) or None
    reason: Callable[[OpKind], str | None]  # why there is no form (None: no reason stated)


def _numpy_form(op: OpKind) -> str | None:
    return "yes" if op in LOWER or op in NUMPY_STRUCTURE else None


def _reasons(table: FallbackReasons) -> Callable[[OpKind], str | None]:
    return lambda op: fallback_reason(table, op)


def _dask() -> Executor:
    # Dask is an optional extra: the column says so when it is not installed
    try:
        from kernel_ext.backends.dask_backend import graph as dask_graph
    except ImportError:
        return Executor("Dask", lambda op: None, lambda op: "Dask is not installed")
    return Executor(
        "Dask",
        lambda op: "yes" if dask_graph.runs_on_dask(op) else None,
        _reasons(dask_graph.FALLBACK_REASONS),
    )


def executors() -> list[Executor]:
    """The table's columns, left to right."""
    kinds = {op: how for how, ops in backward.rule_kinds().items() for op in ops}
    return [
        Executor("NumPy", _numpy_form, lambda op: None),
        Executor(
            "fused CPU",
            lambda op: "yes" if codegen.kernel_form(op, "cpu") else None,
            _reasons(codegen.KERNEL_FALLBACK_REASONS),
        ),
        Executor(
            "CUDA",
            lambda op: "yes" if codegen.kernel_form(op, "cuda") else None,
            _reasons(codegen.cuda_fallback_reasons()),
        ),
        Executor(
            "whole graph",
            lambda op: "yes" if whole_graph.compiles(op) else None,
            _reasons(whole_graph.FALLBACK_REASONS),
        ),
        _dask(),
        Executor(
            "gradient",
            lambda op: None if kinds[op] == "error" else kinds[op],
            _reasons(backward.NO_GRADIENT_REASONS),
        ),
        Executor(
            "ONNX",
            lambda op: "yes" if onnx_rules.refusal_reason(op) is None else None,
            onnx_rules.refusal_reason,
        ),
    ]


def gaps(columns: list[Executor] | None = None) -> list[str]:
    """Every (executor, op) with neither a form nor a stated reason: should be empty."""
    return [
        f"{ex.title}: {op.value}"
        for ex in columns or executors()
        for op in OpKind
        if ex.form(op) is None and not ex.reason(op)
    ]


def render() -> str:
    """The doc's text."""
    columns = executors()
    notes: list[dict[str, int]] = [{} for _ in columns]  # per column: reason -> footnote number
    rows = []
    for group in OpGroup:
        for op in (k for k in OpKind if k.group is group):
            cells = []
            for ex, col_notes in zip(columns, notes):
                form = ex.form(op)
                if form is not None:
                    cells.append(form)
                    continue
                why = ex.reason(op) or "(no reason stated)"
                number = col_notes.setdefault(why, len(col_notes) + 1)
                cells.append(f"— {number}")
            rows.append(f"| `{op.value}` | {group.value} | " + " | ".join(cells) + " |")
    head = "| op | group | " + " | ".join(ex.title for ex in columns) + " |"
    rule = "|" + "---|" * (len(columns) + 2)
    totals = " · ".join(
        f"{ex.title} {sum(ex.form(op) is not None for op in OpKind)}" for ex in columns
    )
    out = [
        "# Op coverage: which executor computes which op",
        "",
        "Generated by `python tools/op_coverage.py` from the executors' own tables (checked by",
        "`tests/tools/test_op_coverage.py`: every op has a form or a stated reason on every",
        "executor). A form may still decline a node for its dtypes or parameters; the executor",
        "then falls back the same way. `— n`: no form, for reason *n* of that executor's list",
        "below. Gradient: `rule` (a VJP rule), `zero` (piecewise constant, or an integer or",
        "boolean result), `leaf` (a source).",
        "",
        f"Ops: {len(OpKind)}. With a form: {totals}.",
        "",
        head,
        rule,
        *rows,
        "",
        "## Why an executor has no form",
        "",
    ]
    for ex, col_notes in zip(columns, notes):
        if not col_notes:
            continue
        out += [f"### {ex.title}", ""]
        for why, number in col_notes.items():
            out.append(f"{number}. {why}")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if DOC.read_text() != text:
            print(f"{DOC} is out of date: run python tools/op_coverage.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

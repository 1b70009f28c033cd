"""How much of the real-code corpus saves and loads bit for bit, and what stops the rest.

For each corpus case (tests/realcode): trace it on the NumPy executor with its inputs, save,
load, then call the loaded function on fresh copies of the inputs and the eager function on
others, and compare the result and every argument after the call exactly (the harness's
``compare``, not tolerant). Run as a script it prints the table docs/saved_model.md shows:

    python tests/saved_model/corpus_coverage.py
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import programs
from realcode import harness

import kernel_ext as kx

STATUSES = ("bitwise", "differs", "refused at save", "load error", "refused at call", "not traced")


@dataclass
class Outcome:
    case: str
    category: str
    status: str  # one of STATUSES
    detail: str = ""
    source: str = ""  # the same for export_source's standalone file
    source_detail: str = ""


def _import_file(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up)
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def source_outcome(
    outcome: Outcome,
    fn: Any,
    root: str,
    call: Callable[[Any], Any],
    compare: Callable[[Any], harness.Diff],
) -> Outcome:
    """Fill ``outcome.source``: export ``fn`` as standalone source, import it, ``call`` its
    function, ``compare`` the result (both given the function)."""
    name = kx.saved_model.targets.identifier(fn.name)
    path = f"{root}/src_{outcome.case}.py"
    try:
        kx.saved_model.export_source(fn, path)
    except kx.saved_model.SaveError as e:
        outcome.source, outcome.source_detail = "refused at save", _reason(e)
        return outcome
    module = _import_file(path, f"src_{outcome.case}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = call(getattr(module, name))
    except Exception as e:  # noqa: BLE001 - counted and shown in the table
        outcome.source, outcome.source_detail = "refused at call", _reason(e)
        return outcome
    diff = compare(actual)
    outcome.source = "bitwise" if diff.problem is None else "differs"
    outcome.source_detail = diff.problem or ""
    return outcome


def _reason(exc: BaseException) -> str:
    text = str(exc).split(". Fix")[0]
    for marker in (
        "shares memory with argument",
        "draws from a np.random.Generator",
        "a Generator object, traced by its identity",
        "traced by its identity",
        "which names a Python object",
        "it calls the Python function",
        "np.random.Generator",
        "dataclass",
        "has no data form",
        "shares memory with argument",
    ):
        if marker in text:
            return marker
    return f"{type(exc).__name__}: {text[:80]}"


def check_case(case: harness.Case, root: str) -> Outcome:
    seed = harness.case_seed(case.name)
    outcome = _check_case(case, root, seed)
    fn = kx.function(case.fn, backend="numpy")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            harness.call_seeded(fn, harness.inputs_for(case, seed), seed)
    except Exception:  # noqa: BLE001 - not traced: no source either
        outcome.source = "not traced"
        return outcome
    expected_args = harness.inputs_for(case, seed)
    actual_args = harness.inputs_for(case, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = harness.call_seeded(case.fn, expected_args, seed)
    return source_outcome(
        outcome,
        fn,
        root,
        lambda f: harness.call_seeded(f, actual_args, seed),
        lambda actual: harness.compare_call(
            expected, expected_args, actual, actual_args, tolerant=False
        ),
    )


def _check_case(case: harness.Case, root: str, seed: int) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = kx.function(case.fn, backend="numpy")
        try:
            harness.call_seeded(fn, harness.inputs_for(case, seed), seed)
        except Exception as e:
            return Outcome(case.name, case.category, "not traced", _reason(e))
        if not fn.concrete_functions:
            return Outcome(case.name, case.category, "not traced", "ran eagerly, no trace")
        path = f"{root}/{case.name}"
        try:
            kx.saved_model.save(fn, path)
        except kx.saved_model.SaveError as e:
            return Outcome(case.name, case.category, "refused at save", _reason(e))
        try:
            loaded = kx.saved_model.load(path, backend="numpy")
        except ValueError as e:
            return Outcome(case.name, case.category, "load error", _reason(e))
        expected_args = harness.inputs_for(case, seed)
        actual_args = harness.inputs_for(case, seed)
        expected = harness.call_seeded(case.fn, expected_args, seed)
        try:
            actual = harness.call_seeded(loaded.functions[case.fn.__name__], actual_args, seed)
        except Exception as e:
            return Outcome(case.name, case.category, "refused at call", _reason(e))
    diff = harness.compare_call(expected, expected_args, actual, actual_args, tolerant=False)
    if diff.problem is not None:
        return Outcome(case.name, case.category, "differs", diff.problem[:100])
    return Outcome(case.name, case.category, "bitwise")


GENERATORS = {
    "generated": programs.make_program,
    "generated named": programs.make_named_program,
    "generated numeric": programs.make_numeric_program,
}


def check_program(kind: str, seed: int, root: str) -> Outcome:
    """One generated program of tests/programs.py, saved, loaded and compared bit for bit."""
    name = f"{kind.replace(' ', '_')}_{seed}"
    prog = GENERATORS[kind](seed)
    outcome = _check_program(kind, name, prog, root)
    fn = kx.function(prog, backend="numpy")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = fn(*prog.inputs)
    except Exception:  # noqa: BLE001 - not traced: no source either
        outcome.source = "not traced"
        return outcome
    return source_outcome(
        outcome,
        fn,
        root,
        lambda f: f(*prog.inputs),
        lambda actual: harness.compare(expected, actual, "result"),
    )


def _check_program(kind: str, name: str, prog: Any, root: str) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = kx.function(prog, backend="numpy")
        try:
            expected = fn(*prog.inputs)
        except Exception as e:
            return Outcome(name, kind, "not traced", _reason(e))
        if not fn.concrete_functions:
            return Outcome(name, kind, "not traced", "ran eagerly, no trace")
        try:
            kx.saved_model.save(fn, f"{root}/{name}")
        except kx.saved_model.SaveError as e:
            return Outcome(name, kind, "refused at save", _reason(e))
        try:
            loaded = kx.saved_model.load(f"{root}/{name}", backend="numpy")
        except ValueError as e:
            return Outcome(name, kind, "load error", _reason(e))
        try:
            actual = loaded(*prog.inputs)
        except Exception as e:
            return Outcome(name, kind, "refused at call", _reason(e))
    diff = harness.compare(expected, actual, "result", tolerant=False)
    if diff.problem is not None:
        return Outcome(name, kind, "differs", diff.problem[:100])
    return Outcome(name, kind, "bitwise")


def corpus_outcomes(programs_per_kind: int = 40) -> list[Outcome]:
    """Every corpus case, then ``programs_per_kind`` generated programs of each kind."""
    with tempfile.TemporaryDirectory() as root:
        out = [check_case(c, root) for c in harness.all_cases()]
        out += [
            check_program(kind, seed, root)
            for kind in GENERATORS
            for seed in range(programs_per_kind)
        ]
        return out


def table(outcomes: list[Outcome]) -> str:
    """The Markdown table of docs/saved_model.md: counts per category (saved model, then
    standalone source), then what stops the rest."""
    cats = list(dict.fromkeys(o.category for o in outcomes))
    lines = [
        "| category | cases | save/load bitwise | export_source bitwise | "
        "refused at save | refused at call | differs |",
        "|---" * 7 + "|",
    ]
    for cat in cats + ["**all**"]:
        mine = [o for o in outcomes if cat == "**all**" or o.category == cat]
        saved, source = Counter(o.status for o in mine), Counter(o.source for o in mine)
        lines.append(
            f"| {cat} | {len(mine)} | {saved['bitwise']} | {source['bitwise']} | "
            f"{saved['refused at save']} / {source['refused at save']} | "
            f"{saved['refused at call']} / {source['refused at call']} | "
            f"{saved['differs'] + saved['load error']} / {source['differs']} |"
        )
    reasons = Counter(
        [("save/load", o.status, o.detail) for o in outcomes if o.status != "bitwise"]
        + [("export_source", o.source, o.source_detail) for o in outcomes if o.source != "bitwise"]
    )
    if reasons:
        lines += ["", "| what stops the rest | cases |", "|---|---|"]
        for (where, status, detail), n in reasons.most_common():
            lines.append(f"| {where}, {status}: {detail.replace('|', '/')} | {n} |")
    return "\n".join(lines)


if __name__ == "__main__":
    results = corpus_outcomes()
    print(table(results))
    for o in results:
        if o.status != "bitwise" or o.source != "bitwise":
            print(
                f"# {o.case}: {o.status}: {o.detail} / source {o.source}: {o.source_detail}",
                file=sys.stderr,
            )
    np.random.seed(0)

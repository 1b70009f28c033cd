"""How much of the real-code corpus saves and loads bit for bit, and what stops the rest.

For each corpus case (tests/realcode): trace it on the NumPy executor with its inputs, save,
load, then call the loaded function on fresh copies of the inputs and the eager function on
others, and compare the result and every argument after the call exactly (the harness's
``compare``, not tolerant). Run as a script it prints the table docs/saved_model.md shows:

    python tests/saved_model/corpus_coverage.py
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import programs
from realcode import harness

import kernel_ext as kx

STATUSES = ("bitwise", "differs", "refused at save", "load error", "refused at call",
            "not traced")


@dataclass
class Outcome:
    case: str
    category: str
    status: str   # one of STATUSES
    detail: str = ""


def _reason(exc: BaseException) -> str:
    text = str(exc).split(". Fix")[0]
    for marker in ("shares memory with argument", "a Generator object, traced by its identity",
                   "traced by its identity", "which names a Python object",
                   "it calls the Python function", "np.random.Generator", "dataclass",
                   "has no data form", "shares memory with argument"):
        if marker in text:
            return marker
    return f"{type(exc).__name__}: {text[:80]}"


def check_case(case: harness.Case, root: str) -> Outcome:
    seed = harness.case_seed(case.name)
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


GENERATORS = {"generated": programs.make_program, "generated named": programs.make_named_program,
              "generated numeric": programs.make_numeric_program}


def check_program(kind: str, seed: int, root: str) -> Outcome:
    """One generated program of tests/programs.py, saved, loaded and compared bit for bit."""
    name = f"{kind.replace(' ', '_')}_{seed}"
    prog = GENERATORS[kind](seed)
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
        out += [check_program(kind, seed, root) for kind in GENERATORS
                for seed in range(programs_per_kind)]
        return out


def table(outcomes: list[Outcome]) -> str:
    """The Markdown table of docs/saved_model.md: counts per category, then the reasons."""
    cats = list(dict.fromkeys(o.category for o in outcomes))
    statuses = list(STATUSES)
    lines = ["| category | " + " | ".join(statuses) + " |",
             "|---" * (len(statuses) + 1) + "|"]
    for cat in cats + ["**all**"]:
        mine = [o for o in outcomes if cat == "**all**" or o.category == cat]
        counts = Counter(o.status for o in mine)
        lines.append(f"| {cat} | " + " | ".join(str(counts[s]) for s in statuses) + " |")
    reasons = Counter((o.status, o.detail) for o in outcomes if o.status != "bitwise")
    if reasons:
        lines += ["", "| what stops it | cases |", "|---|---|"]
        for (status, detail), n in reasons.most_common():
            lines.append(f"| {status}: {detail.replace('|', '/')} | {n} |")
    return "\n".join(lines)


if __name__ == "__main__":
    results = corpus_outcomes()
    print(table(results))
    for o in results:
        if o.status != "bitwise":
            print(f"# {o.case}: {o.status}: {o.detail}", file=sys.stderr)
    np.random.seed(0)

"""The real-code corpus as a table: each case's outcome and speed on every kx.function path.

    python benchmarks/realcode.py                          # every case, every path
    python benchmarks/realcode.py --paths numpy,auto --filter inplace
    python benchmarks/realcode.py --write-known            # re-record tests/realcode/expected.py

A cell reads ``STATUS ratio``: on a PASS, ratio is the traced call's median time over eager
NumPy's on the same inputs, after warm-up: the traced function is called as a hot notebook
loop calls it until its kernels are compiled and tiered ``auto`` has chosen its executor
(``harness.warm_up``). ``~`` marks a PASS that matched only within the fused paths' float
tolerance, ``*`` a second call that retraced though shapes and dtypes were the same.
Importing this module runs nothing.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = ROOT / "tests" / "realcode"
# A name of its own: "realcode" would be this script when it runs from benchmarks/.
PACKAGE = "realcode_corpus"


def load_package() -> ModuleType:
    """Import tests/realcode as PACKAGE (once) and return its harness module."""
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, CORPUS_DIR / "__init__.py", submodule_search_locations=[str(CORPUS_DIR)]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        spec.loader.exec_module(module)
    return importlib.import_module(f"{PACKAGE}.harness")


def cell(result: Any) -> str:
    if result is None:
        return ""
    mark = "~" if result.exact is False else ""
    mark += "*" if (result.traces or 0) > 1 else ""
    ratio = result.ratio
    return f"{result.status}{mark}" + (f" {ratio:.2f}x" if ratio is not None else "")


def normalise_error(detail: str) -> str:
    """An error's first line without the names and shapes of one case, so like errors group."""
    text = detail.split(". Fix:")[0]
    text = re.sub(r"%\w+ \([^)]*\)", "%v", text)
    text = re.sub(r"<kx\.Tensor [^>]*>", "<Tensor>", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"/\S+\.py:\d+", "<file>", text)
    return text


def pipe_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        " | ".join(h.ljust(w) for h, w in zip(header, widths)),
        "-|-".join("-" * w for w in widths),
    ]
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def report(results: list[Any], cases: list[Any], paths: Sequence[str]) -> str:
    by_key = {(r.case, r.path): r for r in results}
    rows = [[c.name, c.category, *(cell(by_key.get((c.name, p))) for p in paths)] for c in cases]
    out = [pipe_table(["case", "category", *paths], rows), ""]

    summary = []
    for p in paths:
        rs = [r for r in results if r.path == p]
        n = max(1, len(rs))
        count = Counter(r.status for r in rs)
        close = sum(r.exact is False for r in rs)
        summary.append(
            [
                p,
                f"{100 * count['PASS'] / n:.1f}%",
                str(count["PASS"]),
                str(close),
                str(count["WRONG"]),
                str(count["ERROR"]),
                str(len(rs)),
            ]
        )
    out += [
        pipe_table(["path", "pass %", "pass", "of which close", "wrong", "error", "runs"], summary),
        "",
    ]

    # How a traced call compares with eager NumPy, over the passing cases (after warm-up).
    speed = []
    for p in paths:
        ratios = sorted(
            r.ratio for r in results if r.path == p and r.status == "PASS" and r.ratio is not None
        )
        if not ratios:
            continue
        q = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else ratios * 9
        speed.append(
            [
                p,
                f"{statistics.median(ratios):.2f}x",
                f"{q[0]:.2f}x",
                f"{q[-1]:.2f}x",
                f"{ratios[-1]:.2f}x",
                str(sum(r <= 0.8 for r in ratios)),
                str(sum(r > 1.1 for r in ratios)),
                str(len(ratios)),
            ]
        )
    out += [
        "Traced time / eager time (PASS cases):",
        pipe_table(["path", "median", "p10", "p90", "max", "<= 0.8x", "> 1.1x", "cases"], speed),
        "",
    ]

    groups: dict[str, list[str]] = defaultdict(list)
    for r in results:
        if r.status == "ERROR":
            groups[normalise_error(r.detail)].append(f"{r.case}-{r.path}")
    top = sorted(groups.items(), key=lambda kv: -len(kv[1]))[:15]
    out.append(f"Top errors ({len(groups)} distinct first lines):")
    for message, where in top:
        shown = ", ".join(sorted({w.rsplit("-", 1)[0] for w in where})[:4])
        out.append(f"  {len(where):3d}  {message[:110]}  [{shown}...]")

    wrong: dict[str, list[Any]] = defaultdict(list)
    for r in results:
        if r.status == "WRONG":
            wrong[r.case].append(r)
    if wrong:
        out += ["", f"WRONG ({len(wrong)} cases; the first path's difference shown):"]
        for name, rs in wrong.items():
            paths_ = ",".join(r.path for r in rs)
            out.append(f"  {name} [{paths_}]: {rs[0].detail[:130]}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--paths", default="numpy,auto,jit", help="comma-separated subset of numpy,auto,jit"
    )
    parser.add_argument(
        "--filter", default="", help="only cases whose name, category or tag contains this"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per side (median)")
    parser.add_argument(
        "--write-known",
        action="store_true",
        help="record every outcome other than PASS in tests/realcode/expected.py",
    )
    args = parser.parse_args(argv)

    harness = load_package()
    paths = tuple(p for p in args.paths.split(",") if p)
    unknown = set(paths) - set(harness.PATHS)
    if unknown:
        parser.error(f"unknown paths: {sorted(unknown)}")
    cases = [
        c
        for c in harness.all_cases()
        if args.filter in c.name or args.filter in c.category or args.filter in c.tags
    ]
    if args.write_known and (args.filter or set(paths) != set(harness.PATHS)):
        parser.error("--write-known records the whole corpus: no --filter, all paths")

    results = list(harness.run_all(cases, paths, timing=0 if args.write_known else args.repeats))
    if args.write_known:
        (CORPUS_DIR / "expected.py").write_text(harness.render_known(results))
    print(report(results, cases, paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())

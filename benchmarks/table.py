"""The one table format every benchmark suite prints (and its command-line entry point)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

Row = tuple[str, str, str, str]
HEADER: Row = ("benchmark", "time", "ratio", "target")


def format_table(rows: Sequence[Row]) -> str:
    """Rows as a Markdown-compatible pipe table (pasteable into a closing note)."""
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(4)]
    lines = [
        " | ".join(h.ljust(w) for h, w in zip(HEADER, widths)),
        "-|-".join("-" * w for w in widths),
    ]
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def main(rows: Callable[[bool], Sequence[Row]], description: str) -> None:
    """``python bench_x.py [--quick]``: run one suite and print its table."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    print(format_table(rows(parser.parse_args().quick)))

"""Recorded outcomes of the real-code corpus: every (case, path) that does not PASS.

Regenerate with ``python benchmarks/realcode.py --write-known`` after a change that
fixes cases; the test suite fails until a case that now passes is removed here.
"""

KNOWN: dict[tuple[str, str], str] = {}

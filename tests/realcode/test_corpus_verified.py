"""The real-code corpus once more with verify mode on (``kx.function(..., verify=True)``,
``backend="auto"``): every case that passes on ``auto`` passes again with each trace's first
calls also checked against eager NumPy inside the engine, so no VerificationError is raised
(a false alarm on correct code would be a verify-mode bug; a real one a silent difference
the harness's own comparison missed)."""

from __future__ import annotations

import pytest

import kernel_ext as kx
from realcode import harness
from realcode.expected import KNOWN

CASES = [c for c in harness.all_cases() if (c.name, "auto") not in KNOWN]

#: Differences verify mode finds that the corpus harness does not look for (strict: a case
#: that starts passing fails until it is removed here).
VERIFY_KNOWN: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(c.name, marks=pytest.mark.xfail(strict=True, reason=VERIFY_KNOWN[c.name]))
        if c.name in VERIFY_KNOWN
        else c.name
        for c in CASES
    ],
)
def test_case_passes_with_verify_on(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    made: list[kx.Function] = []

    def verified(fn):
        made.append(kx.function(fn, verify=True, **harness.PATH_OPTIONS["auto"]))
        return made[-1]

    result = harness.check(case, "auto", traced_factory=verified)
    assert result.status == "PASS", f"{name}: {result.status}: {result.detail}"
    # every trace was checked against eager NumPy (or says why it could not be)
    for cf in made[0].concrete_functions:
        assert cf.verifier.eager_runs > 0 or cf.verifier.skipped, name

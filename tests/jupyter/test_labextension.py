"""The lab extension's TypeScript unit tests (jest, fake comm) run as part of the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def test_typescript_unit_tests_pass():
    jlpm = shutil.which("jlpm") or str(Path(os.sys.executable).parent / "jlpm")
    if not (ROOT / "node_modules").is_dir() or not Path(jlpm).exists():
        if os.environ.get("CI"):
            pytest.fail("node_modules or jlpm missing: `pip install -e .` builds the lab "
                        "extension and installs its dependencies")
        pytest.skip("the lab extension's dependencies are not installed (pip install -e .)")
    env = dict(os.environ, PATH=f"{Path(jlpm).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run([jlpm, "test", "--silent"], cwd=ROOT, capture_output=True, text=True,
                            env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    summary = [line for line in result.stderr.splitlines() if line.startswith("Tests:")]
    assert summary and "failed" not in summary[0], summary

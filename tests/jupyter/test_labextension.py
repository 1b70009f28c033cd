"""The lab extension's TypeScript unit tests (jest, fake comm) run as part of the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.slow  # jest starts node and ts-jest (10 s); pre-commit and .ci/run run it
def test_typescript_unit_tests_pass():
    jlpm = shutil.which("jlpm") or str(Path(os.sys.executable).parent / "jlpm")
    if not (ROOT / "node_modules").is_dir() or not Path(jlpm).exists():
        if os.environ.get("CI"):
            pytest.fail(
                "node_modules or jlpm missing: `pip install -e .` builds the lab "
                "extension and installs its dependencies"
            )
        pytest.skip("the lab extension's dependencies are not installed (pip install -e .)")
    env = dict(os.environ, PATH=f"{Path(jlpm).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run(
        [jlpm, "test", "--silent"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    summary = [line for line in result.stderr.splitlines() if line.startswith("Tests:")]
    assert summary and "failed" not in summary[0], summary


def test_the_typescript_css_and_protocol_doc_are_prettier_formatted():
    # package.json's prettier:check: the project's formatting standard for the extension
    jlpm = shutil.which("jlpm") or str(Path(os.sys.executable).parent / "jlpm")
    if not (ROOT / "node_modules" / ".bin" / "prettier").exists() or not Path(jlpm).exists():
        if os.environ.get("CI"):
            pytest.fail(
                "prettier missing: `pip install -e .` installs the extension's dependencies"
            )
        pytest.skip("the lab extension's dependencies are not installed (pip install -e .)")
    env = dict(os.environ, PATH=f"{Path(jlpm).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run(
        [jlpm, "prettier:check"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def test_a_fused_segment_has_one_colour_in_the_cell_and_the_sidebar():
    import re
    from pathlib import Path

    from kernel_ext.jupyter import render

    css = (Path(__file__).parents[2] / "labextension" / "style" / "base.css").read_text()
    sidebar = dict(re.findall(r"\.jp-kx-seg-(\d+) \{\s*--jp-kx-seg: (#[0-9a-f]{6});", css))
    assert [sidebar[str(i)] for i in range(len(sidebar))] == list(render._SEGMENT_COLOURS)

"""Fixtures for the real-browser tests: a JupyterLab server and a headless Chromium.

The server runs on 127.0.0.1 with a random token and every Jupyter directory in a
temporary folder (config, data, runtime, settings, workspaces, IPython profile), so the
tests neither read nor change the user's setup.  The browser is Debian's
``/usr/bin/chromium`` driven by Python playwright (``playwright install`` cannot download
browsers here), started headless with flags that keep it off the network.

Without chromium or playwright the tests skip; with the ``CI`` environment variable set
they fail instead, because CI must run them.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("KX_E2E_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Screenshots land here (gitignored); CI keeps them as artefacts.
ARTIFACTS = Path(__file__).parents[1] / "artifacts"
SERVER_START_TIMEOUT_S = 120


def _require_browser() -> Any:
    """playwright's sync API, or skip (fail under CI) naming what is missing."""
    missing = []
    try:
        from playwright import sync_api
    except ImportError:
        sync_api = None
        missing.append("the playwright Python package (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"{CHROMIUM} (apt-get install -y chromium)")
    if missing:
        message = "browser tests need " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must run them", pytrace=False)
        pytest.skip(message)
    return sync_api


#: This checkout's own build of the sidebar (``jlpm build``; ``pip install -e .`` makes it).
CHECKOUT_BUILD = Path(__file__).parents[2] / "kernel_ext" / "labextension"


def _require_lab_extension() -> None:
    """The sidebar must be built in this checkout or installed in this environment
    (``pip install -e .`` does both); without it every test would time out looking for the
    panel, so say so at once. (The server below gets a temporary user data dir, into which
    the checkout's build is linked: see :func:`_link_checkout_build`.)
    """
    from jupyter_core.paths import ENV_JUPYTER_PATH, SYSTEM_JUPYTER_PATH

    found = [
        Path(p) / "labextensions" / "jupyterlab-tffunction" / "package.json"
        for p in [*ENV_JUPYTER_PATH, *SYSTEM_JUPYTER_PATH]
    ]
    found.append(CHECKOUT_BUILD / "package.json")
    if not any(path.is_file() for path in found):
        pytest.fail(
            "the lab extension jupyterlab-tffunction is not installed: "
            "`pip install -e .` builds and installs it",
            pytrace=False,
        )


def _link_checkout_build(data_dir: Path) -> None:
    """Serve the sidebar built in this checkout, not whichever copy the environment holds.

    JupyterLab reads lab extensions from ``JUPYTER_PATH`` before the environment's (which, in
    a virtual environment, come before the user's), and the first of a name wins; so a link
    in a directory named by ``JUPYTER_PATH`` makes the browser tests test the code next to
    them (another worktree sharing the virtual environment keeps its own build)."""
    if (CHECKOUT_BUILD / "package.json").is_file():
        target = data_dir / "labextensions" / "jupyterlab-tffunction"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(CHECKOUT_BUILD, target_is_directory=True)


@dataclass
class Lab:
    """A running JupyterLab server: where it serves from and how to reach it."""

    url: str
    token: str
    root: Path
    log: Path

    def notebook_url(self, name: str, workspace: str) -> str:
        # A workspace per test, reset: no layout leaks in from another test.
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """``jupyter lab`` on 127.0.0.1, isolated in temporary directories."""
    _require_browser()
    _require_lab_extension()
    base = tmp_path_factory.mktemp("lab")
    dirs = {
        name: base / name
        for name in (
            "root",
            "config",
            "data",
            "runtime",
            "settings",
            "workspaces",
            "ipython",
            "path",
        )
    }
    for path in dirs.values():
        path.mkdir()
    _link_checkout_build(dirs["path"])
    # The news/announcements toast would cover part of the page; it is not ours to test.
    (dirs["config"] / "labconfig").mkdir()
    (dirs["config"] / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_PATH=str(dirs["path"]),
        JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
        JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
        IPYTHONDIR=str(dirs["ipython"]),
        # The kernel must import this checkout's kernel_ext, as the server does (first
        # on the path: an editable install may point at another worktree).
        PYTHONPATH=os.pathsep.join(
            p for p in (str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH")) if p
        ),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--ServerApp.open_browser=False",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={dirs['root']}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = base / "lab.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            command, env=env, stdout=log_file, stderr=subprocess.STDOUT, cwd=dirs["root"]
        )
    url = f"http://127.0.0.1:{port}"
    server = Lab(url, token, dirs["root"], log)
    try:
        _wait_until_serving(process, f"{url}/api/status?token={token}", server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_serving(process: subprocess.Popen, status_url: str, server: Lab) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({process.returncode}):\n" + server.log_tail())
        try:
            with urllib.request.urlopen(status_url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        # Polling an HTTP endpoint that has no push alternative: wait on the process.
        try:
            process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
    raise RuntimeError("jupyter lab did not start in time:\n" + server.log_tail())


@pytest.fixture(scope="session")
def browser(lab: Lab) -> Iterator[Any]:
    """Headless Chromium; one per session, a fresh page per test."""
    sync_api = _require_browser()
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Any, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page whose JavaScript errors and dialogs (an ``alert`` from injected HTML would
    be one) fail the test; a screenshot is saved when the test fails."""
    sync_api = _require_browser()
    # Generous limits: a loaded CI machine starts kernels slowly.  They bound how long a
    # wait on page state may take; no step waits longer than its state needs.
    sync_api.expect.set_options(timeout=60_000)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))

    def on_dialog(dialog: Any) -> None:
        # Leaving a page with a running kernel may ask "leave site?": that one is fine.
        if dialog.type != "beforeunload":
            problems.append(f"unexpected {dialog.type} dialog: {dialog.message}")
        dialog.accept() if dialog.type == "beforeunload" else dialog.dismiss()

    page.on("dialog", on_dialog)
    page.problems = problems  # type: ignore[attr-defined]
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-failure.png"))
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    # Lets the page fixture see whether the test body failed (for the failure screenshot).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


class LabUI:
    """What a person does in JupyterLab, as steps the browser tests share: write a notebook,
    open it, show the sidebar, run a cell and wait for its prompt, switch the theme."""

    LOAD = "%load_ext kernel_ext"
    IMPORTS = "import numpy as np\nimport kernel_ext as kx"
    NOT_LOADED = "Run %load_ext kernel_ext in this notebook"

    @staticmethod
    def write_notebook(root: Path, name: str, cells: list[str]) -> None:
        import nbformat

        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        notebook.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(notebook, root / name)

    @staticmethod
    def open_notebook(page: Any, lab: Lab, name: str) -> None:
        """Open ``name`` in a fresh workspace and wait until its cells show."""
        page.goto(lab.notebook_url(name, name.replace(".ipynb", "")))
        page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=120_000)
        page.locator(".jp-Notebook .jp-Cell").first.wait_for()

    @staticmethod
    def open_sidebar(page: Any) -> Any:
        """Show the "Traced functions" panel (its tab toggles it: click only if hidden)."""
        from playwright.sync_api import expect

        panel = page.locator(".jp-kx-panel")
        if not panel.is_visible():
            page.locator('.lm-TabBar-tab[data-id="jp-kx-inspector"]').click()
        expect(panel).to_be_visible()
        return panel

    @staticmethod
    def run_cell(page: Any, index: int, count: int) -> Any:
        """Run one cell; wait until its prompt reads ``[count]:`` (the kernel is done with
        it) and check it raised nothing. Returns the cell."""
        from playwright.sync_api import expect

        cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
        prompt = cell.locator(".jp-InputArea-prompt")
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        expect(prompt).to_have_text(f"[{count}]:", timeout=120_000)
        output = " ".join(cell.locator(".jp-OutputArea-output").all_inner_texts())
        assert "Traceback" not in output and "Error" not in output, output
        return cell

    @staticmethod
    def card(page: Any, name: str) -> Any:
        import re

        return page.locator(".jp-kx-function").filter(
            has=page.locator(".jp-kx-name", has_text=re.compile("^" + re.escape(name) + "$"))
        )

    @staticmethod
    def menu(page: Any, top: str, item: str) -> None:
        """Click ``top`` in the menu bar, then the item whose label starts with ``item``."""
        import re

        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^" + re.escape(item))).first.click()

    @staticmethod
    def set_theme(page: Any, dark: bool) -> None:
        """Switch JupyterLab's theme through its settings menu and wait until it applies."""
        import re

        from playwright.sync_api import expect

        name = "JupyterLab Dark" if dark else "JupyterLab Light"
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Settings$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Theme$")).first.hover()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{name}$")).first.click()
        # JupyterLab sets these once the theme's stylesheet has loaded.
        expect(page.locator("body")).to_have_attribute("data-jp-theme-name", name, timeout=60_000)
        expect(page.locator("body")).to_have_attribute(
            "data-jp-theme-light", "false" if dark else "true", timeout=60_000
        )
        # ... and the splash it shows while switching is gone (screenshots must not dim)
        expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=60_000)


@pytest.fixture
def ui() -> type[LabUI]:
    return LabUI

"""The IPython extension: magics, widgets and the comm to the JupyterLab sidebar.

``%load_ext kernel_ext`` calls :func:`load_ipython_extension`, which registers
``%%tffunction`` and ``%retrace_report`` (:mod:`.magics`), makes explanations name notebook
cells instead of the kernel's temporary files (:mod:`.cells`), follows cells for the live
views (:mod:`.activity`: one poll thread for the monitors and the sidebar) and starts the
sidebar's comm (:mod:`.inspector`).  What those views show comes from :mod:`.records`.

``kx.jupyter.monitor(fn)`` shows the live monitor of any ``kx.function``.
"""

from __future__ import annotations

from typing import Any

# Imported eagerly, and on purpose last-bound: importing the submodule ``monitor`` sets the
# package attribute ``monitor`` to the module, and this import rebinds it to the function,
# so ``kx.jupyter.monitor(fn)`` is the helper. (The module stays importable by its dotted
# name. It loads ipywidgets only when a monitor is made.)
from .monitor import monitor

__all__ = ["install", "load_ipython_extension", "monitor", "uninstall", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics, the cell-aware call sites, the monitors' hooks and the sidebar."""
    from .inspector import start

    install(ipython)
    start(ipython)


def install(ipython: Any) -> Any:
    """Everything of :func:`load_ipython_extension` but the sidebar comm; returns the magics.

    Call sites in explanations name notebook cells from now on, and monitors follow cells.
    """
    from ..engine import explain
    from .cells import CellLocator
    from .magics import TFFunctionMagics
    from .monitor import attach

    if id(ipython) in _loaded:  # loaded again without an unload: replace, never duplicate
        uninstall(ipython)
    locator = CellLocator(ipython)
    magics = TFFunctionMagics(ipython, locator)
    ipython.register_magics(magics)
    ipython.events.register("pre_run_cell", magics.pre_run_cell)
    explain.set_call_site_formatter(locator.call_site)
    attach(ipython, locator)
    _loaded[id(ipython)] = magics
    return magics


def uninstall(ipython: Any) -> None:
    """Undo :func:`install` (the magics stay registered: IPython cannot remove them)."""
    from ..engine import explain
    from .monitor import detach

    magics = _loaded.pop(id(ipython), None)
    if magics is not None:
        try:
            ipython.events.unregister("pre_run_cell", magics.pre_run_cell)
        except ValueError:
            pass
        magics.close_monitors()
    explain.set_call_site_formatter(None)
    detach()


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext kernel_ext``: stop following cells and the sidebar comm."""
    from .inspector import stop

    uninstall(ipython)
    stop()


_loaded: dict[int, Any] = {}

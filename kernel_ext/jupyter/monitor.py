"""Live ipywidgets monitor of one traced function, with a static snapshot for saved notebooks.

A :class:`Monitor` shows counters (calls, traces, cache hits, trace ms, compile ms, last run
µs), the concrete signatures (inputs → outputs, the one the latest call used), an SVG picture
of the graph of a selected signature, the retrace log with explanations, and captured values
that went stale. ``%%tffunction`` puts one under its cell; ``kx.jupyter.monitor(fn)`` makes
one for any ``kx.function``.

Why it costs (almost) nothing: a cache hit is never observed. The notebook layer's one poll
thread (:mod:`.activity`, shared with the sidebar's comm) polls the counters of every live
monitor every ``interval`` seconds (0.25 s), and only while a cell runs (between IPython's
``pre_run_cell`` and ``post_run_cell``) or after a trace; a poll that finds the counters
unchanged does nothing, one that finds them changed re-renders the small counters widget, and
only a new trace rebuilds signatures, graph and log. At the end of each cell every monitor
refreshes fully and, if it changed, rewrites its output's static HTML snapshot
(``update_display``): a notebook saved without widget state still shows the latest counters,
signatures, graph and log. ``benchmarks/bench_widgets.py`` measures the overhead on a loop of
100,000 calls (target ≤ 5%).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..engine import explain
from . import records, render, units
from .activity import activity
from .cells import CellLocator, cell_info

#: Secondary text: the theme's muted ink (4.5:1 or better in JupyterLab's light and dark).
_MUTED = "color:var(--jp-ui-font-color2, #666)"

__all__ = ["DEFAULT_INTERVAL", "Monitor", "attach", "detach", "monitor"]

#: Seconds between two polls of the counters while a cell runs.
DEFAULT_INTERVAL = 0.25


class Monitor:
    """The live view of one ``kx.Function`` (holds it weakly: an edited cell's old function
    may die; the monitor then says so)."""

    def __init__(
        self,
        function: Any,
        *,
        locator: CellLocator | None = None,
        interval: float = DEFAULT_INTERVAL,
        graph: bool = True,
    ) -> None:
        import ipywidgets as widgets

        self._ref = weakref.ref(function)
        self.name = function.name
        self.interval = interval
        self.locator = locator or _locator or CellLocator()
        self._show_graph = graph
        self._lock = threading.RLock()
        self._closed = False
        self._seen: tuple | None = None  # counters last rendered
        self._structure: tuple | None = None  # (traces, records) last rendered
        self._rate: tuple[float, int] | None = None  # (time, calls) of the previous poll
        self._per_call_us: float | None = None
        self._snapshot_sent: str | None = None
        self.display_id: str | None = None
        self.refreshes = 0  # full counter renders (tests, benchmarks)
        self._selecting = False

        self.title = widgets.HTML()
        self.counters = widgets.HTML()
        self.stale = widgets.HTML()
        self.signatures = widgets.HTML()
        self.selector = widgets.Dropdown(
            options=[], description="signature", layout=widgets.Layout(width="max-content")
        )
        self.graph = widgets.HTML()
        self.log = widgets.HTML()
        self.selector.observe(self._on_select, names="value")
        pages = [self.signatures, widgets.VBox([self.selector, self.graph]), self.log]
        self.tabs = widgets.Tab(children=pages)
        for i, title in enumerate(("signatures", "graph", "retrace log")):
            self.tabs.set_title(i, title)
        self.widget = widgets.VBox(
            [self.title, self.counters, self.stale, self.tabs],
            layout=widgets.Layout(border="1px solid #ced4da", padding="4px"),
        )
        # The lab extension finds monitors by this class (a kernel restart marks them stale).
        self.widget.add_class("kx-monitor")
        self.refresh(full=True)
        activity.add(self)

    # -- state ---------------------------------------------------------------------------------
    @property
    def function(self) -> Any:
        return self._ref()

    def refresh(self, full: bool = False) -> bool:
        """Re-render what changed; ``full`` also checks stale captures. True if anything did.

        Called by the poll thread (cheap when nothing changed), after each cell, and by tests.
        """
        with self._lock:
            if self._closed:
                return False
            fn = self._ref()
            if fn is None:
                self.title.value = (
                    f"<b>{render.esc(self.name)}</b> <span style='{_MUTED}'>"
                    "(this function no longer exists: its cell was edited or "
                    "it was deleted)</span>"
                )
                activity.discard(self)
                return False
            stats = fn.stats
            seen = (stats.get("calls"), stats.get("traces"), stats.get("eager_calls"))
            changed = False
            if seen != self._seen or full:
                self._update_rate(int(stats.get("calls", 0)))
                last = stats.get("last_run_us")
                self.counters.value = render.counters_html(
                    stats,
                    last if last is not None else self._per_call_us,
                    measured=last is not None,
                )
                self._seen = seen
                self.refreshes += 1
                changed = True
            traces = fn.retraces
            # Kernels compiled in the background change "served by" with no call or trace.
            structure = (
                stats.get("traces"),
                len(traces),
                len(fn.concrete_functions),
                records.compile_states(fn),
            )
            if structure != self._structure or full:
                self._render_structure(fn, traces)
                self._structure = structure
                changed = True
            if full:
                sentences = [s.sentence() for s in explain.stale_captures(fn)]
                self.stale.value = render.stale_html(sentences)
            return changed

    def poll(self) -> None:
        """The poll thread's call (:class:`.activity.Watcher`): re-render what changed."""
        self.refresh()

    def cell_finished(self) -> None:
        """After each cell: refresh fully and rewrite the saved-notebook snapshot."""
        self.refresh(full=True)
        self.update_snapshot()

    def _update_rate(self, calls: int) -> None:
        # µs per call over the latest interval in which calls happened: the fallback when the
        # engine reports no timed run (it times every 64th cache hit, never each one).
        now = time.perf_counter()
        if self._rate is not None:
            t0, c0 = self._rate
            t0 = max(t0, activity.cell_started)  # idle time between cells is not call time
            if calls > c0 and now > t0:
                self._per_call_us = (now - t0) / (calls - c0) * 1e6
        self._rate = (now, calls)

    def _render_structure(self, fn: Any, traces: list) -> None:
        info = cell_info(fn)
        cell = self.locator.defining_cell(fn)
        where = "" if cell is None else f" · cell [{cell}]"
        history = f" · {info.history[-1]}" if info is not None and info.history else ""
        if cell is not None and f"cell [{cell}]" in history:
            where = ""  # "cell [2] defined" names the cell already
        self.title.value = (
            f"<b>{render.esc(self.name)}</b><span style='{_MUTED}'>"
            f"{render.esc(where + history)}</span>"
        )
        rows = records.signature_rows(fn)
        last_used = next((r.id for r in rows if r.last_used), None)
        # The same ``inputs`` text as the sidebar and the report (``x: float64[3], n: 2``).
        self.signatures.value = render.signatures_html(
            [
                {
                    "id": r.id,
                    "inputs": r.inputs,
                    "outputs": r.outputs,
                    "nodes": f"{r.nodes_traced} → {r.nodes_optimised}",
                    "backend": r.backend_text,
                    "last_used": r.last_used,
                    "opaque": r.opaque,
                    "loops": r.loops,
                    "served_by": r.served_by,
                    "compile": r.compile,
                    "dashboard": r.dashboard,
                }
                for r in rows
            ]
        )
        options = [(f"#{r.id} ({r.inputs})", r.id) for r in rows]
        current = self.selector.value
        ids = [r.id for r in rows]
        # A new trace shows the graph the latest call ran; otherwise keep the user's choice.
        target = (
            last_used
            if last_used in ids
            else current
            if current in ids
            else (ids[-1] if ids else None)
        )
        self._selecting = True
        try:
            self.selector.options = options
            self.selector.value = target
        finally:
            self._selecting = False
        self._render_graph()
        magic = info is not None
        entries = [records.retrace_entry(r, self.locator.call_site, magic) for r in traces]
        self.log.value = render.retrace_log_html(entries)

    def _on_select(self, change: dict) -> None:
        if not self._selecting:
            self._render_graph()

    def _selected(self) -> Any:
        fn = self._ref()
        if fn is None:
            return None
        wanted = self.selector.value
        return next(
            (cf for cf in fn.concrete_functions if records.signature_id(cf) == wanted), None
        )

    def _render_graph(self) -> None:
        cf = self._selected()
        if cf is None or not self._show_graph:
            self.graph.value = ""
            return
        try:
            svg = render.graph_svg(cf)
        except Exception as e:  # noqa: BLE001 - a drawing problem must not break the monitor
            svg = f"<pre>{render.esc(f'cannot draw this graph: {e!r}')}</pre>"
        self.graph.value = render.graph_html(svg)

    # -- display -------------------------------------------------------------------------------
    def snapshot_html(self) -> str:
        """The current state as self-contained HTML/SVG (the saved-notebook fallback)."""
        with self._lock:
            fn = self._ref()
            cf = self._selected()
            graph = (
                render.graph_html(render.graph_svg(cf))
                if cf is not None and self._show_graph
                else ""
            )
            if fn is None:
                return render.monitor_snapshot_html(
                    self.name, "", "", "", "", "", "this function no longer exists"
                )
            return render.monitor_snapshot_html(
                self.name + " — static snapshot",
                self.counters.value,
                self.signatures.value,
                graph,
                self.log.value,
                self.stale.value,
                "live widget not rendered here (saved notebook); this is its last state",
            )

    def text(self) -> str:
        fn = self._ref()
        if fn is None:
            return f"<kx monitor of {self.name}: function no longer exists>"
        c = records.call_counts(fn.stats)
        failed = f", {units.plural(c.failed_calls, 'failed call')}" if c.failed_calls else ""
        return (
            f"<kx monitor of {self.name}: {units.plural(c.calls, 'call')}, "
            f"{units.plural(c.traces, 'trace')}, "
            f"{units.plural(c.cache_hits, 'cache hit')}{failed}>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle = dict(self.widget._repr_mimebundle_() or {})
        bundle["text/plain"] = self.text()
        bundle["text/html"] = self.snapshot_html()
        return bundle

    def _ipython_display_(self) -> None:
        import uuid

        from IPython.display import display

        if self.display_id is None:
            self.display_id = f"kx-monitor-{uuid.uuid4().hex}"
        bundle = self._repr_mimebundle_()
        self._snapshot_sent = bundle["text/html"]
        display(bundle, raw=True, display_id=self.display_id)

    def update_snapshot(self) -> bool:
        """Rewrite this monitor's displayed output with the current snapshot, if it changed."""
        if self.display_id is None or self._closed:
            return False
        bundle = self._repr_mimebundle_()
        if bundle["text/html"] == self._snapshot_sent:
            return False
        from IPython.display import update_display

        self._snapshot_sent = bundle["text/html"]
        update_display(bundle, raw=True, display_id=self.display_id)
        return True

    def freeze(self) -> None:
        """Stop updating and leave the last state in place as the static snapshot: the
        output under an earlier cell (another cell now shows this function's live monitor)
        keeps a monitor, and the widgets close after the view is replaced (closing a widget
        whose view the page still shows removed the view mid-update: "removeChild")."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        activity.discard(self)
        if self.display_id is not None:
            from IPython.display import update_display

            snapshot = {"text/plain": self.text(), "text/html": self.snapshot_html()}
            update_display(snapshot, raw=True, display_id=self.display_id)
        close_tree(self.widget)

    def close(self) -> None:
        """Stop updating and close the widgets."""
        with self._lock:
            self._closed = True
        activity.discard(self)
        close_tree(self.widget)


def close_tree(root: Any) -> None:
    """Close ``root`` and every widget it holds: children, and the layout and style models
    each widget owns. A widget left open that points at a closed one would make the
    notebook's saved widget state refer to a model that no longer exists, and then no widget
    of the notebook renders after a reload."""
    import ipywidgets as widgets

    seen: set[int] = set()
    order: list[Any] = []
    stack = [root]
    while stack:
        w = stack.pop()
        if id(w) in seen:
            continue
        seen.add(id(w))
        order.append(w)
        for name in w.keys:  # the synced traits: children, layout, style, ...
            value = getattr(w, name, None)
            items = value if isinstance(value, (tuple, list)) else (value,)
            stack.extend(v for v in items if isinstance(v, widgets.Widget))
    for w in order:  # parents first: nothing open ever points at a closed child
        w.close()


# ---------------------------------------------------------------------------------------------
# Following a shell's cells (the poll thread and the hooks are :mod:`.activity`'s)
# ---------------------------------------------------------------------------------------------

#: The cell locator of the followed shell: monitors made by ``kx.jupyter.monitor`` use it.
_locator: CellLocator | None = None
#: Undoes the follow of :func:`attach` (None while no shell is followed).
_unfollow: Callable[[], None] | None = None
_followed: Any = None


def attach(shell: Any, locator: CellLocator | None = None) -> None:
    """Follow ``shell``'s cells: monitors poll only while one runs and refresh after each."""
    global _locator, _unfollow, _followed
    if _followed is shell:
        return
    detach()
    _locator = locator
    _followed = shell
    _unfollow = activity.follow(shell)


def detach() -> None:
    """Stop following cells (monitors made without a shell poll all the time)."""
    global _locator, _unfollow, _followed
    if _unfollow is not None:
        _unfollow()
    _locator = _unfollow = _followed = None


def monitor(function: Any, *, interval: float = DEFAULT_INTERVAL, graph: bool = True) -> Monitor:
    """A live monitor widget for a ``kx.function`` (``kx.jupyter.monitor(fn)``).

    Show it by making it a cell's last expression (or ``display(m)``)::

        @kx.function
        def step(x):
            return np.tanh(x) * 2

        kx.jupyter.monitor(step)      # counters, signatures, graph, retrace log

    It updates while cells that call ``step`` run (every ``interval`` seconds at most) and
    after each cell; a saved notebook keeps a static HTML/SVG snapshot of its last state.
    """
    from ..engine import Function

    if not isinstance(function, Function):  # a bound method (``model.step``): its Function
        function = getattr(function, "__func__", function)
    if not isinstance(function, Function):
        raise TypeError(
            f"kx.jupyter.monitor needs a kx.function, got "
            f"{type(function).__name__}; decorate it with @kx.function first"
        )
    return Monitor(function, interval=interval, graph=graph)

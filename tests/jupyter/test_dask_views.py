"""The views of a signature that runs on Dask: the backend with the graph's task count, and,
when a ``distributed.Client`` exists, a link to its dashboard (the sidebar's optional
``dashboard`` field, the monitor's signature table)."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.jupyter import inspector, records, render
from kernel_ext.jupyter.monitor import Monitor

da = pytest.importorskip("dask.array")


def _chain(x):
    return np.tanh(x * 2.0) + 1.0


def test_dask_views_show_the_task_count_and_no_link_without_a_client():
    f = kx.function(_chain)
    out = f(da.ones((4, 4), chunks=(2, 2)))
    (row,) = records.signature_rows(f)
    assert row.backend_text == f"dask · {len(dict(out.__dask_graph__()))} tasks"
    assert row.dashboard is None
    info = inspector.function_info(f)["signatures"][0]
    assert info["backend"] == row.backend_text and "dashboard" not in info
    m = Monitor(f, interval=60)
    try:
        m.refresh()
        assert render.esc(row.backend_text) in m.signatures.value
        assert "kx-dashboard" not in m.signatures.value
    finally:
        m.close()


def test_dask_views_link_the_dashboard_of_the_distributed_client():
    distributed = pytest.importorskip("distributed")
    # (without bokeh the dashboard's address serves a page saying how to install it)
    f = kx.function(_chain)
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            protocol="tcp",
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        link = client.dashboard_link
        assert link.startswith("http://127.0.0.1:")
        f(da.ones((4, 4), chunks=(2, 2)))
        (row,) = records.signature_rows(f)
        info = inspector.function_info(f)["signatures"][0]
        m = Monitor(f, interval=60)
        try:
            m.refresh()
            html = m.signatures.value
        finally:
            m.close()
    assert row.dashboard == link and info["dashboard"] == link
    assert info["backend"].startswith("dask · ")
    assert f'<a class="kx-dashboard" href="{render.esc(link)}"' in html
    assert 'rel="noopener noreferrer"' in html


@pytest.mark.parametrize("link", ["javascript:alert(1)", "", None, 8787, "ftp://host/x"])
def test_dask_views_never_link_an_address_that_is_not_http(link):
    assert records.dashboard_url(link) is None
    row = {
        "id": "1",
        "inputs": "x",
        "outputs": "y",
        "nodes": "1 → 1",
        "backend": "dask · 3 tasks",
        "dashboard": link,
    }
    assert "<a " not in render.signatures_html([row])


def test_dask_dashboard_url_keeps_http_addresses():
    assert records.dashboard_url("https://example.org/status") == "https://example.org/status"

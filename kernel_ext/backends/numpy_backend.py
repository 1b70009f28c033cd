"""The NumPy executor: a finished graph compiled to one straight-line Python function.

Like torch.fx's code generation, each node becomes one line calling the callable the reference
interpreter defines for it (``LOWER[op](node)``), bound as a global of the generated module.
Reading the inputs out of the call's arguments and building the returned structure are generated
too, so a cache-hit call runs no interpreter loop at all: the overhead over NumPy is one Python
call plus the op calls themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir import Graph
from ..ir.structure import TreeNode
from .emit import Emitter, Namer, Scope, Source, output_expr


def generate_source(graph: Graph, tree: TreeNode, n_params: int) -> tuple[str, dict[str, Any]]:
    """Python source of ``run(p0, ..., pN)`` for ``graph`` and the globals it needs."""
    namer = Namer()
    emitter = Emitter(namer)
    scope = Scope("v_")
    params = ", ".join(f"p{i}" for i in range(n_params))
    out = Source()
    with out.block(f"def run({params}):") as body:
        emitter.plan_writes(graph, tree)
        emitter.emit_graph(graph, scope, body, free_temporaries=True)
        body.line(f"return {output_expr(tree, graph, namer, scope)}")
    return out.text(), namer.globals


def compile_graph(
    graph: Graph, tree: TreeNode, n_params: int, filename: str = "<kx-graph>"
) -> tuple[Callable[..., Any], str]:
    """Compile ``graph`` into a Python function of the call's parameters; returns it and its
    source (kept for ``ConcreteFunction.source`` and debugging)."""
    source, namespace = generate_source(graph, tree, n_params)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    return namespace["run"], source


__all__ = ["compile_graph", "generate_source"]

"""Graph passes: pure ``Graph -> (Graph, changed)`` rewrites, run by a small pipeline."""

from typing import Callable, Sequence

from ..ir import Graph
from .prune import prune

Pass = Callable[[Graph], "tuple[Graph, bool]"]
DEFAULT_PIPELINE: tuple[Pass, ...] = (prune,)


def run_pipeline(graph: Graph, passes: Sequence[Pass] = DEFAULT_PIPELINE,
                 max_rounds: int = 10, verify: bool = False) -> Graph:
    """Apply ``passes`` in order until none changes the graph (at most ``max_rounds``)."""
    for _ in range(max_rounds):
        changed = False
        for p in passes:
            graph, did = p(graph)
            if verify:
                graph.lint()
            changed = changed or did
        if not changed:
            break
    return graph


__all__ = ["DEFAULT_PIPELINE", "Pass", "prune", "run_pipeline"]

"""Graph passes: pure ``Graph -> (Graph, changed)`` rewrites, run by a small pipeline.

The default pipeline is TensorFlow Grappler's core in miniature, run to a fixed point:

1. :func:`fold_constants` — pure nodes with known inputs become constants;
2. :func:`simplify` — exact algebraic rewrites from a rule table (``x * 1 -> x``, ...);
3. :func:`eliminate_common_subexpressions` — twin pure nodes merge;
4. :func:`prune_dead_code` — unused pure nodes go (stateful ones always stay).

Each reaches into control-flow sub-graphs (:func:`recursive`). No pass mutates its input: the
traced graph survives next to the optimised one (``ConcreteFunction.node_counts``).
"""

from collections.abc import Sequence

from ..ir import Graph, GraphLintError
from .cse import eliminate_common_subexpressions, freeze
from .fold import MAX_FOLD_ELEMENTS, STATIC_FOLDS, fold_constants
from .prune import prune
from .rewrite import Pass, Rewrite, Rewriter, is_pure, map_subgraphs, recursive
from .simplify import RULES, simplify

prune_dead_code = recursive(
    prune,
    "prune_dead_code",
    """``Graph -> (Graph, changed)``:
:func:`prune` in every sub-graph (keeping its inputs and outputs) and in the graph itself.""",
)

DEFAULT_PIPELINE: tuple[Pass, ...] = (
    fold_constants,
    simplify,
    eliminate_common_subexpressions,
    prune_dead_code,
)


def run_pipeline(
    graph: Graph,
    passes: Sequence[Pass] = DEFAULT_PIPELINE,
    max_rounds: int = 10,
    verify: bool = False,
) -> Graph:
    """Apply ``passes`` in order until none changes the graph (at most ``max_rounds``).

    With ``verify`` the verifier (:func:`~kernel_ext.ir.lint`) checks the graph after every
    pass, so a broken invariant is blamed on the pass that broke it.
    """
    for _ in range(max_rounds):
        changed = False
        for p in passes:
            graph, did = p(graph)
            if verify:
                try:
                    graph.lint()
                except GraphLintError as e:
                    name = getattr(p, "__name__", repr(p))
                    raise GraphLintError(f"after pass {name}: {e}") from None
            changed = changed or did
        if not changed:
            break
    return graph


__all__ = [
    "DEFAULT_PIPELINE",
    "MAX_FOLD_ELEMENTS",
    "RULES",
    "STATIC_FOLDS",
    "Pass",
    "Rewrite",
    "Rewriter",
    "eliminate_common_subexpressions",
    "fold_constants",
    "freeze",
    "is_pure",
    "map_subgraphs",
    "prune",
    "prune_dead_code",
    "recursive",
    "run_pipeline",
    "simplify",
]

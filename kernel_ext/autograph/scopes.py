"""Scope analysis of Python ASTs for the AutoGraph rewrite: what a block binds, reads, and
which names are still live after a statement.

The rewrite (:mod:`.transformer`) decides from these which names a converted ``if`` or loop
passes in and out: the names a block assigns (:func:`assigned_names`), the names nested
scopes may read (:func:`nested_scope_reads`), and the names live after each statement
(:class:`Liveness`), so that a temporary assigned in only one branch and read by nothing
afterwards is neither a ``cond`` output nor loop-carried.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
LOOPS = (ast.For, ast.While, ast.AsyncFor)


def walk_scope(nodes: Iterable[ast.AST], stop: tuple[type, ...] = SCOPES) -> Iterable[ast.AST]:
    """Every node under ``nodes`` without entering nested scopes (or other ``stop`` nodes)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, stop):
                stack.append(child)


def walk_no_loops(nodes: Iterable[ast.AST]) -> Iterable[ast.AST]:
    """Like :func:`walk_scope` but also without entering nested loops."""
    return walk_scope(nodes, SCOPES + LOOPS)


def collect_target_names(target: ast.AST, out: dict[str, None]) -> None:
    if isinstance(target, ast.Name):
        out.setdefault(target.id, None)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            collect_target_names(elt, out)
    elif isinstance(target, ast.Starred):
        collect_target_names(target.value, out)
    elif isinstance(target, ast.Subscript):
        base = target.value
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name):
            out.setdefault(base.id, None)


def assigned_names(stmts: Iterable[ast.AST]) -> list[str]:
    """Names a block (re)binds, in first-appearance order, nested scopes excluded."""
    out: dict[str, None] = {}
    nodes = sorted(
        walk_scope(stmts), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
    )
    for node in nodes:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                collect_target_names(t, out)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            collect_target_names(node.target, out)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    collect_target_names(item.optional_vars, out)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.setdefault(node.name, None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.setdefault((alias.asname or alias.name).split(".")[0], None)
    return list(out)


# ---------------------------------------------------------------------------------------------
# liveness: which names a later statement may still read
# ---------------------------------------------------------------------------------------------
# A name assigned in only one branch of an ``if`` on a traced value cannot be an output of the
# graph ``cond`` (the other branch has no value for it), and a loop cannot carry a name it
# assigns only sometimes. Where nothing reads the name afterwards (a loop-local temporary
# after a ``continue``, a loop index after an early ``return``), it need be neither: as in
# TensorFlow's AutoGraph, the statement's outputs are the names *live* after it. The analysis
# is the textbook backward one, over-approximating: a name is live if some path may read it
# before rebinding it. What it cannot see through (closures, ``locals()``, ``try``) counts as
# read. A name left out keeps the value it had before the statement, which for the names
# this is about (temporaries first assigned inside it) is none: ``Undefined``, whose use
# raises a clear "used before it is assigned" error.

#: Calls that read a scope's variables by name: liveness is not decidable with them.
_DYNAMIC_SCOPE_CALLS = frozenset({"locals", "vars", "eval", "exec", "dir"})


class UnfollowedConstruct(Exception):
    """The analysis met a construct it does not follow (a ``break`` outside a loop it saw)."""


def names_read(node: ast.AST | None) -> set[str]:
    """Names ``node`` reads in its own scope (``del x`` counts as a read)."""
    if node is None:
        return set()
    return {
        n.id
        for n in walk_scope([node])
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)
    }


def _killed(target: ast.AST) -> set[str]:
    """Names an assignment to ``target`` surely rebinds."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*[_killed(t) for t in target.elts]) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _killed(target.value)
    return set()


def nested_scope_reads(body: list[ast.stmt]) -> set[str] | None:
    """Names read by functions, lambdas and comprehensions nested in ``body`` (they may read
    them whenever they run), or None when the body reads its scope dynamically."""
    found: set[str] = set()
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _DYNAMIC_SCOPE_CALLS
        ):
            return None
        if isinstance(node, SCOPES):
            found |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return found


class Liveness:
    """Backward liveness over one function's (return-lowered) statements.

    ``always``: names live everywhere (globals, nonlocals, names nested scopes read).
    :meth:`annotate` records, for each statement of a block, the names live after it.
    """

    def __init__(self, always: set[str]) -> None:
        self.always = frozenset(always)
        self.live_out: dict[int, frozenset[str]] = {}

    def annotate(self, stmts: list[ast.stmt], out: AbstractSet[str]) -> None:
        """Record the names live after each statement of ``stmts``, given ``out`` after it."""
        try:
            live = set(out) | self.always
            after: list[frozenset[str]] = []
            for st in reversed(stmts):
                after.append(frozenset(live))
                live = self.stmt(st, live, None)
        except UnfollowedConstruct:
            return  # left unannotated: every name counts as live there
        for st, names in zip(reversed(stmts), after):
            self.live_out[id(st)] = names

    def block(
        self, stmts: list[ast.stmt], out: set[str], loop: tuple[set[str], set[str]] | None
    ) -> set[str]:
        live = set(out)
        for st in reversed(stmts):
            live = self.stmt(st, live, loop)
        return live | self.always

    def loop_head(
        self, node: ast.While | ast.For, out: set[str], extra: AbstractSet[str] = frozenset()
    ) -> set[str]:
        """Names live at the top of each iteration of ``node`` (before its test), given
        ``out`` after the loop; ``extra``: names its test reads besides its own."""
        exit_live = self.block(node.orelse, out, None) | self.always
        head: set[str] = set(exit_live) | set(extra)
        if isinstance(node, ast.While):
            head |= names_read(node.test)
        while True:
            body_in = self.block(node.body, head, (set(out), head))
            if isinstance(node, ast.For):
                body_in = (body_in - _killed(node.target)) | names_read(node.target)
            new = head | body_in
            if new == head:
                return head
            head = new

    def stmt(self, st: ast.stmt, out: set[str], loop: tuple[set[str], set[str]] | None) -> set[str]:
        """Names live before ``st``, given ``out`` after it; ``loop``: (live after the loop,
        live at its head) of the innermost loop ``st`` is in, for ``break``/``continue``."""
        if isinstance(st, ast.Assign):
            kills = set().union(*[_killed(t) for t in st.targets])
            reads = names_read(st.value).union(*[names_read(t) - _killed(t) for t in st.targets])
            return (out - kills) | reads
        if isinstance(st, ast.AnnAssign):
            if st.value is None:
                return set(out)
            return (
                (out - _killed(st.target))
                | names_read(st.value)
                | (names_read(st.target) - _killed(st.target))
            )
        if isinstance(st, ast.AugAssign):
            return out | names_read(st.target) | names_read(st.value) | _killed(st.target)
        if isinstance(st, ast.If):
            return (
                names_read(st.test)
                | self.block(st.body, out, loop)
                | self.block(st.orelse, out, loop)
            )
        if isinstance(st, (ast.For, ast.While)):
            head = self.loop_head(st, out)
            return head | (names_read(st.iter) if isinstance(st, ast.For) else set())
        if isinstance(st, ast.Return):
            return names_read(st.value) | self.always
        if isinstance(st, ast.Raise):
            return names_read(st.exc) | names_read(st.cause) | self.always
        if isinstance(st, (ast.Break, ast.Continue)):
            if loop is None:
                raise UnfollowedConstruct
            return set(loop[0] if isinstance(st, ast.Break) else loop[1])
        if isinstance(
            st,
            (
                ast.Expr,
                ast.Assert,
                ast.Delete,
                ast.Pass,
                ast.Global,
                ast.Nonlocal,
                ast.Import,
                ast.ImportFrom,
                ast.FunctionDef,
                ast.ClassDef,
                ast.AsyncFunctionDef,
            ),
        ):
            return out | names_read(st)
        # try, with, match, async statements: every name read inside is live before, nothing
        # counts as rebound, and a jump inside may leave for the loop's exit or head
        live = out | names_read(st)
        if any(isinstance(n, (ast.Break, ast.Continue)) for n in walk_no_loops([st])):
            if loop is None:
                raise UnfollowedConstruct
            live |= loop[0] | loop[1]
        return live

"""Subscript assignments rewritten into runtime calls: ``a[i] = v`` -> ``a = ag__.setitem(...)``.

NumPy code fills buffers by index (``out = np.zeros((n, m)); out[i, j] = ...``). When the
value is traced, ``ndarray.__setitem__`` cannot take it (NumPy tries to read it as a
sequence), and nothing in NumPy's protocols lets a traced value intervene. So AutoGraph turns
every subscript assignment into a call of :func:`~kernel_ext.autograph.operators.setitem`
(augmented ones into ``setitem_aug``), which lets a traced value stand for the plain array from
then on. When the target's base is a plain name, the name is rebound to what the call returns,
which also makes the buffer loop state when the assignment is in a loop body (the converter
already counts ``a[i] = ...`` as modifying ``a``). Targets and indices are evaluated once and
in Python's order, as the statement itself would.
"""

from __future__ import annotations

import ast

_OPERATORS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}


def _ag(name: str) -> ast.Attribute:
    return ast.Attribute(value=ast.Name(id="ag__", ctx=ast.Load()), attr=name, ctx=ast.Load())


def _load(node: ast.expr) -> ast.expr:
    """The same expression, read instead of stored; a slice (``1:3``, only valid inside
    brackets) becomes the ``slice(1, 3, None)`` the subscript would have passed."""
    if isinstance(node, ast.Slice):
        parts = [
            _load(p) if p is not None else ast.Constant(None)
            for p in (node.lower, node.upper, node.step)
        ]
        call = ast.Call(func=ast.Name(id="slice", ctx=ast.Load()), args=parts, keywords=[])
        return ast.copy_location(call, node)
    if isinstance(node, ast.Tuple):
        return ast.copy_location(
            ast.Tuple(elts=[_load(e) for e in node.elts], ctx=ast.Load()), node
        )
    copy = ast.parse(ast.unparse(node), mode="eval").body
    return ast.copy_location(copy, node)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_NEW_SCOPES = _FUNCTIONS + (ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names local to ``fn``: its parameters and the names it binds, less those it
    declares ``global``/``nonlocal`` (rebinding any other name would make it local)."""
    a = fn.args
    names = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    names |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    declared: set[str] = set()
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((al.asname or al.name).split(".")[0] for al in node.names)
        if isinstance(node, ast.NamedExpr) or not isinstance(node, _NEW_SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return names - declared


class SubscriptAssignments(ast.NodeTransformer):
    """Rewrites ``x[k] = v`` and ``x[k] op= v`` statements (nested functions included)."""

    def __init__(self) -> None:
        self._locals: list[set[str]] = [set()]

    def _scoped(self, node: ast.AST) -> ast.AST:
        self._locals.append(local_names(node))  # type: ignore[arg-type]
        self.generic_visit(node)
        self._locals.pop()
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _scoped

    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        self.generic_visit(node)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Subscript):
            return node
        target = node.targets[0]
        call = ast.Call(
            func=_ag("setitem"),
            args=[_load(target.value), _load(target.slice), node.value],
            keywords=[],
        )
        return self._store(target, call, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.generic_visit(node)
        if not isinstance(node.target, ast.Subscript) or type(node.op) not in _OPERATORS:
            return node
        target = node.target
        call = ast.Call(
            func=_ag("setitem_aug"),
            args=[
                _load(target.value),
                _load(target.slice),
                ast.Constant(_OPERATORS[type(node.op)]),
                node.value,
            ],
            keywords=[],
        )
        return self._store(target, call, node)

    def _store(self, target: ast.Subscript, call: ast.Call, node: ast.stmt) -> ast.stmt:
        # Rebind only a local name: rebinding a global or closure name would make it local.
        if isinstance(target.value, ast.Name) and target.value.id in self._locals[-1]:
            new: ast.stmt = ast.Assign(
                targets=[ast.Name(id=target.value.id, ctx=ast.Store())], value=call
            )
        else:
            new = ast.Expr(value=call)
        return ast.copy_location(new, node)


def rewrite_subscript_assignments(tree: ast.AST) -> ast.AST:
    """``tree`` with every subscript assignment statement a runtime call (see the module)."""
    return ast.fix_missing_locations(SubscriptAssignments().visit(tree))

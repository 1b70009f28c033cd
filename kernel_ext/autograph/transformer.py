"""The AutoGraph AST rewrite: Python control flow becomes calls of runtime operators.

For each function (and each function nested in it) the rewrite:

1. lowers ``return`` inside ``if`` statements to a single exit (``do_return``/``retval_``),
   moving the statements after an always-returning branch into the other branch;
2. turns ``break``/``continue`` of a loop into flag variables guarding the rest of the body;
3. turns ``if``/``while``/``for`` into ``ag__.if_stmt``/``while_stmt``/``for_stmt`` calls whose
   branches and bodies are nested functions sharing the modified variables through ``nonlocal``
   and ``get_state``/``set_state`` closures;
4. turns conditional expressions, ``and``/``or``/``not`` and chained comparisons into
   ``ag__.if_exp``/``and_``/``or_``/``not_``, and every call ``f(...)`` into ``ag__.cc(f)(...)``
   so user functions are converted recursively.

Loops whose body contains a ``return`` stay Python loops (a traced condition there raises a
clear error). Line numbers of the original source are kept, so tracebacks and error messages
point at the user's lines.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol, cast

from .assignments import rewrite_subscript_assignments
from .scopes import (
    LOOPS,
    Liveness,
    UnfollowedConstruct,
    assigned_names,
    collect_target_names,
    names_read,
    nested_scope_reads,
    walk_no_loops,
    walk_scope,
)

#: Methods that grow a Python container: a loop calling one keeps Python's per-iteration effects.
_CONTAINER_MUTATORS = frozenset(
    {"append", "extend", "insert", "appendleft", "extendleft", "add", "update", "setdefault"}
)
_NOT_WRAPPED_CALLS = frozenset(
    {"super", "locals", "globals", "vars", "eval", "exec", "set_loop_options"}
)


class Located(Protocol):
    """A parsed node with a source position (an expression, a statement, an argument, ...):
    ``ast.AST`` itself declares no position fields."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int


class Unconvertible(Exception):
    """The function uses a construct AutoGraph does not handle; it runs unconverted."""


# ---------------------------------------------------------------------------------------------
# analysis helpers
# ---------------------------------------------------------------------------------------------


def _is_item_update(value: ast.AST) -> bool:
    """``ag__.setitem(...)``/``setitem_aug``: the rewrite of ``x[i] = v`` (an update)."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "ag__"
        and value.func.attr in ("setitem", "setitem_aug")
    )


def _rebound_names(body: list[ast.stmt]) -> set[str]:
    """Names a loop body binds to a new object: plain (and annotated) assignments and nested
    ``for`` targets, in its own scope."""
    names: set[str] = set()

    def add(target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                add(t)
        elif isinstance(target, ast.Starred):
            add(target.value)

    updated: set[str] = set()
    for n in walk_scope(body):
        if isinstance(n, ast.Assign) and _is_item_update(n.value):
            updated.update(t.id for t in n.targets if isinstance(t, ast.Name))
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                add(t)
        elif isinstance(n, (ast.AnnAssign, ast.For)) and n.target is not None:
            add(n.target)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            updated.add(n.target.id)
        elif (
            isinstance(n, ast.AugAssign)
            and isinstance(n.target, ast.Subscript)
            and isinstance(n.target.value, ast.Name)
        ):
            updated.add(n.target.value.id)
        elif (
            isinstance(n, ast.Subscript)
            and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name)
        ):
            updated.add(n.value.id)
    # a name both updated in place and rebound is left to the loop's own check (an error:
    # NumPy would update the original only until the rebinding)
    return names - updated


def _has(nodes: Iterable[ast.AST], kinds: tuple, walker=walk_scope) -> bool:
    return any(isinstance(n, kinds) for n in walker(nodes))


def _jumps(stmts: list[ast.stmt]) -> set[str]:
    """Which of break/continue this loop body uses for itself (nested loops excluded: a
    ``break`` inside a nested loop, or a statement that is itself a loop, is that loop's)."""
    found = set()
    for n in walk_no_loops([st for st in stmts if not isinstance(st, LOOPS)]):
        if isinstance(n, ast.Break):
            found.add("break")
        elif isinstance(n, ast.Continue):
            found.add("continue")
    return found


def _raises_only(stmts: list[ast.stmt]) -> bool:
    """Whether a branch only raises: straight-line statements computing the exception (its
    message), then ``raise E(...)``. Such a branch on a traced condition is a run-time check
    (``conditionals.if_raise``). The statements become a function of their own, so each name
    they bind must be new there (bound before it is read)."""
    if not stmts or not isinstance(stmts[-1], ast.Raise):
        return False
    last = stmts[-1]
    if last.exc is None or last.cause is not None:
        return False
    bound: set[str] = set()
    for st in stmts[:-1]:
        if isinstance(st, ast.Expr):
            targets: list[ast.expr] = []
        elif isinstance(st, ast.Assign):
            targets = st.targets
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            targets = [st.target]
        else:
            return False
        if not all(isinstance(t, ast.Name) for t in targets) or any(
            isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
            for n in walk_scope([st])
        ):
            return False
        value = st.value
        if names_read(value) & {t.id for t in targets} - bound:  # type: ignore[attr-defined]
            return False  # reads the enclosing value of a name it rebinds
        bound |= {t.id for t in targets}  # type: ignore[attr-defined]
    return True


def _always_returns(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


# ---------------------------------------------------------------------------------------------
# small AST builders
# ---------------------------------------------------------------------------------------------


def _name(id_: str, ctx: ast.expr_context | None = None) -> ast.Name:
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, *args: ast.expr) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[])


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(name, ast.Store())], value=value, lineno=0)


def _const(value: str | int | None) -> ast.Constant:
    return ast.Constant(value=value)


def _lambda(body: ast.expr) -> ast.Lambda:
    return ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body,
    )


def _def(name: str, body: list[ast.stmt], args: Sequence[str] = ()) -> ast.FunctionDef:
    return ast.FunctionDef(
        name=name,
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=a) for a in args],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=body or [ast.Pass()],
        decorator_list=[],
        returns=None,
        type_params=[],  # type: ignore[call-arg]  # (Python 3.12's field; mypy checks 3.11)
    )


# ---------------------------------------------------------------------------------------------
# the rewrite
# ---------------------------------------------------------------------------------------------


class _Scope:
    """Per-function facts: names the function declares global/nonlocal, state names used."""

    def __init__(self, fn: ast.FunctionDef | None) -> None:
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.params: set[str] = set()
        self.state: dict[str, None] = {}
        #: What is live after each statement (None: unknown, every name counts as live).
        self.liveness: Liveness | None = None
        if fn is not None:
            a = fn.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if arg is not None:
                    self.params.add(arg.arg)
            for n in walk_scope(fn.body):
                if isinstance(n, ast.Global):
                    self.globals.update(n.names)
                elif isinstance(n, ast.Nonlocal):
                    self.nonlocals.update(n.names)


class Converter(ast.NodeTransformer):
    """Rewrites one function definition (and everything nested in it)."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._scopes: list[_Scope] = []
        self._in_check = False  # converting a raising branch (see visit_JoinedStr)

    # -- scopes -----------------------------------------------------------------------------
    def convert_function(self, fn: ast.FunctionDef, top: bool = False) -> ast.FunctionDef:
        scope = _Scope(fn)
        self._scopes.append(scope)
        try:
            body = self._lower_returns(fn.body)
            nested = nested_scope_reads(body)
            if nested is not None:
                scope.liveness = Liveness(nested | scope.globals | scope.nonlocals)
                scope.liveness.annotate(body, set())
            new_body: list[ast.stmt] = []
            for stmt in body:
                result = self.visit(stmt)
                new_body.extend(result if isinstance(result, list) else [result])
        finally:
            self._scopes.pop()
        # Every variable a generated helper declares nonlocal must be a local of this function.
        inits = [
            ast.copy_location(_assign(n, _call(_ag("Undefined"), _const(n))), fn)
            for n in scope.state
            if n not in scope.params and n not in scope.globals and n not in scope.nonlocals
        ]
        docstring = []
        if (
            new_body
            and isinstance(new_body[0], ast.Expr)
            and isinstance(new_body[0].value, ast.Constant)
            and isinstance(new_body[0].value.value, str)
        ):
            docstring = [new_body.pop(0)]
        fn.body = docstring + inits + (new_body or [ast.Pass()])
        if not top:
            fn.decorator_list = [_ag("converted")] + fn.decorator_list
        return fn

    @property
    def scope(self) -> _Scope:
        return self._scopes[-1]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self.convert_function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node

    # -- returns ------------------------------------------------------------------------------
    def _lower_returns(self, body: list[ast.stmt]) -> list[ast.stmt]:
        needs = any(
            isinstance(n, ast.Return)
            for st in body
            if isinstance(st, ast.If)
            for n in walk_no_loops([st])
        )
        if not needs:
            return body
        self.scope.state.setdefault("do_return", None)
        self.scope.state.setdefault("retval_", None)
        lowered = self._lower(body)
        return (
            [_assign("do_return", _const(False)), _assign("retval_", _const(None))]
            + lowered
            + [ast.Return(value=_name("retval_"))]
        )

    def _lower(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, st in enumerate(stmts):
            if isinstance(st, ast.Return):
                out.append(ast.copy_location(_assign("do_return", _const(True)), st))
                out.append(
                    ast.copy_location(
                        _assign("retval_", st.value if st.value is not None else _const(None)), st
                    )
                )
                return out
            if isinstance(st, ast.If) and any(
                isinstance(n, ast.Return) for n in walk_no_loops([st])
            ):
                rest = stmts[i + 1 :]
                if rest and _always_returns(st.body):
                    st.orelse = st.orelse + rest
                    rest = []
                elif rest and st.orelse and _always_returns(st.orelse):
                    st.body = st.body + rest
                    rest = []
                st.body = self._lower(st.body)
                st.orelse = self._lower(st.orelse)
                out.append(st)
                if rest:
                    guard = ast.If(
                        test=ast.UnaryOp(op=ast.Not(), operand=_name("do_return")),
                        body=self._lower(rest),
                        orelse=[],
                    )
                    out.append(ast.copy_location(guard, rest[0]))
                return out
            out.append(st)
        return out

    # -- statements -----------------------------------------------------------------------
    def _state(self, names: list[str]) -> tuple[list[str], list[str]]:
        """Split state names into (nonlocal, global) and remember them for initialisation."""
        scope = self.scope
        nonlocal_, global_ = [], []
        for n in names:
            if n in scope.globals:
                global_.append(n)
            else:
                nonlocal_.append(n)
                scope.state.setdefault(n, None)
        return nonlocal_, global_

    def _decls(self, nonlocal_: list[str], global_: list[str]) -> list[ast.stmt]:
        decls: list[ast.stmt] = []
        if nonlocal_:
            decls.append(ast.Nonlocal(names=list(nonlocal_)))
        if global_:
            decls.append(ast.Global(names=list(global_)))
        return decls

    def _state_functions(self, k: int, names: list[str]) -> tuple[list[ast.stmt], ast.expr]:
        nonlocal_, global_ = self._state(names)
        getter = _def(
            f"get_state_{k}",
            [
                ast.Return(
                    value=ast.Tuple(
                        elts=[_call(_ag("ld"), _lambda(_name(n)), _const(n)) for n in names],
                        ctx=ast.Load(),
                    )
                )
            ],
        )
        if names:
            setter_body: list[ast.stmt] = self._decls(nonlocal_, global_) + [
                ast.Assign(
                    targets=[
                        ast.Tuple(elts=[_name(n, ast.Store()) for n in names], ctx=ast.Store())
                    ],
                    value=_name("vars_"),
                    lineno=0,
                )
            ]
        else:
            setter_body = [ast.Pass()]
        setter = _def(f"set_state_{k}", setter_body, ["vars_"])
        names_tuple = ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())
        return [getter, setter], names_tuple

    def _live_after(self, node: ast.stmt) -> frozenset[str] | None:
        """The names live after ``node`` (None: not known, all are)."""
        liveness = self.scope.liveness
        return None if liveness is None else liveness.live_out.get(id(node))

    def _body_def(
        self,
        name: str,
        body: list[ast.stmt],
        names: list[str],
        args: Sequence[str] = (),
        live_out: AbstractSet[str] | None = None,
    ) -> ast.FunctionDef:
        nonlocal_, global_ = self._state(names)
        if live_out is not None and self.scope.liveness is not None:
            self.scope.liveness.annotate(body, live_out)
        converted: list[ast.stmt] = []
        for stmt in body:
            result = self.visit(stmt)
            converted.extend(result if isinstance(result, list) else [result])
        return _def(name, self._decls(nonlocal_, global_) + converted, args)

    def _visit_block(
        self, stmts: list[ast.stmt], live_out: frozenset[str] | None
    ) -> list[ast.stmt]:
        """``stmts`` converted in place of a statement whose live-out was ``live_out``."""
        if live_out is not None and self.scope.liveness is not None:
            self.scope.liveness.annotate(stmts, set(live_out))
        out: list[ast.stmt] = []
        for stmt in stmts:
            result = self.visit(stmt)
            out.extend(result if isinstance(result, list) else [result])
        return out

    def _check(self, test: ast.expr, stmts: list[ast.stmt], origin: ast.stmt) -> list[ast.stmt]:
        """``if test: <stmts ending in raise>`` as a run-time check: the statements become a
        function returning the exception (f-strings in it formatted at run time when they
        hold traced values), and ``ag__.if_raise(test, fn)`` raises it when ``test`` holds."""
        k = next(self._ids)
        raise_ = stmts[-1]
        assert isinstance(raise_, ast.Raise) and raise_.exc is not None
        body = stmts[:-1] + [ast.copy_location(ast.Return(value=raise_.exc), raise_)]
        outer, self._in_check = self._in_check, True
        try:
            converted = self._visit_block(body, None)
        finally:
            self._in_check = outer
        fn = _def(f"check_{k}", converted)
        call = ast.Expr(value=_call(_ag("if_raise"), test, _name(fn.name)))
        return self._located([fn, call], origin)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        """In a raising branch, ``f"..."`` is ``ag__.fstring(...)``: a traced value in it is
        formatted when the check fails at run time, not while tracing."""
        node = self.generic_visit(node)  # type: ignore[assignment]
        if not self._in_check:
            return node
        parts: list[ast.expr] = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                conversion = None if v.conversion == -1 else chr(v.conversion)
                spec = v.format_spec if v.format_spec is not None else _const("")
                parts.append(ast.Tuple(elts=[v.value, _const(conversion), spec], ctx=ast.Load()))
            else:
                parts.append(v)
        return ast.copy_location(_call(_ag("fstring"), *parts), node)

    def visit_Assert(self, node: ast.Assert) -> ast.AST | list[ast.stmt]:
        """``assert test, msg``: a run-time check on a traced ``test`` (Python's assert
        otherwise); left out under ``python -O``, as Python leaves asserts out."""
        error = _call(_name("AssertionError"), *([node.msg] if node.msg is not None else []))
        raise_ = ast.copy_location(ast.Raise(exc=error, cause=None), node)
        test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=node.test), node.test)
        checked = self._check(self.visit(test), [raise_], node)
        guard = ast.If(test=_name("__debug__"), body=checked, orelse=[])
        return self._located([guard], node)

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        live = self._live_after(node)
        if _raises_only(node.body) and not _raises_only(node.orelse):
            return self._check(self.visit(node.test), node.body, node) + self._visit_block(
                node.orelse, live
            )
        if node.orelse and _raises_only(node.orelse) and not _raises_only(node.body):
            test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=node.test), node.test)
            return self._check(self.visit(test), node.orelse, node) + self._visit_block(
                node.body, live
            )
        if _has(node.body + node.orelse, (ast.Return, ast.Yield, ast.YieldFrom)):
            return self.generic_visit(node)  # cannot move into helper functions
        k = next(self._ids)
        names = assigned_names(node.body + node.orelse)
        live = self._live_after(node)
        test = self.visit(node.test)
        body = self._body_def(f"if_body_{k}", node.body, names, live_out=live)
        orelse = self._body_def(f"else_body_{k}", node.orelse, names, live_out=live)
        state, names_tuple = self._state_functions(k, names)
        # the names a later statement may read: the outputs of a graph cond (None: all)
        live_names = (
            _const(None)
            if live is None
            else ast.Tuple(elts=[_const(n) for n in names if n in live], ctx=ast.Load())
        )
        call = ast.Expr(
            value=ast.Call(
                func=_ag("if_stmt"),
                args=[
                    test,
                    _name(body.name),
                    _name(orelse.name),
                    _name(f"get_state_{k}"),
                    _name(f"set_state_{k}"),
                    names_tuple,
                    live_names,
                ],
                keywords=[],
            )
        )
        return self._located([body, orelse, *state, call], node)

    def _loop_options(self, body: list[ast.stmt], line: int) -> ast.Dict:
        """Keyword arguments of a ``set_loop_options(...)`` call at the top of the body,
        ``python_effects=True`` when the body grows a Python container (``out.append(v)``):
        a graph loop traces its body once, so such a loop must unroll to do what NumPy
        does (see :mod:`kernel_ext.autograph.loops`), and the statement's ``line`` (which
        the loop notes name)."""
        opts = ast.Dict(keys=[], values=[])
        for st in body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                f = st.value.func
                fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if fname == "set_loop_options":
                    opts = ast.Dict(
                        keys=[_const(kw.arg) for kw in st.value.keywords],
                        values=[kw.value for kw in st.value.keywords],
                    )
                    break
        effects = [
            n
            for n in walk_scope(body)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _CONTAINER_MUTATORS
        ]
        if effects:
            opts.keys.append(_const("python_effects"))
            opts.values.append(_const(True))
            # the first one, for the loop note (why the loop unrolled)
            first = min(effects, key=lambda n: (n.lineno, n.col_offset))
            opts.keys.append(_const("python_effect"))
            opts.values.append(_const(f"line {first.lineno}: `{ast.unparse(first.func)}(...)`"))
        opts.keys.append(_const("line"))
        opts.values.append(_const(line))
        # names the body rebinds with a plain assignment (never through `x[...] = ` or
        # `x += `, which update the object): the loop carries them as values, not objects
        rebound = sorted(_rebound_names(body))
        if rebound:
            opts.keys.append(_const("rebound"))
            opts.values.append(ast.Tuple(elts=[_const(n) for n in rebound], ctx=ast.Load()))
        return opts

    def _rewrite_jumps(
        self, stmts: list[ast.stmt], brk: str | None, cont: str | None
    ) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, st in enumerate(stmts):
            if isinstance(st, ast.Break) and brk:
                out.append(ast.copy_location(_assign(brk, _const(True)), st))
                return out
            if isinstance(st, ast.Continue) and cont:
                out.append(ast.copy_location(_assign(cont, _const(True)), st))
                return out
            if _jumps([st]):
                if not isinstance(st, ast.If):
                    raise Unconvertible("break/continue inside a with/try block of a loop")
                st.body = self._rewrite_jumps(st.body, brk, cont)
                st.orelse = self._rewrite_jumps(st.orelse, brk, cont)
                out.append(st)
                rest = stmts[i + 1 :]
                if rest:
                    flags = [f for f in (brk, cont) if f]
                    test: ast.expr = (
                        _name(flags[0])
                        if len(flags) == 1
                        else ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags])
                    )
                    guard = ast.If(
                        test=ast.UnaryOp(op=ast.Not(), operand=test),
                        body=self._rewrite_jumps(rest, brk, cont),
                        orelse=[],
                    )
                    out.append(ast.copy_location(guard, rest[0]))
                return out
            out.append(st)
        return out

    def _prepare_loop(self, node: ast.While | ast.For, k: int) -> tuple[list[ast.stmt], str | None]:
        """Rewrite break/continue; returns statements to run before the loop and the break
        flag (or None)."""
        jumps = _jumps(node.body)
        brk = f"break_{k}" if "break" in jumps else None
        cont = f"continue_{k}" if "continue" in jumps else None
        before: list[ast.stmt] = []
        body = self._rewrite_jumps(node.body, brk, cont)
        if brk:
            before.append(ast.copy_location(_assign(brk, _const(False)), node))
        if cont:
            body = [ast.copy_location(_assign(cont, _const(False)), node)] + body
        node.body = body
        return before, brk

    @staticmethod
    def _flag_option(opts: ast.expr, brk: str | None) -> None:
        """Name the loop's break flag in its options (``'flag'``): a Python bool before the
        loop that a graph loop carries as a value (the flag is the transformer's own, never
        read by the user's code, so its type may change)."""
        if brk and isinstance(opts, ast.Dict):
            opts.keys.append(_const("flag"))
            opts.values.append(_const(brk))

    def _loop_liveness(
        self,
        node: ast.While | ast.For,
        live: frozenset[str] | None,
        brk: str | None,
        names: list[str],
        opts: ast.Dict,
    ) -> set[str] | None:
        """The names live at the head of ``node`` (break/continue already rewritten) given
        ``live`` after it, and the loop option ``live``: the names of ``names`` a graph loop
        must carry because the next iteration or the code after the loop may read them."""
        liveness = self.scope.liveness
        if live is None or liveness is None:
            return None
        try:
            head = liveness.loop_head(node, set(live), {brk} if brk else set())
        except UnfollowedConstruct:
            return None
        carried = head | live
        opts.keys.append(_const("live"))
        opts.values.append(
            ast.Tuple(elts=[_const(n) for n in names if n in carried], ctx=ast.Load())
        )
        return head

    def visit_While(self, node: ast.While) -> ast.AST | list[ast.stmt]:
        if node.orelse or _has(node.body, (ast.Return, ast.Yield, ast.YieldFrom)):
            node = self.generic_visit(node)  # type: ignore[assignment]
            if not node.orelse:
                node.test = _call(_ag("python_test"), node.test, _const("while"))
            return node
        k = next(self._ids)
        opts = self._loop_options(node.body, node.lineno)
        live = self._live_after(node)
        before, brk = self._prepare_loop(node, k)
        self._flag_option(opts, brk)
        names = assigned_names(before + node.body)
        head = self._loop_liveness(node, live, brk, names, opts)
        test_expr: ast.expr = node.test
        if brk:
            test_expr = ast.BoolOp(
                op=ast.And(), values=[ast.UnaryOp(op=ast.Not(), operand=_name(brk)), node.test]
            )
        ast.copy_location(test_expr, node.test)
        test = _def(f"loop_test_{k}", [ast.Return(value=self.visit(test_expr))])
        body = self._body_def(f"loop_body_{k}", node.body, names, live_out=head)
        state, names_tuple = self._state_functions(k, names)
        call = ast.Expr(
            value=ast.Call(
                func=_ag("while_stmt"),
                args=[
                    _name(test.name),
                    _name(body.name),
                    _name(f"get_state_{k}"),
                    _name(f"set_state_{k}"),
                    names_tuple,
                    opts,
                ],
                keywords=[],
            )
        )
        return self._located([*before, test, body, *state, call], node)

    def visit_For(self, node: ast.For) -> ast.AST | list[ast.stmt]:
        if node.orelse or _has(node.body, (ast.Return, ast.Yield, ast.YieldFrom)):
            node = self.generic_visit(node)  # type: ignore[assignment]
            if not node.orelse:
                node.iter = _call(_ag("python_iter"), node.iter)
            return node
        k = next(self._ids)
        opts = self._loop_options(node.body, node.lineno)
        live = self._live_after(node)
        before, brk = self._prepare_loop(node, k)
        self._flag_option(opts, brk)
        target_names: dict[str, None] = {}
        collect_target_names(node.target, target_names)
        names = assigned_names(before + node.body)
        names = [n for n in target_names if n not in names] + names
        # The loop machinery needs the targets: the body assigns them first, so a graph loop
        # starts them as an item rather than carrying whatever they held before.
        assert isinstance(opts, ast.Dict)
        opts.keys.append(_const("targets"))
        opts.values.append(ast.Tuple(elts=[_const(n) for n in target_names], ctx=ast.Load()))
        iterable = self.visit(node.iter)
        item = f"itr_{k}"
        bind_target = ast.Assign(targets=[node.target], value=_name(item), lineno=0)
        ast.copy_location(bind_target, node)
        head = self._loop_liveness(node, live, brk, names, opts)
        body = self._body_def(
            f"loop_body_{k}", [bind_target] + node.body, names, [item], live_out=head
        )
        extra: ast.expr = _const(None)
        defs: list[ast.stmt] = []
        if brk:
            test = _def(
                f"extra_test_{k}",
                [ast.Return(value=self.visit(ast.UnaryOp(op=ast.Not(), operand=_name(brk))))],
            )
            defs.append(test)
            extra = _name(test.name)
        state, names_tuple = self._state_functions(k, names)
        call = ast.Expr(
            value=ast.Call(
                func=_ag("for_stmt"),
                args=[
                    iterable,
                    extra,
                    _name(body.name),
                    _name(f"get_state_{k}"),
                    _name(f"set_state_{k}"),
                    names_tuple,
                    opts,
                ],
                keywords=[],
            )
        )
        return self._located([*before, *defs, body, *state, call], node)

    @staticmethod
    def _located(stmts: list[ast.stmt], origin: ast.stmt) -> list[ast.stmt]:
        for st in stmts:
            ast.copy_location(st, origin)
            for n in ast.walk(st):
                if not hasattr(n, "lineno") or n.lineno == 0:
                    ast.copy_location(n, origin)
                    # on the statement's first line: the line a frame shows while the
                    # ``ag__.if_stmt(...)`` call runs (the graph nodes' source line)
                    located = cast("Located", n)
                    located.end_lineno, located.end_col_offset = origin.lineno, origin.col_offset
        return stmts

    # -- expressions ----------------------------------------------------------------------
    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        return ast.copy_location(
            _call(_ag("if_exp"), node.test, _lambda(node.body), _lambda(node.orelse)), node
        )

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(_call(_ag(op), *[_lambda(v) for v in node.values]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), node.operand), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if len(node.ops) == 1:
            return node
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(_lambda(ast.Compare(left=left, ops=[op], comparators=[right])))
            left = right
        return ast.copy_location(_call(_ag("and_"), *parts), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        f = node.func
        if isinstance(f, ast.Name) and f.id in _NOT_WRAPPED_CALLS:
            return node
        if isinstance(f, ast.Attribute) and (
            f.attr in _NOT_WRAPPED_CALLS or (isinstance(f.value, ast.Name) and f.value.id == "ag__")
        ):
            return node
        node.func = ast.copy_location(_call(_ag("cc"), f), f)
        return node


def convert_tree(fn_node: ast.FunctionDef) -> ast.FunctionDef:
    """Rewrite a parsed ``def`` (decorators removed)."""
    fn_node.decorator_list = []
    rewritten = cast("ast.FunctionDef", rewrite_subscript_assignments(fn_node))  # (a def still)
    converted = Converter().convert_function(rewritten, top=True)
    return ast.fix_missing_locations(converted)

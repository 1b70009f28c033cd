"""The ``--input-signature`` mini-language of ``%%tffunction``: ``"x: float32[None, 3], n: 3"``.

Grammar (spaces anywhere between tokens)::

    signature := entry ("," entry)* [","]
    entry     := [NAME ":"] type
    type      := DTYPE "[" [dim ("," dim)*] "]"      an array: float32[None, 3], int64[]
               | DTYPE "[" ("*" | "...") "]"        an array of any rank: float32[*]
               | LITERAL                            a Python value: 3, 0.5, True, None, 'train'
    dim       := INT | "None" | "?"                 "?" is a synonym of None

A ``LITERAL`` follows Python's own rules (``0x1f``, ``0o17``, ``1e-3``, ``'a\\tb'``; no leading
zeros, no invalid escapes, at most ``sys.get_int_max_str_digits()`` digits), and so does an
``INT`` dimension (decimal digits): what Python refuses, or only warns about, is an error at its
column rather than a traceback or a surprise.
``DTYPE`` is any NumPy numeric or bool dtype name (``float32``, ``int64``, ``bool``,
``complex64``, ...). This is exactly how signatures are printed (``TensorSpec.describe()``), so
a signature copied from ``%retrace_report`` parses back.

Errors raise :class:`SignatureSpecError` with the 0-based column and a caret line, e.g.::

    expected a dimension (an integer, None or ?) at column 15
      x: float32[None, 3x]
                        ^
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..trace.types import TensorSpec

__all__ = ["Entry", "SignatureSpecError", "parse_signature"]

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+
                     |(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?j?))
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<ellipsis>\.\.\.)
  | (?P<punct>[\[\]:,*?])
""",
    re.VERBOSE,
)


class SignatureSpecError(ValueError):
    """A malformed ``--input-signature``; ``column`` is where the problem starts (0-based)."""

    def __init__(self, message: str, text: str, column: int) -> None:
        self.message = message
        self.text = text
        self.column = column
        super().__init__(f"{message} at column {column}\n  {text}\n  {' ' * column}^")


@dataclass(frozen=True)
class Entry:
    """One parsed entry: the parameter name (or None when positional) and its spec/value."""

    name: str | None
    spec: Any  # a kx.TensorSpec or a Python value


@dataclass
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos] in "'\"":
                raise SignatureSpecError(
                    f"a string starting with {text[pos]} has no closing {text[pos]}", text, pos
                )
            raise SignatureSpecError(f"unexpected character {text[pos]!r}", text, pos)
        if m.lastgroup != "space":
            out.append(_Tok(m.lastgroup or "", m.group(), pos))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


_LITERAL_NAMES = {"True": True, "False": False, "None": None}


def _dtype(name: str, text: str, pos: int) -> np.dtype:
    try:
        dtype = np.dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or (dtype.name != name and name not in ("int", "float", "complex")):
        # np.dtype("f4") and friends exist but are unreadable in a signature.
        raise SignatureSpecError(
            f"unknown dtype {name!r} (e.g. float32, float64, int32, int64, bool)", text, pos
        )
    if dtype.kind in "OUSVMm":
        raise SignatureSpecError(
            f"dtype {name!r} cannot be traced (numeric or bool only)", text, pos
        )
    return dtype


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def fail(self, message: str, tok: _Tok | None = None) -> SignatureSpecError:
        tok = tok or self.tok
        found = "the end" if tok.kind == "end" else repr(tok.text)
        return SignatureSpecError(f"{message}, found {found}", self.text, tok.pos)

    def expect(self, text: str, message: str) -> _Tok:
        if self.tok.text != text or self.tok.kind in ("string", "end"):
            raise self.fail(message)
        tok = self.tok
        self.i += 1
        return tok

    def signature(self) -> list[Entry]:
        entries: list[Entry] = []
        if self.tok.kind == "end":
            raise self.fail("expected at least one entry such as 'x: float32[None, 3]'")
        while True:
            entries.append(self.entry())
            if self.tok.kind == "end":
                break
            self.expect(",", "expected ',' between entries")
            if self.tok.kind == "end":
                break  # trailing comma
        names = [e.name for e in entries if e.name is not None]
        if names and len(names) != len(entries):
            first = next(i for i, e in enumerate(entries) if e.name is None)
            raise SignatureSpecError(
                "either name every entry ('x: float32[3]') or none",
                self.text,
                self._entry_pos[first],
            )
        dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if dup is not None:
            pos = self._entry_pos[len(names) - 1 - names[::-1].index(dup)]
            raise SignatureSpecError(f"parameter {dup!r} appears twice", self.text, pos)
        return entries

    _entry_pos: list[int]

    def entry(self) -> Entry:
        if not hasattr(self, "_entry_pos"):
            self._entry_pos = []
        self._entry_pos.append(self.tok.pos)
        name = None
        if self.tok.kind == "name" and self.peek().text == ":" and self.peek().kind == "punct":
            name = self.tok.text
            self.i += 2
        elif (
            self.tok.kind == "name"
            and self.tok.text not in _LITERAL_NAMES
            and (self.peek().kind == "end" or self.peek().text == ",")
        ):
            raise self.fail(
                f"expected ':' and a type after {self.tok.text!r} (e.g. "
                f"'{self.tok.text}: float32[None]')",
                self.peek(),
            )
        return Entry(name, self.type_())

    def type_(self) -> Any:
        tok = self.tok
        if tok.kind == "name" and tok.text in _LITERAL_NAMES and self.peek().text != "[":
            self.i += 1
            return _LITERAL_NAMES[tok.text]
        if tok.kind in ("number", "string"):
            self.i += 1
            return _literal(tok, self.text)
        if tok.kind != "name":
            raise self.fail("expected a dtype such as float32[3], or a Python value")
        dtype = _dtype(tok.text, self.text, tok.pos)
        self.i += 1
        if self.tok.text != "[":
            raise self.fail(
                f"expected '[' after {tok.text} (write {tok.text}[] for a "
                f"scalar, {tok.text}[*] for any shape)"
            )
        self.i += 1
        if self.tok.text in ("*", "..."):
            self.i += 1
            self.expect("]", "expected ']' after '*'")
            return TensorSpec(None, dtype)
        dims: list[int | None] = []
        while self.tok.text != "]" or self.tok.kind == "string":
            dims.append(self.dim())
            if self.tok.text == ",":
                self.i += 1
            elif self.tok.text != "]":
                raise self.fail("expected ',' or ']' after a dimension")
        self.i += 1
        return TensorSpec(tuple(dims), dtype)

    def dim(self) -> int | None:
        tok = self.tok
        if (tok.kind == "name" and tok.text == "None") or tok.text == "?":
            self.i += 1
            return None
        if tok.kind == "number" and re.fullmatch(r"\d+", tok.text):
            value = _literal(tok, self.text)  # Python's rules: no leading zeros, a digit limit
            if value > _MAX_DIMENSION:
                raise SignatureSpecError(
                    f"dimension {_short(tok.text)} is larger than an "
                    f"array can be (at most {_MAX_DIMENSION})",
                    self.text,
                    tok.pos,
                )
            self.i += 1
            return value
        if tok.kind == "number" and tok.text.startswith("-"):
            raise SignatureSpecError("a dimension cannot be negative", self.text, tok.pos)
        raise self.fail("expected a dimension (an integer, None or ?)")


#: The largest dimension NumPy accepts (``np.intp``).
_MAX_DIMENSION = int(np.iinfo(np.intp).max)


def _short(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else f"{text[:10]}...{text[-10:]} ({len(text)} chars)"


def _literal(tok: _Tok, text: str) -> Any:
    """A number or string token's Python value, read as Python reads it: a literal Python
    refuses (``0777``, a 5,000-digit integer, ``'\\x'``, an invalid escape such as
    ``'\\q'``, which Python only warns about) is a :class:`SignatureSpecError` at its column.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "invalid escape sequence" becomes an error
            return ast.literal_eval(tok.text)
    except (SyntaxError, ValueError, DeprecationWarning, SyntaxWarning) as e:
        reason = (getattr(e, "msg", None) or str(e)).split(" (<unknown>")[0]
        kind = "string" if tok.kind == "string" else "number"
        if kind == "string":
            fix = "write a backslash as \\\\"
        elif "leading zeros" in reason:
            reason = "leading zeros are not allowed in a decimal integer"
            fix = f"write {tok.text.lstrip('0') or '0'}, or 0o{tok.text.lstrip('0')} for octal"
        elif "Exceeds the limit" in reason:
            reason = (
                f"Python reads integers of at most {sys.get_int_max_str_digits()} digits from text"
            )
            fix = "write it in hexadecimal (0x...) or compute it in the function"
        else:
            fix = "write it as Python would accept it"
        raise SignatureSpecError(
            f"invalid {kind} {_short(tok.text)}: {reason}; {fix}", text, tok.pos
        ) from None


def parse_signature(text: str) -> list[Entry]:
    """Parse the mini-language; raises :class:`SignatureSpecError` with the column."""
    return _Parser(text).signature()

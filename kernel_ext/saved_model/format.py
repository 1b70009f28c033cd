"""The saved-model format's constants, limits and exceptions (docs/saved_model.md).

A saved model is a directory: ``saved_model.json`` (the manifest), ``graphs/*.json`` (one graph
per concrete function) and ``arrays/*.npy`` (constants, index arrays and variable values, read
with ``allow_pickle=False``). Everything in it is data: loading parses JSON and ``.npy``, checks
every field against the types below and never imports, unpickles or evaluates anything named
by the files.
"""

from __future__ import annotations

import re

#: What the manifest's ``format`` field must say.
FORMAT_NAME = "kernel_ext.saved_model"
#: The version this code writes; it reads this version and older ones.
FORMAT_VERSION = 1

MANIFEST = "saved_model.json"
GRAPH_DIR = "graphs"
ARRAY_DIR = "arrays"

#: Files the loader refuses to read past these sizes (a hostile file must not exhaust memory).
MAX_JSON_BYTES = 64 << 20
MAX_ARRAY_BYTES = 1 << 34
#: Nesting depth of encoded values and sub-graphs the loader follows.
MAX_DEPTH = 64

#: File names the manifest may refer to: plain names inside the model's own directories, no
#: separators, no ``..``.
FILE_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}\.(json|npy)$")
#: Attr keys and parameter names (they become Python keywords in generated code).
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


class SavedModelFormatError(ValueError):
    """A saved model could not be read: a missing, truncated, corrupt, altered, oversized or
    newer-format file. The message names the file and the field."""


class SaveError(ValueError):
    """An object cannot be saved as data (an opaque call to a Python function, a callback,
    state the graph holds by reference); the message names the node, its line and the fix."""


__all__ = [
    "ARRAY_DIR",
    "FILE_NAME",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "GRAPH_DIR",
    "IDENTIFIER",
    "MANIFEST",
    "MAX_ARRAY_BYTES",
    "MAX_DEPTH",
    "MAX_JSON_BYTES",
    "SaveError",
    "SavedModelFormatError",
]

"""Saved models: a traced function's graphs and variables as data, loadable without its source.

``kx.saved_model.save(obj, path, signatures=None)`` writes a directory (JSON manifest and
graphs, ``.npy`` arrays; docs/saved_model.md); ``kx.saved_model.load(path)`` gives its
functions back, running on the NumPy executor or the compiled backends without the module that
defined them; ``kx.saved_model.export_source(obj, path)`` writes one ``.py`` file that needs
NumPy only. This layer sits above the engine (it reads ConcreteFunctions and compiles loaded
graphs through the backends) and below the notebook layer, which offers ``%tffunction_save``.
"""

from __future__ import annotations

from .format import FORMAT_VERSION, SavedModelFormatError, SaveError
from .loading import LoadedFunction, LoadedModel, load
from .saving import save
from .source import export_source
from .targets import concrete_functions

__all__ = [
    "FORMAT_VERSION",
    "LoadedFunction",
    "LoadedModel",
    "SaveError",
    "SavedModelFormatError",
    "concrete_functions",
    "export_source",
    "load",
    "save",
]

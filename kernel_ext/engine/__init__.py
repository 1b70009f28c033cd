"""The engine: Function / ConcreteFunction, the polymorphic cache, dispatch, options, eager
mode, retrace explanations and the event stream."""

from . import config, events, registry
from .concrete import ConcreteFunction
from .function import Function, function
from .trace_records import ArgumentDiff, TraceRecord

__all__ = [
    "ArgumentDiff",
    "ConcreteFunction",
    "Function",
    "TraceRecord",
    "config",
    "events",
    "function",
    "registry",
]

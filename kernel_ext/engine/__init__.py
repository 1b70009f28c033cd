"""The engine: Function / ConcreteFunction, the polymorphic cache, dispatch, options, eager
mode, retrace explanations and the event stream."""

from . import config, events, registry
from .concrete import ConcreteFunction
from .trace_records import ArgumentDiff, TraceRecord
from .function import Function, function

__all__ = ["ArgumentDiff", "ConcreteFunction", "Function", "TraceRecord", "config", "events",
           "function", "registry"]

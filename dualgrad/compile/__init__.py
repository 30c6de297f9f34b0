"""``dualgrad.compile``: trace a function once, replay its NumPy calls (see ``api.compile``)."""

from .api import CompiledFunction, CompileError, CompileWarning, compile  # noqa: A004

__all__ = ["compile", "CompiledFunction", "CompileError", "CompileWarning"]

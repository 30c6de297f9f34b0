"""The base layer: thread-local state, hook handles, pytrees, dtype names, random generators, devices.

It imports nothing else from dualgrad; everything above may import it.
"""

"""Benchmarks: dualgrad against hand-written NumPy and the installed peer libraries.

Run ``python -m benchmarks`` (all workloads) or ``python -m benchmarks -k W2``.
Each workload is one module ``w*.py`` exposing ``workload() -> Workload``.
"""

"""``python -m benchmarks``: run the workloads and print the ratio table."""

from .run import main

main()

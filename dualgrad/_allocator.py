"""Freed array memory stays in the process, ready for the next array of its size (glibc only).

Every op returns a new NumPy array, and a transform makes many of them: the batched
tangents of a Hessian, the tangents of a ``jvp``, the gradients of ``vmap(grad)``.
glibc's ``malloc`` serves a block of 128 KiB or more by ``mmap`` (its threshold grows
with the blocks freed, up to 32 MiB) and gives the top of its heap back to the
system once more than twice that threshold is free there. So the arrays of one
call are handed back when it ends and the next call gets fresh pages: a page fault
on every 4 KiB the first time it is written. With the pattern of a transform, that
cost exceeds the arithmetic: in the Rosenbrock Hessian of n = 300 (benchmark W4)
about 2500 faults and 3.7 ms of system time per call against 1.3 ms of user time.

``keep_freed_memory`` sets both limits once, when dualgrad is imported: blocks up
to 32 MiB come from the heap, and up to 512 MiB of free memory at its top stays
there. Values are unchanged; peak memory is unchanged (the memory kept is memory
that was in use); memory freed at the end is returned later, or not, to the
system. It does nothing when the fast paths are off (``DUALGRAD_FASTPATH=0``),
when the C library has no ``mallopt`` (not glibc: macOS, Windows, musl), or when
the user chose these limits through glibc's own environment variables
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``,
``MALLOC_MMAP_MAX_``), which then apply as set.
"""

from __future__ import annotations

import ctypes
import os

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest on 64-bit systems
TRIM_THRESHOLD = 512 * 1024 * 1024
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def _mallopt() -> object | None:
    """glibc's ``mallopt`` (None when the C library is not glibc)."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it (musl has a mallopt that ignores these)
        return libc.mallopt
    except (OSError, AttributeError, TypeError):
        return None


def keep_freed_memory(enabled: bool, environ: dict | None = None) -> bool:
    """Raise glibc's mmap and trim thresholds (see the module docstring); True if they were set."""
    environ = os.environ if environ is None else environ
    if not enabled or any(name in environ for name in USER_SETTINGS):
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))

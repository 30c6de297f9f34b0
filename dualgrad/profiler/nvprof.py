"""``load_nvprof``: read the ranges of an nvprof trace (SQLite) into an ``EventList``."""

from __future__ import annotations

import re
import sqlite3

from .events import EventList, FunctionEvent

__all__ = ["load_nvprof"]

_SEQ = re.compile(r",\s*(stashed )?seq\s*=\s*(\d+)")

_RANGES = """
SELECT start.id AS id, start.name AS name, start.timestamp AS t0, finish.timestamp AS t1
FROM CUPTI_ACTIVITY_KIND_MARKER AS start
JOIN CUPTI_ACTIVITY_KIND_MARKER AS finish ON start.id = finish.id
WHERE start.name != 0 AND finish.name = 0
"""

_KERNELS = """
SELECT start.id AS id, kernel.name AS name, kernel.start AS t0, kernel.end AS t1
FROM CUPTI_ACTIVITY_KIND_MARKER AS start
JOIN CUPTI_ACTIVITY_KIND_MARKER AS finish ON start.id = finish.id AND finish.name = 0
JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS runtime
  ON start.timestamp < runtime.start AND runtime.end < finish.timestamp
JOIN CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL AS kernel ON kernel.correlationId = runtime.correlationId
WHERE start.name != 0
"""


def load_nvprof(path: str) -> EventList:
    """Events for the NVTX ranges of an nvprof trace (``nvprof -o trace.prof``).

    Each range (a start marker with a name and the end marker with the same id)
    becomes a ``FunctionEvent``; ``seq=N`` / ``stashed seq=N`` annotations (see
    ``emit_nvtx``) become ``sequence_nr`` and mark backward ranges. Kernels
    launched inside a range (runtime and kernel tables, when present) are listed
    in ``event.kernels``. nvprof's nanosecond timestamps become microseconds.

    >>> import sqlite3, tempfile, os, dualgrad as dg
    >>> path = os.path.join(tempfile.mkdtemp(), "trace.prof")
    >>> db = sqlite3.connect(path)
    >>> _ = db.execute("CREATE TABLE StringTable (_id_ INTEGER, value TEXT)")
    >>> _ = db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER "
    ...                "(id INTEGER, name INTEGER, timestamp INTEGER)")
    >>> _ = db.execute("INSERT INTO StringTable VALUES (1, 'mul, seq=4')")
    >>> _ = db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (?, ?, ?)",
    ...                    [(7, 1, 1000), (7, 0, 3000)])
    >>> db.commit(); db.close()
    >>> [(e.name, e.sequence_nr, e.cpu_time_total) for e in dg.profiler.load_nvprof(path)]
    [('mul', 4, 2.0)]
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        strings = dict(conn.execute("SELECT _id_, value FROM StringTable"))
        events: dict = {}
        for marker_id, name_id, t0, t1 in conn.execute(_RANGES):
            text = strings.get(name_id, str(name_id))
            match = _SEQ.search(text)
            name = text[:match.start()] if match else text
            events[marker_id] = FunctionEvent(
                marker_id, name, 0, t0 / 1000.0, t1 / 1000.0,
                sequence_nr=int(match.group(2)) if match else -1,
                is_backward=bool(match and match.group(1)))
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"} <= tables:
            for marker_id, kernel_name, t0, t1 in conn.execute(_KERNELS):
                events[marker_id].kernels.append((strings.get(kernel_name, str(kernel_name)),
                                                  (t1 - t0) / 1000.0))
    except sqlite3.DatabaseError as error:
        raise RuntimeError(f"load_nvprof: {path!r} is not a readable nvprof trace: {error}") from error
    finally:
        conn.close()
    ordered = sorted(events.values(), key=lambda e: (e.start_us, -e.end_us))
    _nest(ordered)
    return EventList(ordered)


def _nest(events: list) -> None:
    """Set parents and children from time containment (events sorted by start)."""
    open_events: list = []
    for event in events:
        while open_events and open_events[-1].end_us <= event.start_us:
            open_events.pop()
        if open_events and event.end_us <= open_events[-1].end_us:
            event.cpu_parent = open_events[-1]
            open_events[-1].cpu_children.append(event)
        open_events.append(event)

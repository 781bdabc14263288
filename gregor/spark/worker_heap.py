"""Keeping the garbage collection Spark runs after every task cheap in a reused Python worker.

PySpark's worker daemon calls gc.collect() after each task of a reused worker. A full
collection walks every object the cyclic collector tracks, and a worker that has run a gregor
task holds ~150,000 of them that live as long as the process (pyarrow, numba's compiled
kernels, gregor's modules, the pooled clients): measured 0.2-0.3 s per collection, paid after
every task, which was the largest single cost of a DataFrame -> topic write after the
data itself (profiled in the workers of benchmarks/bench_spark.py). Objects that have
survived a full collection are moved to the collector's permanent generation (gc.freeze),
which later collections skip; the next one costs milliseconds.

Only long-lived objects end up frozen: a task's own garbage is collected first. When a task
leaves many new long-lived objects (a worker's first task, or the first of another kind),
everything is unfrozen, collected once and frozen again, so frozen objects that have since
become garbage (an evicted pooled client) are reclaimed then too.
"""
from __future__ import annotations

import gc

# Unfrozen objects in the oldest generation at the end of a task above which the worker
# has loaded something new and is re-frozen. A steady task leaves a few hundred.
REFREEZE_ABOVE = 20_000


def settle() -> None:
    """At the end of a task: collect and freeze when new long-lived objects have piled up."""
    if len(gc.get_objects(generation=2)) <= REFREEZE_ABOVE:
        return
    gc.unfreeze()
    gc.collect()
    gc.freeze()

"""The cyclic garbage collector set up for a process that plans: what its imports made frozen, a larger young generation."""

from __future__ import annotations

import gc

# Allocations (net of frees) between young collections: 10,000 instead of CPython's 700. A plan's search makes
# many short-lived numpy and tuple objects, almost none in reference cycles.
YOUNG_GENERATION = 10_000


def settle() -> None:
    """Move every object alive now out of the collector's walks for good, and collect the young generation less
    often. Call once, after the process's imports (the CLI: core.cli.run; the dashboard: dashboard.state).

    Why: each full collection walks every object the imports made (pandas, pydantic, numba, scipy: ~0.5 M in the
    CLI, more beside Streamlit and Plotly), and a plan's search triggers several: the collector took 0.30 of
    the sample's CPU s, 1.33 of 300 workloads', and 0.53 of a 100-workload plan beside the dashboard's imports;
    settled, 0.15, 0.33 and 0.10 (docs/performance.md "Evaluate"). What is frozen is never collected, so this
    runs where little garbage is alive: after the imports, before any work."""
    gc.freeze()  # not collected first: a full collection here costs what it would save (the imports leave little)
    gc.set_threshold(YOUNG_GENERATION, 20, 10)

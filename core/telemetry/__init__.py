"""Telemetry: what the GPUs actually did, from the logs their owners already keep.

- `samples`: the metrics read (shares 0-1, W, MiB), which one counts as utilization, node names.
- `nvidia_smi`: `nvidia-smi --query-gpu ... --format=csv` logs (header read here; rows in bulk by the store).
- `dcgm`: DCGM exporter scrapes in Prometheus text format.
- `prometheus`: Prometheus query results (range `matrix` or instant `vector` JSON).
- `formats`: the one registry of formats, detected from the content.
- `importer`: one file in: detect, parse, stage Parquet, commit hourly aggregates in one transaction.
- `profile`: measured utilization (hour of day, weekday x hour) and its idle cost at a scenario's price.

The SQL (Parquet layout, hourly aggregates, reads) lives in `core.store.telemetry`.
"""

from core.telemetry.formats import FORMATS, detect_format
from core.telemetry.importer import TelemetryImport, import_telemetry
from core.telemetry.profile import (
    MeasuredUtilization,
    TelemetrySummary,
    measured_profile,
    summarize,
)
from core.telemetry.samples import METRICS, UTILIZATION_METRICS

__all__ = [
    "FORMATS", "METRICS", "UTILIZATION_METRICS", "MeasuredUtilization", "TelemetryImport", "TelemetrySummary",
    "detect_format", "import_telemetry", "measured_profile", "summarize",
]

"""The one registry of telemetry formats: how each is recognised from its content, in the order tried."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.errors import InputError
from core.telemetry import dcgm, nvidia_smi, prometheus


@dataclass(frozen=True)
class TelemetryFormat:
    """A file format: its name, what it looks like, and the tool behind it (for messages and docs)."""

    name: str
    detect: Callable[[str], bool]
    looks_like: str


# Order matters only where two could claim a file: JSON first (its text can hold DCGM names), then DCGM text.
FORMATS: tuple[TelemetryFormat, ...] = (
    TelemetryFormat(prometheus.FORMAT, prometheus.detect,
                    'a Prometheus query response {"status":"success","data":{"resultType":"matrix",...}}'),
    TelemetryFormat(dcgm.FORMAT, dcgm.detect, "DCGM exporter metrics: DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",...} 45"),
    TelemetryFormat(nvidia_smi.FORMAT, nvidia_smi.detect,
                    "an nvidia-smi --query-gpu CSV: timestamp, index, utilization.gpu [%], ..."),
)


def detect_format(head: str, file_name: str) -> str:
    """The name of the format the text starts like, or InputError listing what is expected."""
    for fmt in FORMATS:
        if fmt.detect(head):
            return fmt.name
    first = next((line.strip() for line in head.splitlines() if line.strip()), "")
    shown = f" (it starts {first[:60]!r})" if first else " (it is empty)"
    expected = "; or ".join(f.looks_like for f in FORMATS)
    raise InputError(f"{file_name} is not a telemetry file this version reads{shown}; expected {expected}")

"""Plausibility bounds for telemetry readings, from the GPU catalog: GPU index, memory used, power draw.

A reading no GPU the catalog knows could give (GPU index 9 on an 8-GPU node,
1e308 MiB, 1,000,000 W) is a broken log, not a measurement (issue 34: such
values were counted as extra GPUs and inflated idle $). Which GPU wrote the
file is given by the user (`--gpu`); without it the bounds are the widest the
catalog allows, so any GPU it knows passes. A store without reference data
keeps the format's own bounds only (index 0-63, no memory or power limit).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import InputError

FORMAT_GPUS_PER_NODE = 64  # the format-level bound (indexes 0-63) when the catalog says nothing
MIB_PER_GB = 1024  # vendors' "80 GB" is read as GiB: nvidia-smi shows an H100 80GB as 81,559 MiB (FACTS.md) < 81,920
POWER_OVER_TDP = 2.0  # transients and board-power readings above TDP occur; twice TDP does not


@dataclass(frozen=True)
class Plausible:
    """The largest plausible reading of each bounded field, and what the bounds came from (for messages)."""

    gpus_per_node: int
    memory_mib: float | None  # None: no bound (no catalog)
    power_w: float | None
    basis: str

    def index_problem(self, raw: str, field: str) -> str | None:
        """None when `raw` (a GPU index as written) is a whole number below GPUs per node; else why not, naming `field`."""
        text = raw.strip()
        if text.isdigit() and len(text) <= 4 and int(text) < self.gpus_per_node:
            return None
        return (f"{field} {text[:40]!r} is not a GPU index (a whole number 0 to {self.gpus_per_node - 1}: "
                f"{self.gpus_per_node} GPUs per node, {self.basis})")

    def high(self, metric: str) -> float | None:
        """The largest plausible value of a metric in its stored unit (W, MiB), or None when unbounded."""
        return {"memory_used_mib": self.memory_mib, "power_w": self.power_w}.get(metric)

    def value_problem(self, metric: str, value: float) -> str | None:
        """None when a reading is within its catalog bound; else why not (the caller names the field)."""
        high = self.high(metric)
        if high is None or value <= high:
            return None
        return f"{_fmt(value)} is above {self.bound_text(metric)}"

    def bound_text(self, metric: str) -> str:
        """'2 x TDP = 1,400 W (H100 SXM, catalog)': the bound in words, for messages."""
        from core.format import integer, plain

        high = self.high(metric)
        if high is None:
            return "no bound"
        what = "the GPU's memory" if metric == "memory_used_mib" else f"{plain(POWER_OVER_TDP)} x TDP"
        unit = "MiB" if metric == "memory_used_mib" else "W"
        return f"{what} = {integer(high)} {unit} ({self.basis})"


FORMAT_ONLY = Plausible(FORMAT_GPUS_PER_NODE, None, None, "no GPU catalog in the store")


def _fmt(value: float) -> str:
    from core.format import integer, plain

    # integer() works in Decimal and cannot take 1e308 (core.format._fixed raises): huge values in general form.
    return integer(value) if abs(value) < 1e15 else plain(value)


def from_store(store, gpu: str | None = None) -> Plausible:
    """Bounds for `gpu` (a catalog name) or, without it, the widest over the catalog; InputError for an unknown GPU."""
    specs = list(store.gpus())
    if not specs:
        if gpu:
            raise InputError(f"--gpu {gpu!r}: the store has no GPU catalog (run `hangover db init`)")
        return FORMAT_ONLY
    nodes = [(n.gpu, n.gpus_per_node) for n in store.node_prices()]
    nodes += [(h.gpu, h.gpus_per_node) for h in store.owned_hardware()]
    if gpu:
        spec = next((g for g in specs if g.name.lower() == gpu.strip().lower()), None)
        if spec is None:
            known = ", ".join(sorted(g.name for g in specs))
            raise InputError(f"--gpu {gpu!r} is not in the GPU catalog; known GPUs: {known}")
        per_node = max((k for name, k in nodes if name.lower() == spec.name.lower()), default=None)
        return Plausible(per_node or max((k for _, k in nodes), default=FORMAT_GPUS_PER_NODE),
                         spec.hbm_gb * MIB_PER_GB, POWER_OVER_TDP * spec.tdp_w, f"{spec.name}, catalog")
    return Plausible(max((k for _, k in nodes), default=FORMAT_GPUS_PER_NODE),
                     max(g.hbm_gb for g in specs) * MIB_PER_GB, POWER_OVER_TDP * max(g.tdp_w for g in specs),
                     "the widest GPU in the catalog; name yours with --gpu for its own bounds")

"""The reference data one evaluation reads (GPUs, stacks, prices, benchmarks), loaded once from the store."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from core.errors import InputError
from core.models import ApiPrice, Benchmark, GpuSpec, NodePrice, OwnedHardware, ServingStack
from core.performance.physics import Efficiency

if TYPE_CHECKING:
    from core.performance.calibration import EfficiencyBounds


# Sizing stores a catalog keeps (Catalog.kept_sizings): a few scenarios whose pools differ (targets' tail, GPU, ...);
# scenarios that differ only in prices or owned nodes share one.
KEPT_SIZING_STORES = 4
KEPT_SIZINGS_MAX = 100_000  # sizings in one store (~2 KB each with its key) before it starts again
_KEPT = ("kept sizings",)
_KEPT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Catalog:
    """Plain, validated reference data: the engine never touches the store itself."""

    gpus: tuple[GpuSpec, ...]
    stacks: tuple[ServingStack, ...]
    apis: tuple[ApiPrice, ...]
    node_prices: tuple[NodePrice, ...]
    owned_hardware: tuple[OwnedHardware, ...]
    benchmarks: tuple[Benchmark, ...] = ()
    _eff_cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    # Which end of each route's efficiency range `efficiency` returns: "central" (the default, what every
    # verdict uses), or "low" / "high" for the verdict-sensitivity runs (core/decision/sensitivity.py).
    efficiency_end: str = "central"
    # Widen each route's range to include NVIDIA AIConfigurator's cached answer where it has one
    # (Scenario.peer_ranges; off by default; reads the cache only, never the package).
    peer_ranges: bool = False

    @classmethod
    def from_store(cls, store) -> Catalog:
        """Read every reference table (latest row per key) from a Store."""
        # The six reads hold the file open once (Store.held), not once each (~20 ms an open).
        with store.held() if hasattr(store, "held") else contextlib.nullcontext():
            return cls(
                gpus=tuple(store.gpus()),
                stacks=tuple(store.serving_stacks()),
                apis=tuple(store.api_prices()),
                node_prices=tuple(store.node_prices()),
                owned_hardware=tuple(store.owned_hardware()),
                benchmarks=tuple(store.benchmarks()),
            )

    def gpu(self, name: str) -> GpuSpec:
        """A GPU by name (case-insensitive), or an InputError listing the known ones."""
        for g in self.gpus:
            if g.name.lower() == name.strip().lower():
                return g
        raise InputError(f"unknown GPU {name!r}; known GPUs: {', '.join(sorted(g.name for g in self.gpus))}")

    def kept_sizings(self, identity: str) -> dict:
        """The pool sizings kept for plans of this catalog under `identity` (engine.evaluate: the scenario's inputs
        a sizing reads), the last KEPT_SIZING_STORES identities. Its efficiency-end copies share it (the same
        cache); their sizings are keyed apart by the physics they read (sizing.Sizer._physics_of)."""
        with _KEPT_LOCK:  # dashboard sessions plan on threads of their own
            kept = self._eff_cache.setdefault(_KEPT, OrderedDict())
            store = kept.pop(identity, None)
            # Emptied when large: one identity is shared by every inventory planned with this catalog (a bench, a
            # server's many uploads of one store version); a 300-workload evaluation sizes ~23,000 pools.
            kept[identity] = store = {} if store is None or len(store) > KEPT_SIZINGS_MAX else store
            while len(kept) > KEPT_SIZING_STORES:
                kept.popitem(last=False)
        return store

    def efficiency(self, stack: ServingStack, gpu: GpuSpec, gpus: int) -> tuple[Efficiency, str]:
        """Efficiency factors for a route and a provenance label, calibrated on matching benchmarks when any exist."""
        if self.efficiency_end != "central":
            bounds = self.efficiency_bounds(stack, gpu, gpus)
            _, label = self._central(stack, gpu, gpus)
            end = bounds.low if self.efficiency_end == "low" else bounds.high
            return end, f"{label} ({'pessimistic' if self.efficiency_end == 'low' else 'optimistic'} end)"
        return self._central(stack, gpu, gpus)

    def _central(self, stack: ServingStack, gpu: GpuSpec, gpus: int) -> tuple[Efficiency, str]:
        key = (stack.stack_id, gpu.name, gpus)
        if key not in self._eff_cache:
            self._eff_cache[key] = _calibrate(stack, gpu, gpus, self.benchmarks)
        return self._eff_cache[key]

    def at_efficiency_end(self, end: str, *, peer_ranges: bool | None = None) -> Catalog:
        """The same data with `efficiency` returning every route's "low" (slower) or "high" end, or "central".

        The copy shares the calibration cache (bounds and fits are the same whichever end is read;
        bounds widened to the peer are kept under their own key). `peer_ranges` None keeps this one's.
        """
        if end not in ("low", "central", "high"):
            raise InputError(f"efficiency end must be low, central or high; got {end!r}")
        return replace(self, efficiency_end=end, peer_ranges=self.peer_ranges if peer_ranges is None else peer_ranges)

    def efficiency_bounds(self, stack: ServingStack, gpu: GpuSpec, gpus: int) -> EfficiencyBounds:
        """(low, central, high) Efficiency for a route (low = slower), with `.driver`: the assumption that dominates.

        Unpacks as three: `low, central, high = catalog.efficiency_bounds(...)`.
        Calibrated routes take their range from the fit's error at their own points;
        estimated routes from the stated uncertainty of each assumption (docs/performance-model.md).
        With `peer_ranges`, both ends stretch to include the peer's cached answers (peer.widened_bounds).
        """
        key = ("bounds", stack.stack_id, gpu.name, gpus)
        if key not in self._eff_cache:
            from core.performance.calibration import efficiency_bounds

            self._eff_cache[key] = efficiency_bounds(stack, gpu, gpus, self.benchmarks)
        if not self.peer_ranges:
            return self._eff_cache[key]
        wide = ("peer bounds", *key[1:])
        if wide not in self._eff_cache:
            from core.performance.peer import widened_bounds

            self._eff_cache[wide] = widened_bounds(self._eff_cache[key], stack, gpu, gpus)
        return self._eff_cache[wide]


def _calibrate(stack: ServingStack, gpu: GpuSpec, gpus: int, benchmarks) -> tuple[Efficiency, str]:
    """Fit the roofline's efficiency to this route's measured/vendor points; the label says which basis."""
    from core.performance.calibration import calibrate

    cal = calibrate(stack, gpu, gpus, benchmarks)
    return cal.efficiency, cal.estimated_label

"""Calibration fits kept on disk across runs, keyed by everything a fit reads (its points, stack, GPU and the model's code).

A route's fit (calibration._fit_cached: a bounded least-squares solve over the roofline) is a pure function of
the route's benchmark points, its stack and GPU records, the physics and calibration code and the numpy/scipy
that ran them. Each `hangover evaluate` process fitted its scenario GPU's routes again: ~0.2 s of CPU on an idle
machine (0.9 s on a slower one), ~6 % of the bundled sample's evaluation. The key is a SHA-256 of all of those
(the code as the bytes of core/performance/*.py and core/models.py), so an edit to a point, a record or the
model is a new key and the fit is made again; nothing is ever looked up by route alone.

Where: $HANGOVER_FIT_CACHE ('' / 'off' / '0' disables), else the user cache dir (XDG_CACHE_HOME or ~/.cache)
/hangover/fits, one JSON file per fit. JSON, not pickle: a file is read as numbers and strings only. A file that
cannot be read or does not hold a fit is ignored (the fit is made and written again); a write goes to a
temporary file first and is renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, fields
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from core.performance.physics import Efficiency

if TYPE_CHECKING:
    from core.models import Benchmark, GpuSpec, ServingStack
    from core.performance.calibration import Fit

_FORMAT = 1  # bumped when the file layout changes


def cache_dir() -> Path | None:
    """The folder fits are kept in (None: disabled)."""
    env = os.environ.get("HANGOVER_FIT_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0") else Path(env)
    try:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hangover" / "fits"
    except RuntimeError:  # no home directory to be found (a bare container): fit in process only
        return None


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of the code a fit runs (the performance package and the records it reads) and its libraries."""
    import numpy
    import scipy

    root = Path(__file__).resolve().parent
    h = hashlib.sha256(f"{_FORMAT}|numpy {numpy.__version__}|scipy {scipy.__version__}".encode())
    for path in sorted(root.glob("*.py")) + [root.parent / "models.py"]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def fit_key(stack: ServingStack, gpu: GpuSpec, gpus: int, used: tuple[Benchmark, ...], notes: tuple[str, ...]) -> str:
    """The file name of one route's fit: everything _fit_cached reads, hashed."""
    payload = json.dumps([code_fingerprint(), stack.model_dump(mode="json"), gpu.model_dump(mode="json"), int(gpus),
                          [p.model_dump(mode="json") for p in used], list(notes)], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _to_json(fit: Fit) -> dict:
    return {"format": _FORMAT, "fit": asdict(fit)}


def _from_json(data: dict) -> Fit:
    from core.performance.calibration import Fit, PointError

    if data.get("format") != _FORMAT:
        raise ValueError("another cache format")
    f = data["fit"]
    eff_names = {x.name for x in fields(Efficiency)}
    eff = f["efficiency"]
    if set(eff) != eff_names:
        raise ValueError("efficiency fields differ")
    # Numbers only (a hand-edited or foreign file must not put text or NaN into the physics).
    if not all(v is None or (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v))
               for v in eff.values()):
        raise ValueError("an efficiency factor is not a finite number")
    return Fit(stack_id=str(f["stack_id"]), gpu=str(f["gpu"]), gpus=int(f["gpus"]), efficiency=Efficiency(**eff),
               n_points=int(f["n_points"]), n_measured=int(f["n_measured"]), n_vendor_claim=int(f["n_vendor_claim"]),
               errors=tuple(PointError(**e) for e in f["errors"]), notes=tuple(str(n) for n in f["notes"]))


def cached_fit(stack: ServingStack, gpu: GpuSpec, gpus: int, used: tuple[Benchmark, ...], notes: tuple[str, ...],
               make: Callable[[], Fit]) -> Fit:
    """The route's fit from its file when one holds it, else make() written to one (best effort: a folder that
    cannot be written only costs the next run the fit again)."""
    folder = cache_dir()
    if folder is None:
        return make()
    path = folder / f"{fit_key(stack, gpu, gpus, used, notes)}.json"
    try:
        return _from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or not one we can read: made again below
    fit = make()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fit-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(_to_json(fit), out)
        os.replace(tmp, path)
    except OSError:
        pass
    return fit

"""A second opinion on one replica's speed: NVIDIA AIConfigurator's estimate, where the optional package is installed.

AIConfigurator (PyPI ``aiconfigurator``, Apache-2.0) predicts TTFT and time per output token
from a measured per-kernel database (GEMM, attention, MoE, NCCL) of TensorRT-LLM, vLLM and
SGLang on a set of NVIDIA systems, with an in-flight-batching scheduler on top. It is an
*estimate* too, but an independent one: where it and the roofline disagree, the truth is
uncertain by at least that much.

The package is an optional extra (``pip install -e ".[peer]"``) and is imported lazily, only
when a caller asks for the peer; nothing in an evaluation or a plan calls this module.
Answers are cached in process and, keyed by the package version and the configuration, in a
small JSON file, because one point costs about a CPU second.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import io
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.models import Architecture, GpuSpec, ServingStack

if TYPE_CHECKING:
    from core.performance.calibration import EfficiencyBounds

PACKAGE = "aiconfigurator"
PINNED_VERSION = "0.12.0"  # the version the mapping below and bench/compare_peer.py were checked against

# hangover GPU name -> AIConfigurator system name. Only systems whose kernel database ships with the package.
SYSTEMS: dict[str, str] = {
    "H100 SXM": "h100_sxm",
    "H200 SXM": "h200_sxm",
    "H100 PCIe": "h100_pcie",
    "B200": "b200_sxm",
    "A100 80GB SXM": "a100_sxm",
    "L40S": "l40s",
}

# hangover stack id -> the model config AIConfigurator bundles for the same architecture and precision.
# Llama 3.3 70B has the same config.json as Llama 3.1 70B (80 layers, hidden 8192, 8 KV heads).
MODELS: dict[str, str] = {
    "llama8b-bf16": "meta-llama/Meta-Llama-3.1-8B",
    "llama70b-bf16": "meta-llama/Meta-Llama-3.1-70B",
    "llama70b-fp8": "nvidia/Llama-3.1-70B-Instruct-FP8",
    "qwen3-30b-a3b-fp8": "Qwen/Qwen3-30B-A3B-FP8",
    "qwen3-235b-a22b-fp8": "Qwen/Qwen3-235B-A22B-FP8",
}

# Mapped models whose FP8 checkpoint is block-scaled (quantization_config.weight_block_size [128, 128] in their
# config.json, as AIConfigurator bundles it); Llama-3.1-70B-Instruct-FP8 (ModelOpt) is per-tensor.
BLOCK_SCALED_FP8 = frozenset({"Qwen/Qwen3-30B-A3B-FP8", "Qwen/Qwen3-235B-A22B-FP8"})


def caveat(config: PeerConfig) -> str:
    """A known flaw of the peer's database for this configuration, in one line ('' where none is known).

    Its vLLM 0.24.0 table times block-scaled FP8 dense GEMMs on H100 at 58-101 us a call whatever the weight
    (a 10 MB and an 84 MB matrix alike), where its TensorRT-LLM and SGLang tables time the same shapes at 9-37 us
    and stream them at ~60 % of HBM bandwidth: a fixed cost per call, not the GPU's. With those GEMMs at its own
    TensorRT-LLM times its vLLM Qwen3-30B-A3B figures come near the roofline's (median ratio 1.48 -> 0.91;
    docs/performance-model.md, `python bench/compare_peer.py --gemm-table` / `--gemm-swap`).
    """
    if config.backend == "vllm" and config.model_path in BLOCK_SCALED_FP8:
        return ("AIConfigurator's vLLM database times block-scaled FP8 dense GEMMs at ~60-100 µs a call whatever "
                "their size (its TensorRT-LLM and SGLang tables: 9-37 µs for the same shapes), so its vLLM figures "
                "for this FP8 checkpoint are likely slow (docs/performance-model.md, \"Where the two still part\")")
    return ""


# AIConfigurator's backends; hangover's engine names are the same three.
BACKENDS = ("trtllm", "vllm", "sglang")


@dataclass(frozen=True)
class PeerConfig:
    """One configuration the peer is asked about (everything its answer depends on)."""

    model_path: str
    system: str
    backend: str
    gpus: int
    input_tokens: int
    output_tokens: int
    moe: bool = False
    expert_parallel: bool = False  # MoE only: experts split across GPUs (EP) instead of each expert sliced (TP)
    quant: tuple[tuple[str, str], ...] = ()  # quantisation overrides, e.g. (("gemm_quant_mode", "fp8"),)


@dataclass(frozen=True)
class PeerPoint:
    """The peer's figures for one concurrency (aggregated serving, in-flight batching)."""

    concurrency: int
    per_stream_tok_s: float  # 1000 / TPOT
    ttft_ms: float
    tpot_ms: float
    total_tok_s: float  # output tokens per second of the replica
    backend_version: str
    note: str = ""  # e.g. the peer's warning that the KV cache cannot hold that many sequences


@dataclass(frozen=True)
class PeerEstimate:
    """The peer's curve for one route, or the one-line reason it has none."""

    points: tuple[PeerPoint, ...] = ()
    reason: str = ""  # empty when covered
    note: str = ""  # covered, but some concurrencies were refused (e.g. out of memory at 128 streams)
    caveat: str = ""  # covered, but its database is known to err for this configuration (caveat())
    config: PeerConfig | None = None
    version: str = ""
    as_of: str = field(default_factory=lambda: dt.date.today().isoformat())

    @property
    def covered(self) -> bool:
        return not self.reason and bool(self.points)

    @property
    def source(self) -> str:
        """'aiconfigurator 0.12.0 (trtllm 1.3.0rc20 kernel database, h100_sxm)': what the figures rest on."""
        if self.config is None:
            return f"{PACKAGE} {self.version}".strip()
        db = self.points[0].backend_version if self.points else "?"
        return f"{PACKAGE} {self.version} ({self.config.backend} {db} kernel database, {self.config.system})"


class Peer(Protocol):
    """What the adapter needs from the peer: its version and one point (PeerError where it has none)."""

    version: str

    def point(self, config: PeerConfig, concurrency: int) -> PeerPoint: ...


class PeerError(Exception):
    """The peer could not answer for a configuration (out of memory, no database, unknown model)."""


class _Aiconfigurator:
    """The real peer: AIConfigurator's single-point aggregated estimate (``cli estimate --estimate-mode agg``)."""

    def __init__(self, module: Any, version: str):
        self._api = module
        self.version = version
        self._lock = threading.Lock()  # its database loader keeps module-level state

    @lru_cache(maxsize=64)  # noqa: B019 -- one adapter per process; the cache holds only model names
    def _model(self, model_path: str) -> str:
        """The id itself where the package knows it; else a folder holding the config.json it bundles.

        It bundles some configs (Mixtral) without listing them as known models, and then tries to download
        them from Hugging Face; a local folder with the bundled file answers without the network.
        """
        try:
            common = importlib.import_module("aiconfigurator.sdk.common")
            if model_path in common.get_default_models():
                return model_path
            from importlib import resources

            name = model_path.replace("/", "--")
            bundled = resources.files("aiconfigurator_core") / "model_configs" / f"{name}_config.json"
            if not bundled.is_file():
                return model_path
            folder = _cache_dir() / "aic-models" / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "config.json").write_text(bundled.read_text())
            return str(folder)
        except Exception:  # any surprise: let the package resolve the id its own way
            return model_path

    def point(self, config: PeerConfig, concurrency: int) -> PeerPoint:
        g = config.gpus
        moe: dict[str, int | None] = {}
        if config.moe:
            moe = {"moe_tp_size": 1, "moe_ep_size": g} if config.expert_parallel else {"moe_tp_size": g, "moe_ep_size": 1}
        sink = io.StringIO()
        try:
            # It logs and warns per call (database fallbacks, deprecations): keep the caller's output clean.
            with self._lock, warnings.catch_warnings(), contextlib.redirect_stdout(sink), _quiet_logs(), _quiet_fd2():
                warnings.simplefilter("ignore")
                r = self._api.cli_estimate(
                    self._model(config.model_path), config.system, mode="agg", backend_name=config.backend,
                    isl=config.input_tokens, osl=config.output_tokens, batch_size=int(concurrency),
                    tp_size=g, **moe, **dict(config.quant),
                )
        except Exception as exc:  # its errors are plain ValueError/RuntimeError with a useful message
            raise PeerError(_first_line(exc)) from exc
        tpot = float(r.tpot)
        return PeerPoint(
            concurrency=int(concurrency),
            per_stream_tok_s=1000.0 / tpot if tpot > 0 else 0.0,
            ttft_ms=float(r.ttft),
            tpot_ms=tpot,
            total_tok_s=float(r.tokens_per_second),
            backend_version=str(r.backend_version),
            note=_first_line(r.kv_cache_warning) if r.kv_cache_warning else "",
        )


@contextlib.contextmanager
def _quiet_logs():
    log = logging.getLogger(PACKAGE)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


@contextlib.contextmanager
def _quiet_fd2():
    """Silence file descriptor 2 for the call: its compiled core prints database fallbacks there directly."""
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (some embedded runtimes): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _first_line(exc: object) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


@lru_cache(maxsize=1)
def _load() -> tuple[_Aiconfigurator | None, str]:
    """(peer, '') or (None, why not). Imported once, on first use."""
    try:
        with warnings.catch_warnings(), _quiet_logs():
            warnings.simplefilter("ignore")
            api = importlib.import_module("aiconfigurator.cli.api")
        from importlib.metadata import version

        ver = version(PACKAGE)
    except Exception as exc:  # ImportError, or a broken install
        return None, (f"AIConfigurator is not installed (pip install -e \".[peer]\" adds it; "
                      f"{type(exc).__name__}: {_first_line(exc)})")
    return _Aiconfigurator(api, ver), ""


def available() -> bool:
    """Whether the peer can be asked (the package imports)."""
    return _load()[0] is not None


def unavailable_reason() -> str:
    """One line saying why the peer cannot be asked; empty when it can."""
    return _load()[1]


def coverage(stack: ServingStack, gpu_name: str) -> tuple[PeerConfig | None, str]:
    """The peer configuration for a stack on a GPU (tokens and GPUs left at 0), or the one-line reason it has none."""
    if stack.architecture is Architecture.DIFFUSION:
        return None, "AIConfigurator does not cover diffusion decoding (it models autoregressive engines only)"
    if stack.architecture is Architecture.SPECULATIVE:
        return None, ("AIConfigurator does not cover draft-model speculative decoding "
                      "(it models only built-in multi-token prediction)")
    system = SYSTEMS.get(gpu_name)
    if system is None:
        return None, f"AIConfigurator has no kernel database for {gpu_name} (it has {', '.join(SYSTEMS)})"
    model = MODELS.get(stack.stack_id)
    if model is None:
        return None, (f"no AIConfigurator model mapped to stack {stack.stack_id!r} "
                      f"(mapped: {', '.join(sorted(MODELS))})")
    backend = stack.engine.value
    if backend not in BACKENDS:
        return None, f"AIConfigurator has no {backend} backend"
    return PeerConfig(model, system, backend, 0, 0, 0, moe=stack.architecture is Architecture.MOE), ""


# ---- cache: in process, and in a JSON file keyed by peer version + configuration ---------------------------


def _cache_dir() -> Path:
    path = cache_path()
    return path.parent if path is not None else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hangover"


def cache_path() -> Path | None:
    """Where answers persist across runs: $HANGOVER_PEER_CACHE ('' or 'off' disables), else the user cache dir."""
    env = os.environ.get("HANGOVER_PEER_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0") else Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hangover" / "peer-aiconfigurator.json"


_TRANSIENT = "Failed to download"  # its words when a model id is neither bundled nor reachable
_memo: dict[str, dict] = {}
_file_loaded: set[Path] = set()
_memo_lock = threading.Lock()


def _key(version: str, config: PeerConfig, concurrency: int) -> str:
    return json.dumps([version, asdict(config), int(concurrency)], sort_keys=True)


def _file_get(key: str) -> dict | None:
    path = cache_path()
    with _memo_lock:
        if key in _memo:
            return _memo[key]
        if path is not None and path not in _file_loaded:
            _file_loaded.add(path)
            with contextlib.suppress(OSError, ValueError):
                _memo.update(json.loads(path.read_text()))
        return _memo.get(key)


def _file_put(entries: dict[str, dict]) -> None:
    path = cache_path()
    with _memo_lock:
        _memo.update(entries)
        if path is None or not entries:
            return
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(_memo))
            tmp.replace(path)  # atomic: a reader never sees half a file


def clear_cache() -> None:
    """Forget in-process answers (the file stays); tests and a changed package call this."""
    with _memo_lock:
        _memo.clear()
        _file_loaded.clear()


def ask(peer: Peer, config: PeerConfig, concurrencies: Iterable[float]) -> tuple[list[PeerPoint], str]:
    """The peer's points at each concurrency (cached), and the first refusal if any point failed."""
    points: list[PeerPoint] = []
    fresh: dict[str, dict] = {}
    reason = ""
    for c in concurrencies:
        c = int(round(c))
        key = _key(peer.version, config, c)
        hit = fresh.get(key) or _file_get(key)
        if hit is None:
            try:
                p = peer.point(config, c)
                hit = {"ok": asdict(p)}
            except PeerError as exc:
                hit = {"error": str(exc)}
                if _TRANSIENT in str(exc):  # no network this time: not kept, asked again next time
                    reason = reason or f"AIConfigurator could not estimate {c:g} streams: {exc}"
                    continue
            fresh[key] = hit
        if "ok" in hit:
            points.append(PeerPoint(**hit["ok"]))
        elif not reason:
            reason = f"AIConfigurator could not estimate {c:g} streams: {hit['error']}"
    _file_put(fresh)
    return points, reason


def peer_estimate(
    stack: ServingStack,
    gpu_name: str,
    gpus_per_replica: int,
    concurrencies: Sequence[float],
    input_tokens: float,
    output_tokens: float,
    *,
    peer: Peer | None = None,
    expert_parallel: bool = False,
) -> PeerEstimate:
    """The peer's estimate for one replica at each concurrency, or the one-line reason it has none."""
    base, reason = coverage(stack, gpu_name)
    if base is None:
        return PeerEstimate(reason=reason)
    if peer is None:
        loaded, why = _load()
        if loaded is None:
            return PeerEstimate(reason=why)
        peer = loaded
    config = PeerConfig(
        base.model_path, base.system, base.backend, int(gpus_per_replica),
        int(round(input_tokens)), int(round(output_tokens)), moe=base.moe,
        expert_parallel=expert_parallel and base.moe,
    )
    points, why = ask(peer, config, concurrencies)
    if not points:
        return PeerEstimate(reason=why or "AIConfigurator returned no points", config=config, version=peer.version)
    return PeerEstimate(points=tuple(points), note=why, caveat=caveat(config), config=config, version=peer.version)


# ---- widening a range to include the peer ---------------------------------------------------------------


def widening(low: Sequence[float], high: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
    """(slow, fast) factors that stretch a range [low, high] of throughput to contain the peer's figure at each point.

    slow <= 1 multiplies the low end, fast >= 1 the high end; both are 1 where the peer already
    falls inside. Points where the peer has no figure (0 or NaN) are skipped. A caller scales the
    range's efficiency ends by these (physics.scaled_speed) for routes the peer covers.
    """
    slow, fast = 1.0, 1.0
    for lo, hi, x in zip(low, high, theirs, strict=True):
        if not x > 0 or not lo > 0 or not hi > 0:
            continue
        slow = min(slow, x / lo)
        fast = max(fast, x / hi)
    return slow, fast


# Operating points a route's range is widened at: the comparison grid's loads and lengths (bench/compare_peer.py),
# so a cache filled by `compare_peer.py` or `hangover perf --peer` answers them.
WIDEN_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
WIDEN_TOKENS = ((1000, 256), (4000, 512))


@lru_cache(maxsize=1)
def _cached_version() -> str:
    """The installed package's version without importing it (its metadata only), else the pinned one."""
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return PINNED_VERSION


def cached_points(stack: ServingStack, gpu_name: str, gpus: int, input_tokens: int, output_tokens: int,
                  concurrencies: Iterable[int], *, expert_parallel: bool = False) -> list[PeerPoint]:
    """The peer's answers already in the cache for these points (never asks it, never imports the package)."""
    base, _ = coverage(stack, gpu_name)
    if base is None:
        return []
    config = PeerConfig(base.model_path, base.system, base.backend, int(gpus), int(input_tokens), int(output_tokens),
                        moe=base.moe, expert_parallel=expert_parallel and base.moe)
    out = []
    for c in concurrencies:
        hit = _file_get(_key(_cached_version(), config, int(c)))
        if hit is not None and "ok" in hit:
            out.append(PeerPoint(**hit["ok"]))
    return out


def widened_bounds(bounds: EfficiencyBounds, stack: ServingStack, gpu: GpuSpec, gpus: int) -> EfficiencyBounds:
    """An EfficiencyBounds whose ends are stretched (physics.scaled_speed) to include the peer's cached per-stream
    speed at the comparison grid's points; the same bounds where the cache holds no answer for the route.

    Reads the cache only: an evaluation is never slowed by the peer and never needs the package.
    """
    from dataclasses import replace

    import numpy as np

    from core.performance import physics

    ep = physics.expert_parallel(stack, gpus)
    low, high, theirs = [], [], []
    for n_in, n_out in WIDEN_TOKENS:
        points = cached_points(stack, gpu.name, gpus, n_in, n_out, WIDEN_CONCURRENCY, expert_parallel=ep)
        cap = float(physics.max_concurrency(stack, gpu, gpus, n_in + n_out))
        points = [p for p in points if p.concurrency <= cap]
        if not points:
            continue
        b = np.array([float(p.concurrency) for p in points])
        low += list(physics.estimate(stack, gpu, gpus, b, n_in, n_out, bounds.low)["output_tokens_per_s_per_stream"])
        high += list(physics.estimate(stack, gpu, gpus, b, n_in, n_out, bounds.high)["output_tokens_per_s_per_stream"])
        theirs += [p.per_stream_tok_s for p in points]
    if not theirs:
        return bounds
    slow, fast = widening(low, high, theirs)
    if slow == 1.0 and fast == 1.0:
        return bounds
    said = f"{PACKAGE} {_cached_version()}, {len(theirs)} cached points"
    return replace(
        bounds,
        low=physics.scaled_speed(bounds.low, stack, slow) if slow < 1.0 else bounds.low,
        high=physics.scaled_speed(bounds.high, stack, fast) if fast > 1.0 else bounds.high,
        basis=f"{bounds.basis}; widened to include {said} (x{slow:.2f} slow end, x{fast:.2f} fast end)",
    )

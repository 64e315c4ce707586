"""Reads a Hugging Face config.json into the sizes the physics needs, and turns it into a user serving stack.

Handles decoder-only dense and MoE models: Llama, Qwen2/Qwen3 (dense and MoE),
Mistral/Mixtral, and DeepSeek-style layers with shared plus routed experts and
multi-head latent attention (MLA). Parameters are counted from the matrices the
config describes (embeddings, attention, MLP or experts, router, norms, LM head);
KV bytes per token from the cached K and V (or MLA's compressed latent) of every
layer. Worked examples with the arithmetic: tests/test_hf_config.py.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import ValidationError

from core.errors import InputError, describe_validation_error
from core.models import Architecture, Engine, ServingStack, SpecMethod
from core.performance import physics

# Weight bytes per parameter, and KV-cache bytes per element, for each precision a stack may be added at.
# FP4 weights keep an FP8 KV cache (NVFP4 / MXFP4 checkpoints quantise weights, not the cache).
PRECISIONS: dict[str, tuple[float, float]] = {"bf16": (2.0, 2.0), "fp8": (1.0, 1.0), "fp4": (0.5, 1.0)}


@dataclass(frozen=True)
class ModelShape:
    """What a config.json says about a model's size, in the units the serving stack uses."""

    model_type: str
    params_total_b: float
    params_active_b: float
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    kv_elements_per_token: int  # cached K/V (or MLA latent) elements per token, all layers
    n_experts: int | None
    experts_per_token: int | None
    n_shared_experts: int
    attention: str  # "gqa" or "mla"
    vocab_size: int

    @property
    def is_moe(self) -> bool:
        """Has routed experts."""
        return bool(self.n_experts)

    @property
    def attention_width(self) -> int | None:
        """Query heads x head dimension where it differs from the hidden size (Qwen3); None otherwise, and for MLA."""
        width = self.n_heads * self.head_dim
        return width if self.attention != "mla" and width != self.hidden_size else None

    def kv_bytes_per_token(self, precision: str) -> float:
        """KV-cache bytes per token of context at a precision (BF16 cache: 2 bytes, FP8/FP4 stacks: 1)."""
        return self.kv_elements_per_token * PRECISIONS[precision][1]

    def as_dict(self) -> dict:
        """Plain fields (for `stacks show --json` and tests)."""
        return asdict(self)


def _load(data: bytes | str | dict, where: str) -> dict:
    if isinstance(data, dict):
        cfg = data
    else:
        text = data.decode("utf-8-sig", errors="replace") if isinstance(data, bytes) else data
        try:
            cfg = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(cfg, dict):
        raise InputError(f"{where}: a config.json is one JSON object; got {type(cfg).__name__}")
    # Multimodal wrappers (Llama 4, Mistral 3, Qwen-VL) keep the language model under text_config.
    if isinstance(cfg.get("text_config"), dict) and "num_hidden_layers" not in cfg:
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", cfg.get("model_type", ""))}
    return cfg


# The largest value of each size any model this plans for could have, with room to spare (the largest public
# configs: hidden 16,384 and 126 layers for Llama 3.1 405B, vocabulary 262,144 for Gemma 3, 256 experts for
# DeepSeek-V3). Beyond these a config is broken or hostile (issue 34: `"hidden_size": Infinity`).
_MAXIMUM: dict[str, int] = {
    "hidden_size": 1 << 17, "num_hidden_layers": 1 << 12, "num_attention_heads": 1 << 12,
    "num_key_value_heads": 1 << 12, "head_dim": 1 << 12, "vocab_size": 1 << 22, "intermediate_size": 1 << 20,
    "moe_intermediate_size": 1 << 20, "shared_expert_intermediate_size": 1 << 20, "num_local_experts": 1 << 14,
    "num_experts": 1 << 14, "n_routed_experts": 1 << 14,
    "num_experts_per_tok": 1 << 14, "n_shared_experts": 1 << 10, "kv_lora_rank": 1 << 16, "q_lora_rank": 1 << 16,
    "qk_rope_head_dim": 1 << 12, "qk_nope_head_dim": 1 << 12, "v_head_dim": 1 << 12,
}
_DEFAULT_MAXIMUM = 1 << 20
MAX_PARAMS = 100e12  # 100 T parameters: a hundred times the largest public model


def _shown(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _int(cfg: dict, key: str, where: str, default: int | None = None, *, minimum: int = 1) -> int:
    if key not in cfg or cfg[key] is None:
        if default is None:
            raise InputError(f"{where}: missing key {key!r} (a decoder config.json has it)")
        return default
    v = cfg[key]
    # Python's json reads Infinity and NaN; int() of them raises, so finiteness is checked first.
    if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)) \
            or v != int(v):
        raise InputError(f"{where}: {key!r} must be a whole number; got {_shown(v)}")
    if v < minimum:
        raise InputError(f"{where}: {key!r} must be at least {minimum}; got {_shown(v)}")
    if v > (maximum := _MAXIMUM.get(key, _DEFAULT_MAXIMUM)):
        raise InputError(f"{where}: {key!r} is {_shown(v)}, beyond any model this plans for (at most {maximum:,})")
    return int(v)


def _layer_list(cfg: dict, key: str, where: str) -> set[int]:
    """A list of layer numbers (mlp_only_layers), or InputError naming the key."""
    raw = cfg.get(key) or []
    if not isinstance(raw, list) or len(raw) > _MAXIMUM["num_hidden_layers"]:
        raise InputError(f"{where}: {key!r} must be a list of layer numbers; got {_shown(raw)}")
    return {_int({key: i}, key, where, minimum=0) for i in raw}


def read_config(data: bytes | str | dict, where: str = "config.json") -> ModelShape:
    """Parse a config.json (bytes, text or dict) into a ModelShape; bad input -> one InputError naming the key."""
    cfg = _load(data, where)
    model_type = str(cfg.get("model_type", "")).lower()
    h = _int(cfg, "hidden_size", where)
    layers = _int(cfg, "num_hidden_layers", where)
    heads = _int(cfg, "num_attention_heads", where)
    kv_heads = _int(cfg, "num_key_value_heads", where, default=heads)
    if kv_heads > heads:
        raise InputError(f"{where}: 'num_key_value_heads' ({kv_heads}) cannot exceed 'num_attention_heads' ({heads})")
    head_dim = _int(cfg, "head_dim", where, default=max(h // heads, 1))
    vocab = _int(cfg, "vocab_size", where)
    tied = bool(cfg.get("tie_word_embeddings", False))

    # Routed experts: Mixtral num_local_experts; Qwen MoE num_experts; DeepSeek n_routed_experts.
    exp_key = next((key for key in ("num_local_experts", "num_experts", "n_routed_experts") if cfg.get(key)), None)
    n_exp = _int(cfg, exp_key, where) if exp_key else None
    k = _int(cfg, "num_experts_per_tok", where, default=2 if n_exp else 1) if n_exp else None
    if n_exp and k is not None and k > n_exp:  # k is set exactly when n_exp is
        raise InputError(f"{where}: 'num_experts_per_tok' ({k}) cannot exceed the number of experts ({n_exp})")
    n_shared = _int(cfg, "n_shared_experts", where, default=0, minimum=0)

    # Attention: MLA (DeepSeek V2/V3) caches one compressed latent plus the RoPE key per layer.
    if cfg.get("kv_lora_rank"):
        attention = "mla"
        kv_rank = _int(cfg, "kv_lora_rank", where)
        rope = _int(cfg, "qk_rope_head_dim", where)
        nope = _int(cfg, "qk_nope_head_dim", where)
        v_dim = _int(cfg, "v_head_dim", where)
        q_rank = _int(cfg, "q_lora_rank", where, default=0, minimum=0)
        q = (h * q_rank + q_rank + q_rank * heads * (nope + rope)) if q_rank else h * heads * (nope + rope)
        kv = h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim)
        attn = q + kv + heads * v_dim * h
        kv_elems = layers * (kv_rank + rope)
    else:
        attention = "gqa"
        attn = h * heads * head_dim + 2 * h * kv_heads * head_dim + heads * head_dim * h
        if model_type == "qwen2" or model_type == "qwen2_moe" or cfg.get("attention_bias"):
            attn += (heads + 2 * kv_heads) * head_dim  # q, k, v biases
        if model_type.startswith("qwen3"):
            attn += 2 * head_dim  # per-head q and k RMSNorm weights
        kv_elems = 2 * layers * kv_heads * head_dim

    inter = _int(cfg, "intermediate_size", where, default=4 * h)
    dense_mlp = 3 * h * inter  # gate, up, down (SwiGLU)
    if n_exp and k is not None:
        moe_inter = _int(cfg, "moe_intermediate_size", where, default=inter)
        expert = 3 * h * moe_inter
        shared_inter = cfg.get("shared_expert_intermediate_size")
        if shared_inter:  # Qwen2-MoE: one shared expert of its own width, behind a sigmoid gate
            shared = 3 * h * _int(cfg, "shared_expert_intermediate_size", where) + h
        else:  # DeepSeek: n_shared experts of the routed experts' width
            shared = n_shared * expert
        moe_layer = n_exp * expert + h * n_exp + shared  # experts, router, shared experts
        # Which layers are MoE: DeepSeek keeps the first k dense; Qwen2/3 may list dense-only layers.
        first_dense = _int(cfg, "first_k_dense_replace", where, default=0, minimum=0)
        step = _int(cfg, "decoder_sparse_step", where, default=1) if "decoder_sparse_step" in cfg else 1
        freq = _int(cfg, "moe_layer_freq", where, default=1) if "moe_layer_freq" in cfg else 1
        dense_only = _layer_list(cfg, "mlp_only_layers", where)
        moe_layers = sum(
            1 for i in range(layers)
            if i >= first_dense and (i + 1) % step == 0 and (i - first_dense) % freq == 0 and i not in dense_only
        )
        mlp_total = moe_layers * moe_layer + (layers - moe_layers) * dense_mlp
        unused = moe_layers * (n_exp - k) * expert
    else:
        moe_layers, mlp_total, unused = 0, layers * dense_mlp, 0

    norms = layers * 2 * h + h
    embed = vocab * h * (1 if tied else 2)
    total = embed + layers * attn + mlp_total + norms
    active = total - unused
    if total <= 0:
        raise InputError(f"{where}: the sizes give no parameters")
    if total > MAX_PARAMS:
        raise InputError(f"{where}: hidden_size, num_hidden_layers, intermediate_size, vocab_size and the experts "
                         f"give {total / 1e12:,.0f} T parameters, beyond any model this plans for "
                         f"(at most {MAX_PARAMS / 1e12:,.0f} T)")
    return ModelShape(
        model_type=model_type or "unknown",
        params_total_b=total / 1e9,
        params_active_b=active / 1e9,
        n_layers=layers,
        hidden_size=h,
        n_heads=heads,
        n_kv_heads=kv_heads,
        head_dim=head_dim,
        kv_elements_per_token=int(kv_elems),
        n_experts=n_exp if moe_layers else None,
        experts_per_token=k if moe_layers else None,
        n_shared_experts=n_shared,
        attention=attention,
        vocab_size=vocab,
    )


def read_config_file(path: str | Path) -> ModelShape:
    """read_config on a file; a missing or unreadable file is one InputError."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"no such file: {p}")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
    return read_config(data, where=p.name)


# -- a serving stack from a config ------------------------------------------------------


def _draft_size(method: SpecMethod, shape: ModelShape, draft: ModelShape | None, k: int) -> tuple[float, int, str]:
    """(draft params in billions, draft layers, how it was obtained)."""
    if draft is not None:
        return draft.params_total_b, draft.n_layers, f"draft config: {draft.model_type}, {draft.n_layers} layers"
    h, v = shape.hidden_size, shape.vocab_size
    if method is SpecMethod.MEDUSA:  # k heads, each a residual block (h x h) and its own LM head (h x vocab)
        return k * (h * h + h * v) / 1e9, 1, "Medusa heads estimated as k x (hidden^2 + hidden x vocab)"
    if method is SpecMethod.EAGLE:  # one decoder layer of the target's shape plus the 2h -> h fusion layer
        one_layer = (shape.params_total_b * 1e9 - 2 * h * v) / shape.n_layers
        return (one_layer + 2 * h * h) / 1e9, 1, "EAGLE head estimated as one target layer + 2 x hidden^2"
    raise InputError("--speculative-method draft needs --draft-config (the draft model's config.json)")


def build_stack(
    shape: ModelShape,
    *,
    stack_id: str,
    precision: str,
    quality: dict[str, float],
    quality_note: str,
    source: str,
    name: str | None = None,
    engine: str = "vllm",
    max_running_seqs: int | None = None,
    speculative_method: str | None = None,
    draft: ModelShape | None = None,
    draft_tokens: int | None = None,
    acceptance: float | None = None,
    diffusion_block: int | None = None,
    diffusion_steps: int | None = None,
    diffusion_positions: int | None = None,
    weights: str = "open",
    as_of: dt.date | None = None,
    confidence: str = "user",
) -> ServingStack:
    """A validated ServingStack from a ModelShape and the serving choices; InputError on any bad value."""
    if precision not in PRECISIONS:
        raise InputError(f"--precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    if speculative_method and (diffusion_block or diffusion_steps):
        raise InputError("a stack is either speculative or diffusion, not both")
    if bool(diffusion_block) != bool(diffusion_steps):
        raise InputError("give both --diffusion-block and --diffusion-steps")
    fields: dict = {}
    notes = [f"sizes from {source}", quality_note]
    arch = Architecture.MOE if shape.is_moe else Architecture.AUTOREGRESSIVE
    if speculative_method:
        try:
            method = SpecMethod(speculative_method)
        except ValueError:
            raise InputError(f"--speculative-method must be draft, medusa or eagle; got {speculative_method!r}") from None
        d = physics.SPEC_DEFAULTS[method]
        k = draft_tokens or d.draft_tokens
        a = d.acceptance if acceptance is None else acceptance
        if not 0.0 < a < 1.0:
            raise InputError(f"--acceptance must be between 0 and 1; got {a:g}")
        draft_b, draft_layers, how = _draft_size(method, shape, draft, k)
        arch = Architecture.SPECULATIVE
        fields.update(spec_method=method, spec_draft_tokens=k, spec_acceptance=a, spec_draft_params_b=draft_b,
                      spec_draft_layers=draft_layers)
        notes.append(f"{method.value}: k = {k}, acceptance {a:g}"
                     + (" (estimate: " + d.source + ")" if acceptance is None else " (yours)") + f"; {how}")
    if diffusion_block:
        arch = Architecture.DIFFUSION
        fields.update(diffusion_block_tokens=diffusion_block, diffusion_steps_per_block=diffusion_steps,
                      diffusion_positions_per_pass=diffusion_positions)
        notes.append(f"diffusion: block {diffusion_block}, {diffusion_steps} passes per block"
                     + (f", {diffusion_positions} positions per pass" if diffusion_positions else ""))
    bpp, _ = PRECISIONS[precision]
    try:
        return ServingStack(
            stack_id=stack_id,
            name=name or f"{stack_id} ({precision.upper()}, from config.json)",
            architecture=arch,
            params_total_b=round(shape.params_total_b, 4),
            params_active_b=round(shape.params_active_b, 4),
            bytes_per_param=bpp,
            kv_bytes_per_token=shape.kv_bytes_per_token(precision),
            n_experts=shape.n_experts,
            experts_per_token=shape.experts_per_token,
            n_layers=shape.n_layers,
            hidden_size=shape.hidden_size,
            attention_width=shape.attention_width,
            engine=Engine(engine),
            max_running_seqs=max_running_seqs,
            weights=weights,
            source=source,
            as_of=as_of or dt.date.today(),
            confidence=confidence,
            note="; ".join(n for n in notes if n),
            **fields,
            **quality,
        )
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, where=f"stack {stack_id!r}").replace("\n", "; ")) from None
    except ValueError as exc:  # Engine(...) with an unknown name
        raise InputError(f"stack {stack_id!r}: {exc}") from None


def add_stack_from_config(
    store,
    config: bytes | str,
    *,
    stack_id: str,
    precision: str,
    config_name: str = "config.json",
    quality_from: str | None = None,
    quality: dict[str, float] | None = None,
    quality_source: str | None = None,
    draft_config: bytes | str | None = None,
    **choices,
) -> ServingStack:
    """Read a config, build the stack and store it as the user's own row (origin 'user'); nothing is stored on error.

    Quality comes either from another stack (`quality_from`: copied, labelled an
    explicit estimate, confidence 'estimate') or from the user (`quality`, all five
    task classes, with `quality_source`).
    """
    from core.models import QUALITY_COLUMNS
    from core.store.stacks import insert_user_stack, stack_ids

    if not stack_id or not stack_id.strip():
        raise InputError("give a stack id (--stack-id), e.g. qwen25-72b-fp8")
    stack_id = stack_id.strip()
    if stack_id in stack_ids(store):
        raise InputError(f"stack id {stack_id!r} is already in the store; choose another or remove it first "
                         f"(hangover stacks remove {stack_id})")
    shape = read_config(config, where=config_name)
    draft = read_config(draft_config, where="draft config") if draft_config is not None else None
    if quality_from and quality:
        raise InputError("give quality either from a stack (--quality-from) or per task class, not both")
    if quality_from:
        known = {s.stack_id: s for s in store.serving_stacks()}
        if quality_from not in known:
            raise InputError(f"--quality-from: unknown stack {quality_from!r}; known: {', '.join(sorted(known))}")
        src = known[quality_from]
        q = {c: getattr(src, c) for c in QUALITY_COLUMNS}
        note = f"quality_* copied from {quality_from} as an explicit estimate (not measured for this model)"
        confidence = "estimate"
    elif quality:
        missing = [c for c in QUALITY_COLUMNS if quality.get(c) is None]
        if missing:
            raise InputError(f"quality per task class needs all five; missing {', '.join(m.removeprefix('quality_') for m in missing)}")
        q = {c: float(quality[c]) for c in QUALITY_COLUMNS}
        note = f"quality_* entered by the user ({quality_source or 'source not given'})"
        confidence = "user"
    else:
        raise InputError("say where quality comes from: --quality-from STACK_ID (copied, an estimate) or "
                         "--quality-extraction ... --quality-reasoning (your own figures)")
    source = f"{config_name} ({shape.model_type}; {shape.n_layers} layers, hidden {shape.hidden_size})"
    stack = build_stack(shape, stack_id=stack_id, precision=precision, quality=q, quality_note=note, source=source,
                        draft=draft, confidence=confidence, **choices)
    insert_user_stack(store, stack)
    return stack

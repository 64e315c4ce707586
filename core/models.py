"""Domain models: frozen, strict pydantic records with units in every field name."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

BASE_CONFIG = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class Architecture(StrEnum):
    """How a model generates tokens; decides the physics used for it."""

    AUTOREGRESSIVE = "autoregressive"
    SPECULATIVE = "speculative"
    MOE = "moe"
    DIFFUSION = "diffusion"


class PricingOption(StrEnum):
    """How a node is paid for."""

    ON_DEMAND = "on_demand"
    SAVINGS_1Y = "savings_1y"
    SAVINGS_3Y = "savings_3y"
    OWNED = "owned"


class CostBasis(StrEnum):
    """Full allocation (idle hours included) or marginal (hardware already paid for)."""

    FULL = "full"
    MARGINAL = "marginal"


class Provenance(StrEnum):
    """Where a performance figure came from; never mixed silently."""

    MEASURED = "measured"
    VENDOR_CLAIM = "vendor_claim"
    ESTIMATED = "estimated"


class Confidence(StrEnum):
    """How far a public figure can be trusted."""

    PRIMARY = "primary"  # vendor datasheet, official price page, the paper itself
    SECONDARY = "secondary"  # reported by a third party
    UNVERIFIED = "unverified"  # plausible, not checked against a primary source
    ESTIMATE = "estimate"  # our own assumption or derivation: labelled as such in the UI
    USER = "user"  # the user's own figure


class TaskClass(StrEnum):
    """Kinds of LLM work; quality is stated per class."""

    EXTRACTION = "extraction"
    CODE_COMPLETION = "code_completion"
    CHAT = "chat"
    AGENTIC_STEP = "agentic_step"
    REASONING = "reasoning"


class TrafficProfile(StrEnum):
    """Where the hour-by-hour shape of interactive traffic comes from."""

    OFFICE_HOURS = "office_hours"  # an assumption, stated as one
    MEASURED = "measured"  # the hourly profile of imported GPU telemetry (issue 15)


class DataPolicy(StrEnum):
    """Whether a workload's data may leave the company's own hardware."""

    EXTERNAL_OK = "external_ok"
    OWNED_ONLY = "owned_only"


class Weights(StrEnum):
    """Who may run a model's weights: decides whether it can be an owned route at all."""

    OPEN = "open"  # open weights: self-host freely
    LICENSED = "licensed"  # self-host under a licence fee (unknown until the user enters it)
    API_ONLY = "api_only"  # never an owned route; it appears only as its API


class Engine(StrEnum):
    """Serving engine a stack runs on: sets its per-step overhead and running-batch cap (issue 13)."""

    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"
    NIM = "nim"  # NVIDIA NIM for LLMs: a TensorRT-LLM (or vLLM) engine behind NVIDIA's API server


class SpecMethod(StrEnum):
    """How a speculative stack drafts: a separate draft model, Medusa heads or an EAGLE head (issue 13)."""

    DRAFT = "draft"
    MEDUSA = "medusa"
    EAGLE = "eagle"


class ApiTier(StrEnum):
    """Rough price/quality band of a public API model."""

    COMMODITY = "commodity"
    MID = "mid"
    FRONTIER = "frontier"
    DIFFUSION = "diffusion"


TASK_CLASSES: tuple[str, ...] = tuple(t.value for t in TaskClass)
QUALITY_COLUMNS: tuple[str, ...] = tuple(f"quality_{t}" for t in TASK_CLASSES)

# Default quality floor per task class when a workload does not state one
# (a share of a strong frontier model's score; an assumption, shown as such).
DEFAULT_MIN_QUALITY: dict[str, float] = {
    "extraction": 0.85,
    "code_completion": 0.80,
    "chat": 0.80,
    "agentic_step": 0.85,
    "reasoning": 0.90,
}

# The one home of defaults that were restated across pages and commands (issue 10).
# The owned fleet's GPU when none is chosen (the bank of the README owns one 8×H100 node).
DEFAULT_GPU = "H100 SXM"
# Tokens per request (input, output) for curves and break-even when no workload is chosen: a
# chat-sized request, the shape vendor benchmarks most often report (an assumption, not a measurement).
REFERENCE_TOKENS: tuple[float, float] = (1000.0, 256.0)

# Open-ended bounds also refuse "inf" (pydantic accepts it by default, and inf > 0).
Share = Annotated[float, Field(ge=0.0, le=1.0)]
Positive = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class Sourced(BaseModel):
    """Provenance carried by every figure that came from outside."""

    model_config = BASE_CONFIG

    source: str = Field(min_length=1, description="Where the figure came from (URL, file, paper).")
    as_of: dt.date = Field(description="Date the figure was observed or published.")
    confidence: Confidence = Field(
        default=Confidence.PRIMARY, description="primary, secondary, unverified, estimate or user."
    )
    note: str | None = Field(default=None, description="Free-text caveat shown next to the figure.")


class Quality(BaseModel):
    """Quality per task class as a share (0-1) of a strong frontier model's score."""

    model_config = BASE_CONFIG

    quality_extraction: Share = Field(description="Quality on structured extraction, 0-1.")
    quality_code_completion: Share = Field(description="Quality on code completion, 0-1.")
    quality_chat: Share = Field(description="Quality on general chat, 0-1.")
    quality_agentic_step: Share = Field(description="Quality on one agent tool-use step, 0-1.")
    quality_reasoning: Share = Field(description="Quality on hard multi-step reasoning, 0-1.")

    def quality_for(self, task_class: str) -> float:
        """Quality for one task class."""
        return float(getattr(self, f"quality_{task_class}"))


class GpuSpec(Sourced):
    """One accelerator's datasheet figures (per GPU, dense, no sparsity)."""

    name: str = Field(min_length=1, description="GPU name as used across the store, e.g. 'H100 SXM'.")
    hbm_gb: Positive = Field(description="Usable memory, GB (10^9 bytes) as vendors state it.")
    hbm_tb_per_s: Positive = Field(description="Memory bandwidth, TB/s (10^12 bytes/s).")
    bf16_tflops: Positive = Field(description="Dense BF16 peak, TFLOP/s.")
    fp8_tflops: Positive | None = Field(default=None, description="Dense FP8 peak, TFLOP/s; empty if unsupported.")
    tdp_w: Positive = Field(description="Board power, W.")
    fp4_tflops: Positive | None = Field(default=None, description="Dense FP4 peak, TFLOP/s; empty if unsupported.")
    link_gb_per_s: Positive | None = Field(
        default=None, description="GPU-to-GPU link bandwidth per GPU, GB/s, both directions (NVLink, Infinity Fabric, PCIe).")


class NodePrice(Sourced):
    """A dated price snapshot for renting one node."""

    provider: str = Field(min_length=1, description="Cloud or neocloud, e.g. 'AWS'.")
    instance: str = Field(min_length=1, description="Instance type, e.g. 'p5.48xlarge'.")
    gpu: str = Field(min_length=1, description="GPU name; must exist in the GPU table.")
    gpus_per_node: int = Field(ge=1, le=72, description="GPUs in one node.")
    pricing_option: PricingOption = Field(description="on_demand, savings_1y, savings_3y.")
    usd_per_node_hour: Positive = Field(description="Price of the whole node, US$ per hour.")
    region: str = Field(default="", description="Region the price applies to.")

    @property
    def usd_per_gpu_hour(self) -> float:
        """Price per GPU-hour."""
        return self.usd_per_node_hour / self.gpus_per_node


HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0


class OwnedHardware(Sourced):
    """A node the company bought: capex, power and support turned into $/hour."""

    name: str = Field(min_length=1, description="Label, e.g. '8xH100 SXM server (owned)'.")
    gpu: str = Field(min_length=1, description="GPU name; must exist in the GPU table.")
    gpus_per_node: int = Field(ge=1, le=72, description="GPUs in one node.")
    capex_usd_per_node: Positive = Field(description="Purchase price of one node, US$.")
    depreciation_years: Annotated[float, Field(gt=0, le=15)] = Field(description="Straight-line depreciation period, years.")
    cost_of_capital_rate: Annotated[float, Field(ge=0, le=1)] = Field(description="Annual cost of capital, e.g. 0.08 for 8 %.")
    kw_per_node: Positive = Field(description="Average power draw of one node, kW.")
    pue: Annotated[float, Field(ge=1.0, le=3.0)] = Field(description="Data-centre power usage effectiveness (>= 1).")
    usd_per_kwh: NonNegative = Field(description="Electricity price, US$ per kWh.")
    support_usd_per_year: NonNegative = Field(description="Support, colocation and operations per node, US$ per year.")

    @property
    def capital_usd_per_hour(self) -> float:
        """Depreciation plus cost of capital, spread over every hour of the year.

        Cost of capital is charged on the average book value over the
        depreciation period (half the capex, straight line).
        """
        depreciation = self.capex_usd_per_node / self.depreciation_years
        capital = self.capex_usd_per_node * 0.5 * self.cost_of_capital_rate
        return (depreciation + capital) / HOURS_PER_YEAR

    @property
    def power_usd_per_hour(self) -> float:
        """Electricity: kW x PUE x $/kWh."""
        return self.kw_per_node * self.pue * self.usd_per_kwh

    @property
    def marginal_usd_per_hour(self) -> float:
        """Hardware already paid for: only power and operations count."""
        return self.power_usd_per_hour + self.support_usd_per_year / HOURS_PER_YEAR

    @property
    def full_usd_per_hour(self) -> float:
        """Full allocation: capital, power and operations."""
        return self.capital_usd_per_hour + self.marginal_usd_per_hour


class ApiPrice(Sourced, Quality):
    """A dated public API price, with typical speed and quality per task class."""

    provider: str = Field(min_length=1, description="API provider, e.g. 'OpenAI'.")
    model: str = Field(min_length=1, description="Model name as the provider spells it.")
    tier: ApiTier = Field(description="commodity, mid, frontier or diffusion.")
    architecture: Architecture = Field(default=Architecture.AUTOREGRESSIVE, description="How the model decodes.")
    usd_per_mtok_in: NonNegative = Field(description="US$ per million input tokens.")
    usd_per_mtok_cached_in: NonNegative | None = Field(default=None, description="US$ per million cached input tokens; empty if not offered.")
    usd_per_mtok_out: NonNegative = Field(description="US$ per million output tokens.")
    ttft_ms: Positive = Field(description="Typical time to first token, ms.")
    output_tokens_per_s: Positive = Field(description="Typical per-stream output speed, tokens/s.")
    hidden_tokens_per_output_token: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] = Field(
        default=0.0, description="Reasoning models: hidden thinking tokens billed per visible output token.")

    @property
    def route_id(self) -> str:
        """Stable identifier of this API as a route."""
        return f"api:{self.provider}/{self.model}"


class ServingStack(Sourced, Quality):
    """A model served a certain way; the physics model reads these parameters."""

    stack_id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_.\-]*$", description="Short id, e.g. 'llama70b-fp8'.")
    name: str = Field(min_length=1, description="Human-readable name.")
    architecture: Architecture = Field(description="autoregressive, speculative, moe or diffusion.")
    params_total_b: Positive = Field(description="Total parameters, billions.")
    params_active_b: Positive = Field(description="Parameters active per token, billions (= total for dense).")
    bytes_per_param: Annotated[float, Field(gt=0, le=4)] = Field(description="Weight bytes per parameter: 2 for BF16, 1 for FP8, 0.5 for FP4.")
    kv_bytes_per_token: NonNegative = Field(description="KV-cache bytes per token of context (all layers).")
    n_experts: int | None = Field(default=None, ge=1, description="MoE: routed experts per layer.")
    experts_per_token: int | None = Field(default=None, ge=1, description="MoE: experts each token activates.")
    diffusion_block_tokens: int | None = Field(default=None, ge=1, description="Diffusion: tokens refined together per block (L).")
    diffusion_steps_per_block: int | None = Field(default=None, ge=1, description="Diffusion: denoising passes per block (S).")
    spec_draft_tokens: int | None = Field(default=None, ge=1, description="Speculative: draft length k.")
    spec_acceptance: Share | None = Field(default=None, description="Speculative: per-token acceptance rate alpha.")
    spec_draft_params_b: NonNegative | None = Field(default=None, description="Speculative: draft model parameters, billions.")
    weights: Weights = Field(default=Weights.OPEN, description="open, licensed or api_only: who may host the weights.")
    licence_usd_per_gpu_month: NonNegative | None = Field(
        default=None, description="Licensed weights: fee per GPU per month, US$; empty while unknown.")
    n_layers: int | None = Field(default=None, ge=1, description="Transformer layers (TP all-reduces and attention FLOPs).")
    hidden_size: int | None = Field(default=None, ge=1, description="Hidden size (bytes each all-reduce moves per token).")
    attention_width: int | None = Field(
        default=None, ge=1,
        description="Attention heads x head dimension, where it differs from the hidden size (Qwen3); sets attention FLOPs.")
    engine: Engine = Field(default=Engine.VLLM, description="vllm, sglang, trtllm or nim: per-step overhead and batch cap.")
    max_running_seqs: int | None = Field(
        default=None, ge=1,
        description="Largest running batch one engine scheduler admits (per attention-DP rank for TensorRT-LLM MoE); "
                    "empty: the engine's default.")
    spec_method: SpecMethod | None = Field(default=None, description="Speculative: draft, medusa or eagle (empty: draft).")
    spec_draft_layers: int | None = Field(default=None, ge=1, description="Speculative: layers of the draft model or head.")
    spec_verify_tokens: int | None = Field(
        default=None, ge=1, description="Speculative: positions the target verifies per step (tree size); empty: k + 1.")
    diffusion_positions_per_pass: int | None = Field(
        default=None, ge=1, description="Diffusion: positions one pass computes (empty: the block, i.e. cached prefix).")

    @field_validator("params_active_b")
    @classmethod
    def _active_le_total(cls, v: float, info) -> float:
        total = info.data.get("params_total_b")
        if total is not None and v > total:
            raise ValueError(f"active parameters ({v} B) cannot exceed total parameters ({total} B)")
        return v

    @model_validator(mode="after")
    def _architecture_fields(self) -> ServingStack:
        required = {
            Architecture.DIFFUSION: ("diffusion_block_tokens", "diffusion_steps_per_block"),
            Architecture.SPECULATIVE: ("spec_draft_tokens", "spec_acceptance"),
            Architecture.MOE: ("n_experts", "experts_per_token"),
        }.get(self.architecture, ())
        missing = [f for f in required if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.architecture.value} stack needs {', '.join(missing)}")
        steps, block = self.diffusion_steps_per_block, self.diffusion_block_tokens
        if (
            self.architecture is Architecture.DIFFUSION
            and steps is not None and block is not None  # set for diffusion: checked just above
            and steps > block * 4
        ):
            raise ValueError("diffusion_steps_per_block is implausibly large for the block length")
        return self

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights held in memory."""
        return self.params_total_b * 1e9 * self.bytes_per_param


class Benchmark(Sourced):
    """One measured or claimed performance point of a stack on a GPU."""

    stack_id: str = Field(min_length=1, description="Serving stack id.")
    gpu: str = Field(min_length=1, description="GPU name.")
    gpus_per_replica: int = Field(ge=1, le=72, description="GPUs serving one model replica (tensor/pipeline parallel).")
    concurrency: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(description="Requests in flight at once.")
    input_tokens: NonNegative = Field(description="Mean input tokens per request.")
    output_tokens: Positive = Field(description="Mean output tokens per request.")
    output_tokens_per_s_total: Positive | None = Field(default=None, description="Output tokens/s across all streams.")
    output_tokens_per_s_per_stream: Positive | None = Field(default=None, description="Output tokens/s seen by one stream.")
    ttft_ms_p50: Positive | None = Field(default=None, description="Time to first token, median, ms.")
    ttft_ms_p95: Positive | None = Field(default=None, description="Time to first token, p95, ms.")
    e2e_ms_p50: Positive | None = Field(default=None, description="End-to-end latency, median, ms.")
    e2e_ms_p95: Positive | None = Field(default=None, description="End-to-end latency, p95, ms.")
    provenance: Provenance = Field(description="measured, vendor_claim or estimated.")
    tool: str = Field(default="", description="Benchmark tool, e.g. 'vllm bench serve'.")
    via_api: bool = Field(default=False, description="Measured through a vendor's API, not on hardware the user could buy.")

    @model_validator(mode="after")
    def _some_throughput(self) -> Benchmark:
        if self.output_tokens_per_s_total is None and self.output_tokens_per_s_per_stream is None:
            raise ValueError("a benchmark needs output_tokens_per_s_total or output_tokens_per_s_per_stream")
        return self


class Workload(BaseModel):
    """One row of the workload inventory."""

    model_config = BASE_CONFIG

    workload_id: str = Field(min_length=1, description="Unique id within the inventory.")
    name: str = Field(min_length=1, description="What the work is.")
    team: str | None = Field(default=None, description="Owning team.")
    # Upper bounds (issue 16): plausible maxima, so a typo such as 1e25 is refused rather than
    # overflowing the evaluation. requests_per_day: 1e10 (~116,000/s) is four times all of ChatGPT's
    # reported traffic (2.5 billion prompts a day, OpenAI to Axios, 2025-07-21). peak_factor: a peak
    # hour holds at most the whole day, so peak/mean <= 24 exactly. input_tokens: 1e7 is the longest
    # context window offered (Llama 4 Scout, 10M tokens, Meta, 2025-04-05). output_tokens: 1e6 is ~8x
    # the longest output an API allows (128,000 tokens, OpenAI GPT-5, 2025-08-07). latency_slo_ms: one
    # day (86,400,000 ms); slower work is offline work with a batch window.
    requests_per_day: Annotated[float, Field(ge=0.0, le=1e10, allow_inf_nan=False)] = Field(description="Requests per day.")
    peak_factor: Annotated[float, Field(ge=1.0, le=24.0, allow_inf_nan=False)] = Field(default=3.0, description="Peak-hour rate / mean rate (>= 1, <= 24).")
    input_tokens: Annotated[float, Field(ge=0.0, le=1e7, allow_inf_nan=False)] = Field(description="Mean input tokens per request.")
    output_tokens: Annotated[float, Field(ge=1, le=1e6, allow_inf_nan=False)] = Field(description="Mean output tokens per request.")
    # Optional (issue 12): the spread of output lengths the latency model uses; without it the model assumes
    # a coefficient of variation of 0.5 (core.decision.latency.DEFAULT_OUTPUT_CV, an estimate).
    output_tokens_p95: Annotated[float, Field(ge=1, le=1e6, allow_inf_nan=False)] | None = Field(default=None, description="95th percentile of output tokens per request, >= the mean (default: a spread of cv 0.5).")
    latency_slo_ms: Annotated[float, Field(gt=0.0, le=86_400_000.0, allow_inf_nan=False)] | None = Field(default=None, description="p95 end-to-end target, ms (interactive work).")
    batch_window_hours: Annotated[float, Field(gt=0, le=168)] | None = Field(default=None, description="Hours the queue may take, up to a week (offline work; over 24 h the work spreads over the idle hours of every day).")
    data_policy: DataPolicy = Field(description="external_ok or owned_only.")
    task_class: TaskClass = Field(description="extraction, code_completion, chat, agentic_step or reasoning.")
    min_quality: Share | None = Field(default=None, description="Quality floor, 0-1; default per task class.")
    cached_input_share: Share | None = Field(default=None, description="Share of input tokens served from a prompt cache, 0-1.")
    notes: str | None = Field(default=None, description="Free text.")

    @model_validator(mode="after")
    def _one_of_slo_or_window(self) -> Workload:
        if (self.latency_slo_ms is None) == (self.batch_window_hours is None):
            raise ValueError("give exactly one of latency_slo_ms (interactive) or batch_window_hours (offline)")
        return self

    @model_validator(mode="after")
    def _p95_not_below_mean(self) -> Workload:
        if self.output_tokens_p95 is not None and self.output_tokens_p95 < self.output_tokens:
            from core.format import (
                plain,  # the one formatter (a leaf module: no import cycle)
            )

            raise ValueError(f"output_tokens_p95 ({plain(self.output_tokens_p95)}) is below the mean output_tokens "
                             f"({plain(self.output_tokens)}): a 95th percentile of lengths is at least their mean here")
        return self

    @property
    def interactive(self) -> bool:
        """Latency-bound (has an SLA) rather than offline (has a window)."""
        return self.latency_slo_ms is not None

    @property
    def effective_min_quality(self) -> float:
        """The stated floor, or the task class default."""
        return self.min_quality if self.min_quality is not None else DEFAULT_MIN_QUALITY[self.task_class]


class Scenario(BaseModel):
    """What-if settings the engine evaluates the inventory under."""

    model_config = BASE_CONFIG

    gpu: str = Field(default=DEFAULT_GPU, description="GPU of the owned fleet.")
    fleet_nodes: int = Field(default=1, ge=0, le=10_000, description="Owned (or reserved) nodes.")
    gpus_per_node: int = Field(default=8, ge=1, le=72, description="GPUs per node.")
    pricing_option: PricingOption = Field(default=PricingOption.SAVINGS_1Y, description="How the fleet is paid for.")
    cost_basis: CostBasis = Field(default=CostBasis.FULL, description="full (allocation) or marginal.")
    node_provider: str | None = Field(default=None, description="Provider whose node price to use (default: AWS, else the cheapest).")
    node_usd_per_hour: Positive | None = Field(default=None, description="Override of the node price, US$/hour.")
    owned_hardware: OwnedHardware | None = Field(default=None, description="Capex and power figures when pricing is 'owned'.")
    api_price_scale: Annotated[float, Field(gt=0, le=100)] = Field(default=1.0, description="Multiplier on every API price.")
    sla_scale: Annotated[float, Field(gt=0, le=100)] = Field(default=1.0, description="Multiplier on every workload's latency target.")
    max_fallback_share: Share = Field(default=0.20, description="Largest share of outputs that may be escalated for quality.")
    near_tie_share: Share = Field(default=0.10, description="Routes within this share of the best cost are listed as near-ties.")
    sla_percentile: Annotated[float, Field(gt=0.5, lt=1.0)] = Field(default=0.95, description="Percentile the latency targets refer to.")
    traffic_profile: TrafficProfile = Field(
        default=TrafficProfile.OFFICE_HOURS,
        description="Shape of interactive traffic over the day: the assumed office hours, or measured GPU telemetry.")
    measured_hourly_shape: tuple[Share, ...] | None = Field(
        default=None, min_length=24, max_length=24,
        description="With a measured profile: utilization by hour of day (0-1), read from imported telemetry.")
    measured_label: str | None = Field(default=None, description="Where and when the measured profile was taken.")
    # What to buy next (issue 33): None keeps the one-kind fleet of `gpu` x `fleet_nodes`, bought more of at
    # `pricing_option`. Set, the plan keeps each owned node on its own GPU and compares candidate new nodes.
    owned_nodes_by_gpu: dict[str, Annotated[int, Field(ge=0, le=10_000)]] | None = Field(
        default=None, description="Owned nodes per GPU type, each keeping its GPU (default: fleet_nodes of gpu).")
    buy_gpus: tuple[str, ...] | None = Field(
        default=None, min_length=1, max_length=8,
        description="Candidate GPU types for new nodes (default: the owned GPU).")
    buy_pricing: tuple[PricingOption, ...] | None = Field(
        default=None, min_length=1, max_length=4,
        description="Purchase options compared for new nodes (default: all four: owned = buy, 1-y, 3-y, on-demand).")

    peer_ranges: bool = Field(
        default=False,
        description="Widen each owned route's speed range to include NVIDIA AIConfigurator's cached estimate where it has one.")

    @property
    def mixed(self) -> bool:
        """Whether the scenario asks what to buy next (owned nodes by GPU or candidate GPUs named)."""
        return self.owned_nodes_by_gpu is not None or self.buy_gpus is not None or self.buy_pricing is not None

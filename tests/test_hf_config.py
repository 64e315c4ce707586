"""Parameter and KV counts read from Hugging Face config.json files, worked by hand, and bad configs refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InputError
from core.performance.hf_config import build_stack, read_config, read_config_file

CONFIGS = Path(__file__).parent / "data" / "configs"
QUALITY = dict.fromkeys(
    ("quality_extraction", "quality_code_completion", "quality_chat", "quality_agentic_step", "quality_reasoning"), 0.8
)


def test_llama_3_1_8b_dense_counts():
    """Llama-3.1-8B: vocab 128,256, hidden 4,096, 32 layers, 32 heads, 8 KV heads x 128 dims, MLP 14,336, untied.

    embeddings + LM head: 2 x 128,256 x 4,096                      = 1,050,673,152
    per layer: q 4096 x 4096 + k, v 2 x 4096 x 1024 + o 4096 x 4096 = 41,943,040
               MLP 3 x 4096 x 14,336                                = 176,160,768
               two RMSNorms 2 x 4096                                 = 8,192
               -> 218,112,000 x 32 layers                            = 6,979,584,000
    final norm 4,096: total 8,030,261,248 = 8.030 B (all active: dense).
    KV bytes/token in BF16 = 2 (K, V) x 32 layers x 8 heads x 128 dims x 2 bytes = 131,072; FP8: 65,536.
    """
    s = read_config_file(CONFIGS / "llama-3.1-8b.json")
    assert s.params_total_b * 1e9 == pytest.approx(8_030_261_248)
    assert s.params_active_b == s.params_total_b
    assert s.kv_bytes_per_token("bf16") == 131_072 and s.kv_bytes_per_token("fp8") == 65_536
    assert (s.n_layers, s.hidden_size, s.n_kv_heads, s.head_dim, s.n_experts) == (32, 4096, 8, 128, None)


def test_qwen3_30b_a3b_moe_counts():
    """Qwen3-30B-A3B: vocab 151,936, hidden 2,048, 48 layers, 32 heads x 128, 4 KV heads, 128 experts (8 per token) of 768.

    embeddings + LM head: 2 x 151,936 x 2,048                           = 622,329,856
    attention per layer: q 2048 x 4096 + k, v 2 x 2048 x 512 + o 4096 x 2048 = 18,874,368
                         + q/k RMSNorm 2 x 128                           = 18,874,624
    experts per layer: 128 x 3 x 2048 x 768 = 603,979,776; router 2048 x 128 = 262,144
    norms 2 x 2048 = 4,096 -> per layer 623,120,640 x 48 = 29,909,790,720
    total = 622,329,856 + 29,909,790,720 + 2,048 = 30,532,122,624 = 30.53 B
    active = total - 48 layers x (128 - 8) experts x 4,718,592 = 30,532,122,624 - 27,179,089,920 = 3,353,032,704 = 3.35 B
    KV bytes/token BF16 = 2 x 48 x 4 x 128 x 2 = 98,304 (FP8: 49,152, as the seed stack).
    """
    s = read_config_file(CONFIGS / "qwen3-30b-a3b.json")
    assert s.params_total_b * 1e9 == pytest.approx(30_532_122_624)
    assert s.params_active_b * 1e9 == pytest.approx(3_353_032_704)
    assert s.kv_bytes_per_token("bf16") == 98_304 and s.kv_bytes_per_token("fp8") == 49_152
    assert (s.n_experts, s.experts_per_token) == (128, 8)


def test_mixtral_and_deepseek_match_their_published_sizes():
    """Mixtral 8x7B: 46.7 B total, 12.9 B active (Mistral AI). DeepSeek-V3: 671 B total, 37 B active, MLA cache.

    DeepSeek-V3 MLA caches the 512-wide latent plus the 64-wide RoPE key per layer:
    61 layers x (512 + 64) x 2 bytes = 70,272 bytes per token in BF16 (GQA of 128 heads would need 4 MB).
    3 dense layers then 58 MoE layers of 256 routed + 1 shared expert (2,048 wide), 8 routed per token.
    """
    m = read_config_file(CONFIGS / "mixtral-8x7b.json")
    assert m.params_total_b == pytest.approx(46.70, abs=0.01) and m.params_active_b == pytest.approx(12.88, abs=0.01)
    d = read_config_file(CONFIGS / "deepseek-v3.json")
    assert d.attention == "mla" and d.kv_bytes_per_token("bf16") == 61 * (512 + 64) * 2
    assert d.params_total_b == pytest.approx(671.0, abs=0.5) and d.params_active_b == pytest.approx(37.6, abs=0.5)
    assert (d.n_experts, d.experts_per_token, d.n_shared_experts) == (256, 8, 1)


def test_tied_embeddings_count_once():
    """Llama-3.2-1B ties its LM head to the embeddings: 1.236 B (Meta: 1.23 B), 16 layers."""
    s = read_config_file(CONFIGS / "llama-3.2-1b.json")
    assert s.params_total_b == pytest.approx(1.2358, abs=1e-3) and s.n_layers == 16


def test_a_stack_from_a_config_carries_its_sizes():
    s = read_config_file(CONFIGS / "qwen3-30b-a3b.json")
    stack = build_stack(s, stack_id="q30", precision="fp8", quality=QUALITY, quality_note="test", source="test")
    assert stack.architecture.value == "moe" and stack.bytes_per_param == 1 and stack.kv_bytes_per_token == 49_152
    assert (stack.n_layers, stack.hidden_size, stack.n_experts, stack.experts_per_token) == (48, 2048, 128, 8)
    # Qwen3-30B-A3B: 32 query heads x head_dim 128 = 4,096 wide attention on a 2,048 hidden size.
    assert stack.attention_width == 4096
    spec = build_stack(read_config_file(CONFIGS / "llama-3.1-8b.json"), stack_id="l8-eagle", precision="bf16",
                       quality=QUALITY, quality_note="", source="t", speculative_method="eagle")
    assert spec.attention_width is None  # Llama 3.1 8B: 32 x 128 = 4,096 = its hidden size
    assert spec.spec_method.value == "eagle" and spec.spec_draft_tokens == 5 and spec.spec_acceptance == 0.75
    assert 0.2 < spec.spec_draft_params_b < 0.4  # one 218 M layer + 2 x 4096^2 fusion = 0.25 B
    with pytest.raises(InputError, match="needs --draft-config"):
        build_stack(s, stack_id="x", precision="fp8", quality=QUALITY, quality_note="", source="t", speculative_method="draft")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "one JSON object"),
        ({"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 1000}, "missing key 'num_hidden_layers'"),
        ({"hidden_size": -4096, "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 10}, "'hidden_size' must be at least 1"),
        ({"hidden_size": 4096, "num_hidden_layers": 2.5, "num_attention_heads": 32, "vocab_size": 10}, "whole number"),
        ({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 8, "vocab_size": 10},
         "cannot exceed 'num_attention_heads'"),
        ({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "num_local_experts": 4,
          "num_experts_per_tok": 8}, "cannot exceed the number of experts"),
    ],
)
def test_bad_configs_are_one_clear_line(config, message):
    data = config if isinstance(config, str) else json.dumps(config)
    with pytest.raises(InputError, match=message) as err:
        read_config(data, where="my.json")
    assert "\n" not in str(err.value) and "my.json" in str(err.value)


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 120), heads=st.sampled_from([8, 16, 32, 64]), kv_div=st.sampled_from([1, 2, 4, 8]),
    head_dim=st.sampled_from([64, 128]), inter=st.integers(256, 30000), vocab=st.integers(1000, 260000),
    experts=st.sampled_from([None, 8, 64, 128, 256]), k=st.integers(1, 8), tied=st.booleans(),
)
def test_any_valid_config_gives_consistent_sizes(layers, heads, kv_div, head_dim, inter, vocab, experts, k, tied):
    """Active never exceeds total; dense configs are all active; KV = 2 x layers x KV heads x head dim x bytes."""
    cfg = {"hidden_size": heads * head_dim, "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": heads // kv_div, "head_dim": head_dim, "intermediate_size": inter,
           "vocab_size": vocab, "tie_word_embeddings": tied}
    if experts:
        cfg.update(num_local_experts=experts, num_experts_per_tok=min(k, experts))
    s = read_config(cfg)
    assert 0 < s.params_active_b <= s.params_total_b
    assert (s.params_active_b == s.params_total_b) == (not experts or min(k, experts) == experts)
    assert s.kv_bytes_per_token("bf16") == 2 * layers * (heads // kv_div) * head_dim * 2
    assert s.kv_bytes_per_token("fp8") == s.kv_bytes_per_token("bf16") / 2

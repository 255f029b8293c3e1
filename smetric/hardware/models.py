"""LLM architectures (dense and MoE) from their published Hugging Face configs, and derived sizes.

Every number in ``MODELS`` is copied from the model's ``config.json``; parameter counts, weight and
KV bytes are derived from them (tests check the counts against the published model sizes).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ModelSpec", "MODELS", "get_model", "model_names"]

BYTES_BF16 = 2


@dataclass(frozen=True)
class ModelSpec:
    """Shape of one decoder-only transformer.

    Attributes:
        name: canonical short name.
        hf_name: Hugging Face repository the config comes from.
        layers, hidden, heads, kv_heads, head_dim: attention shape (``heads`` query heads).
        ffn: intermediate size of the dense MLP (0 for MoE layers).
        experts, active_experts, expert_ffn: MoE routed experts, experts per token, expert
            intermediate size (all 0 for dense models).
        shared_experts: always-active experts of a MoE layer (every token passes through them), each of
            intermediate size ``expert_ffn`` (0: none, as in Qwen3-MoE and Mixtral).
        vocab: vocabulary size. tied_embeddings: LM head shares the input embedding.
        qkv_bias: bias on the Q/K/V projections (Qwen2.5). linear_bias: bias on every linear
            layer and LayerNorm (OPT). gated_mlp: SwiGLU (3 matrices) vs a plain 2-matrix MLP.
        qk_norm: per-head RMSNorm on Q and K (Qwen3). learned_positions: learned position
            embedding table of ``max_positions + 2`` rows (OPT).
        max_positions: longest context the model supports natively (``max_position_embeddings``).
        sliding_layers, sliding_window: layers whose attention sees only the last ``sliding_window`` tokens
            (gpt-oss alternates them with full-attention layers; 0 = none). An approximation: such a layer's
            KV (at most ``sliding_window`` tokens per sequence) and its attention over the window are left out
            of :attr:`kv_bytes_per_token` and :attr:`attn_flops_per_token_ctx`, which count the
            full-attention layers only.
    """

    name: str
    hf_name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    max_positions: int
    experts: int = 0
    active_experts: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    tied_embeddings: bool = False
    qkv_bias: bool = False
    linear_bias: bool = False
    gated_mlp: bool = True
    qk_norm: bool = False
    learned_positions: bool = False
    sliding_layers: int = 0
    sliding_window: int = 0

    def __post_init__(self) -> None:
        for f in ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "max_positions"):
            if getattr(self, f) <= 0:
                raise ValueError(f"model {self.name!r}: {f} must be > 0, got {getattr(self, f)}")
        if self.heads % self.kv_heads:
            raise ValueError(f"model {self.name!r}: heads ({self.heads}) must be a multiple of "
                             f"kv_heads ({self.kv_heads})")
        if not 0 <= self.sliding_layers < self.layers or (self.sliding_layers > 0) != (self.sliding_window > 0):
            raise ValueError(f"model {self.name!r}: needs 0 <= sliding_layers < layers, and a sliding_window > 0 "
                             f"exactly when sliding_layers > 0 (got {self.sliding_layers}, {self.sliding_window})")
        if self.is_moe:
            if not 0 < self.active_experts <= self.experts or self.expert_ffn <= 0:
                raise ValueError(f"model {self.name!r}: MoE needs 0 < active_experts <= experts and expert_ffn > 0")
            if self.ffn:
                raise ValueError(f"model {self.name!r}: MoE layers have no dense ffn (got ffn={self.ffn})")
            if self.shared_experts < 0:
                raise ValueError(f"model {self.name!r}: shared_experts must be >= 0, got {self.shared_experts}")
        elif self.ffn <= 0 or self.active_experts or self.expert_ffn or self.shared_experts:
            raise ValueError(f"model {self.name!r}: a dense model needs ffn > 0 and no expert fields")

    # ---- shape
    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.experts > 0

    @property
    def q_dim(self) -> int:
        """Width of the concatenated query heads (``heads * head_dim``)."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the concatenated K (or V) heads."""
        return self.kv_heads * self.head_dim

    # ---- parameters per layer
    @property
    def attn_params(self) -> int:
        """Q, K, V and O projection weights (and biases) of one layer."""
        p = self.hidden * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden
        if self.qkv_bias or self.linear_bias:
            p += self.q_dim + 2 * self.kv_dim
        if self.linear_bias:
            p += self.hidden
        return p

    def _mlp_params(self, width: int) -> int:
        mats = 3 if self.gated_mlp else 2
        p = mats * self.hidden * width
        if self.linear_bias:
            p += (mats - 1) * width + self.hidden
        return p

    def _moe_params(self, routed: int) -> int:
        """``routed`` routed experts plus the shared experts and the router of one MoE layer."""
        return (routed + self.shared_experts) * self._mlp_params(self.expert_ffn) + self.hidden * self.experts

    @property
    def mlp_params(self) -> int:
        """All MLP weights of one layer (every expert, shared experts and the router for MoE)."""
        return self._moe_params(self.experts) if self.is_moe else self._mlp_params(self.ffn)

    @property
    def active_mlp_params(self) -> int:
        """MLP weights one token passes through in one layer (its experts, shared experts and the router for MoE)."""
        return self._moe_params(self.active_experts) if self.is_moe else self._mlp_params(self.ffn)

    @property
    def expert_params(self) -> int:
        """Routed-expert weights of one layer (0 for dense models)."""
        return self.experts * self._mlp_params(self.expert_ffn) if self.is_moe else 0

    @property
    def norm_params(self) -> int:
        """Normalisation weights of one layer."""
        p = 2 * self.hidden * (2 if self.linear_bias else 1)
        return p + (2 * self.head_dim if self.qk_norm else 0)

    # ---- totals
    @property
    def embedding_params(self) -> int:
        """Input embedding, LM head (if untied), learned positions and the final norm."""
        p = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        if self.learned_positions:
            p += (self.max_positions + 2) * self.hidden
        return p + self.hidden * (2 if self.linear_bias else 1)

    @property
    def layer_params(self) -> int:
        """All weights of the transformer layers (no embeddings)."""
        return self.layers * (self.attn_params + self.mlp_params + self.norm_params)

    @property
    def active_layer_params(self) -> int:
        """Weights of the transformer layers one token passes through (the linear FLOPs are twice this)."""
        return self.layers * (self.attn_params + self.active_mlp_params + self.norm_params)

    @property
    def total_params(self) -> int:
        """Total parameter count."""
        return self.layer_params + self.embedding_params

    @property
    def active_params(self) -> int:
        """Parameters active per token (equal to ``total_params`` for dense models)."""
        return self.active_layer_params + self.embedding_params

    @property
    def weight_bytes(self) -> int:
        """bf16 weight bytes of the whole model."""
        return BYTES_BF16 * self.total_params

    @property
    def lm_head_params(self) -> int:
        """Weights of the output projection (shared with the embedding when tied)."""
        return self.vocab * self.hidden

    @property
    def full_attention_layers(self) -> int:
        """Layers attending to the whole context (all but the sliding-window ones)."""
        return self.layers - self.sliding_layers

    @property
    def kv_bytes_per_token(self) -> int:
        """bf16 K and V bytes one token occupies across the full-attention layers: ``2 * L_full * n_kv * d * 2``."""
        return 2 * self.full_attention_layers * self.kv_dim * BYTES_BF16

    @property
    def attn_flops_per_token_ctx(self) -> int:
        """Attention FLOPs of one query token against one context token, full-attention layers:
        ``4 * L_full * n_h * d``."""
        return 4 * self.full_attention_layers * self.q_dim

    @property
    def l_eq(self) -> float:
        """Context length at which a token's attention FLOPs equal its linear-layer FLOPs.

        ``active_layer_params / (2 * layers * heads * head_dim)``; embeddings and the LM head are
        left out because a prefill token does not pass through the LM head.
        """
        return self.active_layer_params / (2.0 * self.full_attention_layers * self.q_dim)


def _llama(name, hf, layers, hidden, heads, kv, ffn, vocab, max_pos):
    return ModelSpec(name, hf, layers, hidden, heads, kv, hidden // heads, ffn, vocab, max_pos)


def _qwen25(name, hf, layers, hidden, heads, kv, ffn, max_pos=32768):
    return ModelSpec(name, hf, layers, hidden, heads, kv, hidden // heads, ffn, 152064, max_pos, qkv_bias=True)


def _moe(name, hf, layers, hidden, heads, kv, head_dim, vocab, max_pos, experts, top_k, expert_ffn,
         shared_experts=0, **flags):
    """A MoE model: ``experts`` routed experts of which ``top_k`` per token, plus ``shared_experts`` always active."""
    return ModelSpec(name, hf, layers, hidden, heads, kv, head_dim, 0, vocab, max_pos, experts=experts,
                     active_experts=top_k, expert_ffn=expert_ffn, shared_experts=shared_experts, **flags)


def _qwen3_moe(name, hf, layers, hidden, heads, kv, expert_ffn, max_pos):
    return _moe(name, hf, layers, hidden, heads, kv, 128, 151936, max_pos, 128, 8, expert_ffn, qk_norm=True)


def _opt(name, hf, layers, hidden, heads, ffn):
    return ModelSpec(name, hf, layers, hidden, heads, heads, hidden // heads, ffn, 50272, 2048,
                     tied_embeddings=True, linear_bias=True, gated_mlp=False, learned_positions=True)


MODELS: dict[str, ModelSpec] = {m.name: m for m in (
    _llama("llama-2-7b", "meta-llama/Llama-2-7b-hf", 32, 4096, 32, 32, 11008, 32000, 4096),
    _llama("llama-2-70b", "meta-llama/Llama-2-70b-hf", 80, 8192, 64, 8, 28672, 32000, 4096),
    _llama("llama-3-8b", "meta-llama/Meta-Llama-3-8B", 32, 4096, 32, 8, 14336, 128256, 8192),
    _llama("llama-3-70b", "meta-llama/Meta-Llama-3-70B", 80, 8192, 64, 8, 28672, 128256, 8192),
    _llama("llama-3.1-8b", "meta-llama/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256, 131072),
    _llama("llama-3.1-70b", "meta-llama/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256, 131072),
    _llama("codellama-34b", "codellama/CodeLlama-34b-hf", 48, 8192, 64, 8, 22016, 32000, 16384),
    _qwen25("qwen2.5-7b", "Qwen/Qwen2.5-7B", 28, 3584, 28, 4, 18944, 131072),
    _qwen25("qwen2.5-14b", "Qwen/Qwen2.5-14B", 48, 5120, 40, 8, 13824, 131072),
    _qwen25("qwen2.5-32b", "Qwen/Qwen2.5-32B", 64, 5120, 40, 8, 27648, 131072),
    _qwen25("qwen2.5-72b", "Qwen/Qwen2.5-72B", 80, 8192, 64, 8, 29568, 131072),
    ModelSpec("qwen3-32b", "Qwen/Qwen3-32B", 64, 5120, 64, 8, 128, 25600, 151936, 40960, qk_norm=True),
    ModelSpec("qwen3-14b", "Qwen/Qwen3-14B", 40, 5120, 40, 8, 128, 17408, 151936, 40960, qk_norm=True),
    _qwen3_moe("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", 48, 2048, 32, 4, 768, 40960),
    _qwen3_moe("qwen3-coder-30b-a3b", "Qwen/Qwen3-Coder-30B-A3B-Instruct", 48, 2048, 32, 4, 768, 262144),
    _qwen3_moe("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", 94, 4096, 64, 4, 1536, 40960),
    _moe("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 32, 4096, 32, 8, 128, 32000, 32768, 8, 2, 14336),
    # https://huggingface.co/mistralai/Mixtral-8x22B-v0.1/blob/main/config.json (Mixtral-8x22B-Instruct-v0.1 has
    # the same shape and a 32,768-token vocabulary: 0.007 % more weights)
    _moe("mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1", 56, 6144, 48, 8, 128, 32000, 65536, 8, 2, 16384),
    # https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct/blob/main/config.json, text_config (also in
    # RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic): every layer MoE (interleave_moe_layer_step 1), 16 routed
    # experts, top-1, plus one shared expert of intermediate_size; its QK norm is a weightless L2 norm; the vision
    # encoder is not modelled
    _moe("llama-4-scout-17b-16e", "meta-llama/Llama-4-Scout-17B-16E-Instruct", 48, 5120, 40, 8, 128, 202048,
         10485760, 16, 1, 8192, shared_experts=1),
    # https://huggingface.co/mistralai/Mistral-Nemo-Instruct-2407/blob/main/config.json (head_dim 128, not 5120/32)
    ModelSpec("mistral-nemo-12b", "mistralai/Mistral-Nemo-Instruct-2407", 40, 5120, 32, 8, 128, 14336, 131072,
              131072),
    # https://huggingface.co/01-ai/Yi-34B/blob/main/config.json
    _llama("yi-34b", "01-ai/Yi-34B", 60, 7168, 56, 8, 20480, 64000, 4096),
    # https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json: 36 layers alternating sliding_attention
    # (window 128) and full_attention (layer_types), 128 local experts, experts_per_token 4, intermediate_size 2880,
    # head_dim 64, attention_bias true (Q/K/V/O; the O bias, the experts' and the router's biases and the attention
    # sinks, < 0.05 % of the weights, are not counted), untied embeddings; quantization_config mxfp4 for the experts
    # only (self_attn, router, embed_tokens, lm_head kept bf16): run it with weight_dtype "mxfp4"
    _moe("gpt-oss-120b", "openai/gpt-oss-120b", 36, 2880, 64, 8, 64, 201088, 131072, 128, 4, 2880, qkv_bias=True,
         sliding_layers=18, sliding_window=128),
    _opt("opt-13b", "facebook/opt-13b", 40, 5120, 40, 20480),
    _opt("opt-66b", "facebook/opt-66b", 64, 9216, 72, 36864),
)}


def model_names() -> list[str]:
    """Canonical model names, in table order."""
    return list(MODELS)


def get_model(name: str | ModelSpec) -> ModelSpec:
    """Look a model up by canonical name (case-insensitive); a ModelSpec is returned unchanged."""
    if isinstance(name, ModelSpec):
        return name
    key = str(name).strip().lower()
    if key not in MODELS:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(MODELS)}")
    return MODELS[key]

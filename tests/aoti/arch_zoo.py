"""The architecture zoo of tests/aoti: real model families at tiny sizes, compiled as a user would compile them.

Imported only inside the compile subprocess (compile_models.py --zoo arch_zoo), never by the tests. Every
transformers model is built from a small random-initialised config (no download: the compile subprocess runs
with HF_HUB_OFFLINE=1, set by tests/aoti/_helpers.py), wrapped so that it returns plain tensors.
test_arch_zoo.py names, per model, the CPU fallbacks its compiled .so must call and its tolerance against eager.

The single-op models of the fallbacks (FFT, int8/int4 weight-only matmul, ...) live in op_model_zoo.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---- block "zoo": transformers models ------------------------------------------------------------------------
# The configs: 2 layers, width 32-64, 4 heads (2 key/value heads where the family has grouped-query attention),
# vocabularies of 128; eval mode, no KV cache (the outputs are the logits or hidden states only).
VOCAB = 128


def _tiny(config_cls, **kw):
    config = config_cls(**kw)
    config._attn_implementation = "sdpa"  # transformers' default for these families; set, not guessed
    return config


class _Logits(nn.Module):
    """A causal LM returning its logits; called with input_ids and, when given, an attention mask."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class _IdsOnly(_Logits):
    """input_ids alone (transformers then derives positions and the packed-sequence check itself: cumsum)."""

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


class _Hidden(nn.Module):
    """An encoder returning its last hidden state (and pooled output where the family has one)."""

    def __init__(self, model, pooled=False):
        super().__init__()
        self.model = model
        self.pooled = pooled

    def forward(self, *args):
        out = self.model(*args)
        return (out.last_hidden_state, out.pooler_output) if self.pooled else out.last_hidden_state


# One row per family: transformers' config and model classes, the config's sizes, the model's own arguments.
# The grouped-query decoders (Llama, Qwen2, Mistral) share one size; so do the BERT-style encoders.
@dataclass(frozen=True)
class Family:
    config: str  # a transformers config class
    model: str  # the model class built from it
    sizes: dict
    model_kw: dict = field(default_factory=dict)
    module: str = "transformers"  # where `model` lives (WhisperEncoder is not exported at the top)


_GQA_DECODER = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
_ENCODER = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
FAMILIES: dict[str, Family] = {
    "gpt2": Family(
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(
            vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
        ),
    ),
    "llama": Family("LlamaConfig", "LlamaForCausalLM", _GQA_DECODER),
    "qwen2": Family("Qwen2Config", "Qwen2ForCausalLM", _GQA_DECODER),
    # a sliding window shorter than the sequence: the sliding-window mask is exercised
    "mistral": Family("MistralConfig", "MistralForCausalLM", {**_GQA_DECODER, "sliding_window": 4}),
    "bert": Family(
        "BertConfig", "BertModel", {**_ENCODER, "vocab_size": VOCAB, "max_position_embeddings": 64}
    ),
    "roberta": Family(
        "RobertaConfig",
        "RobertaModel",
        {**_ENCODER, "vocab_size": VOCAB, "max_position_embeddings": 66, "pad_token_id": 1},
        {"add_pooling_layer": False},
    ),
    "t5_encoder": Family(
        "T5Config",
        "T5EncoderModel",
        dict(
            vocab_size=VOCAB,
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_heads=4,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=16,
        ),
    ),
    "vit": Family(
        "ViTConfig", "ViTModel", {**_ENCODER, "image_size": 32, "patch_size": 8, "num_channels": 3}
    ),
    "whisper_encoder": Family(
        "WhisperConfig",
        "WhisperEncoder",
        dict(
            vocab_size=VOCAB,
            num_mel_bins=16,
            d_model=32,
            encoder_layers=2,
            encoder_attention_heads=4,
            encoder_ffn_dim=64,
            max_source_positions=16,  # the input has 2 * 16 frames (the encoder's two convolutions halve them)
            pad_token_id=0,
            bos_token_id=0,
            eos_token_id=0,
            decoder_start_token_id=1,
        ),
        module="transformers.models.whisper.modeling_whisper",
    ),
}


def build(family: str, dtype=torch.float32):
    """A FAMILIES model from its tiny random config, in dtype."""
    import importlib

    f = FAMILIES[family]
    config_cls = getattr(importlib.import_module("transformers"), f.config)
    model_cls = getattr(importlib.import_module(f.module), f.model)
    return model_cls(_tiny(config_cls, **f.sizes), **f.model_kw).to(dtype)


# ---- block "zoo": torch.nn models ----------------------------------------------------------------------------
class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class MobileBlock(nn.Module):
    """MobileNetV3-style: expand 1x1, depthwise 3x3 (and 5x5 stride 2), squeeze-excite, project 1x1, residual."""

    def __init__(self, c=8, e=24):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, stride=2, padding=1), nn.BatchNorm2d(c), nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1), nn.BatchNorm2d(e), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(e, e, 3, padding=1, groups=e), nn.BatchNorm2d(e), nn.Hardswish())
        self.se = SqueezeExcite(e)
        self.project = nn.Sequential(nn.Conv2d(e, c, 1), nn.BatchNorm2d(c))
        self.down = nn.Conv2d(c, 2 * c, 5, stride=2, padding=2, groups=c)
        self.head = nn.Linear(2 * c, 10)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.project(self.se(self.dw(self.expand(x))))
        x = self.down(x)
        return self.head(x.mean((2, 3)))


class ConvDecoder(nn.Module):
    """Transposed convolutions (stride 2, output_padding) and upsampling (nearest, bilinear), a U-Net-like tail."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1, groups=2)
        self.out = nn.Conv2d(4, 3, 3, padding=1)

    def forward(self, x):
        a = F.relu(self.up1(x))
        b = F.interpolate(x, scale_factor=2, mode="nearest")[:, :6]
        c = F.relu(self.up2(a + b))
        d = F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=False)[:, :4]
        return self.out(c + d)


class MoERouting(nn.Module):
    """Mixture-of-experts routing: top-k experts per token, sorted token order per expert, gathered and summed
    back (topk, sort, argsort, index_add, gather: the index and sort ops of real routers)."""

    def __init__(self, d=16, experts=4, k=2):
        super().__init__()
        self.router = nn.Linear(d, experts)
        self.experts = nn.ModuleList(nn.Linear(d, d) for _ in range(experts))
        self.k = k

    def forward(self, x):
        logits = self.router(x)
        weights, chosen = torch.topk(torch.softmax(logits, -1), self.k, dim=-1)
        flat = chosen.reshape(-1)
        order = torch.argsort(flat, stable=True)  # tokens grouped by expert, in token order
        token_of = order // self.k
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            w = torch.where(flat[order] == e, weights.reshape(-1)[order], 0.0)
            y = expert(x[token_of]) * w[:, None]
            out = out.index_add(0, token_of, y)
        ranks = torch.sort(logits, dim=-1, descending=True).indices
        return out, ranks, torch.gather(logits, 1, chosen)


# ---- block "zoo": inputs and the table -----------------------------------------------------------------------
def _ids(batch, seq, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(2, VOCAB, (batch, seq), generator=g)


def _mask(batch, seq):
    m = torch.ones(batch, seq, dtype=torch.int64)
    m[0, :2] = 0  # left padding in the first row
    if batch > 1:
        m[1, -3:] = 0  # right padding in the second
    return m


def _r(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


DECODERS = ("gpt2", "llama", "qwen2", "mistral")  # each called with a mask (NAME_mask) and without (NAME_ids)
# encoder -> (pooled output too, its inputs)
ENCODERS = {
    "bert": (True, "ids,mask,types"),
    "roberta": (False, "ids,mask"),
    "t5_encoder": (False, "ids,mask"),
}


def zoo_models():
    """name -> (module factory, example inputs, dynamic_shapes or None, extra run inputs or None)."""
    ids, mask = _ids(2, 12), _mask(2, 12)
    text = {"ids": ids, "mask": mask, "types": ids % 2}
    batch = torch.export.Dim("batch", min=1, max=16)
    table = {}
    for fam in DECODERS:
        table[f"{fam}_mask"] = (lambda fam=fam: _Logits(build(fam)), (ids, mask), None, None)
        table[f"{fam}_ids"] = (lambda fam=fam: _IdsOnly(build(fam)), (ids,), None, None)
    table["llama_bf16"] = (lambda: _Logits(build("llama", torch.bfloat16)), (ids, mask), None, None)
    for fam, (pooled, inputs) in ENCODERS.items():
        example = tuple(text[k] for k in inputs.split(","))
        table[fam] = (lambda fam=fam, pooled=pooled: _Hidden(build(fam), pooled), example, None, None)
    table["vit"] = (lambda: _Hidden(build("vit"), pooled=True), (_r(2, 3, 32, 32),), None, None)
    table["whisper_encoder"] = (lambda: _Hidden(build("whisper_encoder")), (_r(2, 16, 32),), None, None)
    # the batch is dynamic: compiled once, run at batch 2 (the example) and 5
    # (_Hidden.forward takes *args: one dynamic_shapes entry, the tuple of its three inputs)
    table["bert_dynamic"] = (
        table["bert"][0],
        table["bert"][1],
        (({0: batch}, {0: batch}, {0: batch}),),
        (_ids(5, 12, seed=3), _mask(5, 12), _ids(5, 12, seed=4) % 2),
    )
    table["mobile_block"] = (MobileBlock, (_r(2, 3, 32, 32),), None, None)
    table["conv_decoder"] = (ConvDecoder, (_r(2, 8, 5, 6),), None, None)
    table["moe_routing"] = (MoERouting, (_r(10, 16),), None, None)
    return table


# what compile_models.py reads
def models():
    return zoo_models()


EXTRA_OPTIONS: dict[str, dict] = {}

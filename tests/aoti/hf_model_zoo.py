"""Two real architectures from small random-initialised transformers configs (no downloads), for
compile_models.py --zoo hf_model_zoo: GPT-2 and Llama (grouped-query attention, rotary embeddings)."""

from __future__ import annotations

import torch

VOCAB = 128


class _Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False).logits


def _gpt2():
    import transformers

    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=64)
    return _Logits(transformers.GPT2LMHeadModel(cfg))


def _llama():
    import transformers

    cfg = transformers.LlamaConfig(
        num_hidden_layers=2,
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=VOCAB,
        max_position_embeddings=64,
    )
    return _Logits(transformers.LlamaForCausalLM(cfg))


def models():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, VOCAB, (2, 16), generator=g)
    return {"gpt2": (_gpt2, (ids,), None, None), "llama": (_llama, (ids,), None, None)}


EXTRA_OPTIONS: dict = {}

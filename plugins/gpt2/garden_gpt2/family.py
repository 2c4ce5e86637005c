"""GPT-2 for garden: transformers' GPT-2 heads, a byte-level BPE tokenizer and the stage layout."""

from __future__ import annotations

from typing import Any

from garden.families.transformers import TransformersFamily
from garden.hookspecs import Block, BuildSpec
from garden.text import TokenizerRecipe

#: GPT-2's one special token; ``weights=random`` runs read a 1,000-token BPE with it, trained on garden's text
END_OF_TEXT = "<|endoftext|>"
TOKENIZER_CORPUS = ("lm_corpus.txt", "summaries.jsonl", "sst2_like.jsonl")


def positions(h: Any) -> Any:
    import torch

    return torch.arange(h.shape[1], device=h.device).unsqueeze(0)


class GPT2(TransformersFamily):
    architecture = "gpt2"
    preprocessor_class = "AutoTokenizer"
    tokenizer_recipe = TokenizerRecipe(
        "bpe", {"bos_token": END_OF_TEXT, "eos_token": END_OF_TEXT, "unk_token": END_OF_TEXT, "pad_token": END_OF_TEXT},
        TOKENIZER_CORPUS)

    def config(self, spec: BuildSpec) -> Any:
        """GPT-2 has no pad token: padding (and the classifier's last-token pooling) uses end-of-text."""
        config = super().config(spec)
        if config.pad_token_id is None:
            config.pad_token_id = config.eos_token_id
        return config

    def preprocessor(self, spec: BuildSpec) -> Any:
        tokenizer = super().preprocessor(spec)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        return tokenizer

    def default_preprocessor(self, spec: BuildSpec) -> Any:
        return self.shipped_tokenizer(self.config(spec).n_positions)

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Embeddings, one block per decoder layer, then the final norm with the head.

        The LM head shares its weight with the token embeddings (``tied_to``), as in
        Graphcore's GPT-2, where it sits on the first IPU. Every block carries the padding mask
        (each layer rebuilds the causal mask from it); classification also carries the token
        ids, which pick each row's last real token.
        """
        from garden.families.compat import call_layer, causal_mask

        classify = task == "classify"

        def embed(m: Any, input_ids: Any, attention_mask: Any) -> tuple:
            t = m.transformer
            h = t.drop(t.wte(input_ids) + t.wpe(positions(input_ids)))
            return (h, attention_mask, input_ids) if classify else (h, attention_mask)

        def layer_block(i: int) -> Block:
            def run(m: Any, h: Any, attention_mask: Any, *rest: Any) -> tuple:
                pos = positions(h)
                mask = causal_mask(m.transformer.config, h, attention_mask, cache=None, position_ids=pos)
                return (call_layer(m.transformer.h[i], h, attention_mask=mask, position_ids=pos), attention_mask, *rest)

            return Block(f"layer.{i}", "layer", (f"transformer.h.{i}",), run)

        def lm_head(m: Any, h: Any, attention_mask: Any) -> tuple:
            return (m.lm_head(m.transformer.ln_f(h)),)

        def score(m: Any, h: Any, attention_mask: Any, input_ids: Any) -> tuple:
            import torch

            logits = m.score(m.transformer.ln_f(h))
            real = (input_ids != m.config.pad_token_id).to(torch.int32)
            last = (torch.arange(input_ids.shape[-1], device=logits.device, dtype=torch.int32) * real).argmax(-1)
            return (logits[torch.arange(logits.shape[0], device=logits.device), last],)

        head = (Block("head", "head", ("transformer.ln_f", "score"), score) if classify else
                Block("lm_head", "head", ("transformer.ln_f", "lm_head"), lm_head, tied_to="embeddings"))
        return [
            Block("embeddings", "embedding", ("transformer.wte", "transformer.wpe"), embed),
            *[layer_block(i) for i in range(len(model.transformer.h))],
            head,
        ]

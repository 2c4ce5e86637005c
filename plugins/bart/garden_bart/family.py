"""BART for garden: transformers' BART heads, a byte-level BPE tokenizer and one stage layout
for encoder and decoder together."""

from __future__ import annotations

from typing import Any

from garden.families.transformers import TransformersFamily
from garden.hookspecs import Block, BuildSpec
from garden.text import TokenizerRecipe

#: BART's special tokens in its own id order (<s>=0, <pad>=1, </s>=2, <unk>=3), for weights=random runs
SPECIAL_TOKENS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
                  "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}
TEMPLATE = ("<s> $A </s>", "<s> $A </s> </s> $B </s>")
TOKENIZER_CORPUS = ("summaries.jsonl", "lm_corpus.txt", "sst2_like.jsonl")


class BART(TransformersFamily):
    architecture = "bart"
    preprocessor_class = "AutoTokenizer"
    #: the decoder starts from </s> (``decoder_start_token_id`` = eos)
    decoder_start_token = "eos_token"
    tokenizer_recipe = TokenizerRecipe("bpe", SPECIAL_TOKENS, TOKENIZER_CORPUS, template=TEMPLATE)

    def default_preprocessor(self, spec: BuildSpec) -> Any:
        return self.shipped_tokenizer(self.config(spec).max_position_embeddings)

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Encoder and decoder as one sequence of blocks, Graphcore style.

        The first block looks up the token embeddings of both the encoder and the decoder input
        (they share one table), so the decoder's tokens travel through the encoder stages as
        embeddings; the decoder embeddings block then adds positions. Every block carries
        ``(encoder hidden, encoder mask, decoder hidden)``; classification also carries the
        token ids, whose last </s> picks the sentence representation. The LM head is tied to
        the shared embeddings.
        """
        from garden.families.compat import bidirectional_mask, call_layer, causal_mask, layer_output
        from transformers.models.bart.modeling_bart import shift_tokens_right

        classify = task == "classify"
        bart = model.model
        prefix = "model."

        def encode(m: Any, input_ids: Any) -> Any:
            enc = m.model.encoder
            tokens = enc.embed_tokens(input_ids)
            h = enc.layernorm_embedding(tokens + enc.embed_positions(tokens[:, :, -1]))
            return _dropout(h, enc.dropout, enc.training)

        def embed(m: Any, input_ids: Any, attention_mask: Any, decoder_input_ids: Any) -> tuple:
            return (encode(m, input_ids), attention_mask,
                    m.model.decoder.embed_tokens(decoder_input_ids))

        def embed_for_classify(m: Any, input_ids: Any, attention_mask: Any) -> tuple:
            """BartModel's own decoder input: the tokens shifted right."""
            decoder_input_ids = shift_tokens_right(input_ids, m.config.pad_token_id, m.config.decoder_start_token_id)
            return (encode(m, input_ids), attention_mask,
                    m.model.decoder.embed_tokens(decoder_input_ids), input_ids)

        def encoder_block(i: int) -> Block:
            def run(m: Any, h: Any, attention_mask: Any, *rest: Any) -> tuple:
                enc = m.model.encoder
                mask = bidirectional_mask(enc.config, h, attention_mask)
                return (call_layer(enc.layers[i], h, mask, layer_head_mask=None), attention_mask, *rest)

            return Block(f"encoder.layer.{i}", "layer", (f"{prefix}encoder.layers.{i}",), run)

        def decoder_embed(m: Any, enc_h: Any, attention_mask: Any, tokens: Any, *rest: Any) -> tuple:
            dec = m.model.decoder
            h = dec.layernorm_embedding(tokens + dec.embed_positions(tokens[:, :, -1]))
            return (enc_h, attention_mask, _dropout(h, dec.dropout, dec.training), *rest)

        def decoder_block(i: int) -> Block:
            def run(m: Any, enc_h: Any, attention_mask: Any, h: Any, *rest: Any) -> tuple:
                import torch

                dec = m.model.decoder
                ones = torch.ones(h.shape[:2], device=h.device)
                self_mask = causal_mask(dec.config, h, ones, cache=None)
                cross_mask = bidirectional_mask(dec.config, h, attention_mask, encoder_hidden_states=enc_h)
                h = layer_output(dec.layers[i](h, self_mask, enc_h, encoder_attention_mask=cross_mask, use_cache=False))
                return (enc_h, attention_mask, h, *rest)

            return Block(f"decoder.layer.{i}", "layer", (f"{prefix}decoder.layers.{i}",), run)

        def lm_head(m: Any, enc_h: Any, attention_mask: Any, h: Any) -> tuple:
            return (m.lm_head(h) + m.final_logits_bias.to(h.device),)

        def classification_head(m: Any, enc_h: Any, attention_mask: Any, h: Any, input_ids: Any) -> tuple:
            eos = input_ids.eq(m.config.eos_token_id)
            sentence = h[eos, :].view(h.shape[0], -1, h.shape[-1])[:, -1, :]
            return (m.classification_head(sentence),)

        head = (Block("head", "head", ("classification_head",), classification_head) if classify else
                Block("lm_head", "head", ("lm_head",), lm_head, tied_to="embeddings"))
        return [
            Block("embeddings", "embedding",
                  (f"{prefix}shared", f"{prefix}encoder.embed_tokens", f"{prefix}decoder.embed_tokens",
                   f"{prefix}encoder.embed_positions", f"{prefix}encoder.layernorm_embedding"),
                  embed_for_classify if classify else embed),
            *[encoder_block(i) for i in range(len(bart.encoder.layers))],
            Block("decoder.embeddings", "embedding",
                  (f"{prefix}decoder.embed_positions", f"{prefix}decoder.layernorm_embedding"), decoder_embed),
            *[decoder_block(i) for i in range(len(bart.decoder.layers))],
            head,
        ]


def _dropout(h: Any, p: float, training: bool) -> Any:
    import torch.nn.functional as F

    return F.dropout(h, p=p, training=training)

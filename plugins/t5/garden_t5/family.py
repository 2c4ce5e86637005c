"""T5 for garden: transformers' T5ForConditionalGeneration, a Unigram tokenizer and one stage
layout for encoder and decoder together."""

from __future__ import annotations

from typing import Any

from garden.families.transformers import TransformersFamily
from garden.hookspecs import Block, BuildSpec
from garden.text import TokenizerRecipe

#: T5's special tokens in its own id order (<pad>=0, </s>=1, <unk>=2), for weights=random runs
SPECIAL_TOKENS = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
#: T5 ends every sequence with </s> and starts none
TEMPLATE = ("$A </s>", "$A </s> $B </s>")
TOKENIZER_CORPUS = ("translation_en_fr.jsonl", "summaries.jsonl", "lm_corpus.txt")


class T5(TransformersFamily):
    architecture = "t5"
    preprocessor_class = "AutoTokenizer"
    #: the decoder starts from <pad> (``decoder_start_token_id`` = pad)
    decoder_start_token = "pad_token"
    tokenizer_recipe = TokenizerRecipe("unigram", SPECIAL_TOKENS, TOKENIZER_CORPUS, template=TEMPLATE)

    def default_preprocessor(self, spec: BuildSpec) -> Any:
        return self.shipped_tokenizer()

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Encoder and decoder as one sequence of blocks, Graphcore style.

        The first block looks up both the encoder and the decoder tokens in the shared table,
        so the decoder's embeddings travel through the encoder stages. Blocks carry
        ``(encoder hidden, encoder mask, decoder hidden)`` plus, after each stack's first layer,
        the relative position bias that layer computes and the others reuse. The encoder's
        final norm travels with its last layer; the decoder's with the LM head, which is tied
        to the shared embeddings when the config ties them (T5 v1.0).
        """
        from garden.families.compat import bidirectional_mask, causal_mask, scales_decoder_outputs

        n_encoder, n_decoder = len(model.encoder.block), len(model.decoder.block)

        def embed(m: Any, input_ids: Any, attention_mask: Any, decoder_input_ids: Any) -> tuple:
            return (m.encoder.dropout(m.encoder.embed_tokens(input_ids)), attention_mask,
                    m.decoder.dropout(m.decoder.embed_tokens(decoder_input_ids)))

        def encoder_block(i: int) -> Block:
            def run(m: Any, h: Any, attention_mask: Any, decoder_h: Any, *bias: Any) -> tuple:
                enc = m.encoder
                mask = bidirectional_mask(enc.config, h, attention_mask)
                h, position_bias = enc.block[i](h, mask, bias[0] if bias else None)[:2]
                if i == n_encoder - 1:
                    return (enc.dropout(enc.final_layer_norm(h)), attention_mask, decoder_h)
                return (h, attention_mask, decoder_h, position_bias)

            last = ("encoder.final_layer_norm",) if i == n_encoder - 1 else ()
            return Block(f"encoder.layer.{i}", "layer", (f"encoder.block.{i}", *last), run)

        def decoder_block(i: int) -> Block:
            def run(m: Any, enc_h: Any, attention_mask: Any, h: Any, *bias: Any) -> tuple:
                dec = m.decoder
                self_mask = causal_mask(dec.config, h, None, cache=None)
                cross_mask = bidirectional_mask(dec.config, h, attention_mask, encoder_hidden_states=enc_h)
                h, position_bias = dec.block[i](h, self_mask, bias[0] if bias else None, enc_h, cross_mask, None)[:2]
                return (enc_h, attention_mask, h, position_bias)

            return Block(f"decoder.layer.{i}", "layer", (f"decoder.block.{i}",), run)

        def lm_head(m: Any, enc_h: Any, attention_mask: Any, h: Any, position_bias: Any) -> tuple:
            h = m.decoder.dropout(m.decoder.final_layer_norm(h))
            if scales_decoder_outputs(m.config):
                h = h * (m.model_dim**-0.5)
            return (m.lm_head(h),)

        tied = model.lm_head.weight is model.shared.weight
        return [
            Block("embeddings", "embedding", ("shared", "encoder.embed_tokens", "decoder.embed_tokens"), embed),
            *[encoder_block(i) for i in range(n_encoder)],
            *[decoder_block(i) for i in range(n_decoder)],
            Block("lm_head", "head", ("decoder.final_layer_norm", "lm_head"), lm_head,
                  tied_to="embeddings" if tied else None),
        ]

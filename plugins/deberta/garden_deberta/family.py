"""DeBERTa-v3 for garden: transformers' DebertaV2*For* heads, a Unigram tokenizer, the encoder stage layout.

DeBERTa's layers share one relative-position embedding table (normalised once per forward).
The embeddings block owns it and carries the normalised table on, batch-first (a view, one
per example) so a pipeline can split micro-batches; every layer reads row 0 of it.
"""

from __future__ import annotations

from typing import Any, Callable

from garden.families.encoders import EncoderFamily
from garden.hookspecs import Block

#: DeBERTa-v3's special tokens in its own id order ([PAD] is 0), and its single and pair templates
SPECIAL_TOKENS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                  "mask_token": "[MASK]"}
TEMPLATE = ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")


class DeBERTa(EncoderFamily):
    architecture = "deberta-v2"
    tokenizer_kind = "unigram"
    special_tokens = SPECIAL_TOKENS
    template = TEMPLATE
    # transformers' DeBERTa-v2 runs its own attention (no sdpa option)
    attn_implementation = None

    def embedding_block(self, model: Any) -> Block:
        def run(m: Any, input_ids: Any, attention_mask: Any) -> tuple:
            hidden = m.deberta.embeddings(input_ids=input_ids, token_type_ids=input_ids.new_zeros(input_ids.shape),
                                          mask=attention_mask)
            relative = m.deberta.encoder.get_rel_embedding()
            return hidden, attention_mask, relative.unsqueeze(0).expand(hidden.shape[0], *relative.shape)

        modules = ("deberta.embeddings", "deberta.encoder.rel_embeddings", "deberta.encoder.LayerNorm")
        return Block("embeddings", "embedding", modules, run)

    def layer_block(self, model: Any, i: int) -> Block:
        def run(m: Any, hidden: Any, attention_mask: Any, relative: Any) -> tuple:
            from garden.families.compat import layer_output

            encoder = m.deberta.encoder
            out = layer_output(encoder.layer[i](hidden, encoder.get_attention_mask(attention_mask),
                                                relative_pos=encoder.get_rel_pos(hidden), rel_embeddings=relative[0]))
            if i == 0 and encoder.conv is not None:
                out = encoder.conv(hidden, out, attention_mask)
            return out, attention_mask, relative

        conv = ("deberta.encoder.conv",) if i == 0 and model.deberta.encoder.conv is not None else ()
        return Block(f"layer.{i}", "layer", (f"deberta.encoder.layer.{i}", *conv), run)

    def head(self, task: str) -> tuple[tuple[str, ...], Callable[[Any, Any], Any]]:
        """DeBERTa's classifier pools the first token with its own ContextPooler at the top level."""
        if task == "classify":
            return ("pooler", "dropout", "classifier"), lambda m, h: m.classifier(m.dropout(m.pooler(h)))
        return super().head(task)

"""RoBERTa for garden: transformers' Roberta*For* heads, a byte-level BPE tokenizer, the encoder stage layout."""

from __future__ import annotations

from garden.families.encoders import EncoderFamily

#: RoBERTa's special tokens in its own id order (<s>=0, <pad>=1), and its single and pair templates
SPECIAL_TOKENS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
                  "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}
TEMPLATE = ("<s> $A </s>", "<s> $A </s> </s> $B </s>")


class RoBERTa(EncoderFamily):
    architecture = "roberta"
    tokenizer_kind = "bpe"
    special_tokens = SPECIAL_TOKENS
    template = TEMPLATE
    #: position ids start after the padding index, so two positions are never inputs
    position_offset = 2
    #: RoBERTa classifies from the <s> token inside its own head (no pooler) and names its LM head lm_head
    pooled_classifier = False
    lm_head = "lm_head"

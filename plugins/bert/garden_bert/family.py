"""BERT for garden: transformers' Bert*For* heads, a WordPiece tokenizer and the encoder stage layout."""

from __future__ import annotations

from garden.families.encoders import EncoderFamily


#: BERT's special tokens in its own id order ([PAD] is 0), and its single and pair templates
SPECIAL_TOKENS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                  "mask_token": "[MASK]"}
TEMPLATE = ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")


class BERT(EncoderFamily):
    architecture = "bert"
    text_inputs = ("input_ids", "attention_mask", "token_type_ids")
    tokenizer_kind = "wordpiece"
    special_tokens = SPECIAL_TOKENS
    template = TEMPLATE
    lowercase = True

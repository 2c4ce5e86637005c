"""CamemBERT for garden: RoBERTa's architecture for French, a SentencePiece-like (Unigram) tokenizer."""

from __future__ import annotations

from garden.families.encoders import EncoderFamily

#: CamemBERT's special tokens in its own id order (<s>=0, <pad>=1), and its single and pair templates
SPECIAL_TOKENS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
                  "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}
TEMPLATE = ("<s> $A </s>", "<s> $A </s> </s> $B </s>")


class CamemBERT(EncoderFamily):
    architecture = "camembert"
    tokenizer_kind = "unigram"
    special_tokens = SPECIAL_TOKENS
    template = TEMPLATE
    #: RoBERTa's shape: position ids after the padding index, the classifier pools inside its own
    #: head, the LM head is lm_head
    position_offset = 2
    pooled_classifier = False
    lm_head = "lm_head"
    default_data = {"classify": "french_sentences.jsonl", "mlm": "french_sentences.jsonl"}
    corpus = ("french_sentences.jsonl",)

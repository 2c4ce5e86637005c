"""BERT for garden: transformers' Bert*For* heads, a WordPiece tokenizer and the encoder stage layout."""

from __future__ import annotations

from garden.families.encoders import TEXT_TASKS, EncoderFamily


class BERT(EncoderFamily):
    config_class = "BertConfig"
    base = "bert"
    heads = {
        "classify": "BertForSequenceClassification",
        "token-classify": "BertForTokenClassification",
        "qa": "BertForQuestionAnswering",
        "mlm": "BertForMaskedLM",
    }
    tasks = TEXT_TASKS
    text_inputs = ("input_ids", "attention_mask", "token_type_ids")
    tokenizer_kind = "wordpiece"
    lowercase = True

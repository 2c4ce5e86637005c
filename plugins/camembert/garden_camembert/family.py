"""CamemBERT for garden: RoBERTa's architecture for French, a SentencePiece-like (Unigram) tokenizer."""

from __future__ import annotations

from garden.families.encoders import TEXT_TASKS
from garden_roberta.family import RoBERTa


class CamemBERT(RoBERTa):
    config_class = "CamembertConfig"
    heads = {"classify": "CamembertForSequenceClassification", "mlm": "CamembertForMaskedLM"}
    tasks = {name: TEXT_TASKS[name] for name in heads}
    tokenizer_kind = "unigram"
    default_data = {"classify": "french_sentences.jsonl", "mlm": "french_sentences.jsonl"}
    corpus = ("french_sentences.jsonl",)

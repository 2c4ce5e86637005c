"""RoBERTa for garden: transformers' Roberta*For* heads, a byte-level BPE tokenizer, the encoder stage layout."""

from __future__ import annotations

from typing import Any, Callable

from garden.families.encoders import TEXT_TASKS, EncoderFamily
from garden.text import ROBERTA_TEMPLATE, ROBERTA_TOKENS


class RoBERTa(EncoderFamily):
    config_class = "RobertaConfig"
    base = "roberta"
    heads = {
        "classify": "RobertaForSequenceClassification",
        "qa": "RobertaForQuestionAnswering",
        "mlm": "RobertaForMaskedLM",
    }
    tasks = {name: TEXT_TASKS[name] for name in heads}
    tokenizer_kind = "bpe"
    special_tokens = ROBERTA_TOKENS
    template = ROBERTA_TEMPLATE
    #: position ids start after the padding index, so two positions are never inputs
    position_offset = 2

    def head(self, task: str) -> tuple[tuple[str, ...], Callable[[Any, Any], Any]]:
        """RoBERTa classifies from the <s> token inside its own head (no pooler) and names its LM head lm_head."""
        if task == "classify":
            return ("classifier",), lambda m, h: m.classifier(h)
        if task == "mlm":
            return ("lm_head",), lambda m, h: m.lm_head(h)
        return super().head(task)

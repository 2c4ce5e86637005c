"""Encoder models (BERT and its kin): one family shape, a few class attributes.

They share a stage layout (embeddings -> ``encoder.layer[i]`` -> a task head) and a tokenizer
story: a checkpoint brings its own tokenizer; without one (``weights=random``) the plugin's
shipped ``tokenizer.json``, trained once on garden's text, so a tiny model trains offline::

    class MyEncoder(EncoderFamily):
        architecture = "my_encoder"              # its config, head classes and model.my_encoder: transformers'
        special_tokens = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", ...}
        template = ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")

Blocks carry ``(hidden_states, attention_mask)``; each layer block rebuilds the attention mask
from the 2-D mask with the model's own function, so running the blocks computes exactly what
the model's forward does.
"""

from __future__ import annotations

from typing import Any, Callable

from garden.errors import ConfigError
from garden.families.transformers import TransformersFamily
from garden.hookspecs import Block, BuildSpec
from garden.text import TokenizerRecipe

def qa_logits(logits: Any) -> tuple[Any, Any]:
    """Start and end logits, split as the ``*ForQuestionAnswering`` heads split them."""
    start, end = logits.split(1, dim=-1)
    return start.squeeze(-1).contiguous(), end.squeeze(-1).contiguous()


class EncoderFamily(TransformersFamily):
    preprocessor_class = "AutoTokenizer"
    #: the tensors the model reads, in the order the first stage receives them
    text_inputs: tuple[str, ...] = ("input_ids", "attention_mask")
    #: the tokenizer shipped for models without a checkpoint (``tokenizer_recipe``)
    tokenizer_kind = "wordpiece"
    #: its special tokens by role (``PreTrainedTokenizerFast`` keyword arguments), in the order of
    #: the real checkpoints' ids so configs agree; its single and pair post-processing templates
    special_tokens: dict[str, str] = {}
    template: tuple[str, str] | None = None
    lowercase = False
    tokenizer_vocab_size = 1000
    #: positions the model reserves beyond its longest input (a padding offset)
    position_offset = 0
    #: whether ``classify`` reads the pooled first token (``<base>.pooler``, dropout, classifier)
    #: or the head class pools inside its own ``classifier``
    pooled_classifier = True
    #: the masked-LM head's module
    lm_head = "cls"
    #: task -> shipped dataset, where the family's default differs from the task's
    default_data: dict[str, str] = {}
    corpus = ("sst2_like.jsonl", "conll_like.jsonl", "squad_like.json", "lm_corpus.txt")

    @property
    def tokenizer_recipe(self) -> TokenizerRecipe:
        return TokenizerRecipe(self.tokenizer_kind, self.special_tokens, self.corpus, self.tokenizer_vocab_size,
                               self.template, self.lowercase)

    def default_preprocessor(self, spec: BuildSpec) -> Any:
        return self.shipped_tokenizer(self.config(spec).max_position_embeddings - self.position_offset)

    # -- stage layout ----------------------------------------------------------------------

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Embeddings, one block per encoder layer, then the task's head."""
        encoder = getattr(model, self.base).encoder
        return [self.embedding_block(model), *[self.layer_block(model, i) for i in range(len(encoder.layer))],
                self.head_block(task)]

    def embedding_block(self, model: Any) -> Block:
        base = self.base

        def run(m: Any, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> tuple:
            return getattr(m, base).embeddings(input_ids=input_ids, token_type_ids=token_type_ids), attention_mask

        return Block("embeddings", "embedding", (f"{base}.embeddings",), run)

    def layer_block(self, model: Any, i: int) -> Block:
        from garden.families.compat import bidirectional_mask, layer_output

        base = self.base

        def run(m: Any, hidden: Any, attention_mask: Any) -> tuple:
            mask = bidirectional_mask(m.config, hidden, attention_mask)
            return layer_output(getattr(m, base).encoder.layer[i](hidden, mask)), attention_mask

        return Block(f"layer.{i}", "layer", (f"{base}.encoder.layer.{i}",), run)

    def head_block(self, task: str) -> Block:
        modules, head = self.head(task)

        def run(m: Any, hidden: Any, *carried: Any) -> tuple:
            out = head(m, hidden)
            return out if isinstance(out, tuple) else (out,)

        tied = "embeddings" if task == "mlm" else None
        return Block("head", "head", modules, run, tied_to=tied)

    def head(self, task: str) -> tuple[tuple[str, ...], Callable[[Any, Any], Any]]:
        """The head's modules and its function of the last hidden states, as the head class runs it."""
        if task == "classify" and not self.pooled_classifier:
            return ("classifier",), lambda m, h: m.classifier(h)
        if task == "classify":
            return (f"{self.base}.pooler", "dropout", "classifier"), \
                lambda m, h: m.classifier(m.dropout(getattr(m, self.base).pooler(h)))
        if task == "token-classify":
            return ("dropout", "classifier"), lambda m, h: m.classifier(m.dropout(h))
        if task == "qa":
            return ("qa_outputs",), lambda m, h: qa_logits(m.qa_outputs(h))
        if task == "mlm":
            return (self.lm_head,), lambda m, h: getattr(m, self.lm_head)(h)
        raise ConfigError(f"{type(self).__name__} has no stage layout for task '{task}'")

"""LXMERT for garden: transformers' LxmertForQuestionAnswering over region features, and a stage
layout that runs the language, vision and cross-modality layers as one sequence of blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from garden.families.transformers import TransformersFamily
from garden.hookspecs import Block, BuildSpec


#: the WordPiece tokens of LXMERT's vocabulary, in id order
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def question_tokenizer() -> Any:
    """A WordPiece tokenizer for models without a checkpoint: the shipped questions' words, plus
    every letter and digit (alone and as ``##`` continuation) so any word can be spelled. Read
    from a ``vocab.txt`` file, which every transformers version takes as the first argument."""
    import tempfile

    from garden.families.compat import fast_tokenizer
    from garden.tasks.vqa import question_words

    pieces = [*"abcdefghijklmnopqrstuvwxyz0123456789"]
    vocab = [*SPECIAL_TOKENS, *sorted(set(question_words()) | set(pieces)), *(f"##{p}" for p in pieces)]
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "vocab.txt").write_text("".join(f"{token}\n" for token in vocab), encoding="utf-8")
        return fast_tokenizer("LxmertTokenizer")(str(Path(folder) / "vocab.txt"))  # 4.x: vocab_file, 5.x: vocab


def additive(mask: Any, dtype: Any) -> Any:
    """A 0/1 mask as LXMERT's additive attention bias (0 to attend, the dtype's minimum not to)."""
    import torch

    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


class Lxmert(TransformersFamily):
    config_class = "LxmertConfig"
    heads = {"vqa": "LxmertForQuestionAnswering"}
    attn_implementation = None

    def config(self, spec: BuildSpec) -> Any:
        """LXMERT sizes its answer head by ``num_qa_labels``, not ``num_labels``."""
        config = super().config(spec)
        if spec.labels is not None:
            config.num_qa_labels = len(spec.labels)
        return config

    def preprocessor(self, spec: BuildSpec) -> Any:
        from garden.families.compat import fast_tokenizer
        from garden.tasks.vqa import RegionQuestionProcessor

        folder = Path(spec.weights_dir) if spec.weights_dir is not None else None
        if folder is not None and any((folder / f).exists() for f in ("tokenizer.json", "vocab.txt")):
            tokenizer = fast_tokenizer("LxmertTokenizer").from_pretrained(folder)
        else:
            tokenizer = question_tokenizer()
        return RegionQuestionProcessor(tokenizer, self.config(spec).visual_feat_dim)

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Embeddings (words and regions), language layers, vision layers, cross-modality layers,
        then the pooler with the answer head. Carry: (language, its bias, vision, its bias)."""

        def embed(m: Any, ids: Any, mask: Any, types: Any, feats: Any, boxes: Any, visual_mask: Any) -> tuple:
            lx = m.lxmert
            return (lx.embeddings(ids, types), additive(mask, lx.dtype),
                    lx.encoder.visn_fc(feats, boxes), additive(visual_mask, lx.dtype))

        def language(i: int) -> Block:
            def run(m: Any, lang: Any, lang_bias: Any, vision: Any, vision_bias: Any) -> tuple:
                return (m.lxmert.encoder.layer[i](lang, lang_bias)[0], lang_bias, vision, vision_bias)

            return Block(f"language.{i}", "layer", (f"lxmert.encoder.layer.{i}",), run)

        def relational(i: int) -> Block:
            def run(m: Any, lang: Any, lang_bias: Any, vision: Any, vision_bias: Any) -> tuple:
                return (lang, lang_bias, m.lxmert.encoder.r_layers[i](vision, vision_bias)[0], vision_bias)

            return Block(f"vision.{i}", "layer", (f"lxmert.encoder.r_layers.{i}",), run)

        def cross(i: int) -> Block:
            def run(m: Any, lang: Any, lang_bias: Any, vision: Any, vision_bias: Any) -> tuple:
                lang, vision = m.lxmert.encoder.x_layers[i](lang, lang_bias, vision, vision_bias)[:2]
                return (lang, lang_bias, vision, vision_bias)

            return Block(f"cross.{i}", "layer", (f"lxmert.encoder.x_layers.{i}",), run)

        def answer(m: Any, lang: Any, lang_bias: Any, vision: Any, vision_bias: Any) -> tuple:
            return (m.answer_head(m.lxmert.pooler(lang)),)

        encoder = model.lxmert.encoder
        return [
            Block("embeddings", "embedding", ("lxmert.embeddings", "lxmert.encoder.visn_fc"), embed),
            *[language(i) for i in range(len(encoder.layer))],
            *[relational(i) for i in range(len(encoder.r_layers))],
            *[cross(i) for i in range(len(encoder.x_layers))],
            Block("head", "head", ("lxmert.pooler", "answer_head"), answer),
        ]

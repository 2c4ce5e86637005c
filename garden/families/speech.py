"""Speech encoders in the wav2vec 2.0 shape: a convolutional feature encoder, a Transformer, and
a CTC (``asr``) or pooled classifier (``audio-classify``) head.

Several families share this shape under different attribute names (transformers' modular
models reuse the same modules), so they share one base here and each plugin names only its
architecture::

    class MySpeechModel(SpeechEncoderFamily):
        architecture = "my_speech"   # its config, heads, model.my_speech, feature extractor, CTC tokenizer
                                     # and processor: the classes transformers' Auto mappings name for it

The stage layout splits the convolutional feature encoder layer by layer, as Graphcore's
layouts count it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Sequence

from garden.errors import ConfigError
from garden.families.transformers import TransformersFamily, transformers_class
from garden.hookspecs import Block, BuildSpec


def _hidden(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


def encoder_blocks(model: Any, base: str, counts_feature_encoder: bool = True) -> list[Block]:
    """Conv layers, the feature projection with the positional embedding, then the Transformer
    layers; the conv layers and the projection count as layers when ``counts_feature_encoder``
    (optimum's wav2vec2 CTC pipeline), else only the Transformer layers do (optimum's HuBERT).

    Carry: ``(waveform, sample mask)`` through the conv layers, then ``(hidden, frame mask)``;
    ``base`` is the attribute holding the encoder (``wav2vec2``, ``hubert``).
    """
    counted = "layer" if counts_feature_encoder else "embedding"
    core = getattr(model, base)
    config = core.config
    if getattr(config, "add_adapter", False):
        raise ConfigError(f"{base} with config.add_adapter=True has no stage layout in garden; "
                          f"use a checkpoint without an adapter or backend=local")
    stable = config.do_stable_layer_norm

    def conv_block(i: int) -> Block:
        def run(m: Any, x: Any, mask: Any) -> tuple:
            return (getattr(m, base).feature_extractor.conv_layers[i](x[:, None] if i == 0 else x), mask)

        return Block(f"conv.{i}", counted, (f"{base}.feature_extractor.conv_layers.{i}",), run)

    def project(m: Any, x: Any, mask: Any) -> tuple:
        core = getattr(m, base)
        x = x.transpose(1, 2)
        frames = core._get_feature_vector_attention_mask(x.shape[1], mask)
        hidden = core._mask_hidden_states(_hidden(core.feature_projection(x)), attention_mask=frames)
        hidden = hidden.masked_fill(~frames[..., None], 0.0)
        hidden = hidden + core.encoder.pos_conv_embed(hidden)
        if not stable:
            hidden = core.encoder.layer_norm(hidden)
        return (core.encoder.dropout(hidden), frames)

    def layer_block(i: int) -> Block:
        def run(m: Any, hidden: Any, frames: Any) -> tuple:
            from garden.families.compat import bidirectional_mask

            core = getattr(m, base)
            bias = bidirectional_mask(core.config, hidden, frames)
            return (_hidden(core.encoder.layers[i](hidden, attention_mask=bias)), frames)

        return Block(f"layer.{i}", "layer", (f"{base}.encoder.layers.{i}",), run)

    projection = [f"{base}.feature_projection", f"{base}.encoder.pos_conv_embed"]
    if not stable:
        projection.append(f"{base}.encoder.layer_norm")
    if hasattr(core, "masked_spec_embed"):
        projection.append(f"{base}.masked_spec_embed")
    return [
        *[conv_block(i) for i in range(len(core.feature_extractor.conv_layers))],
        Block("feature_projection", counted, tuple(projection), project),
        *[layer_block(i) for i in range(len(core.encoder.layers))],
    ]


def head_block(model: Any, base: str, task: str, counted: bool = False) -> Block:
    """The CTC head (``asr``: logits and frame counts) or the pooled classifier (``audio-classify``);
    a layer of the layout when ``counted`` (optimum's wav2vec2 CTC head)."""
    stable = getattr(model, base).config.do_stable_layer_norm
    final_norm = (f"{base}.encoder.layer_norm",) if stable else ()

    def encoded(m: Any, hidden: Any) -> Any:
        return getattr(m, base).encoder.layer_norm(hidden) if stable else hidden

    if task == "asr":
        def ctc(m: Any, hidden: Any, frames: Any) -> tuple:
            return (m.lm_head(m.dropout(encoded(m, hidden))), frames.sum(-1))

        return Block("head", "layer" if counted else "head", (*final_norm, "lm_head"), ctc)
    if getattr(model.config, "use_weighted_layer_sum", False):
        raise ConfigError(f"{base} with config.use_weighted_layer_sum=True has no stage layout in garden; "
                          f"set it to false or use backend=local")

    def classify(m: Any, hidden: Any, frames: Any) -> tuple:
        hidden = m.projector(encoded(m, hidden)).masked_fill(~frames[..., None], 0.0)
        return (m.classifier(hidden.sum(dim=1) / frames.sum(dim=1).view(-1, 1)),)

    return Block("head", "head", (*final_norm, "projector", "classifier"), classify)


class SpeechEncoderFamily(TransformersFamily):
    """A speech model in the wav2vec 2.0 shape; a plugin names its classes and ``base``."""

    #: whether layers_per_ipu counts the conv layers, the positional embedding and the CTC head
    #: too (optimum's PipelinedWav2Vec2ForCTC: 21 for base) or the Transformer layers only
    #: (optimum's pipelined HuBERT, its feature encoder on IPU 0)
    counts_feature_encoder: bool = True

    @property
    def feature_extractor_class(self) -> str:
        """The waveform feature extractor's class name, as transformers' Auto mapping gives it."""
        from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES

        return FEATURE_EXTRACTOR_MAPPING_NAMES[self.architecture]

    @property
    def ctc_tokenizer_class(self) -> str:
        """The CTC tokenizer's class name (``asr``), as transformers' Auto mapping gives it."""
        from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

        found = TOKENIZER_MAPPING_NAMES[self.architecture]
        return next(name for name in found if name) if isinstance(found, (tuple, list)) else found

    @property
    def processor_class(self) -> str:
        """The class holding both (``asr``), as transformers' Auto mapping gives it."""
        from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

        return PROCESSOR_MAPPING_NAMES[self.architecture]
    #: the CTC vocabulary a character tokenizer starts with, in id order: ``<pad>`` is the CTC
    #: blank, ``|`` the word delimiter (the tokenizer class's own defaults)
    ctc_specials: tuple[str, ...] = ("<pad>", "<s>", "</s>", "<unk>", "|")

    def preprocessor(self, spec: BuildSpec) -> Any:
        """The checkpoint's feature extractor (and CTC tokenizer for ``asr``), else fresh ones.

        A fresh tokenizer knows no characters yet; the asr task learns them from its transcripts
        (:meth:`character_tokenizer`).
        """
        folder = Path(spec.weights_dir) if spec.weights_dir is not None else None
        extractor_class = transformers_class(self.feature_extractor_class)
        if folder is not None and (folder / "preprocessor_config.json").exists():
            extractor = extractor_class.from_pretrained(folder)
        else:
            extractor = extractor_class(feature_size=1, sampling_rate=16_000, padding_value=0.0,
                                        do_normalize=True, return_attention_mask=True)
        if spec.task != "asr":
            return extractor
        if folder is not None and (folder / "vocab.json").exists():
            tokenizer = transformers_class(self.ctc_tokenizer_class).from_pretrained(folder)
        else:
            tokenizer = self.character_tokenizer([])
        return transformers_class(self.processor_class)(feature_extractor=extractor, tokenizer=tokenizer)

    def character_tokenizer(self, texts: Sequence[str]) -> Any:
        """A CTC tokenizer over the characters of ``texts`` (none: the specials only)::

            >>> family.character_tokenizer(["go left"]).convert_ids_to_tokens([5, 6, 7])   # doctest: +SKIP
            ['e', 'f', 'g']
        """
        chars = sorted({c for t in texts for c in t if not c.isspace()} - set(self.ctc_specials))
        vocab = {token: i for i, token in enumerate([*self.ctc_specials, *chars])}
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "vocab.json").write_text(json.dumps(vocab))
            return transformers_class(self.ctc_tokenizer_class)(str(Path(tmp) / "vocab.json"),
                                                                word_delimiter_token="|")

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        counts = self.counts_feature_encoder
        return [*encoder_blocks(model, self.base, counts), head_block(model, self.base, task, counted=counts)]

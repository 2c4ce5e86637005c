"""Wav2Vec2 for garden: transformers' Wav2Vec2ForCTC, its processor, and a stage layout that
splits the convolutional feature encoder layer by layer, as Graphcore's layouts count it.

The encoder blocks are shared with HuBERT (``garden_hubert``), whose model is the same
feature encoder and Transformer under a different attribute name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from garden.errors import ConfigError
from garden.families.transformers import TransformersFamily
from garden.hookspecs import Block, BuildSpec


def _hidden(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


def speech_processor(spec: BuildSpec) -> Any:
    """The checkpoint's feature extractor (and CTC tokenizer for ``asr``), else fresh ones.

    A fresh tokenizer knows no characters yet; the asr task learns them from its transcripts.
    """
    from transformers import Wav2Vec2CTCTokenizer, Wav2Vec2FeatureExtractor, Wav2Vec2Processor

    from garden.tasks.audio import character_tokenizer

    folder = Path(spec.weights_dir) if spec.weights_dir is not None else None
    if folder is not None and (folder / "preprocessor_config.json").exists():
        extractor = Wav2Vec2FeatureExtractor.from_pretrained(folder)
    else:
        extractor = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16_000, padding_value=0.0,
                                             do_normalize=True, return_attention_mask=True)
    if spec.task != "asr":
        return extractor
    if folder is not None and (folder / "vocab.json").exists():
        tokenizer = Wav2Vec2CTCTokenizer.from_pretrained(folder)
    else:
        tokenizer = character_tokenizer([])
    return Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer)


def encoder_blocks(model: Any, base: str) -> list[Block]:
    """Conv layers (one "layer" block each), the feature projection, then the Transformer layers.

    Carry: ``(waveform, sample mask)`` through the conv layers, then ``(hidden, frame mask)``;
    ``base`` is the attribute holding the encoder (``wav2vec2``, ``hubert``).
    """
    core = getattr(model, base)
    config = core.config
    if getattr(config, "add_adapter", False):
        raise ConfigError(f"{base} with config.add_adapter=True has no stage layout in garden; "
                          f"use a checkpoint without an adapter or backend=local")
    stable = config.do_stable_layer_norm

    def conv_block(i: int) -> Block:
        def run(m: Any, x: Any, mask: Any) -> tuple:
            return (getattr(m, base).feature_extractor.conv_layers[i](x[:, None] if i == 0 else x), mask)

        return Block(f"conv.{i}", "layer", (f"{base}.feature_extractor.conv_layers.{i}",), run)

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
            from transformers.masking_utils import create_bidirectional_mask

            core = getattr(m, base)
            bias = create_bidirectional_mask(config=core.config, inputs_embeds=hidden, attention_mask=frames)
            return (_hidden(core.encoder.layers[i](hidden, attention_mask=bias)), frames)

        return Block(f"layer.{i}", "layer", (f"{base}.encoder.layers.{i}",), run)

    projection = [f"{base}.feature_projection", f"{base}.encoder.pos_conv_embed"]
    if not stable:
        projection.append(f"{base}.encoder.layer_norm")
    if hasattr(core, "masked_spec_embed"):
        projection.append(f"{base}.masked_spec_embed")
    return [
        *[conv_block(i) for i in range(len(core.feature_extractor.conv_layers))],
        Block("feature_projection", "embedding", tuple(projection), project),
        *[layer_block(i) for i in range(len(core.encoder.layers))],
    ]


def head_block(model: Any, base: str, task: str) -> Block:
    """The CTC head (``asr``: logits and frame counts) or the pooled classifier (``audio-classify``)."""
    stable = getattr(model, base).config.do_stable_layer_norm
    final_norm = (f"{base}.encoder.layer_norm",) if stable else ()

    def encoded(m: Any, hidden: Any) -> Any:
        return getattr(m, base).encoder.layer_norm(hidden) if stable else hidden

    if task == "asr":
        def ctc(m: Any, hidden: Any, frames: Any) -> tuple:
            return (m.lm_head(m.dropout(encoded(m, hidden))), frames.sum(-1))

        return Block("head", "head", (*final_norm, "lm_head"), ctc)
    if getattr(model.config, "use_weighted_layer_sum", False):
        raise ConfigError(f"{base} with config.use_weighted_layer_sum=True has no stage layout in garden; "
                          f"set it to false or use backend=local")

    def classify(m: Any, hidden: Any, frames: Any) -> tuple:
        hidden = m.projector(encoded(m, hidden)).masked_fill(~frames[..., None], 0.0)
        return (m.classifier(hidden.sum(dim=1) / frames.sum(dim=1).view(-1, 1)),)

    return Block("head", "head", (*final_norm, "projector", "classifier"), classify)


class SpeechEncoderFamily(TransformersFamily):
    """A wav2vec2-style speech model: conv feature encoder, Transformer, CTC or classifier head."""

    #: the head's attribute holding the encoder model
    base: str = "wav2vec2"

    def preprocessor(self, spec: BuildSpec) -> Any:
        return speech_processor(spec)

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        return [*encoder_blocks(model, self.base), head_block(model, self.base, task)]


class Wav2Vec2(SpeechEncoderFamily):
    config_class = "Wav2Vec2Config"
    heads = {"asr": "Wav2Vec2ForCTC"}
    tasks = {"asr": "garden.tasks.audio:SpeechRecognition"}
    base = "wav2vec2"


"""Wav2Vec2 for garden: transformers' Wav2Vec2ForCTC and its processor, in the speech-encoder shape
garden's core describes once (:class:`garden.families.speech.SpeechEncoderFamily`)."""

from __future__ import annotations

from garden.families.speech import SpeechEncoderFamily


class Wav2Vec2(SpeechEncoderFamily):
    architecture = "wav2vec2"

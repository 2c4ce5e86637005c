"""Wav2Vec2 for garden: transformers' Wav2Vec2ForCTC and its processor, in the speech-encoder shape
garden's core describes once (:class:`garden.families.speech.SpeechEncoderFamily`)."""

from __future__ import annotations

from garden.families.speech import SpeechEncoderFamily


class Wav2Vec2(SpeechEncoderFamily):
    config_class = "Wav2Vec2Config"
    heads = {"asr": "Wav2Vec2ForCTC"}
    base = "wav2vec2"
    feature_extractor_class = "Wav2Vec2FeatureExtractor"
    ctc_tokenizer_class = "Wav2Vec2CTCTokenizer"
    processor_class = "Wav2Vec2Processor"

"""HuBERT for garden: transformers' HubertForCTC and HubertForSequenceClassification.

HuBERT is wav2vec 2.0's architecture trained on a different objective, so it shares the
speech processor and stage blocks of ``garden_wav2vec2`` (as transformers' modular HuBERT
reuses wav2vec2's modules).
"""

from __future__ import annotations

from garden_wav2vec2.family import SpeechEncoderFamily


class Hubert(SpeechEncoderFamily):
    config_class = "HubertConfig"
    heads = {"asr": "HubertForCTC", "audio-classify": "HubertForSequenceClassification"}
    tasks = {"asr": "garden.tasks.audio:SpeechRecognition", "audio-classify": "garden.tasks.audio:AudioClassification"}
    base = "hubert"

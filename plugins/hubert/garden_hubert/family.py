"""HuBERT for garden: transformers' HubertForCTC and HubertForSequenceClassification.

HuBERT is wav2vec 2.0's architecture trained on a different objective: the speech-encoder shape
of garden's core (:class:`garden.families.speech.SpeechEncoderFamily`) with wav2vec 2.0's
processor classes, as transformers' own HuBERT checkpoints use them.
"""

from __future__ import annotations

from garden.families.speech import SpeechEncoderFamily


class Hubert(SpeechEncoderFamily):
    architecture = "hubert"
    counts_feature_encoder = False  # optimum's HuBERT: layers_per_ipu counts Transformer layers only

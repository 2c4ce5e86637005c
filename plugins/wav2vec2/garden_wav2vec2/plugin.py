"""garden plugin: wav2vec 2.0 (Baevski et al., 2020), speech recognition with CTC."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

#: 7 narrow conv layers (the full 320x downsampling, 50 frames a second), 2 Transformer layers;
#: SpecAugment and LayerDrop off so half-second utterances are never masked away
TINY = {
    "vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 64, "conv_dim": (32,) * 7, "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4, "mask_time_prob": 0.0, "layerdrop": 0.0,
    "feat_extract_norm": "group", "do_stable_layer_norm": False,
}
BASE = {
    "vocab_size": 32, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "conv_dim": (512,) * 7, "feat_extract_norm": "group",
    "do_stable_layer_norm": False, "conv_bias": False,
}

WAV2VEC2 = ModelEntry(
    name="wav2vec2",
    family="wav2vec2",
    domain="speech",
    description="wav2vec 2.0: a conv feature encoder over raw 16 kHz audio and a Transformer, CTC head",
    tasks=("asr",),
    builder="garden_wav2vec2.family:Wav2Vec2",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("wav2vec2", "tiny"),
                config=TINY,
                description="7 conv layers 32 wide, 2 Transformer layers 32 wide; for tests and smoke runs"),
        Variant("base", hub_id="facebook/wav2vec2-base-960h", revision="22aad52d435eb6dbaf354bdad9b0da84ce7d6156",
                **DECLARED.sizes("wav2vec2", "base"),
                config=BASE,
                description="self-supervised on LibriSpeech 960 h, CTC fine-tuned on its transcripts"),
    ),
    default="base",
    paper="wav2vec 2.0: A Framework for Self-Supervised Learning of Speech Representations",
    paper_url="https://arxiv.org/abs/2006.11477",
    license="apache-2.0",
    # Layers are the 7 conv layers, the positional embedding, the 12 Transformer layers and the CTC
    # head (21), as optimum-graphcore's PipelinedWav2Vec2ForCTC counts them: Graphcore/wav2vec2-ctc-
    # base-ipu's list. (Graphcore/wav2vec2-base-ipu's 8-IPU list is for pre-training, another head.)
    layouts={4: (9, 4, 4, 4)},
    results=DECLARED.results("wav2vec2"),
)


@hookimpl
def garden_models():
    return [WAV2VEC2]


@hookimpl
def garden_config_dir():
    return "pkg://garden_wav2vec2.conf"

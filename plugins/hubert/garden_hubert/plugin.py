"""garden plugin: HuBERT (Hsu et al., 2021), speech recognition with CTC and audio classification."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

#: shaped like hubert-large (layer-normed convs, pre-norm Transformer), 32 wide; SpecAugment and
#: LayerDrop off so half-second utterances are never masked away
TINY = {
    "vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 64, "conv_dim": (32,) * 7, "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4, "mask_time_prob": 0.0, "layerdrop": 0.0,
    "feat_extract_norm": "layer", "do_stable_layer_norm": True, "conv_bias": True,
}
BASE = {
    "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
    "conv_dim": (512,) * 7, "feat_extract_norm": "group", "do_stable_layer_norm": False, "conv_bias": False,
}
LARGE = {
    "vocab_size": 32, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
    "intermediate_size": 4096, "conv_dim": (512,) * 7, "feat_extract_norm": "layer",
    "do_stable_layer_norm": True, "conv_bias": True,
}

HUBERT = ModelEntry(
    name="hubert",
    family="hubert",
    domain="speech",
    description="HuBERT: wav2vec 2.0's conv encoder and Transformer, pre-trained to predict hidden units",
    tasks=("asr", "audio-classify"),
    builder="garden_hubert.family:Hubert",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("hubert", "tiny"),
                config=TINY,
                description="7 conv layers 32 wide, 2 pre-norm Transformer layers 32 wide; for tests and smoke runs"),
        # the Hub's safetensors conversion of main (refs/pr/2 on dba3bb0); see docs/registry.md
        Variant("base", hub_id="facebook/hubert-base-ls960", revision="af46f65f540dc3ca7aa59f46c6c3d5dbb4374fa8",
                **DECLARED.sizes("hubert", "base"),
                config=BASE,
                description="self-supervised on LibriSpeech 960 h, no task head (params: the encoder)"),
        # the Hub's safetensors conversion of main (refs/pr/1 on ece5fab); see docs/registry.md
        Variant("large", hub_id="facebook/hubert-large-ls960-ft", revision="ba42e7f7a888fd65f7af7849c452e3e7d5216aad",
                **DECLARED.sizes("hubert", "large"),
                config=LARGE,
                description="self-supervised on Libri-Light 60k h, CTC fine-tuned on LibriSpeech 960 h"),
    ),
    default="base",
    paper="HuBERT: Self-Supervised Speech Representation Learning by Masked Prediction of Hidden Units",
    paper_url="https://arxiv.org/abs/2106.07447",
    license="apache-2.0",
    # Layers are the Transformer layers, as optimum-graphcore's pipelined HuBERT counts them (the
    # feature encoder stays on IPU 0, the head on the last IPU): Graphcore/hubert-base-ipu's list.
    layouts={4: (0, 4, 4, 4)},
    results=DECLARED.results("hubert"),
)


@hookimpl
def garden_models():
    return [HUBERT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_hubert.conf"

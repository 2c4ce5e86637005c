"""garden plugin: DeBERTa-v3 (He et al., 2021), disentangled attention with ELECTRA-style pre-training."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

BASE = {
    "vocab_size": 128100, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 0, "relative_attention": True,
    "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": True, "pos_att_type": ["p2c", "c2p"],
    "layer_norm_eps": 1e-7, "max_relative_positions": -1, "position_biased_input": False,
    "pooler_hidden_size": 768, "pooler_dropout": 0, "pooler_hidden_act": "gelu", "pad_token_id": 0,
}
TINY = {
    **BASE, "vocab_size": 1000, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 64, "max_position_embeddings": 256, "position_buckets": 32, "pooler_hidden_size": 32,
}

DEBERTA = ModelEntry(
    name="deberta",
    family="deberta",
    domain="nlp",
    description="DeBERTa-v3: disentangled content/position attention, replaced-token-detection pre-training",
    tasks=("classify", "qa"),
    builder="garden_deberta.family:DeBERTa",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("deberta", "tiny"),
                config=TINY,
                description="2 layers, 32 wide, 1k Unigram vocabulary, 32 relative-position buckets; for tests"),
        Variant("base", hub_id="microsoft/deberta-v3-base", revision="8ccc9b6f36199bec6961081d44eb72fb3f7353f3",
                **DECLARED.sizes("deberta", "base"),
                config=BASE, description="12 layers, 768 wide, 128k vocabulary, English"),
    ),
    default="base",
    paper="DeBERTaV3: Improving DeBERTa using ELECTRA-Style Pre-Training with Gradient-Disentangled Embedding Sharing",
    paper_url="https://arxiv.org/abs/2111.09543",
    license="mit",
    results=DECLARED.results("deberta"),
)


@hookimpl
def garden_models():
    return [DEBERTA]


@hookimpl
def garden_config_dir():
    return "pkg://garden_deberta.conf"

"""garden plugin: RoBERTa (Liu et al., 2019), BERT trained longer on more data, without next-sentence prediction."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

TINY = {
    "vocab_size": 1000, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 64, "max_position_embeddings": 258, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
    "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
}
BASE = {
    "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
    "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
}
LARGE = {**BASE, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}

ROBERTA = ModelEntry(
    name="roberta",
    family="roberta",
    domain="nlp",
    description="RoBERTa: a robustly optimised BERT, byte-level BPE, pre-trained on 160 GB of English text",
    tasks=("classify", "mlm", "qa"),
    builder="garden_roberta.family:RoBERTa",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("roberta", "tiny"),
                config=TINY,
                description="2 layers, 32 wide, 1k byte-level BPE vocabulary; for tests and smoke runs"),
        Variant("base", hub_id="FacebookAI/roberta-base", revision="bc2764f8af2e92b6eb5679868df33e224075ca68",
                **DECLARED.sizes("roberta", "base"),
                config=BASE, description="12 layers, 768 wide, English"),
        Variant("large", hub_id="FacebookAI/roberta-large", revision="722cf37b1afa9454edce342e7895e588b6ff1d59",
                **DECLARED.sizes("roberta", "large"),
                config=LARGE,
                description="24 layers, 1024 wide, English; Graphcore's 4-IPU layout: (3, 7, 7, 7)"),
    ),
    default="base",
    paper="RoBERTa: A Robustly Optimized BERT Pretraining Approach",
    paper_url="https://arxiv.org/abs/1907.11692",
    license="mit",
    results=DECLARED.results("roberta"),
)


@hookimpl
def garden_models():
    return [ROBERTA]


@hookimpl
def garden_config_dir():
    return "pkg://garden_roberta.conf"

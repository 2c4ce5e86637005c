"""garden plugin: BERT (Devlin et al., 2019), the encoder Graphcore's IPU benchmarks were built on."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

TINY = {
    "vocab_size": 1000, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 64, "max_position_embeddings": 256,
}
BASE = {
    "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "max_position_embeddings": 512, "type_vocab_size": 2,
}
LARGE = {**BASE, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}

BERT = ModelEntry(
    name="bert",
    family="bert",
    domain="nlp",
    description="BERT: a bidirectional Transformer encoder pre-trained by masked language modelling",
    tasks=("classify", "token-classify", "qa", "mlm"),
    builder="garden_bert.family:BERT",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("bert", "tiny"),
                config=TINY,
                description="2 layers, 32 wide, 1k WordPiece vocabulary; for tests and smoke runs"),
        Variant("base", hub_id="google-bert/bert-base-uncased", revision="86b5e0934494bd15c9632b12f734a8a67f723594",
                **DECLARED.sizes("bert", "base"),
                config=BASE,
                description="12 layers, 768 wide, uncased English (BookCorpus + Wikipedia); 4 IPUs: (0, 4, 4, 4)"),
        Variant("large", hub_id="google-bert/bert-large-uncased", revision="6da4b6a26a1877e173fca3225479512db81a5e5b",
                **DECLARED.sizes("bert", "large"),
                config=LARGE,
                description="24 layers, 1024 wide, uncased English; Graphcore's 4-IPU layout: (3, 7, 7, 7)"),
    ),
    default="base",
    paper="BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    paper_url="https://arxiv.org/abs/1810.04805",
    license="apache-2.0",
    layouts={4: (0, 4, 4, 4)},
    results=DECLARED.results("bert"),
)


@hookimpl
def garden_models():
    return [BERT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_bert.conf"

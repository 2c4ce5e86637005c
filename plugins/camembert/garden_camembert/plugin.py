"""garden plugin: CamemBERT (Martin et al., 2020), a RoBERTa for French."""

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
    "vocab_size": 32005, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
    "pad_token_id": 1, "bos_token_id": 5, "eos_token_id": 6,
}

CAMEMBERT = ModelEntry(
    name="camembert",
    family="camembert",
    domain="nlp",
    description="CamemBERT: RoBERTa pre-trained on 138 GB of French web text (OSCAR), SentencePiece vocabulary",
    tasks=("classify", "mlm"),
    builder="garden_camembert.family:CamemBERT",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("camembert", "tiny"),
                config=TINY,
                description="2 layers, 32 wide, 1k Unigram vocabulary trained on French sentences; for tests"),
        # main's merge of the Hub's safetensors conversion (#3); docs/registry.md says where it was confirmed
        Variant("base", hub_id="almanach/camembert-base", revision="be8cbf7fcc01247489f4dff362aee0443b9a3d86",
                **DECLARED.sizes("camembert", "base"),
                config=BASE,
                description="12 layers, 768 wide, French"),
    ),
    default="base",
    paper="CamemBERT: a Tasty French Language Model",
    paper_url="https://arxiv.org/abs/1911.03894",
    license="mit",
    results=DECLARED.results("camembert"),
)


@hookimpl
def garden_models():
    return [CAMEMBERT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_camembert.conf"

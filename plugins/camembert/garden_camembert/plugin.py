"""garden plugin: CamemBERT (Martin et al., 2020), a RoBERTa for French."""

from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

# where bench/results.py measured the results below
MEASURED_ON = "Intel(R) Xeon(R) Processor, 2 cores, 1 process"

# what registry measure counted FLOPs on: the first example of the first task's default data
FLOPS_INPUT = "input_ids 1x26, attention_mask 1x26"

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
                params=39_458, flops=854_144,
                flops_input=FLOPS_INPUT, file_size=162_320,
                config=TINY,
                description="2 layers, 32 wide, 1k Unigram vocabulary trained on French sentences; for tests"),
        # main's merge of the Hub's safetensors conversion (#3); docs/registry.md says where it was confirmed
        Variant("base", hub_id="almanach/camembert-base", revision="be8cbf7fcc01247489f4dff362aee0443b9a3d86",
                params=110_623_490, flops=4_417_784_832,
                flops_input=FLOPS_INPUT, file_size=442_518_104,
                config=BASE,
                description="12 layers, 768 wide, French"),
    ),
    default="base",
    paper="CamemBERT: a Tasty French Language Model",
    paper_url="https://arxiv.org/abs/1911.03894",
    license="mit",
    results=(
        {"task": "classify", "variant": "tiny",
         "dataset": "garden's french_sentences.jsonl, held-out split",
         "metrics": {"accuracy": 0.5125, "loss": 0.6919},
         "throughput": 2196.4, "hardware": MEASURED_ON, "source": "python bench/results.py"},
    ),
)


@hookimpl
def garden_models():
    return [CAMEMBERT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_camembert.conf"

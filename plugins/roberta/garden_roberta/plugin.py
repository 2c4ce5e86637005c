"""garden plugin: RoBERTa (Liu et al., 2019), BERT trained longer on more data, without next-sentence prediction."""

from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

# where bench/results.py measured the results below
MEASURED_ON = "Intel(R) Xeon(R) Processor, 2 cores, 1 process"

# what registry measure counted FLOPs on: the first example of the first task's default data
FLOPS_INPUT = "input_ids 1x10, attention_mask 1x10"

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
                params=58_562, flops=329_856,
                flops_input=FLOPS_INPUT, file_size=238_752,
                config=TINY,
                description="2 layers, 32 wide, 1k byte-level BPE vocabulary; for tests and smoke runs"),
        Variant("base", hub_id="FacebookAI/roberta-base", revision="bc2764f8af2e92b6eb5679868df33e224075ca68",
                params=124_647_170, flops=1_699_875_840,
                flops_input=FLOPS_INPUT, file_size=498_612_824,
                config=BASE, description="12 layers, 768 wide, English"),
        Variant("large", hub_id="FacebookAI/roberta-large", revision="722cf37b1afa9454edce342e7895e588b6ff1d59",
                params=355_361_794, flops=6_041_899_008,
                flops_input=FLOPS_INPUT, file_size=1_421_495_416,
                config=LARGE,
                description="24 layers, 1024 wide, English; Graphcore's 4-IPU layout: (3, 7, 7, 7)"),
    ),
    default="base",
    paper="RoBERTa: A Robustly Optimized BERT Pretraining Approach",
    paper_url="https://arxiv.org/abs/1907.11692",
    license="mit",
    results=(
        {"task": "classify", "variant": "tiny",
         "dataset": "garden's sst2_like.jsonl, held-out split",
         "metrics": {"accuracy": 0.9167, "loss": 0.2849},
         "throughput": 2250.5, "hardware": MEASURED_ON, "source": "python bench/results.py"},
    ),
)


@hookimpl
def garden_models():
    return [ROBERTA]


@hookimpl
def garden_config_dir():
    return "pkg://garden_roberta.conf"

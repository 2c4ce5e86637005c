"""garden plugin: GPT-2 (Radford et al., 2019), a decoder-only language model."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

# ids 0: the one special token of the tokenizer a weights=random run trains (<|endoftext|>)
TINY = {"n_embd": 32, "n_layer": 2, "n_head": 2, "vocab_size": 1000, "n_positions": 256,
        "bos_token_id": 0, "eos_token_id": 0}
SMALL = {"n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}
MEDIUM = {"n_embd": 1024, "n_layer": 24, "n_head": 16, "vocab_size": 50257, "n_positions": 1024}

GPT2 = ModelEntry(
    name="gpt2",
    family="gpt2",
    domain="nlp",
    description="GPT-2: a decoder-only Transformer language model for text generation",
    tasks=("causal-lm", "generate", "classify"),
    builder="garden_gpt2.family:GPT2",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("gpt2", "tiny"),
                config=TINY, description="2 layers, 32 wide, 1,000-token vocabulary; for tests and smoke runs"),
        Variant("small", hub_id="openai-community/gpt2", revision="607a30d783dfa663caf39e06633721c8d4cfcd7e",
                **DECLARED.sizes("gpt2", "small"),
                config=SMALL, description="124M, 12 layers, trained on WebText"),
        Variant("medium", hub_id="openai-community/gpt2-medium", revision="6dcaa7a952f72f9298047fd5137cd6e4f05f41da",
                **DECLARED.sizes("gpt2", "medium"),
                config=MEDIUM,
                description="355M, 24 layers, trained on WebText"),
    ),
    default="small",
    paper="Language Models are Unsupervised Multitask Learners",
    paper_url="https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf",
    license="mit",
    # graphcore/examples nlp/gpt2/pytorch: GPT-2 small pre-training, embeddings and LM head on IPU 0
    layouts={4: (0, 4, 4, 4)},
    results=DECLARED.results("gpt2"),
)


@hookimpl
def garden_models():
    return [GPT2]


@hookimpl
def garden_config_dir():
    return "pkg://garden_gpt2.conf"

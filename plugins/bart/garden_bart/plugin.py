"""garden plugin: BART (Lewis et al., 2019), a denoising encoder-decoder for generation and understanding."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

TINY = {"vocab_size": 1000, "d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
        "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 256}
BASE = {"vocab_size": 50265, "d_model": 768, "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 12,
        "decoder_attention_heads": 12, "encoder_ffn_dim": 3072, "decoder_ffn_dim": 3072,
        "max_position_embeddings": 1024}
LARGE = {"vocab_size": 50265, "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12,
         "encoder_attention_heads": 16, "decoder_attention_heads": 16, "encoder_ffn_dim": 4096,
         "decoder_ffn_dim": 4096, "max_position_embeddings": 1024}

BART = ModelEntry(
    name="bart",
    family="bart",
    domain="nlp",
    description="BART: a BERT-like encoder and GPT-like decoder pre-trained to reconstruct corrupted text",
    tasks=("summarize", "classify"),
    builder="garden_bart.family:BART",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("bart", "tiny"),
                config=TINY,
                description="2+2 layers, 32 wide, 1,000-token vocabulary; for tests and smoke runs"),
        Variant("base", hub_id="facebook/bart-base", revision="aadd2ab0ae0c8268c7c9693540e9904811f36177",
                **DECLARED.sizes("bart", "base"),
                config=BASE,
                description="6+6 layers, 768 wide; pre-trained only (fine-tune for summaries)"),
        Variant("large", hub_id="facebook/bart-large", revision="cb48c1365bd826bd521f650dc2e0940aee54720c",
                **DECLARED.sizes("bart", "large"),
                config=LARGE,
                description="12+12 layers, 1024 wide; pre-trained only (fine-tune for summaries)"),
    ),
    default="base",
    paper="BART: Denoising Sequence-to-Sequence Pre-training for Natural Language Generation, Translation, "
          "and Comprehension",
    paper_url="https://arxiv.org/abs/1910.13461",
    license="apache-2.0",
    results=DECLARED.results("bart"),
)


@hookimpl
def garden_models():
    return [BART]


@hookimpl
def garden_config_dir():
    return "pkg://garden_bart.conf"

"""garden plugin: T5 (Raffel et al., 2020), every text task as text-to-text with an encoder-decoder."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

TINY = {"vocab_size": 1000, "d_model": 32, "d_ff": 64, "d_kv": 16, "num_heads": 2, "num_layers": 2,
        "num_decoder_layers": 2, "decoder_start_token_id": 0}
SMALL = {"vocab_size": 32128, "d_model": 512, "d_ff": 2048, "d_kv": 64, "num_heads": 8, "num_layers": 6,
         "num_decoder_layers": 6, "decoder_start_token_id": 0}
BASE = {"vocab_size": 32128, "d_model": 768, "d_ff": 3072, "d_kv": 64, "num_heads": 12, "num_layers": 12,
        "num_decoder_layers": 12, "decoder_start_token_id": 0}

T5 = ModelEntry(
    name="t5",
    family="t5",
    domain="nlp",
    description="T5: an encoder-decoder that casts every task as text to text, chosen by a prefix",
    tasks=("text2text",),
    builder="garden_t5.family:T5",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("t5", "tiny"),
                config=TINY,
                description="2+2 layers, 32 wide, 1,000-token vocabulary; for tests and smoke runs"),
        Variant("small", hub_id="google-t5/t5-small", revision="df1b051c49625cf57a3d0d8d3863ed4d13564fe4",
                **DECLARED.sizes("t5", "small"),
                config=SMALL,
                description="6+6 layers, 512 wide; C4 plus supervised mixture (translates en->fr/de/ro, summarizes)"),
        Variant("base", hub_id="google-t5/t5-base", revision="a9723ea7f1b39c1eae772870f3b547bf6ef7e6c1",
                **DECLARED.sizes("t5", "base"),
                config=BASE,
                description="12+12 layers, 768 wide; C4 plus supervised mixture"),
    ),
    default="small",
    paper="Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
    paper_url="https://arxiv.org/abs/1910.10683",
    license="apache-2.0",
    results=DECLARED.results("t5"),
)


@hookimpl
def garden_models():
    return [T5]


@hookimpl
def garden_config_dir():
    return "pkg://garden_t5.conf"

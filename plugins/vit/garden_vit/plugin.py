"""garden plugin: the Vision Transformer family (Dosovitskiy et al., 2021)."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

TINY = {
    "image_size": 32, "patch_size": 4, "hidden_size": 64, "num_hidden_layers": 4,
    "num_attention_heads": 4, "intermediate_size": 128,
}
LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}

VIT = ModelEntry(
    name="vit",
    family="vit",
    domain="vision",
    description="Vision Transformer: an image as a sequence of 16x16 patches through a BERT-style encoder",
    tasks=("classify",),
    builder="garden_vit.family:ViT",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("vit", "tiny"),
                config=TINY, description="4 layers, 64 wide, 32x32 input; for tests and smoke runs"),
        Variant("base", hub_id="google/vit-base-patch16-224", revision="3f49326eb077187dfe1c2a2bb15fbd74e6ab91e3",
                **DECLARED.sizes("vit", "base"),
                description="ImageNet-21k pre-trained, ImageNet-1k fine-tuned, 224x224"),
        # the Hub's safetensors conversion of main (refs/pr/2 on 9e2727f); see docs/registry.md
        Variant("large", hub_id="google/vit-large-patch16-224", revision="8041a8c7b0517e25d4cfa63f2e2e35b50b853386",
                **DECLARED.sizes("vit", "large"),
                config=LARGE,
                description="ImageNet-21k pre-trained, ImageNet-1k fine-tuned, 224x224"),
    ),
    default="base",
    paper="An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale",
    paper_url="https://arxiv.org/abs/2010.11929",
    license="apache-2.0",
    layouts={4: (3, 3, 3, 3)},
    results=DECLARED.results("vit"),
)


@hookimpl
def garden_models():
    return [VIT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_vit.conf"

"""garden plugin: the Vision Transformer family (Dosovitskiy et al., 2021)."""

from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

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
        Variant("tiny", params=208_010, config=TINY, description="4 layers, 64 wide, 32x32 input; for tests and smoke runs"),
        Variant("base", hub_id="google/vit-base-patch16-224", revision="3f49326", params=86_567_656,
                description="ImageNet-21k pre-trained, ImageNet-1k fine-tuned, 224x224"),
        Variant("large", hub_id="google/vit-large-patch16-224", params=304_326_632, config=LARGE,
                description="ImageNet-21k pre-trained, ImageNet-1k fine-tuned, 224x224"),
    ),
    default="base",
    paper="An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale",
    paper_url="https://arxiv.org/abs/2010.11929",
    license="apache-2.0",
    layouts={4: (3, 3, 3, 3)},
)


@hookimpl
def garden_models():
    return [VIT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_vit.conf"

"""garden plugin: the Vision Transformer family (Dosovitskiy et al., 2021)."""

from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

# where bench/results.py measured the results below
MEASURED_ON = "Intel(R) Xeon(R) Processor, 2 cores, 1 process"

# what registry measure counted FLOPs on: the first example of the first task's default data
TINY_INPUT = "pixel_values 1x3x32x32"
FLOPS_INPUT = "pixel_values 1x3x224x224"

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
                params=142_026, flops=17_433_856,
                flops_input=TINY_INPUT, file_size=575_872,
                config=TINY, description="4 layers, 64 wide, 32x32 input; for tests and smoke runs"),
        Variant("base", hub_id="google/vit-base-patch16-224", revision="3f49326eb077187dfe1c2a2bb15fbd74e6ab91e3",
                params=85_806_346, flops=33_695_480_832,
                flops_input=FLOPS_INPUT, file_size=343_248_584,
                description="ImageNet-21k pre-trained, ImageNet-1k fine-tuned, 224x224"),
        # the Hub's safetensors conversion of main (refs/pr/2 on 9e2727f); see docs/registry.md
        Variant("large", hub_id="google/vit-large-patch16-224", revision="8041a8c7b0517e25d4cfa63f2e2e35b50b853386",
                params=303_311_882, flops=119_292_317_696,
                flops_input=FLOPS_INPUT, file_size=1_213_294_072,
                config=LARGE,
                description="ImageNet-21k pre-trained, ImageNet-1k fine-tuned, 224x224"),
    ),
    default="base",
    paper="An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale",
    paper_url="https://arxiv.org/abs/2010.11929",
    license="apache-2.0",
    layouts={4: (3, 3, 3, 3)},
    results=(
        {"task": "classify", "variant": "tiny",
         "dataset": "scikit-learn digits (1,797 8x8 scans), held-out split",
         "metrics": {"accuracy": 0.8942, "loss": 0.3747},
         "throughput": 909.5, "hardware": MEASURED_ON, "source": "python bench/results.py"},
    ),
)


@hookimpl
def garden_models():
    return [VIT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_vit.conf"

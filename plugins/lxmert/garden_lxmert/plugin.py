"""garden plugin: LXMERT (Tan and Bansal, 2019), visual question answering over image regions."""

from garden.declared import Declared
from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: results.json (bench/results.py --write) and measurements.json (registry measure --write)
DECLARED = Declared.beside(__file__)

#: 64-wide region features keep runs fast; vocab_size and num_qa_labels are those of the shipped
#: questions (a run sets both from its data)
TINY = {
    "vocab_size": 98, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
    "l_layers": 2, "r_layers": 1, "x_layers": 1, "visual_feat_dim": 64, "max_position_embeddings": 64,
    "num_qa_labels": 14,
}
BASE = {
    "vocab_size": 30522, "hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072,
    "l_layers": 9, "r_layers": 5, "x_layers": 5, "visual_feat_dim": 2048, "visual_pos_dim": 4,
    "max_position_embeddings": 512, "num_qa_labels": 9500,
}

LXMERT = ModelEntry(
    name="lxmert",
    family="lxmert",
    domain="multimodal",
    description="LXMERT: language, object-region and cross-modality Transformers; answers questions about images",
    tasks=("vqa",),
    builder="garden_lxmert.family:Lxmert",
    variants=(
        Variant("tiny",
                **DECLARED.sizes("lxmert", "tiny"),
                config=TINY,
                description="2 language, 1 vision, 1 cross layer, 32 wide, 64-wide region features; for tests"),
        # main's head; no safetensors file exists for it on the Hub (see docs/registry.md)
        Variant("base", hub_id="unc-nlp/lxmert-base-uncased", revision="628572c96242d1496147beec1c13a1bb7869605d",
                **DECLARED.sizes("lxmert", "base"),
                config=BASE,
                description="pre-trained on COCO and Visual Genome captions and VQA; 36 Faster R-CNN regions of 2048; "
                            "the Hub has only pytorch_model.bin for it: run with weights.allow_pickle=true",
                weights_format="pickle"),
    ),
    default="base",
    paper="LXMERT: Learning Cross-Modality Encoder Representations from Transformers",
    paper_url="https://arxiv.org/abs/1908.07490",
    license="mit",
    # Layers are the 9 language, 5 vision and 5 cross-modality layers in that order (19).
    # optimum-graphcore's PipelinedLxmertForQuestionAnswering puts the embeddings on IPU 0 and
    # each kind of layer on its own IPU (1, 2, 3), with the pooler and answer head on IPU 3.
    layouts={4: (0, 9, 5, 5)},
    results=DECLARED.results("lxmert"),
)


@hookimpl
def garden_models():
    return [LXMERT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_lxmert.conf"

"""garden plugin: LXMERT (Tan and Bansal, 2019), visual question answering over image regions."""

from garden.entries import ModelEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

# where bench/results.py measured the results below
MEASURED_ON = "Intel(R) Xeon(R) Processor, 2 cores, 1 process"

# what registry measure counted FLOPs on: the first example of the first task's default data
QUESTION = "input_ids 1x8, attention_mask 1x8, token_type_ids 1x8"
TINY_INPUT = f"{QUESTION}, visual_feats 1x36x64, visual_pos 1x36x4, visual_attention_mask 1x36"
BASE_INPUT = f"{QUESTION}, visual_feats 1x36x2048, visual_pos 1x36x4, visual_attention_mask 1x36"

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
                params=58_894, flops=2_528_000,
                flops_input=TINY_INPUT, file_size=248_056,
                config=TINY,
                description="2 language, 1 vision, 1 cross layer, 32 wide, 64-wide region features; for tests"),
        # main's head; no safetensors file exists for it on the Hub (see docs/registry.md)
        Variant("base", hub_id="unc-nlp/lxmert-base-uncased", revision="628572c96242d1496147beec1c13a1bb7869605d",
                params=209_142_542, flops=7_888_078_848,
                flops_input=BASE_INPUT, file_size=836_626_192,
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
    results=(
        {"task": "vqa", "variant": "tiny",
         "dataset": "garden shapes VQA (238 questions, 80 scenes), held-out split",
         "metrics": {"accuracy": 0.3958, "loss": 1.325},
         "throughput": 1227.0, "hardware": MEASURED_ON, "source": "python bench/results.py"},
    ),
)


@hookimpl
def garden_models():
    return [LXMERT]


@hookimpl
def garden_config_dir():
    return "pkg://garden_lxmert.conf"

"""``model=hf:<id>``: architectures no plugin covers, built by transformers' Auto classes, their
stage blocks found by introspection and cut by pipelining's tracer, run end to end from a
folder and from the local Hub server (tests/hubserver.py) under pinned ids: train, infer, plan,
a 2-stage pipeline whose SGD step equals the local one, resume; and a fixed sample of the
coverage run (``python -m garden coverage``) with every check passing.

The checkpoints are tiny and made here: ALBERT (one layer's weights run at every depth),
Llama (rotary embeddings and a causal mask cross the stage cut) and ConvNeXt (stages of
different widths, no attention), each with a tokenizer or image processor of its own.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import garden_cli
from garden.pytest_plugin import garden_process
from equivalence import SGD_STEPS, assert_same_steps, initial, mutation_env, read_run, step_mismatches
from hubserver import HubServer

#: the slow machines this suite runs on: a run of a tiny model can take minutes under load
SLOW = 900


def trained_tokenizer(kind: str, tokens: dict, template: tuple[str, str] | None = None, lowercase: bool = False):
    """A 500-token tokenizer trained on garden's shipped text, as a checkpoint's own tokenizer."""
    from transformers import PreTrainedTokenizerFast

    from garden.text import TokenizerRecipe

    raw = TokenizerRecipe(kind, tokens, ("sst2_like.jsonl", "lm_corpus.txt"), 500, template, lowercase).train()
    return PreTrainedTokenizerFast(tokenizer_object=raw, model_max_length=128, **tokens)


def save_albert(folder: Path) -> Path:
    import torch
    from transformers import AlbertConfig, AlbertForMaskedLM

    tokenizer = trained_tokenizer("wordpiece", {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]",
                                                "sep_token": "[SEP]", "mask_token": "[MASK]"},
                                  ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1"), lowercase=True)
    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
                          pad_token_id=tokenizer.pad_token_id, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0)
    torch.manual_seed(0)
    AlbertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_llama(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    end = "<|endoftext|>"
    tokenizer = trained_tokenizer("bpe", {"bos_token": end, "eos_token": end, "unk_token": end, "pad_token": end})
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, intermediate_size=64, max_position_embeddings=128,
                         bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.eos_token_id)
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_convnext(folder: Path) -> Path:
    import torch
    from transformers import ConvNextConfig, ConvNextForImageClassification, ConvNextImageProcessorPil

    config = ConvNextConfig(num_channels=3, num_stages=3, hidden_sizes=[8, 16, 32], depths=[1, 1, 2], image_size=32,
                            num_labels=10)
    torch.manual_seed(0)
    ConvNextForImageClassification(config).save_pretrained(folder)
    ConvNextImageProcessorPil(size={"shortest_edge": 32}, crop_pct=1.0).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("checkpoints")
    return {"albert": save_albert(root / "albert"), "llama": save_llama(root / "llama"),
            "convnext": save_convnext(root / "convnext")}


def hub_env(server: HubServer, home: Path, **extra) -> dict:
    return {"HF_ENDPOINT": server.url, "HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1", **extra}


# -- naming, refusing -------------------------------------------------------------------------------


def test_model_hf_composes_with_the_repo_as_the_name_and_the_revision_apart():
    from garden.config import compose

    cfg = compose(["model=hf:org/name@v1.0", "task=classify"])  # nothing is read before a run
    assert (cfg.model.name, cfg.model.revision) == ("hf:org/name", "v1.0")


def test_a_task_the_architecture_has_no_head_for_names_the_tasks_it_has():
    from transformers import BertConfig

    from garden.errors import UnknownTaskError
    from garden.families.auto import check_task, entry_for

    entry = entry_for("hf:org/tiny-bert", BertConfig().to_dict())
    with pytest.raises(UnknownTaskError) as caught:
        check_task(entry, "asr")
    message = str(caught.value)
    assert "AutoModelForCTC" in message and "its tasks are: classify, token-classify, qa, mlm, causal-lm" in message
    assert "\n" not in message


def test_probe_images_take_the_vision_towers_size_when_the_model_has_no_size_of_its_own():
    """CLIP-like models keep ``image_size`` in ``vision_config``: a 224-pixel probe would not fit."""
    from transformers import CLIPConfig, ViTConfig

    from garden.families.auto import image_size

    assert image_size(CLIPConfig(vision_config={"image_size": 32})) == (32, 32)
    assert image_size(ViTConfig(image_size=48)) == (48, 48)


def test_a_checkpoint_that_needs_its_repos_code_is_refused_in_one_line():
    from garden.errors import ConfigError
    from garden.families.auto import entry_for

    config = {"model_type": "my-model", "auto_map": {"AutoModel": "modeling_mine.MyModel"}}
    with pytest.raises(ConfigError, match="needs trust_remote_code .*never runs a repo's code") as caught:
        entry_for("hf:someone/custom", config)
    assert "\n" not in str(caught.value)


def test_two_layer_lists_of_a_similar_size_are_named_with_the_override_that_picks_one():
    import torch

    from garden.errors import ConfigError
    from garden.families.traced import choose_layers

    class TwoTowers(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.text = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))
            self.image = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(2))

    with pytest.raises(ConfigError) as caught:
        choose_layers(TwoTowers())
    assert "text (3 x Linear, 216 parameters); image (2 x Linear, 144 parameters)" in str(caught.value)
    assert "model.blocks=<path>" in str(caught.value)
    assert [c.path for c in choose_layers(TwoTowers(), "image")] == ["image"]


def test_lists_of_a_similar_size_are_taken_by_how_the_forward_calls_them():
    """A speech model's convolutions then its transformer layers: both, in call order; XLM's
    parallel ``attentions[i]``/``ffns[i]``: one layer per round; a tower the task never runs: left out."""
    import torch

    from garden.errors import ConfigError
    from garden.families.traced import LayerList, choose_layers, rehearse

    class Model(torch.nn.Module):
        def __init__(self, mode: str) -> None:
            super().__init__()
            self.mode = mode
            self.convs = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))
            self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.mode == "one after the other":
                for conv in self.convs:
                    x = conv(x)
                for layer in self.layers:
                    x = layer(x)
            elif self.mode == "in rounds":
                for layer, conv in zip(self.layers, self.convs):
                    x = conv(layer(x))
            elif self.mode == "one tower":
                for conv in self.convs:
                    x = conv(x)
            else:  # the same list twice, out of turn
                for n in (0, 1, 0, 2, 1, 2):
                    x = self.layers[n](x) if n % 2 else self.convs[n](x)
            return x

    def chosen(mode: str) -> list[str]:
        model = Model(mode)

        def calls(lists: list[LayerList]) -> list[int]:
            return [n for n, _ in rehearse(model, model, lists, (torch.randn(2, 8),))[1]]

        return [c.path for c in choose_layers(model, calls=calls)]

    assert chosen("one after the other") == ["convs", "layers"]
    assert chosen("in rounds") == ["layers"]
    assert chosen("one tower") == ["convs"]
    with pytest.raises(ConfigError, match="2 lists of repeated layers of similar size"):
        chosen("out of turn")


def test_a_list_of_lists_offers_its_inner_lists_which_run_one_after_the_other():
    """Funnel keeps ``blocks[i][j]``: nothing calls ``blocks[i]``, its layers are what runs."""
    import torch

    from garden.families.traced import choose_layers, layer_lists, rehearse

    class Blocks(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList(torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(2))
                                              for _ in range(2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                for layer in block:
                    x = layer(x)
            return x

    model = Blocks()
    assert sorted(c.path for c in layer_lists(model)) == ["blocks.0", "blocks.1"]
    chosen = choose_layers(model, calls=lambda lists: [n for n, _ in rehearse(model, model, lists,
                                                                                 (torch.randn(2, 8),))[1]])
    assert [c.path for c in chosen] == ["blocks.0", "blocks.1"]


def test_layers_called_through_their_forward_method_are_found_and_cut():
    """SqueezeBERT's encoder calls ``layer.forward(x)``, which module hooks never see."""
    import torch

    from garden.families.traced import LayerList, rehearse, run_piece, trace

    class Direct(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Linear(4, 8)
            self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))
            self.head = torch.nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.embed(x)
            for layer in self.layers:
                x = torch.tanh(layer.forward(x))
            return self.head(x)

    model, x = Direct(), torch.randn(2, 4)
    _, calls = rehearse(model, model, [LayerList("layers", 3, "Linear", 216)], (x,))
    assert [path for _, path in calls] == ["layers.0", "layers.1", "layers.2"]
    found = trace(model, (x,), ["layers.0", "layers.1", "layers.2"], {"layers.2": 1})
    assert len(found.pieces) == 5  # the embedding, three layers, the head
    values = (x,)
    for piece in found.pieces:
        values = run_piece(piece, values)
    torch.testing.assert_close(values[0], model(x), rtol=0, atol=0)  # the same kernels, cut
    assert "forward" not in vars(model.layers[0])  # the layers are given back as they were


def test_a_no_grad_region_inside_the_forward_is_cut_and_keeps_its_gradients_and_the_callers_mode():
    """M2M100 computes its positions under ``torch.no_grad()``: export's set-grad sub-graph made
    every piece after it ask for that sub-graph as an input. Cut, the region still gives its
    weights no gradient, and a piece run under ``no_grad`` stays there on the way out."""
    import torch

    from garden.families.traced import run_piece, trace

    class Gated(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Linear(4, 8)
            self.gate = torch.nn.Linear(8, 8)
            self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(2))
            self.head = torch.nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.embed(x)
            with torch.no_grad():
                gate = torch.sigmoid(self.gate(x))
            for layer in self.layers:
                x = torch.tanh(layer(x)) * gate
            return self.head(x)

    torch.manual_seed(0)
    model, x = Gated(), torch.randn(3, 4)
    found = trace(model, (x,), ["layers.0", "layers.1"], {"layers.1": 1})
    assert len(found.pieces) == 4

    def cut(inputs: tuple) -> torch.Tensor:
        for piece in found.pieces:
            inputs = run_piece(piece, inputs)
        return inputs[0]

    model(x).square().sum().backward()
    local = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    cut((x,)).square().sum().backward()
    pieces = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert sorted(pieces) == sorted(local) and not any(n.startswith("gate.") for n in pieces)
    for name, grad in local.items():
        torch.testing.assert_close(pieces[name], grad, rtol=1e-5, atol=1e-6)  # the same kernels, cut
    with torch.no_grad():
        assert not cut((x,)).requires_grad and not torch.is_grad_enabled()
    assert torch.is_grad_enabled()


def test_a_torch_without_the_tracer_says_so_in_one_line(monkeypatch):
    """The Poplar SDK's torch 2.0.1 has neither torch.export nor pipelining."""
    import sys

    import torch

    from garden.families.traced import TraceError, traced_blocks

    monkeypatch.setitem(sys.modules, "torch.distributed.pipelining", None)
    with pytest.raises(TraceError, match=r"needs torch.export and torch.distributed.pipelining, which this torch \("):
        traced_blocks(torch.nn.Linear(2, 2), type("Task", (), {"name": "classify"})(), ())


def test_a_curated_family_names_its_architecture_and_transformers_auto_mappings_name_its_classes():
    """The plugins declare ``architecture``; config, heads, base model and speech processors follow."""
    from garden_camembert.family import CamemBERT
    from garden_hubert.family import Hubert
    from garden_lxmert.family import Lxmert

    camembert = CamemBERT()
    assert (camembert.config_class, camembert.base) == ("CamembertConfig", "roberta")
    assert camembert.heads["classify"] == "CamembertForSequenceClassification"
    assert camembert.heads["mlm"] == "CamembertForMaskedLM"
    hubert = Hubert()
    assert (hubert.heads["asr"], hubert.base, hubert.processor_class) == ("HubertForCTC", "hubert", "Wav2Vec2Processor")
    assert (hubert.feature_extractor_class, hubert.ctc_tokenizer_class) == ("Wav2Vec2FeatureExtractor",
                                                                           "Wav2Vec2CTCTokenizer")
    assert Lxmert().heads == {"vqa": "LxmertForQuestionAnswering"}  # a task no Auto mapping has: named by hand


def test_a_task_refuses_a_model_in_its_mapping_whose_head_reads_an_input_the_task_does_not_feed():
    """transformers files Voxtral under AutoModelForSeq2SeqLM (garden's text2text feeds it no
    audio) and ShieldGemma 2 under image classification (it reads a prompt beside the image)."""
    from garden.errors import UnknownTaskError
    from garden.families.auto import check_task, entry_for

    entry = entry_for("hf:org/voxtral", {"model_type": "voxtral"})
    assert "text2text" in entry.tasks
    with pytest.raises(UnknownTaskError, match=r"VoxtralForConditionalGeneration reads audio \(input_features\)"):
        check_task(entry, "text2text")
    with pytest.raises(UnknownTaskError, match=r"ForImageClassification reads text \(input_ids\), and garden's "
                                               r"classify feeds images alone"):
        check_task(entry_for("hf:org/shieldgemma2", {"model_type": "shieldgemma2"}), "classify")
    check_task(entry_for("hf:org/t5", {"model_type": "t5"}), "text2text")
    check_task(entry_for("hf:org/vit", {"model_type": "vit"}), "classify")
    check_task(entry_for("hf:org/imagegpt", {"model_type": "imagegpt"}), "classify")  # its input_ids are the image


def test_an_architecture_that_classifies_text_and_images_classifies_what_its_checkpoint_was_made_for():
    """Perceiver sits in both classification mappings: its image checkpoints build the image head."""
    import pkgutil

    from garden.families.auto import entry_for
    from garden.hookspecs import BuildSpec

    def built(config: dict) -> str:
        entry = entry_for("hf:x/perceiver", {"model_type": "perceiver", **config})
        family = pkgutil.resolve_name(entry.builder)()
        spec = BuildSpec(entry=entry, variant=entry.variants[0], task="classify")
        return f"{type(family).__name__}: {family.head(spec).__name__}, {family.config(spec).architectures[0]}"

    assert built({}) == "AutoFamily: AutoModelForSequenceClassification, PerceiverForSequenceClassification"
    assert built({"architectures": ["PerceiverForImageClassificationFourier"]}) == \
        "AutoVisionFamily: AutoModelForImageClassification, PerceiverForImageClassificationFourier"


def test_coverage_leaves_out_of_its_denominator_a_missing_package_and_a_foreign_input_only():
    from garden.coverage.report import left_out

    def built(ok, detail):
        return {"checks": {"build": [ok, detail]}}

    assert left_out(built(False, "ImportError: X requires the natten library but it was not found")) == "needs natten"
    assert left_out(built(False, "UnknownTaskError: ... its VoxtralFor... reads audio (input_features), and ...")) \
        == "reads audio: input_features"
    assert left_out(built(False, "UnknownTaskError: ... its ShieldGemma2For... reads text (input_ids), and ...")) \
        == "reads text: input_ids"
    assert left_out(built(False, "ValueError: num_channels (8) must be divisible by num_groups (32)")) is None
    assert left_out(built(True, "BitForImageClassification, 1,000 parameters")) is None


def test_the_gentler_shrink_cuts_depth_vocabulary_and_dropout_and_keeps_every_width():
    from transformers import BertConfig, BitConfig, ViTConfig

    from garden.coverage.shrink import shrink

    tiny, deep_only = shrink(BertConfig().to_dict()), shrink(BertConfig().to_dict(), widths=False)
    assert (tiny["num_hidden_layers"], tiny["hidden_size"], tiny["vocab_size"]) == (2, 32, 512)
    assert (deep_only["num_hidden_layers"], deep_only["vocab_size"], deep_only["hidden_dropout_prob"]) == (2, 512, 0.0)
    assert not {"hidden_size", "num_attention_heads", "intermediate_size"} & set(deep_only)
    bit = BitConfig().to_dict()
    assert shrink(bit)["hidden_sizes"] != bit["hidden_sizes"] and "hidden_sizes" not in shrink(bit, widths=False)
    assert shrink(bit, widths=False)["depths"] == [1, 1, 1, 1]
    vit = ViTConfig().to_dict()
    assert shrink(vit)["image_size"] == 32 and shrink(vit, widths=False)["image_size"] == 64  # room to downsample


def test_the_shrink_keeps_each_kind_of_layer_and_every_special_id_and_rotary_within_a_head():
    from transformers import DeepseekV2Config, Gemma2Config, GlmConfig, GPTJConfig, GPTNeoConfig

    from garden.coverage.shrink import shrink

    gemma = Gemma2Config(num_hidden_layers=6, layer_types=["sliding_attention"] * 5 + ["full_attention"]).to_dict()
    assert shrink(gemma)["layer_types"] == ["sliding_attention", "full_attention"]  # not two sliding ones
    neo = shrink(GPTNeoConfig().to_dict())
    assert neo["attention_types"] == [[["global", "local"], 1]]
    GPTNeoConfig(**{k: v for k, v in neo.items() if k != "attention_layers"})  # validates: 2 layers, 2 kinds
    gptj = shrink(GPTJConfig().to_dict())
    assert gptj["rotary_dim"] <= gptj["n_embd"] // gptj["n_head"]
    glm = shrink(GlmConfig().to_dict())  # a list of end ids, one of them the padding id
    assert max(glm["eos_token_id"]) < glm["vocab_size"] and glm["pad_token_id"] in glm["eos_token_id"]
    deepseek = shrink(DeepseekV2Config().to_dict())  # its default routes to None experts of 1,407 wide
    assert deepseek["num_experts_per_tok"] == 2 and deepseek["moe_intermediate_size"] == 64


def test_tasks_that_never_decode_build_without_a_cache_an_encoder_lm_is_causal_and_xmod_reads_english():
    from garden.families.auto import AutoFamily, entry_for
    from garden.hookspecs import BuildSpec

    def config(model_type: str, task: str, options: dict | None = None):
        entry = entry_for(f"hf:x/{model_type}", {"model_type": model_type})
        spec = BuildSpec(entry=entry, variant=entry.variants[0], task=task, options=options or {})
        return AutoFamily().config(spec)

    assert config("llama", "classify").use_cache is False and config("llama", "causal-lm").use_cache is True
    composite = config("qwen3_5", "classify")  # the classifier pools the last token before padding
    assert composite.get_text_config().use_cache is False and composite.get_text_config().pad_token_id is not None
    assert config("bert", "causal-lm").is_decoder is True and config("bert", "mlm").is_decoder is False
    assert config("xmod", "mlm").default_language == "en_XX"
    assert config("xmod", "mlm", {"config": {"default_language": "de_DE"}}).default_language == "de_DE"


def test_an_encoder_trained_as_a_causal_lm_cannot_see_the_tokens_it_predicts():
    """BERT's LM head attends both ways unless its config says ``is_decoder``: a causal LM
    that reads the future learns to copy it. A later token must not move an earlier logit."""
    import torch

    from garden.families.auto import AutoFamily, entry_for
    from garden.hookspecs import BuildSpec

    entry = entry_for("hf:x/bert", {"model_type": "bert", "num_hidden_layers": 1, "hidden_size": 32,
                                    "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": 64})
    model = AutoFamily().build(BuildSpec(entry=entry, variant=entry.variants[0], task="causal-lm")).eval()
    ids = torch.randint(5, 64, (1, 6), generator=torch.Generator().manual_seed(0))
    changed = ids.clone()
    changed[0, -1] = 4
    with torch.no_grad():
        before, after = model(input_ids=ids).logits, model(input_ids=changed).logits
    torch.testing.assert_close(after[0, :-1], before[0, :-1], rtol=1e-5, atol=1e-5)  # same kernels, same inputs
    assert not torch.allclose(after[0, -1], before[0, -1])


def test_teacher_forcing_builds_no_decoding_cache_so_a_model_without_attention_layers_trains():
    """A Bamba whose layers are all Mamba cannot size a decoding cache; teacher forcing needs none."""
    import pkgutil

    import torch

    from garden.families.auto import AutoFamily, entry_for
    from garden.hookspecs import BuildSpec

    entry = entry_for("hf:x/bamba", {"model_type": "bamba", "num_hidden_layers": 2, "hidden_size": 32,
                                     "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 64,
                                     "vocab_size": 64, "mamba_n_heads": 4, "mamba_d_head": 16,
                                     "attn_layer_indices": None})
    family = AutoFamily()
    model = family.build(BuildSpec(entry=entry, variant=entry.variants[0], task="causal-lm"))
    task = pkgutil.resolve_name(family.tasks["causal-lm"])(family)
    ids = torch.randint(0, 64, (2, 6), generator=torch.Generator().manual_seed(0))
    logits = task.forward(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    task.loss(logits, ids).backward()
    assert logits.shape == (2, 6, 64) and model.lm_head.weight.grad is not None


def test_teacher_forcing_never_shows_a_translation_decoder_a_later_token():
    """FSMT builds its decoder's causal mask only when told ``use_cache=False``: with its config's
    default it trains on the very tokens it is asked to predict."""
    import pkgutil

    import torch

    from garden.families.auto import AutoFamily, entry_for
    from garden.hookspecs import BuildSpec

    entry = entry_for("hf:x/fsmt", {"model_type": "fsmt", "encoder_layers": 1, "decoder_layers": 1, "d_model": 32,
                                    "encoder_attention_heads": 2, "decoder_attention_heads": 2,
                                    "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "src_vocab_size": 64,
                                    "tgt_vocab_size": 64, "langs": ["en", "de"]})
    family = AutoFamily()
    model = family.build(BuildSpec(entry=entry, variant=entry.variants[0], task="text2text")).eval()
    task = pkgutil.resolve_name(family.tasks["text2text"])(family)
    generator = torch.Generator().manual_seed(0)
    ids, targets = torch.randint(5, 64, (1, 6), generator=generator), torch.randint(5, 64, (1, 5), generator=generator)
    changed = targets.clone()
    changed[0, -1] = 4

    def logits(decoder_input_ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return task.forward(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                                        "decoder_input_ids": decoder_input_ids})

    before, after = logits(targets), logits(changed)
    torch.testing.assert_close(after[0, :-1], before[0, :-1], rtol=1e-5, atol=1e-5)  # same kernels, same inputs
    assert not torch.allclose(after[0, -1], before[0, -1])


# -- blocks ------------------------------------------------------------------------------------------


def family_and_model(folder: Path, task: str):
    import pkgutil

    from garden.families.auto import resolve
    from garden.hookspecs import BuildSpec

    entry, _ = resolve(f"hf:{folder}")
    family = pkgutil.resolve_name(entry.builder)()
    spec = BuildSpec(entry=entry, variant=entry.variants[0], task=task, weights_dir=folder,
                     labels=("a", "b", "c") if task == "classify" else None)
    family.preprocessor(spec)
    return family, family.build(spec).eval(), pkgutil.resolve_name(family.tasks[task])(family)


@pytest.mark.parametrize("name, task", [("albert", "mlm"), ("llama", "causal-lm"), ("convnext", "classify")])
def test_traced_blocks_hold_every_weight_and_compute_the_forward_at_another_batch_and_length(checkpoints,
                                                                                            name, task):
    import torch

    from garden.families.auto import probe_inputs
    from garden.partition.stages import check_coverage, run_blocks

    family, model, task_object = family_and_model(checkpoints[name], task)
    blocks = family.stage_blocks(model, task)
    check_coverage(model, blocks)
    assert [b.kind for b in blocks] == ["embedding", *["layer"] * (len(blocks) - 2), "head"]
    inputs = probe_inputs(model, task_object, family.processor, batch=3, length=11)  # traced at 2 x 8
    with torch.no_grad():
        expected = task_object.forward(model, dict(zip(task_object.input_names, inputs)))
        got = run_blocks(model, blocks, *inputs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)  # the same kernels, cut: float noise


def test_albert_runs_its_one_layer_at_every_depth_so_every_layer_block_holds_it(checkpoints):
    family, model, _ = family_and_model(checkpoints["albert"], "mlm")
    layers = [b for b in family.stage_blocks(model, "mlm") if b.kind == "layer"]
    assert [b.modules for b in layers] == [("albert.encoder.albert_layer_groups",)] * 2
    assert family.stage_blocks(model, "mlm")[-1].tied_to == "embeddings"  # the decoder is the word embeddings


# -- runs ----------------------------------------------------------------------------------------------


def test_a_folder_of_an_architecture_no_plugin_covers_trains_infers_and_plans(checkpoints, tmp_path):
    import garden

    folder = checkpoints["albert"]
    metrics = garden.run([f"model=hf:{folder}", "task=classify", "preset=smoke", "trainer.max_steps=2",
                          "data.limit=16", "data.eval_limit=8"], output_dir=tmp_path / "train")
    assert metrics["steps"] == 2 and metrics["weights"] == f"local {folder}" and metrics["revision"] is None
    garden.run([f"model=hf:{folder}", "task=classify", "mode=infer", f"weights={tmp_path / 'train' / 'model'}",
                "data.eval_limit=4"], output_dir=tmp_path / "infer")
    predictions = (tmp_path / "infer" / "predictions.jsonl").read_text().splitlines()
    assert len(predictions) == 4 and "predictions" in json.loads(predictions[0])
    plan = garden.plan([f"model=hf:{folder}", "task=qa", "ipu.ipus_per_replica=2"])
    assert plan["layers_per_ipu"] == [1, 1] and plan["stages"][0]["blocks"][0] == "embeddings"


def test_the_hub_runs_record_the_full_commit_and_offline_nothing_cached_names_id_and_revision(
        checkpoints, tmp_path):
    with HubServer() as server:
        sha = server.add_repo("tiny/albert", checkpoints["albert"])
        env = hub_env(server, tmp_path / "hf")
        run = garden_cli("model=hf:tiny/albert", "task=mlm", "preset=smoke", "trainer.max_steps=1", "data.limit=16",
                         "data.eval_limit=8", "hydra.run.dir=run", cwd=tmp_path, env=env, timeout=SLOW)
        assert run.returncode == 0, run.output
        metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
        assert metrics["model"] == "hf:tiny/albert" and metrics["revision"] == sha
        card = (tmp_path / "run" / "model" / "README.md").read_text()
        assert f"base_model_revision: {sha}" in card and f"model=hf:tiny/albert@{sha}" in card
        shown = garden_cli("show", "hf:tiny/albert", "--json", cwd=tmp_path, env=env, timeout=SLOW)
        assert shown.returncode == 0, shown.output
        facts = json.loads(shown.stdout)
        assert facts["revision"] == sha and facts["architecture"] == "AlbertForMaskedLM"
        assert facts["tasks"] == ["classify", "token-classify", "qa", "mlm"] and facts["layouts"]["2"] == [1, 1]
    offline = garden_cli("model=hf:tiny/albert", "task=mlm", "preset=smoke", cwd=tmp_path,
                         env={**env, "HF_HOME": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}, timeout=SLOW)
    assert offline.returncode == 2, offline.output
    [line] = [ln for ln in offline.stderr.splitlines() if ln.startswith("error:")]
    assert "tiny/albert@main is not cached and HF_HUB_OFFLINE=1" in line


@pytest.mark.slow
@pytest.mark.distributed
def test_a_two_stage_pipeline_step_of_an_hf_model_equals_the_local_step(checkpoints, tmp_path):
    """ALBERT's one layer sits on both stages: its gradients are summed across them, and the
    comparison catches a pipeline that does not sum them."""
    from test_pipeline import ranks

    steps = (f"model=hf:{checkpoints['albert']}", "task=classify", "preset=smoke", "trainer.max_steps=1",
             *SGD_STEPS, "trainer.lr=0.1", "trainer.eval=false", "data.batch_size=4", "data.limit=8",
             "data.eval_limit=4", "trainer.threads=1")
    before = initial(steps, tmp_path / "initial")
    (tmp_path / "local").mkdir(), (tmp_path / "piped").mkdir()
    local = garden_cli(*steps, cwd=tmp_path / "local", timeout=SLOW)
    assert local.returncode == 0, local.output
    piped = ranks(2, *steps, "backend=pipeline", "ipu.micro_batches=2", cwd=tmp_path / "piped")
    assert piped.returncode == 0, piped.stdout[-3000:] + piped.stderr[-3000:]
    assert_same_steps(before, read_run(tmp_path / "local"), read_run(tmp_path / "piped"))
    (tmp_path / "unsummed").mkdir()
    env = mutation_env(tmp_path / "site", """
        import garden.backends.pipeline as pipeline
        def _sum_shared_gradients(self):
            print("MUTATION: shared gradients not summed", flush=True)
        pipeline.PipelineBackend._sum_shared_gradients = _sum_shared_gradients
    """)
    unsummed = ranks(2, *steps, "backend=pipeline", "ipu.micro_batches=2", cwd=tmp_path / "unsummed", env=env)
    assert unsummed.returncode == 0 and "MUTATION" in unsummed.stdout, unsummed.stdout[-3000:] + unsummed.stderr[-3000:]
    problems = step_mismatches(before, read_run(tmp_path / "local"), read_run(tmp_path / "unsummed"))
    assert any(p.startswith("albert.encoder.albert_layer_groups") for p in problems), problems


@pytest.mark.slow
def test_a_resumed_hub_model_refuses_a_branch_that_moved_and_resumes_at_its_commit(checkpoints, tmp_path):
    from test_resume import steps_saved

    with HubServer() as server:
        first = server.add_repo("tiny/llama", checkpoints["llama"])
        env = {**os.environ, **hub_env(server, tmp_path / "hf"), "OMP_NUM_THREADS": "1"}
        args = ["model=hf:tiny/llama", "task=causal-lm", "preset=smoke", "trainer.max_steps=6",
                "trainer.checkpoint_every=1", "data.limit=32", "hydra.run.dir=run"]
        proc = garden_process(*args, cwd=tmp_path, log=tmp_path / "first.log", env=env)
        deadline = time.monotonic() + SLOW
        while not steps_saved(tmp_path / "run"):
            assert proc.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=SLOW) == 128 + signal.SIGTERM, (tmp_path / "first.log").read_text()
        server.add_repo("tiny/llama", save_llama(tmp_path / "retrained", seed=1))  # main moves on
        moved = garden_cli(*args, "resume=true", cwd=tmp_path, env=env, timeout=SLOW)
        assert moved.returncode == 2, moved.output
        assert f"was made from commit {first}" in moved.stderr and f"model=hf:tiny/llama@{first}" in moved.stderr
        pinned = garden_cli(*[a for a in args if not a.startswith("model=")], f"model=hf:tiny/llama@{first}",
                            "resume=true", cwd=tmp_path, env=env, timeout=SLOW)
        assert pinned.returncode == 0, pinned.output
        metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
        assert metrics["steps"] == 6 and metrics["revision"] == first


@pytest.mark.slow
def test_plugin_new_from_a_hub_model_writes_a_package_that_installs_and_passes_plugin_check(checkpoints, tmp_path):
    import sysconfig

    from test_plugin_scaffold import ok, run

    with HubServer() as server:
        sha = server.add_repo("tiny/albert", checkpoints["albert"])
        made = garden_cli("plugin", "new", "albert-tiny", "--from", f"hf:tiny/albert@{sha}", "--dir", str(tmp_path),
                          cwd=tmp_path, env=hub_env(server, tmp_path / "hf"), timeout=SLOW)
    assert made.returncode == 0, made.output
    package = tmp_path / "garden-albert-tiny"
    plugin = (package / "garden_albert_tiny" / "plugin.py").read_text()
    assert f'hub_id="tiny/albert", revision="{sha}"' in plugin and "layouts={}" in plugin  # 2 layers: no 4-IPU plan
    assert {p.name for p in (package / "garden_albert_tiny" / "conf" / "recipe" / "albert-tiny").iterdir()} == \
        {"classify.yaml", "token-classify.yaml", "qa.yaml", "mlm.yaml"}
    assert (package / "garden_albert_tiny" / "assets" / "tokenizer.json").is_file()
    ok(run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
           "-w", tmp_path / "wheels", package, cwd=tmp_path))
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    fresh = tmp_path / "fresh"
    ok(run(sys.executable, "-m", "venv", "--without-pip", fresh, cwd=tmp_path))
    python = fresh / "bin" / "python"
    purelib = Path(ok(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                          cwd=tmp_path)).stdout.strip())
    (purelib / "_garden_project.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    ok(run(sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps", "-q", wheel,
           cwd=tmp_path))
    work = tmp_path / "work"
    work.mkdir()
    checked = ok(run(python, "-m", "garden", "plugin", "check", "garden-albert-tiny", cwd=work, timeout=SLOW))
    assert checked.stdout.splitlines()[-1].endswith("0 failed, 0 skipped"), checked.output


# -- the coverage run's sample ----------------------------------------------------------------------------

#: architectures no plugin covers, one or two per kind of model (and per way stages get cut;
#: ResNet's BatchNorm statistics, which the train check must leave as they were built)
SAMPLE = {"classify": ["albert", "distilbert", "electra"], "image-classify": ["convnext", "swin", "resnet"],
          "causal-lm": ["llama"], "text2text": ["m2m_100"], "audio-classify": ["whisper"]}


@pytest.mark.slow
def test_the_coverage_sample_passes_every_check(tmp_path):
    from garden.coverage import read, run_pair

    results = tmp_path / "results.jsonl"
    run_pair([(row, t) for row, types in SAMPLE.items() for t in types], results, timeout=SLOW)
    records = {(r["type"], r["task"]): r["checks"] for r in read(results)}
    failed = {key: {c: detail for c, (ok, detail) in checks.items() if ok is not True}
              for key, checks in records.items()}
    assert {key: f for key, f in failed.items() if f} == {}
    assert len(records) == sum(len(t) for t in SAMPLE.values())

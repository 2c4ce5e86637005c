"""A tiny random config of any transformers architecture, by rules on attribute names alone.

The coverage run builds every architecture of the Auto mappings; real sizes would take hours, so
each config is shrunk the way a reader would shrink it by hand, with no list of models:

* depth (``num_hidden_layers``, ``n_layer``, ``encoder_layers``, ...) to 2, and every per-layer
  list as long as the old depth (``layer_types``, or run-length ``[[pattern, repeats]]``) cut to
  match, keeping each kind of layer it named (a sliding-window model keeps its full-attention
  layer);
* widths (``hidden_size``, ``d_model``, ``n_embd``, ...) to 32, per-stage width lists
  (``hidden_sizes``, ``embed_dims``) scaled down to at most 64, per-stage depths to 1;
* heads to 2 (key-value heads to at most 2, dividing the heads), head sizes to width / heads, so
  every width stays divisible by its heads, and rotary dimensions to at most a head's size;
* mixture-of-experts counts a default config leaves unset (``num_experts_per_tok=None``) set to
  a few experts, as a checkpoint sets them;
* feed-forward sizes (an expert's too) to 64, vocabularies to 512 (special token ids above moved below, in lists
  too, keeping an id a single token id shares), images to
  32 pixels (patches to at most a quarter of that, attention windows to 4), convolution channels
  (speech feature encoders) to 32, and every dropout to 0.

Where the tiny model does not build or run (a width one of its own rules cannot take: group
norms of 32 groups, per-stage channel lists that must match each other), the checks shrink it
again with ``widths=False``: depth, vocabulary, dropout and images (to 64 pixels) alone, every
width as the default.

Sub-configs (``text_config``, ``vision_config``) are shrunk by the same rules::

    >>> tiny_config("llama").num_hidden_layers, tiny_config("llama").hidden_size   # doctest: +SKIP
    (2, 32)
"""

from __future__ import annotations

import re
from typing import Any

DEPTH = re.compile(r"^(num_)?(hidden_|encoder_|decoder_|text_|vision_|audio_)?layers$|^n_layers?$"
                   r"|^num_(hidden_|encoder_|decoder_)?layers$|^(encoder|decoder)_layers$|^depth$|^num_blocks$"
                   r"|^num_decoder_layers$|^n_(encoder|decoder)_layers$")
WIDTH = re.compile(r"^(hidden_size|d_model|n_embd|embed_dim|emb_dim|dim|embedding_size|d_embed|hidden_dim|model_dim"
                   r"|word_embed_proj_dim|encoder_hidden_size|decoder_hidden_size|n_embed)$")
HEADS = re.compile(r"^(num_attention_heads|n_head|n_heads|num_heads|encoder_attention_heads|mamba_n_heads"
                   r"|decoder_attention_heads|attention_heads|num_decoder_attention_heads)$")
KV_HEADS = re.compile(r"^(num_key_value_heads|n_kv_heads|num_kv_heads|multi_query_group_num)$")
HEAD_SIZE = re.compile(r"^(head_dim|d_kv|attention_head_size|kv_channels|d_head|attention_head_dim)$")
FEED_FORWARD = re.compile(r"^(intermediate_size|ffn_dim|d_ff|n_inner|encoder_ffn_dim|decoder_ffn_dim|mlp_dim"
                          r"|ffn_hidden_size|inner_dim|d_inner|decoder_intermediate_size|hidden_dim_ffn"
                          r"|moe_intermediate_size|shared_experts?_intermediate_size|moe_shared_expert_intermediate_size"
                          r"|expert_ffn_hidden_size|shared_intermediate_size)$")
STAGE_DEPTHS = re.compile(r"depths?$|^num_layers_per_stage|^stage_num_layers|^layers_per_stage")
STAGE_WIDTHS = re.compile(r"^(hidden_sizes|embed_dims|dims|widths|channels|stage_dims|out_channels"
                          r"|stage_out_channels|neck_hidden_sizes|embed_dim_per_stage|hidden_size_per_stage)$")
STAGE_HEADS = re.compile(r"heads$")
ROTARY = re.compile(r"^(rotary_dim|rotary_emb_dim)$")
CONV = re.compile(r"^(conv_dim|tdnn_dim)$")
VOCAB = re.compile(r"^(vocab_size|n_vocab|decoder_vocab_size)$")
IMAGE = re.compile(r"^(image_size|img_size|input_size)$")
WINDOW = re.compile(r"^window_size$")
#: mixture-of-experts counts a default config leaves unset (DeepSeek-V2, dots.llm1): set as a checkpoint would
UNSET_EXPERTS = {"num_experts_per_tok": 2, "n_routed_experts": 4, "n_shared_experts": 1, "n_group": 1, "topk_group": 1}
DROPOUT = re.compile(r"dropout|_pdrop$|^layerdrop$|drop_path_rate|^drop_rate$")

WIDE, FFN, HEAD_COUNT, DEEP, VOCAB_SIZE, PIXELS, CONV_CHANNELS, STAGE_MAX = 32, 64, 2, 2, 512, 32, 32, 64
#: images where every width is kept: large enough for a network's own downsampling
WIDE_PIXELS = 64


def shrink(values: dict[str, Any], accepted: set[str] | None = None, *, widths: bool = True) -> dict[str, Any]:
    """The changes the rules of the module doc make to ``values`` (a config's ``to_dict()``), as
    keyword arguments for its class (``accepted``: the names its ``__init__`` takes; a value the
    class derives, such as Swin's ``hidden_size``, is left for it to derive again); ``widths=False``
    keeps every width, head count, image size and per-stage width as they are."""
    changes: dict[str, Any] = {}
    depth_was: set[int] = set()
    width = WIDE
    for key, value in values.items():
        if isinstance(value, dict) and ("model_type" in value or key.endswith("_config")):
            changes[key] = {**value, **shrink(value, widths=widths)}
        elif isinstance(value, bool):
            continue
        elif value is None and VOCAB.search(key):
            changes[key] = VOCAB_SIZE
        elif value is None and key in UNSET_EXPERTS:
            changes[key] = UNSET_EXPERTS[key]
        elif isinstance(value, int) and DEPTH.search(key) and value > DEEP:
            depth_was.add(value)
            changes[key] = DEEP
        elif isinstance(value, float) and DROPOUT.search(key):
            changes[key] = 0.0
        elif isinstance(value, int) and VOCAB.search(key) and value > VOCAB_SIZE:
            changes[key] = VOCAB_SIZE
        elif not widths:
            if isinstance(value, int) and not isinstance(value, bool) and IMAGE.search(key) and value > WIDE_PIXELS:
                changes[key] = WIDE_PIXELS
        elif isinstance(value, int) and WIDTH.search(key) and value > WIDE:
            changes[key] = WIDE
        elif isinstance(value, int) and KV_HEADS.search(key) and value > 1:
            changes[key] = min(value, HEAD_COUNT)
        elif isinstance(value, int) and HEADS.search(key) and value > HEAD_COUNT:
            changes[key] = HEAD_COUNT
        elif isinstance(value, int) and FEED_FORWARD.search(key) and value > FFN:
            changes[key] = FFN
        elif isinstance(value, (int, list, tuple)) and IMAGE.search(key):
            changes[key] = [PIXELS, PIXELS] if isinstance(value, (list, tuple)) else PIXELS
        elif isinstance(value, int) and WINDOW.search(key) and value > 4:  # windows the shrunk image has
            changes[key] = 4
        elif key.strip("_") in ("out_features", "out_indices") and value:  # a backbone's outputs name stages
            changes[key] = [DEEP] if "indices" in key else [f"stage{DEEP}"]
    groups = max([v for k, v in values.items() if "groups" in k and isinstance(v, int) and v > 1] or [8])
    for key, value in values.items():  # rules that read the first pass
        if not widths and (HEAD_SIZE.search(key) or KV_HEADS.search(key)):
            continue
        heads = next((changes.get(k, values[k]) for k in values if HEADS.search(k) and isinstance(values[k], int)),
                     HEAD_COUNT)
        if HEAD_SIZE.search(key) and (value is None or isinstance(value, int)) and not isinstance(value, bool):
            expand = values.get("expand") if isinstance(values.get("expand"), int) else 1  # Mamba-2's heads
            changes[key] = max(8, changes.get("hidden_size", width) * expand // max(1, heads))
        elif widths and ROTARY.search(key) and isinstance(value, int) and not isinstance(value, bool):
            changes[key] = min(value, max(8, changes.get("hidden_size", width) // max(1, heads)))  # within a head
        elif KV_HEADS.search(key) and value is None:
            changes[key] = HEAD_COUNT
        elif isinstance(value, list) and value and key not in changes:
            cut = _shrink_list(key, value, depth_was, groups, widths)
            if cut != value:
                changes[key] = cut
        elif isinstance(value, dict) and value and all(str(k).isdigit() for k in value) and depth_was:
            changes[key] = {k: v for k, v in value.items() if int(k) < DEEP}  # per-layer settings
    _special_tokens_in_vocabulary(values, changes)
    if widths:
        _patches_fit(values, changes)
    if accepted is not None:
        changes = {k: v for k, v in changes.items() if k in accepted}
    return changes


def _shrink_list(key: str, value: list[Any], depth_was: set[int], groups: int, widths: bool = True) -> list[Any]:
    """Stage lists shrunk by their kind, then cut to the new depth when one entry per layer (or stage)."""
    if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        if STAGE_DEPTHS.search(key):
            value = [min(v, 1) for v in value]
        elif widths and STAGE_WIDTHS.search(key):
            factor = max(1, -(-max(value) // STAGE_MAX))
            value = [max(groups, -(-(v // factor) // groups) * groups) for v in value]
        elif widths and STAGE_HEADS.search(key):
            value = [min(v, HEAD_COUNT) for v in value]
        elif widths and CONV.search(key):
            value = [min(v, CONV_CHANNELS) for v in value]
    if _run_length(value) in depth_was:  # [[pattern, repeats], ...] expanding to one entry per layer
        pattern = value[0][0]
        return [[pattern, max(1, DEEP // len(pattern))]]
    if len(value) not in depth_was:
        return value
    cut = value[:DEEP]
    lost = [v for i, v in enumerate(value) if isinstance(v, str) and v not in cut and v not in value[:i]]  # a kind cut away
    return cut[:DEEP - len(lost)] + lost if lost and len(lost) < DEEP else cut


def _run_length(value: list[Any]) -> int:
    """How many entries ``[[pattern, repeats], ...]`` stands for (GPT-Neo's ``attention_types``), else 0."""
    if all(isinstance(v, (list, tuple)) and len(v) == 2 and isinstance(v[0], (list, tuple)) and isinstance(v[1], int)
           for v in value):
        return sum(len(v[0]) * v[1] for v in value)
    return 0


def _special_tokens_in_vocabulary(values: dict[str, Any], changes: dict[str, Any]) -> None:
    vocab = next((changes.get(k, values[k]) for k in values if VOCAB.search(k)
                  and isinstance(changes.get(k, values[k]), int)), None)
    if vocab is None:
        return
    names = sorted(k for k in values if k.endswith("token_id"))
    for key in names:
        value = values[key]
        if isinstance(value, int) and not isinstance(value, bool) and value >= vocab:
            changes[key] = vocab - 1 - names.index(key)
    moved = {values[k]: changes[k] for k in names if k in changes}
    for key in names:  # a list of ids (GLM's eos ids): each moved as the single id it equals, else below those
        value = values[key]
        if isinstance(value, list) and any(isinstance(v, int) and v >= vocab for v in value):
            changes[key] = [moved.get(v, vocab - 1 - len(names) - i) if isinstance(v, int) and v >= vocab else v
                            for i, v in enumerate(value)]


def _patches_fit(values: dict[str, Any], changes: dict[str, Any]) -> None:
    """Patches no larger than a quarter of the shrunk image, so a few still fit."""
    size = changes.get("image_size", values.get("image_size"))
    patch = values.get("patch_size")
    if isinstance(size, list):
        size = size[0]
    if isinstance(size, int) and isinstance(patch, int) and patch > size // 4:
        changes["patch_size"] = max(1, size // 4)


def tiny_config(model_type: str, *, widths: bool = True) -> Any:
    """The architecture's default config, shrunk (see module doc; ``widths=False``: depth,
    vocabulary, dropout and images alone)."""
    import inspect

    from transformers import AutoConfig

    default = AutoConfig.for_model(model_type)
    cls = type(default)
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    return cls(**shrink(default.to_dict(), accepted, widths=widths))

"""Any transformers model, no plugin needed: ``model=hf:<repo-id>[@<revision>]`` or ``model=hf:<folder>``.

The checkpoint's ``config.json`` names the architecture; the task names the head, and
transformers' Auto classes build it (``AutoModelForSequenceClassification``, ...) with the
preprocessor from ``AutoTokenizer`` / ``AutoImageProcessor`` (PIL) / ``AutoProcessor`` /
``AutoFeatureExtractor``. Stage blocks are found by introspection and cut by pipelining's tracer
(:mod:`garden.families.traced`). ``trust_remote_code`` stays off: a checkpoint that needs code from
its repo is refused in one line::

    >>> entry = hub_entry("hf:albert/albert-base-v2@main")     # doctest: +SKIP
    >>> entry.tasks, entry.variants[0].revision                # doctest: +SKIP
    (('classify', 'token-classify', 'qa', 'mlm'), '8e2f239c5f8a2c0f253781ca60135db913e5c80c')
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from garden.compat import resolve_name
from garden.entries import COMMIT_HASH, ModelEntry, Variant
from garden.errors import ConfigError, UnknownTaskError
from garden.families.transformers import TransformersFamily
from garden.hookspecs import Block, BuildSpec

PREFIX = "hf:"


@dataclass(frozen=True)
class Head:
    """What a task asks of an architecture: the Auto class and its mapping in transformers."""

    auto: str
    mapping: str
    modality: str


#: garden's tasks and the Auto class each needs (``classify`` is text or vision, by architecture)
HEADS: dict[str, tuple[Head, ...]] = {
    "classify": (Head("AutoModelForSequenceClassification", "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "text"),
                 Head("AutoModelForImageClassification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "vision")),
    "token-classify": (Head("AutoModelForTokenClassification", "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "text"),),
    "qa": (Head("AutoModelForQuestionAnswering", "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES", "text"),),
    "mlm": (Head("AutoModelForMaskedLM", "MODEL_FOR_MASKED_LM_MAPPING_NAMES", "text"),),
    "causal-lm": (Head("AutoModelForCausalLM", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "text"),),
    "text2text": (Head("AutoModelForSeq2SeqLM", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "text"),),
    "audio-classify": (Head("AutoModelForAudioClassification", "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES",
                            "speech"),),
    "asr": (Head("AutoModelForCTC", "MODEL_FOR_CTC_MAPPING_NAMES", "speech"),),
}
#: garden tasks that train the head of another (generation is a causal LM, summaries are text2text)
SAME_HEAD = {"generate": "causal-lm", "summarize": "text2text"}

TASK_CLASSES = {
    ("classify", "text"): "garden.tasks.text:SequenceClassification",
    ("classify", "vision"): "garden.tasks.image:ImageClassification",
    ("token-classify", "text"): "garden.tasks.text:TokenClassification",
    ("qa", "text"): "garden.tasks.text:QuestionAnswering",
    ("mlm", "text"): "garden.tasks.text:MaskedLM",
    ("causal-lm", "text"): "garden.tasks.generation:CausalLM",
    ("generate", "text"): "garden.tasks.generation:Generate",
    ("text2text", "text"): "garden.tasks.generation:Seq2Seq",
    ("summarize", "text"): "garden.tasks.generation:Summarize",
    ("audio-classify", "speech"): "garden.tasks.audio:AudioClassification",
    ("asr", "speech"): "garden.tasks.audio:SpeechRecognition",
}
DOMAINS = {"text": "nlp", "vision": "vision", "speech": "speech"}


def mapping(name: str) -> dict[str, str]:
    import transformers.models.auto.modeling_auto as auto

    return getattr(auto, name)


def heads_for(model_type: str, modality: str | None = None) -> dict[str, Head]:
    """The tasks ``model_type`` can do, each with its head: ``{"classify": Head(...), ...}``; where
    a task has heads of two modalities (Perceiver classifies text and images), ``modality``'s."""
    found: dict[str, Head] = {}
    for task, heads in HEADS.items():
        for head in sorted(heads, key=lambda h: h.modality != modality):
            if model_type in mapping(head.mapping) and task not in found:
                found[task] = head
    for task, same in SAME_HEAD.items():
        if same in found:
            found[task] = found[same]
    return {task: found[task] for task in (*HEADS, *SAME_HEAD) if task in found}


def head_class_name(model_type: str, task: str, modality: str | None = None) -> str:
    """``BertForSequenceClassification``: the class transformers' Auto mapping gives ``task`` (the
    first where it names several, as DeiT's with and without a distillation head)."""
    head = heads_for(model_type, modality)[task]
    return _names(mapping(head.mapping)[model_type])[0]


def known_model_type(model_type: str | None) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return bool(model_type) and model_type in CONFIG_MAPPING_NAMES


# -- hf: names -> entries ------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where an ``hf:`` model lives: a Hub repo at a revision, or a local folder."""

    repo_id: str | None
    revision: str | None
    folder: Path | None


def is_hf(name: str | None) -> bool:
    return bool(name) and str(name).startswith(PREFIX)


def parse(name: str) -> Source:
    """``hf:org/name@rev`` -> a Hub source (``None`` revision when none is named); ``hf:./folder``
    -> a folder."""
    rest = name[len(PREFIX):].strip()
    folder = Path(rest).expanduser()
    if rest.startswith((".", "/", "~")) or folder.is_dir():
        if not (folder / "config.json").is_file():
            raise ConfigError(f"model={name}: {folder} holds no config.json; give a save_pretrained folder "
                              f"or a Hub repo as hf:org/name[@revision]")
        return Source(None, None, folder.resolve())
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    repo_id, _, revision = rest.partition("@")
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise ConfigError(f"model={name} names neither a Hub repo nor a folder; write hf:org/name[@revision] "
                          f"or hf:./path/to/folder") from None
    return Source(repo_id, revision or None, None)


def canonical(name: str) -> str:
    """An ``hf:`` model's name without its revision (``hf:org/name``): what identifies its runs,
    whichever branch, tag or commit a command named (the commit itself is recorded apart)."""
    source = parse(name)
    return f"{PREFIX}{source.repo_id}" if source.repo_id else name


@functools.lru_cache(maxsize=None)
def resolve(name: str, revision: str | None = None) -> tuple[ModelEntry, Path]:
    """The entry for ``hf:...`` (at ``revision``, else the one the name gives, else ``main``) and
    the folder holding its config, tokenizer and processor files. A Hub revision is resolved to
    its full commit, recorded as the variant's ``revision``."""
    from garden import hub

    source = parse(name)
    if source.folder is not None:
        folder, commit, where = source.folder, None, str(source.folder)
    else:
        wanted = revision or source.revision or "main"
        folder = hub.config_snapshot(source.repo_id, wanted)
        commit = folder.name if COMMIT_HASH.fullmatch(folder.name) else wanted
        where = f"{source.repo_id}@{wanted}"
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return entry_for(canonical(name), config, repo_id=source.repo_id, revision=commit, where=where), folder


def hub_entry(name: str, revision: str | None = None) -> ModelEntry:
    return resolve(name, revision)[0]


def entry_for(name: str, config: dict[str, Any], *, repo_id: str | None = None, revision: str | None = None,
              where: str = "") -> ModelEntry:
    """The registry entry of a model known only by its ``config.json`` (``config``)."""
    model_type = config.get("model_type")
    where = where or name
    if config.get("auto_map") or not known_model_type(model_type):
        raise ConfigError(
            f"model={name}: {where} needs trust_remote_code (its config.json "
            f"{'maps its classes to code in the repo (auto_map)' if config.get('auto_map') else f'has model_type {model_type!r}, which transformers does not know'}"
            "); garden runs only architectures built into transformers and never runs a repo's code")
    tasks = heads_for(model_type)
    if not tasks:
        raise UnknownTaskError(f"model={name}: transformers has no head for {model_type} in any of garden's tasks "
                               f"({', '.join(HEADS)})")
    modalities = {h.modality for h in tasks.values()}
    domain = DOMAINS["speech" if "speech" in modalities else "vision" if "vision" in modalities else "text"]
    architectures = config.get("architectures") or [model_type]
    vision = "vision" if any(architectures[0] in _names(mapping(h.mapping).get(model_type)) for h in HEADS["classify"]
                             if h.modality == "vision") else None
    variant = Variant("hub" if repo_id else "local", hub_id=repo_id, revision=revision, config=config,
                      description=f"{where}")
    return ModelEntry(name=name, family=model_type, domain=domain,
                      description=f"{architectures[0]} from {where} ({model_type}, built by transformers' Auto classes)",
                      tasks=tuple(tasks), builder=f"garden.families.auto:{builder_for(model_type, vision)}",
                      variants=(variant,), default=variant.name)


def _names(found: Any) -> tuple[str, ...]:
    return tuple(found) if isinstance(found, (list, tuple)) else (found,) if found else ()


def builder_for(model_type: str, modality: str | None = None) -> str:
    """The family class: image classification where the architecture classifies images only, or
    where the checkpoint's architecture is an image classifier (``modality="vision"``: Perceiver's)."""
    heads = heads_for(model_type, modality)
    return "AutoVisionFamily" if heads.get("classify") and heads["classify"].modality == "vision" else "AutoFamily"


#: inputs only a speech task feeds: a text task's head whose forward reads one is a speech model
AUDIO_INPUTS = ("input_features", "input_values")


@functools.lru_cache(maxsize=None)
def foreign_input(model_type: str, task: str) -> tuple[str, str] | None:
    """``("audio", "input_features")`` where the head of a text ``task`` reads audio, ``("text",
    "input_ids")`` where an image classifier reads a text prompt beside the image, else None:
    transformers files its speech LLMs (Voxtral, Qwen2-Audio, ...) under the Seq2SeqLM mapping and
    prompt-driven image judges (ShieldGemma 2) under image classification, but garden's text2text
    feeds text alone and its classify images alone. Cached: every build of an ``hf:`` model asks."""
    import inspect

    import transformers

    head = heads_for(model_type).get(task)
    if head is None or head.modality == "speech":
        return None
    cls = getattr(transformers, head_class_name(model_type, task), None)
    arguments = inspect.signature(cls.forward).parameters if cls is not None else {}
    if head.modality == "vision":
        return ("text", "input_ids") if "input_ids" in arguments and "pixel_values" in arguments else None
    audio = next((name for name in AUDIO_INPUTS if name in arguments), None)
    return ("audio", audio) if audio else None


def check_task(entry: ModelEntry, task: str) -> None:
    """One line naming the architecture's tasks when it cannot do ``task``."""
    if task in entry.tasks:
        head = SAME_HEAD.get(task, task)
        foreign = foreign_input(entry.family, head) if is_hf(entry.name) else None
        if foreign:
            kind, name = foreign
            feeds = "text" if kind == "audio" else "images alone"
            raise UnknownTaskError(
                f"model '{entry.name}' ({entry.family}) cannot do task '{task}': its "
                f"{head_class_name(entry.family, head)} reads {kind} ({name}), and garden's "
                f"{task} feeds {feeds}; " + ("no garden task generates text from speech yet" if kind == "audio"
                                             else "no garden task gives an image classifier a prompt yet"))
        return
    wanted = HEADS.get(SAME_HEAD.get(task, task))
    missing = f"; transformers has no {wanted[0].auto} head for {entry.family}" if wanted else ""
    raise UnknownTaskError(f"model '{entry.name}' ({entry.family}) cannot do task '{task}'{missing}; "
                           f"its tasks are: {', '.join(entry.tasks)}")


# -- the family ----------------------------------------------------------------------------------

#: the tasks that decode step by step (a cache of past keys and values serves them)
GENERATING = ("causal-lm", "generate", "text2text", "summarize")


def sub_configs(config: Any) -> list[Any]:
    """The configs nested in ``config`` (``text_config``, ``vision_config``, ...)."""
    return [value for value in vars(config).values() if hasattr(value, "to_dict") and hasattr(value, "model_type")]


class AutoFamily(TransformersFamily):
    """Builds any architecture of transformers' Auto mappings for garden's tasks."""

    tasks = {task: path for (task, modality), path in TASK_CLASSES.items() if (task, modality) != ("classify", "vision")}
    #: set from the tokenizer: the text tensors the model reads (``token_type_ids`` where it has them)
    text_inputs: tuple[str, ...] = ("input_ids", "attention_mask")
    #: the special token a seq2seq decoder starts from (set from the config)
    decoder_start_token = "pad_token"
    #: the speech tensor the model reads: raw ``input_values`` or ``input_features``
    audio_input = "input_values"
    audio_inputs: tuple[str, ...] = ("input_values", "attention_mask")
    #: the preprocessor made for this run (speech probes run its feature extractor)
    processor: Any = None
    #: the head's modality where a task has two (None: the first transformers lists, text)
    modality: str | None = None

    def config(self, spec: BuildSpec) -> Any:
        """The checkpoint's config, else the variant's (``config.json`` as a dict), else the one in
        the model's own folder (an entry declaring a Hub variant by id alone)."""
        from transformers import AutoConfig

        if spec.weights_dir is not None:
            config = AutoConfig.from_pretrained(spec.weights_dir)
        elif spec.variant.config.get("model_type"):
            values = dict(spec.variant.config)
            config = AutoConfig.for_model(values.pop("model_type"), **values)
        else:
            folder = self.source_folder(spec)
            if folder is None or not (folder / "config.json").is_file():
                raise ConfigError(f"model '{spec.entry.name}' variant '{spec.variant.name}' has neither weights nor "
                                  "a config to build from; pass weights=hub or a folder")
            config = AutoConfig.from_pretrained(folder)
        return self.adjust(config, spec)

    def model_type(self, spec: BuildSpec) -> str:
        return spec.entry.family

    def head(self, spec: BuildSpec) -> Any:
        import transformers

        check_task(spec.entry, spec.task)
        return getattr(transformers, heads_for(spec.entry.family, self.modality)[spec.task].auto)

    def adjust(self, config: Any, spec: BuildSpec) -> Any:
        """As every transformers family does, and name the head where the config names none (an
        Auto mapping with several classes for a task picks by ``architectures``); no decoding
        cache for a task that never decodes (a linear-attention cache cannot even count its
        length); an encoder read as a causal LM masks the future (``is_decoder``); X-MOD's
        language adapter: English, garden's shipped text, where the checkpoint names no default
        (``model.options.config.default_language=de_DE`` picks another)."""
        parts = list({id(c): c for c in (config, *sub_configs(config))}.values())
        for part in parts if spec.task not in GENERATING else ():
            if getattr(part, "use_cache", False):
                part.use_cache = False
        if spec.task in ("causal-lm", "generate") and getattr(config, "is_decoder", None) is False:
            config.is_decoder = True  # an encoder's LM head (BERT, Reformer) attends only backwards
        if getattr(config, "default_language", "") is None and "en_XX" in (getattr(config, "languages", None) or ()):
            config.default_language = "en_XX"
        if not getattr(config, "architectures", None) and spec.task in heads_for(spec.entry.family):
            config.architectures = [head_class_name(spec.entry.family, spec.task, self.modality)]
        if getattr(config, "is_encoder_decoder", False) and getattr(config, "decoder_start_token_id", None) is None:
            config.decoder_start_token_id = getattr(config, "pad_token_id", None) or 0  # T5's classifier shifts right
        for part in parts if spec.task == "classify" else ():  # pools the last real token
            if getattr(part, "pad_token_id", 0) is None:
                eos = getattr(part, "eos_token_id", None)
                part.pad_token_id = (eos[0] if isinstance(eos, list) and eos else eos) if eos is not None else 0
        return super().adjust(config, spec)

    def build(self, spec: BuildSpec) -> Any:
        """The task's Auto head, random or from ``spec.weights_dir``; PyTorch's SDPA attention
        where the architecture has it. ``model.blocks`` (the layer lists) is kept on the model."""
        import torch
        import transformers

        if torch.empty(0).device.type == "meta":  # stages are traced: they need real tensors
            raise NotImplementedError("AutoFamily builds on a real device")
        head, config = self.head(spec), self.config(spec)
        if type(config) not in head._model_mapping:  # a composite's text part saved alone (Emu3, Mllama)
            head = getattr(transformers, head_class_name(spec.entry.family, spec.task, self.modality))

        def make(**kwargs: Any) -> Any:
            if spec.weights_dir is not None:
                return self.load(head, config, spec, **kwargs)
            return head.from_config(config, **kwargs)

        try:
            model = make(attn_implementation="sdpa")
        except ValueError:  # an architecture without SDPA support says so (the config keeps the request)
            model = make(attn_implementation="eager")
        vars(model)["garden_blocks"] = spec.options.get("blocks")
        return model

    def head_modules(self, model: Any, task: str) -> list[str]:
        """The head class's own modules (all but the base model), for the load summary."""
        base = getattr(model, "base_model_prefix", "")
        return [name for name, _ in model.named_children() if name != base]

    # -- preprocessing -------------------------------------------------------------------------

    #: a curated plugin's copy of its Hub repository's tokenizer or processor files (and config),
    #: so that random-init runs need no download (``plugin new --from hf:...`` writes it)
    assets: Path | None = None

    def source_folder(self, spec: BuildSpec) -> Path | None:
        """Where the tokenizer or processor files are: the weights, else the ``hf:`` model's own
        folder (its Hub snapshot), else the plugin's ``assets``."""
        if spec.weights_dir is not None and any(
                (Path(spec.weights_dir) / f).exists() for f in ("tokenizer_config.json", "preprocessor_config.json",
                                                                "tokenizer.json", "processor_config.json")):
            return Path(spec.weights_dir)
        if is_hf(spec.entry.name):
            return resolve(spec.entry.name, spec.variant.revision)[1]
        return self.assets if self.assets is not None and Path(self.assets).is_dir() else None

    def preprocessor(self, spec: BuildSpec) -> Any:
        folder = self.source_folder(spec)
        if folder is None:
            raise ConfigError(f"model '{spec.entry.name}' has no tokenizer or processor files to read inputs with")
        heads = heads_for(spec.entry.family, self.modality)
        modality = heads[spec.task].modality if spec.task in heads else "text"
        if modality == "vision":
            from transformers import AutoImageProcessor

            return AutoImageProcessor.from_pretrained(folder, backend="pil")
        if modality == "speech":
            return self.speech_preprocessor(spec, folder)
        return self.text_preprocessor(spec, folder)

    def text_preprocessor(self, spec: BuildSpec, folder: Path) -> Any:
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(folder)
        except (OSError, ValueError, TypeError) as err:
            raise ConfigError(f"model '{spec.entry.name}' has no tokenizer garden can load from {folder} "
                              f"({' '.join(str(err).split())[:200]})") from None
        if tokenizer.pad_token is None and tokenizer.eos_token is not None:
            tokenizer.pad_token = tokenizer.eos_token
        forward = self.head_forward_arguments(spec)
        self.text_inputs = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids")
                                 if n in tokenizer.model_input_names and (not forward or n in forward))
        config = self.config(spec)
        start = getattr(config, "decoder_start_token_id", None)
        for name in ("pad_token", "bos_token", "eos_token", "cls_token"):
            if start is not None and getattr(tokenizer, f"{name}_id", None) == start:
                self.decoder_start_token = name
                break
        return tokenizer

    def speech_preprocessor(self, spec: BuildSpec, folder: Path) -> Any:
        from transformers import AutoFeatureExtractor, AutoProcessor

        if spec.task == "asr":
            processor = AutoProcessor.from_pretrained(folder)
        else:
            processor = AutoFeatureExtractor.from_pretrained(folder)
        extractor = getattr(processor, "feature_extractor", processor)
        self.audio_input = extractor.model_input_names[0]
        self.audio_inputs = audio_inputs(extractor, self.head_forward_arguments(spec))
        self.processor = processor
        return processor

    def head_forward_arguments(self, spec: BuildSpec) -> set[str]:
        import inspect

        import transformers

        check_task(spec.entry, spec.task)
        cls = getattr(transformers, head_class_name(spec.entry.family, spec.task, self.modality), None)
        return set(inspect.signature(cls.forward).parameters) if cls is not None else set()

    # -- stages ----------------------------------------------------------------------------------

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Blocks found by introspection and cut by pipelining's tracer (``model.blocks`` picks the lists)."""
        from garden.families.traced import traced_blocks

        task_object = resolve_name(self.tasks[task])(self)
        return traced_blocks(model, task_object, probe_inputs(model, task_object, self.processor),
                             vars(model).get("garden_blocks"))


class AutoVisionFamily(AutoFamily):
    """An architecture whose ``classify`` classifies images."""

    tasks = {**AutoFamily.tasks, "classify": TASK_CLASSES["classify", "vision"]}
    modality = "vision"


# -- inputs to trace with --------------------------------------------------------------------------


def probe_inputs(model: Any, task: Any, processor: Any = None, batch: int = 2, length: int = 8) -> tuple:
    """A small batch of the inputs ``task`` gives ``model`` (random ids, pixels or audio), sized
    from the model's config (or the processor's output): what the stages are traced with."""
    import torch

    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    generator = torch.Generator().manual_seed(0)
    values: dict[str, Any] = {}
    audio = speech_features(processor, config, batch) if any(
        n in ("input_values", "input_features") for n in task.input_names) else {}
    vocab = int(getattr(text, "vocab_size", None) or 100)
    special = {v for k in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
               for v in ([getattr(text, k, None)] if not isinstance(getattr(text, k, None), list) else getattr(text, k))
               if isinstance(v, int)}
    eos = getattr(text, "eos_token_id", None)
    eos = eos[0] if isinstance(eos, list) and eos else eos
    for name in task.input_names:
        if name in audio:
            values[name] = audio[name]
        elif name in ("input_ids", "decoder_input_ids"):
            ids = torch.randint(min(4, vocab - 1), vocab, (batch, length if name == "input_ids" else length - 2),
                                generator=generator)
            ids[torch.isin(ids, torch.tensor(sorted(special) or [-1]))] = min(4, vocab - 1)
            values[name] = ids
        elif name == "token_type_ids":
            values[name] = torch.zeros(batch, length, dtype=torch.long)
        elif name == "attention_mask":
            width = length if "input_ids" in values else audio_length(values)
            mask = torch.ones(batch, width, dtype=torch.long)
            mask[-1, width - max(1, width // 4):] = 0
            values[name] = mask
            if "input_ids" in values and isinstance(eos, int):  # each text ends as a tokenizer ends it
                values["input_ids"][torch.arange(batch), mask.sum(-1) - 1] = eos
        elif name == "pixel_values":
            size = image_size(config)
            values[name] = torch.randn(batch, int(getattr(config, "num_channels", 3) or 3), *size, generator=generator)
        else:
            raise ConfigError(f"garden cannot make a probe input '{name}' for {type(model).__name__}")
    return tuple(values[name] for name in task.input_names)


def image_size(config: Any) -> tuple[int, int]:
    """The pixels the model takes: its own ``image_size``, or its vision tower's (CLIP, SigLIP)."""
    size = getattr(config, "image_size", None) or getattr(getattr(config, "vision_config", None), "image_size", None) \
        or 224
    if isinstance(size, (list, tuple)):
        return int(size[-2]), int(size[-1])
    return int(size), int(size)


def audio_length(values: dict[str, Any]) -> int:
    found = next(iter(values.values()))
    return int(found.shape[1])


def speech_features(processor: Any, config: Any, batch: int) -> dict[str, Any]:
    """What the model's feature extractor makes of ``batch`` short random waveforms (half a second
    and a bit less, padded), e.g. ``{"input_values": (2, 8000), "attention_mask": ...}``."""
    import numpy as np

    extractor = getattr(processor, "feature_extractor", processor) if processor is not None else \
        default_feature_extractor(config)
    rate = int(getattr(extractor, "sampling_rate", 16000) or 16000)
    rng = np.random.default_rng(0)
    waves = [rng.standard_normal(rate // 2 - 800 * i).astype(np.float32) * 0.1 for i in range(batch)]
    try:  # the extractor's own padding first: Whisper's pads every clip to 30 s, as its encoder needs
        out = extractor(waves, sampling_rate=rate, return_tensors="pt", return_attention_mask=True)
    except ValueError:  # clips of different lengths it does not pad by default
        out = extractor(waves, sampling_rate=rate, return_tensors="pt", padding=True, return_attention_mask=True)
    return {k: v for k, v in out.items()}


def audio_inputs(extractor: Any, forward: set[str]) -> tuple[str, ...]:
    """The speech tensors a model reads: its extractor's main input, and the attention mask only
    where the extractor makes one by default, as transformers advises (wav2vec2-base's group norm
    was trained without; AST's mask would count frames, not its patches)."""
    names = [extractor.model_input_names[0]]
    if getattr(extractor, "return_attention_mask", True):
        names.append("attention_mask")
    return tuple(n for n in names if not forward or n in forward)


def default_feature_extractor(config: Any) -> Any:
    """The architecture's feature extractor with its default settings, sized to ``config``."""
    import transformers
    from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES

    name = FEATURE_EXTRACTOR_MAPPING_NAMES.get(config.model_type)
    if name is None:
        raise ConfigError(f"{config.model_type} has no feature extractor in transformers to make its inputs")
    cls = getattr(transformers, name)
    import inspect

    accepted = set(inspect.signature(cls.__init__).parameters)
    sizes = {"feature_size": getattr(config, "num_mel_bins", None), "num_mel_bins": getattr(config, "num_mel_bins", None)}
    return cls(**{k: v for k, v in sizes.items() if v is not None and k in accepted})

"""A ModelFamily for models from Hugging Face transformers, configured by class attributes.

A plugin names its architecture (transformers' ``model_type``), the preprocessor class and the
stage layout; the config class, each task's head class and the base model's attribute are the
ones transformers' Auto mappings give that architecture (a plugin names them itself only where
they do not: ``config_class``, ``heads``, ``base``). This base builds the model (random init or
from a Hub-format folder), its preprocessor, and saves both back in Hub format::

    class MyVisionModel(TransformersFamily):
        architecture = "my_vision"        # MyVisionConfig, MyVisionForImageClassification for classify
        preprocessor_class = "MyVisionImageProcessor"
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from garden import weights
from garden.errors import WeightsError
from garden.families.compat import attention_kwargs
from garden.hookspecs import BuildSpec, ModelFamily
from garden.text import TokenizerRecipe, shipped_tokenizer


def transformers_class(name: str) -> Any:
    import transformers

    return getattr(transformers, name)


def preprocessor_class(name: str) -> Any:
    """The PIL-backed twin of an image processor where transformers has one (``ViTImageProcessorPil``):
    the default backend wants torchvision, which cannot sit beside a CPU build of torch."""
    import transformers

    return getattr(transformers, f"{name}Pil", None) or getattr(transformers, name)


def submodule_path(model: Any, *candidates: str) -> str:
    """The first of ``candidates`` that ``model`` has: module layouts move between transformers
    releases (ViT's ``vit.encoder.layer`` became ``vit.layers``), checkpoints keep loading."""
    for path in candidates:
        try:
            model.get_submodule(path)
            return path
        except AttributeError:
            continue
    raise AttributeError(f"{type(model).__name__} has none of the modules {', '.join(candidates)}")


class TransformersFamily(ModelFamily):
    #: transformers' ``model_type`` of the family's models (``"bert"``)
    architecture: str = ""
    preprocessor_class: str | None = None
    #: attention kernel: PyTorch's scaled_dot_product_attention where the model supports it
    attn_implementation: str | None = "sdpa"
    #: how the tokenizer shipped beside the family (``tokenizer_file``) was trained, for text
    #: models without a checkpoint; ``tools/train_tokenizers.py`` follows it
    tokenizer_recipe: TokenizerRecipe | None = None

    @property
    def config_class(self) -> str:
        """The config class's name, as transformers' Auto mappings give it for ``architecture``."""
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        return CONFIG_MAPPING_NAMES[self.architecture]

    @property
    def heads(self) -> dict[str, str]:
        """Each task's head class's name (``{"classify": "BertForSequenceClassification", ...}``),
        as transformers' Auto mappings give them for ``architecture``."""
        from garden.families.auto import head_class_name, heads_for

        return {task: head_class_name(self.architecture, task) for task in heads_for(self.architecture)}

    @property
    def base(self) -> str:
        """The attribute holding the base model in every head class (``model.bert``)."""
        return transformers_class(next(iter(self.heads.values()))).base_model_prefix

    def config(self, spec: BuildSpec) -> Any:
        """The model config: the checkpoint's, else the variant's, with the task's labels."""
        cls = transformers_class(self.config_class)
        if spec.weights_dir is not None:
            config = cls.from_pretrained(spec.weights_dir)
        else:
            config = cls(**dict(spec.variant.config))
        return self.adjust(config, spec)

    def adjust(self, config: Any, spec: BuildSpec) -> Any:
        """``config`` with the task's labels, ``model.options.config`` and ``model.options.dropout``."""
        if spec.labels is not None:
            config.num_labels = len(spec.labels)
            config.id2label = dict(enumerate(spec.labels))
            config.label2id = {label: i for i, label in enumerate(spec.labels)}
        for key, value in spec.options.get("config", {}).items():
            setattr(config, key, value)
        if spec.options.get("dropout") is not None:  # model.options.dropout=0: every dropout rate at once
            for key, value in list(vars(config).items()):
                if isinstance(value, float) and ("dropout" in key or key.endswith("pdrop") or key == "layerdrop"):
                    setattr(config, key, float(spec.options["dropout"]))
        return config

    def check_weights(self, spec: BuildSpec) -> None:
        """The folder's ``config.json`` must describe this family's kind of model (its
        ``model_type``): a BERT run pointed at a ViT folder fails on what the folder says it is,
        not deep in a tokenizer it lacks."""
        import json

        from garden import registry

        path = Path(spec.weights_dir) / "config.json"
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise WeightsError(f"{path} is not a readable model config ({err}); re-save the checkpoint") from None
        expected = self.model_type(spec)
        kind = found.get("model_type") if isinstance(found, dict) else None
        if kind is None or kind == expected:
            return
        architectures = ", ".join(found.get("architectures") or []) or "no architecture named"
        models = [name for name in registry.entries() if name == kind or kind.startswith(name + "-")]
        fix = f"run it with model={models[0]}" if models else f"no installed plugin has a '{kind}' model"
        raise WeightsError(
            f"weights={spec.weights_dir} holds a '{kind}' model ({architectures}), not a '{expected}' one as "
            f"model={spec.entry.name} needs; {fix}, or give model={spec.entry.name} a {expected} checkpoint")

    def model_type(self, spec: BuildSpec) -> str:
        """The ``model_type`` a checkpoint for this family's models has (``bert``)."""
        return transformers_class(self.config_class).model_type

    def build(self, spec: BuildSpec) -> Any:
        head = transformers_class(self.heads[spec.task])
        config = self.config(spec)
        kwargs = attention_kwargs(self.attn_implementation)
        if spec.weights_dir is None:
            return head._from_config(config, **kwargs)
        return self.load(head, config, spec, **kwargs)

    def load(self, head: Any, config: Any, spec: BuildSpec, **kwargs: Any) -> Any:
        """``from_pretrained`` with the plugins' key renames, a summary line and strict shapes.

        The summary is left on the model as ``garden_load_summary`` for the run to print.
        """
        from transformers.utils import logging as hf_logging

        source: Any = spec.weights_dir
        renames = weights.key_renames(spec.entry.name, weights.checkpoint_keys(spec.weights_dir))
        if renames:  # transformers takes a renamed state dict only without a path
            source, kwargs["state_dict"] = None, weights.renamed_state_dict(spec.weights_dir, renames)
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # garden prints its own one-line report
        try:
            # pickles reach here only past weights.allow_pickle=true (garden.hub's check)
            pickled = source is not None and not weights.checkpoint_files(source)
            model, info = head.from_pretrained(source, config=config, ignore_mismatched_sizes=True,
                                               use_safetensors=not pickled, output_loading_info=True, **kwargs)
        finally:
            hf_logging.set_verbosity(verbosity)
        model.garden_load_summary = weights.load_summary(info, model, self.head_modules(model, spec.task),
                                                         str(spec.weights_dir))
        return model

    def head_modules(self, model: Any, task: str) -> list[str]:
        """The modules a checkpoint for another task may lack (newly initialised, not missing)."""
        try:
            return [m for b in self.stage_blocks(model, task) if b.kind == "head" for m in b.modules]
        except NotImplementedError:
            return []

    def preprocessor(self, spec: BuildSpec) -> Any:
        if not self.preprocessor_class:
            return None
        cls = preprocessor_class(self.preprocessor_class)
        if spec.weights_dir is not None and any(
            (Path(spec.weights_dir) / f).exists() for f in ("preprocessor_config.json", "tokenizer_config.json")
        ):
            return cls.from_pretrained(spec.weights_dir)
        return self.default_preprocessor(spec)

    def default_preprocessor(self, spec: BuildSpec) -> Any:
        """The preprocessor for a model without a checkpoint (random init)."""
        return preprocessor_class(self.preprocessor_class)()

    def tokenizer_file(self) -> Path:
        """``tokenizer.json`` beside the module that defines the family: each plugin ships its own."""
        return Path(sys.modules[type(self).__module__].__file__).with_name("tokenizer.json")

    def shipped_tokenizer(self, model_max_length: int = 512) -> Any:
        """The tokenizer trained by ``tokenizer_recipe`` and shipped in ``tokenizer_file()``."""
        return shipped_tokenizer(self.tokenizer_file(), self.tokenizer_recipe.special_tokens,
                                 model_max_length=model_max_length)

    def save(self, model: Any, preprocessor: Any, folder: Path) -> None:
        model.save_pretrained(folder, safe_serialization=True)
        if preprocessor is not None:
            preprocessor.save_pretrained(folder)

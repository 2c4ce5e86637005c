"""The registry's schema: ``registry.schema.json`` is the documentation, this module enforces it.

``validate_registry`` returns problems rather than raising, so ``registry check`` can print them
all at once; each names the JSON path of the offending field and the model it belongs to::

    >>> validate_registry({"schema_version": 1, "models": [{"name": "vit"}]})[0]  # doctest: +SKIP
    "models[0] (vit): 'family' is a required property"

Beyond what JSON Schema can say, it checks that the fields of one record agree with each other
(a layout has one entry per IPU, ``default`` names a variant, every task has a command), because
those are the mistakes a plugin author makes by hand. jsonschema is imported only here, lazily.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable, Iterator

from garden.compat import package_files


@functools.lru_cache(maxsize=1)
def registry_schema() -> dict[str, Any]:
    """The JSON Schema ``registry.json`` follows, read once from garden's package data."""
    return json.loads(package_files("garden").joinpath("registry.schema.json").read_text(encoding="utf-8"))


def json_path(parts: Iterable[Any]) -> str:
    """``["models", 0, "layouts", "4"]`` -> ``'models[0].layouts["4"]'``."""
    text = ""
    for part in parts:
        if isinstance(part, int) or not part.isidentifier():
            text += f"[{json.dumps(part)}]"
        else:
            text += f".{part}" if text else part
    return text or "(document)"


def validate_registry(document: Any) -> list[str]:
    """Every way ``document`` breaks the registry schema, each naming the field's JSON path."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(registry_schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
    problems = [_describe(document, list(e.absolute_path), _short(e)) for e in errors]
    if not problems:
        problems = [_describe(document, path, message) for path, message in _disagreements(document)]
    return problems


def _short(error: Any) -> str:
    """jsonschema's message, with a long offending value (a whole model) cut to its start."""
    shown = repr(error.instance)
    return error.message if len(shown) <= 80 else error.message.replace(shown, shown[:60] + "...")


def _describe(document: Any, path: list[Any], message: str) -> str:
    """Prefix ``message`` with the field's path and, inside a model, the model's name (and the
    variant's, inside one)."""
    where = json_path(path)
    if len(path) >= 2 and path[0] == "models" and isinstance(path[1], int):
        model = document["models"][path[1]]
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            names = [model["name"]]
            if len(path) >= 4 and path[2] == "variants" and isinstance(path[3], int):
                variant = model["variants"][path[3]]  # the path came from this document
                if isinstance(variant, dict) and isinstance(variant.get("name"), str):
                    names.append(f"variant {variant['name']}")
            where += f" ({', '.join(names)})"
    return f"{where}: {message}"


def _disagreements(document: dict[str, Any]) -> Iterator[tuple[list[Any], str]]:
    """Fields of a schema-valid document that contradict each other."""
    seen: dict[str, int] = {}
    registered = {(t["name"], t["domain"]) for t in document.get("tasks", [])}
    for i, model in enumerate(document["models"]):
        at = ["models", i]
        if model["name"] in seen:
            yield at + ["name"], f"'{model['name']}' is also models[{seen[model['name']]}]; names must be unique"
        seen.setdefault(model["name"], i)
        variants = [v["name"] for v in model["variants"]]
        if model["default"] is not None and model["default"] not in variants:
            yield at + ["default"], f"'{model['default']}' is not a variant; variants are {', '.join(variants)}"
        for ipus, layers in model["layouts"].items():
            if len(layers) != int(ipus):
                yield at + ["layouts", ipus], f"{layers} has {len(layers)} entries for {ipus} IPUs; give one per IPU"
        if sorted(model["commands"]) != sorted(model["tasks"]):
            yield at + ["commands"], f"keys {sorted(model['commands'])} differ from tasks {sorted(model['tasks'])}"
        for j, task in enumerate(model["tasks"]):
            if "tasks" in document and (task, model["domain"]) not in registered:
                yield at + ["tasks", j], (f"'{task}' is no registered task of domain '{model['domain']}' "
                                          f"(the document's tasks)")
        for j, result in enumerate(model["results"]):
            if result["task"] not in model["tasks"]:
                yield at + ["results", j, "task"], f"'{result['task']}' is not one of the model's tasks"
            if result.get("variant", variants[0]) not in variants:
                yield at + ["results", j, "variant"], f"'{result['variant']}' is not a variant"
            baseline = result.get("baseline")
            if baseline and baseline["metric"] not in result["metrics"]:
                yield at + ["results", j, "baseline", "metric"], \
                    f"'{baseline['metric']}' is not one of the result's metrics ({', '.join(result['metrics'])})"

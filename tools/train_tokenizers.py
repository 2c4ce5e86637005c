"""Train the tokenizers garden ships for models without a checkpoint, into each plugin's folder.

    python tools/train_tokenizers.py             # every family with a tokenizer_recipe
    python tools/train_tokenizers.py bert t5     # the families of some models

A run of a text model with ``weights=random`` reads ``tokenizer.json`` beside its family
(``TransformersFamily.tokenizer_file``) and never trains one: the trainers break ties in hash
order, so two trainings on the same text give two vocabularies, and a declared result would
depend on which one a user's run happened to train. This tool follows each family's
``tokenizer_recipe`` once; commit what it writes, and rerun ``bench/results.py --write`` after,
since a new vocabulary changes every result that reads it.

The file is written in the serialisation the Poplar SDK's tokenizers (0.13, beside transformers
4.29.2) also reads (:func:`portable`): BPE merges as ``"a b"`` strings and Metaspace's
``add_prefix_space``, which today's tokenizers still reads to the same encodings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="model names (default: every registered model)")
    args = parser.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", "1")  # fewer ties broken by thread timing
    from garden import registry
    from garden.files import write_atomic
    from garden.runs.prepared import family_of

    entries = [registry.get(n) for n in args.models] if args.models else registry.list_models()
    written: dict[Path, str] = {}
    for entry in entries:
        family = family_of(entry)
        recipe = getattr(family, "tokenizer_recipe", None)
        if recipe is None or family.tokenizer_file() in written:
            continue
        file = family.tokenizer_file()
        text = portable(recipe.train().to_str(pretty=True))
        write_atomic(file, text)
        written[file] = entry.name
        print(f"{entry.name}: {recipe.kind}, {len(json.loads(text)['model']['vocab'])} tokens -> {file}")
    if not written:
        print("no family named here ships a tokenizer", file=sys.stderr)
        return 2
    return 0


def portable(tokenizer_json: str) -> str:
    """``tokenizer_json`` (tokenizers' own serialisation) in the older form tokenizers 0.13 reads too.

    tokenizers 0.20 writes each BPE merge as a pair and an ``ignore_merges`` flag, and 0.19 Metaspace's
    ``prepend_scheme``/``split``; 0.13 reads neither ("data did not match any variant of untagged
    enum"). Both read merges as ``"a b"`` and Metaspace as ``add_prefix_space``, to the same ids.
    """
    data = json.loads(tokenizer_json)
    model = data["model"]
    if model["type"] == "BPE":
        if any(" " in part for merge in model["merges"] if not isinstance(merge, str) for part in merge):
            raise ValueError("a BPE merge holds a space: it has no 'a b' form")
        model["merges"] = [merge if isinstance(merge, str) else " ".join(merge) for merge in model["merges"]]
        if model.get("ignore_merges") is False:  # the default, and all 0.13 does
            del model["ignore_merges"]
    for part in (data.get("pre_tokenizer"), data.get("decoder")):
        if part and part["type"] == "Metaspace" and "prepend_scheme" in part:
            scheme, split = part.pop("prepend_scheme"), part.pop("split", True)
            if scheme not in ("always", "never") or not split:
                raise ValueError(f"Metaspace with prepend_scheme={scheme} split={split} has no 0.13 form")
            part["add_prefix_space"] = scheme == "always"
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.exit(main())

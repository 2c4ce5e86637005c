"""Train the tokenizers garden ships for models without a checkpoint, into each plugin's folder.

    python tools/train_tokenizers.py             # every family with a tokenizer_recipe
    python tools/train_tokenizers.py bert t5     # the families of some models

A run of a text model with ``weights=random`` reads ``tokenizer.json`` beside its family
(``TransformersFamily.tokenizer_file``) and never trains one: the trainers break ties in hash
order, so two trainings on the same text give two vocabularies, and a declared result would
depend on which one a user's run happened to train. This tool follows each family's
``tokenizer_recipe`` once; commit what it writes, and rerun ``bench/results.py --write`` after,
since a new vocabulary changes every result that reads it.
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
        text = recipe.train().to_str(pretty=True) + "\n"
        write_atomic(file, text)
        written[file] = entry.name
        print(f"{entry.name}: {recipe.kind}, {len(json.loads(text)['model']['vocab'])} tokens -> {file}")
    if not written:
        print("no family named here ships a tokenizer", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

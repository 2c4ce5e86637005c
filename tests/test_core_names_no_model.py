"""The core names no model: garden's code (docstrings, comments and the examples in them aside)
mentions none of the installed families, so that a model is a plugin and nothing else.

The names come from the registry (every model and family the installed plugins contribute), not
from a list here, so a new plugin is checked the day it is installed.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from garden import registry

ROOT = Path(__file__).resolve().parents[1]
#: garden's source: the package, and its Hydra configs (installed as ``garden.conf``)
CORE = [ROOT / "garden", ROOT / "conf"]


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` holds ``name`` as a word of its own, in any case: ``bert`` in ``BERT_TOKENS``,
    ``BertConfig`` or ``"bert"``, but not in ``roberta`` or ``Robert``; ``vit`` in ``ViTModel``, not
    in ``activity``. A word starts after a non-alphanumeric character or where lower case (or a digit)
    turns to upper case, and ends before a non-alphanumeric or an upper-case character::

        >>> [mentions(t, "bert") for t in ("BERT_TOKENS", "BertConfig", "base='bert'", "roberta", "Robert")]
        [True, True, True, False, False]
        >>> [mentions(t, "vit") for t in ("ViTImageProcessor", "activity", "ACTIVITY")]
        [True, False, False]
    """
    for match in re.finditer(re.escape(name), text, flags=re.IGNORECASE):
        i, j = match.span()
        before = i == 0 or not text[i - 1].isalnum() or (
            (text[i - 1].islower() or text[i - 1].isdigit()) and text[i].isupper())
        after = j == len(text) or not text[j].isalnum() or text[j].isupper()
        if before and after:
            return True
    return False


#: module-level strings that are examples for a reader, as docstrings are: the command's usage text
EXAMPLE_TEXTS = {"USAGE"}


def prose_positions(source: str) -> set[tuple[int, int]]:
    """Where each docstring (module, class, function) and each example text starts: ``(line, column)``."""
    tree = ast.parse(source)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add((first.lineno, first.col_offset))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in EXAMPLE_TEXTS for t in node.targets):
            found.add((node.value.lineno, node.value.col_offset))
    return found


def code_words(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every name and string in ``path`` that is code: Python without its
    comments, docstrings and usage text, YAML without its comments."""
    source = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        return [(n, line.split("#", 1)[0]) for n, line in enumerate(source.splitlines(), start=1)]
    prose = prose_positions(source)
    words = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and token.start in prose):
            continue
        if token.type in (tokenize.NAME, tokenize.STRING) or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            words.append((token.start[0], token.string))
    return words


def core_files() -> list[Path]:
    return sorted(p for base in CORE for p in base.rglob("*") if p.suffix in (".py", ".yaml", ".yml")
                  and "__pycache__" not in p.parts)


def installed_names() -> list[str]:
    """Every model and family name the installed plugins register."""
    return sorted({n for e in registry.entries().values() for n in (e.name, e.family)})


def test_the_word_finder_tells_a_name_from_a_longer_word():
    assert mentions("from garden.text import BERT_TOKENS", "bert")
    assert mentions('heads = {"asr": "Wav2Vec2ForCTC"}', "wav2vec2")
    assert mentions("GPT2LMHeadModel", "gpt2")
    assert not mentions("CamembertConfig", "bert")
    assert not mentions("gravity, mt5", "vit") and not mentions("mt5", "t5")


def test_the_finder_sees_code_and_skips_docstrings_comments_and_usage(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""A docstring naming bert."""\n# a comment naming bert\nUSAGE = """model=bert"""\n'
                      'def f():\n    """bert again."""\n    return "bert-base"\n')
    assert [line for line, text in code_words(module) if mentions(text, "bert")] == [6]


def test_the_core_names_no_installed_model_or_family():
    names = installed_names()
    assert len(names) >= 2, "no plugins installed: nothing to check against"
    hits = [f"{path.relative_to(ROOT)}:{line}: {name} in {text.strip()[:80]!r}"
            for path in core_files() for line, text in code_words(path)
            for name in names if mentions(text, name)]
    assert not hits, f"{len(hits)} mentions of model families in garden's core:\n" + "\n".join(hits)

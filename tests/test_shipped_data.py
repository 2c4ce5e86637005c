"""The datasets garden ships are what their generators in ``tools/data/`` write: regenerating them
gives the same bytes, so a changed template or seed cannot drift from the data the recipes and
declared results were measured on. The generators are tools, not runtime: the installed package
holds only the data. The plugins' shipped tokenizers are in the form the Poplar SDK's older
tokenizers reads too (``tools/train_tokenizers.py``)."""

from __future__ import annotations

import filecmp
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import ROOT

DATA = ROOT / "garden" / "tasks" / "data"
TOOLS = ROOT / "tools" / "data"


def generate(script: str, out: Path) -> None:
    result = subprocess.run([sys.executable, str(TOOLS / script), "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_regenerating_the_text_data_gives_the_shipped_bytes(tmp_path):
    generate("make_text_data.py", tmp_path)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in DATA.iterdir() if p.is_file())
    _, differ, missing = filecmp.cmpfiles(DATA, tmp_path, written, shallow=False)
    assert not differ and not missing, f"regenerate with: python tools/data/make_text_data.py ({differ})"


def test_regenerating_the_vqa_data_gives_the_shipped_questions_and_regions(tmp_path):
    generate("make_vqa_data.py", tmp_path)
    assert (tmp_path / "questions.json").read_bytes() == (DATA / "vqa" / "questions.json").read_bytes()
    # numpy stamps the write time into the .npz's zip headers: compare the arrays it holds
    with np.load(tmp_path / "regions.npz") as new, np.load(DATA / "vqa" / "regions.npz") as shipped:
        assert sorted(new.files) == sorted(shipped.files)
        for name in new.files:
            np.testing.assert_array_equal(new[name], shipped[name], err_msg=name)


def test_the_shipped_speech_transcripts_are_the_generators_utterances():
    # The audio needs espeak-ng (docs/speech_data.md); what was said is checked without it.
    spec = importlib.util.spec_from_file_location("make_speech_data", TOOLS / "make_speech_data.py")
    speech = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(speech)
    rows = (DATA / "speech" / "transcripts.csv").read_text().splitlines()[1:]
    expected = [f"{stem}.wav,{text},{speaker},{text if text in speech.DIGITS + speech.COMMANDS else '_unknown_'}"
                for stem, text, speaker, _ in speech.utterances()]
    assert rows == expected
    assert sorted(p.name for p in (DATA / "speech").glob("*.wav")) == sorted(r.split(",")[0] for r in expected)


def tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_tokenizers_are_in_the_form_the_sdks_tokenizers_reads_too():
    portable = tool("train_tokenizers").portable
    files = sorted(ROOT.glob("plugins/*/garden_*/tokenizer.json"))
    assert files
    for file in files:
        assert portable(file.read_text()) == file.read_text(), f"rewrite {file} with tools/train_tokenizers.py"


def test_the_portable_form_encodes_as_the_trained_tokenizer_does():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    portable = tool("train_tokenizers").portable
    text = (DATA / "lm_corpus.txt").read_text().splitlines()
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer, unigram.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
    for tokenizer, trainer in (
            (bpe, trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())),
            (unigram, trainers.UnigramTrainer(vocab_size=300, show_progress=False, special_tokens=["<unk>"],
                                              unk_token="<unk>"))):
        tokenizer.train_from_iterator(text, trainer=trainer)
        original = tokenizer.to_str()
        assert json.loads(portable(original)) != json.loads(original)  # something was rewritten
        rewritten = Tokenizer.from_str(portable(original))
        for line in text[:300] + ["  two  spaces ", "Héllo wörld"]:
            assert rewritten.encode(line).ids == tokenizer.encode(line).ids, line
            assert rewritten.encode(line).offsets == tokenizer.encode(line).offsets, line


def test_the_generators_are_not_installed_with_garden():
    assert not list(DATA.rglob("*.py"))


def test_the_default_images_are_scikit_learns_digits_read_without_importing_it():
    """The image task reads the digits file scikit-learn ships (its import is 2 s of a run's
    start): the same scans, labels and class names as its own loader gives."""
    code = ("import sys; from garden.tasks.image import digits; images, targets, names = digits(); "
            "print(len(images), 'sklearn' in sys.modules)")
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert printed == ["1797", "False"]
    from sklearn.datasets import load_digits

    from garden.tasks.image import digits

    images, targets, names = digits()
    bunch = load_digits()
    assert targets == bunch.target.tolist() and names == tuple(str(n) for n in bunch.target_names)
    expected = (bunch.images * (255.0 / 16.0)).astype(np.uint8)
    assert all(np.array_equal(np.asarray(image)[..., 0], scan) for image, scan in zip(images, expected))

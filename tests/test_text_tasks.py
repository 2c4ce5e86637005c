"""The text layer as specifications: reading the user's files, lengths, label alignment, QA spans,
masking, entity chunks and the shipped tokenizers (no model runs here)."""

from __future__ import annotations

import json

import pytest

from garden.errors import DataError
from garden.text import default_data, fit_lengths, load_records, read_inputs

#: WordPiece special tokens in id order ([PAD] is 0) and their single and pair templates
WORDPIECE_TOKENS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                    "mask_token": "[MASK]"}
WORDPIECE_TEMPLATE = ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")
#: byte-level BPE special tokens in id order (<s> is 0, <pad> 1) and their templates
BPE_TOKENS = {"bos_token": "<s>", "pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
              "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}
BPE_TEMPLATE = ("<s> $A </s>", "<s> $A </s> </s> $B </s>")
#: each family that ships a tokenizer, and the ids its special tokens have in the real checkpoints
SHIPPED = {
    "garden_bert.family:BERT": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4},
    "garden_roberta.family:RoBERTa": {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4},
    "garden_camembert.family:CamemBERT": {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4},
    "garden_deberta.family:DeBERTa": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4},
    "garden_bart.family:BART": {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4},
    "garden_t5.family:T5": {"<pad>": 0, "</s>": 1, "<unk>": 2},
    "garden_gpt2.family:GPT2": {"<|endoftext|>": 0},
}


@pytest.fixture(scope="module")
def tokenizer():
    """BERT's shipped WordPiece tokenizer (trained on garden's English text, lower-cased)."""
    from garden_bert.family import BERT

    return BERT().shipped_tokenizer()


def test_a_jsonl_row_missing_a_field_names_the_file_the_row_and_the_field(tmp_path):
    path = tmp_path / "reviews.jsonl"
    path.write_text('{"sentence": "fine", "label": 1}\n{"sentence": "bad"}\n')
    with pytest.raises(DataError) as err:
        load_records(path, ("sentence", "label"), "classify")
    assert str(err.value) == (f"data.path={path}: row 2 has no field 'label' (task 'classify' needs sentence, label)")


def test_a_csv_row_missing_a_value_is_named_by_its_data_row(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text("sentence,label\ngood,1\nbad,\n")
    with pytest.raises(DataError, match=r"reviews.csv: row 2 has no field 'label'"):
        load_records(path, ("sentence", "label"), "classify")
    path.write_text("sentence,label\ngood,1\nbad,0\n")
    assert load_records(path, ("sentence", "label"), "classify") == [
        {"sentence": "good", "label": 1}, {"sentence": "bad", "label": 0}]


def test_a_file_in_the_wrong_format_names_the_file_and_the_formats_read(tmp_path):
    with pytest.raises(DataError, match=r"data.path=.*notes.txt: task 'classify' reads .csv, .json or .jsonl"):
        load_records(tmp_path / "notes.txt", ("sentence", "label"), "classify")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"sentence": "ok", "label": 1}\nnot json\n')
    with pytest.raises(DataError, match=r"broken.jsonl: line 2 is not JSON .*expected JSONL"):
        load_records(broken, ("sentence", "label"), "classify")


def test_a_squad_file_is_flattened_to_question_context_answers_rows():
    rows = load_records(default_data("squad_like.json"), ("question", "context", "answers"), "qa")
    first = rows[0]
    start = first["answers"]["answer_start"][0]
    assert first["context"][start:start + len(first["answers"]["text"][0])] == first["answers"]["text"][0]


def test_long_examples_are_counted_in_one_note_or_refused_by_name():
    note = fit_lengths([5, 40, 9, 70], 32, truncation=True, what="garden's sst2_like.jsonl")
    assert note.startswith("2 of 4 garden's sst2_like.jsonl examples were longer than 32 tokens and were truncated")
    assert fit_lengths([5, 9], 32, truncation=True, what="x") is None
    with pytest.raises(DataError) as err:
        fit_lengths([5, 40], 32, truncation=False, what="data.path=r.csv", names=["row 1", "row 2"])
    assert str(err.value) == ("data.path=r.csv row 2 is 40 tokens, longer than 32 (data.max_length); "
                              "set data.truncation=true or shorten it")


def test_word_labels_sit_on_first_subwords_and_later_subwords_are_ignored(tokenizer):
    from garden.tasks.text import align_labels

    assert align_labels([None, 0, 0, 1, None], [3, 5]) == [-100, 3, -100, 5, -100]
    enc = tokenizer(["Kingsbridgeshire", "rose"], is_split_into_words=True)
    labels = align_labels(enc.word_ids(), [7, 0])
    word_ids = enc.word_ids()
    assert word_ids.count(0) > 1, "the made-up word should split into several subwords"
    assert labels[0] == labels[-1] == -100 and [label for label in labels if label != -100] == [7, 0]
    firsts = [i for i, w in enumerate(word_ids) if w is not None and w != word_ids[i - 1]]
    assert [i for i, label in enumerate(labels) if label != -100] == firsts


def test_iob2_tags_chunk_into_typed_entities():
    from garden.tasks.text import entities

    assert entities(["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG"]) == [
        ("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5), ("ORG", 5, 6)]


def test_an_answer_maps_to_the_tokens_that_spell_it(tokenizer):
    from garden.tasks.text import answer_positions

    context = "Tarnmoor was founded in 1672 by a band of farmers led by Rahul Kowalski."
    answer = "a band of farmers"
    start = context.index(answer)
    enc = tokenizer("Who founded Tarnmoor?", context, return_offsets_mapping=True)
    first, last = answer_positions(enc["offset_mapping"], enc.sequence_ids(), start, start + len(answer))
    offsets = enc["offset_mapping"]
    assert context[offsets[first][0]:offsets[last][1]] == answer


def test_an_answer_cut_off_by_truncation_points_at_the_first_token(tokenizer):
    from garden.tasks.text import answer_positions

    context = "word " * 40 + "the answer is here."
    enc = tokenizer("Where?", context, truncation="only_second", max_length=16, return_offsets_mapping=True)
    start = context.index("answer")
    assert answer_positions(enc["offset_mapping"], enc.sequence_ids(), start, start + 6) == (0, 0)


def test_squad_scores_normalise_case_punctuation_and_articles():
    from garden.tasks.text import answer_f1, normalize_answer

    assert normalize_answer("The  Brenna River!") == "brenna river"
    assert answer_f1("the Brenna", "Brenna River") == pytest.approx(2 / 3)
    assert answer_f1("Lake Orrin", "Brenna River") == 0.0


def test_masking_repeats_with_the_seed_and_never_masks_special_tokens():
    import torch

    from garden.tasks.text import mask_tokens

    ids, special = list(range(100, 140)), [1] + [0] * 38 + [1]

    def masked(seed):
        return mask_tokens(ids, special, 4, 1000, torch.Generator().manual_seed(seed))

    assert masked(0) == masked(0) and masked(0) != masked(1)
    inputs, labels = masked(0)
    picked = [i for i, label in enumerate(labels) if label != -100]
    assert picked and labels[0] == labels[-1] == -100 and inputs[0] == 100 and inputs[-1] == 139
    assert all(labels[i] == ids[i] for i in picked) and any(inputs[i] == 4 for i in picked)
    short = mask_tokens([101, 7, 102], [1, 0, 1], 4, 1000, torch.Generator().manual_seed(0))[1]
    assert short == [-100, 7, -100]


@pytest.mark.parametrize("builder", SHIPPED)
def test_each_text_family_ships_its_tokenizer_with_the_checkpoints_special_token_ids(builder, monkeypatch):
    import pkgutil

    from garden.text import TokenizerRecipe

    def no_training(self):
        raise AssertionError("a run trained a tokenizer")

    monkeypatch.setattr(TokenizerRecipe, "train", no_training)
    family = pkgutil.resolve_name(builder)()
    tokenizer = family.shipped_tokenizer()
    assert family.tokenizer_file().parent.name == builder.split(".")[0]
    assert {t: tokenizer.convert_tokens_to_ids(t) for t in SHIPPED[builder]} == SHIPPED[builder]
    assert getattr(tokenizer, "garden_trained", False) and len(tokenizer) <= family.tokenizer_recipe.vocab_size
    assert tokenizer.decode(tokenizer("the cat sat", add_special_tokens=False)["input_ids"]).strip() == "the cat sat"


def test_a_missing_shipped_tokenizer_names_the_file_and_the_tool_that_writes_it(tmp_path):
    from garden.text import shipped_tokenizer

    with pytest.raises(DataError) as err:
        shipped_tokenizer(tmp_path / "tokenizer.json", WORDPIECE_TOKENS)
    assert str(err.value) == (f"the shipped tokenizer {tmp_path / 'tokenizer.json'} is missing; reinstall the "
                              "plugin, or write it with python tools/train_tokenizers.py")


def test_a_recipe_trains_a_tokenizer_with_its_special_tokens_first_and_its_template():
    from garden.text import TokenizerRecipe

    trained = TokenizerRecipe("bpe", BPE_TOKENS, ("sst2_like.jsonl",), 300, BPE_TEMPLATE).train()
    assert [trained.id_to_token(i) for i in range(5)] == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    assert trained.get_vocab_size() == 300
    tokens = trained.encode("a fine film").tokens
    assert tokens[0] == "<s>" and tokens[-1] == "</s>" and len(tokens) > 2


def test_infer_inputs_are_a_text_file_a_jsonl_file_or_the_text_itself(tmp_path):
    lines = tmp_path / "in.txt"
    lines.write_text("first one\n\nsecond one\n")
    assert read_inputs(str(lines), "sentence") == [("in.txt:1", "first one"), ("in.txt:2", "second one")]
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"sentence": "from json"}) + "\n")
    assert read_inputs(str(rows), "sentence") == [("in.jsonl:1", "from json")]
    assert read_inputs("Just some text.", "sentence") == [("Just some text.", "Just some text.")]
    with pytest.raises(DataError, match="infer.inputs=missing.txt does not exist"):
        read_inputs("missing.txt", "sentence")

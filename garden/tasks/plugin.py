"""garden's own tasks, contributed through the same hook a third party uses (``garden_tasks``).

Discovery registers this module before any installed plugin, as pytest registers its built-in
plugins, so a new task (object detection, tabular regression) is a plugin like these, with no
change to garden. Data only: the Task classes are named by import path and imported by a run.
"""

from garden.entries import TaskEntry
from garden.hookspecs import API_VERSION, hookimpl

GARDEN_API_VERSION = API_VERSION

TASKS = [
    TaskEntry("classify", "vision", "garden.tasks.image:ImageClassification",
              "image classification: a folder of images per class -> class probabilities"),
    TaskEntry("classify", "nlp", "garden.tasks.text:SequenceClassification",
              "sentence (or sentence-pair) classification"),
    TaskEntry("token-classify", "nlp", "garden.tasks.text:TokenClassification",
              "named-entity recognition on word-level IOB2 tags"),
    TaskEntry("qa", "nlp", "garden.tasks.text:QuestionAnswering",
              "extractive question answering, SQuAD-style"),
    TaskEntry("mlm", "nlp", "garden.tasks.text:MaskedLM",
              "masked language modelling", tied_head=True),
    TaskEntry("causal-lm", "nlp", "garden.tasks.generation:CausalLM",
              "next-token prediction; infer continues prompts", tied_head=True),
    TaskEntry("generate", "nlp", "garden.tasks.generation:Generate",
              "text generation: infer-first, trained as a causal LM", tied_head=True),
    TaskEntry("text2text", "nlp", "garden.tasks.generation:Seq2Seq",
              "source text -> target text (default data translates en -> fr)", tied_head=True),
    TaskEntry("summarize", "nlp", "garden.tasks.generation:Summarize",
              "document -> summary", tied_head=True),
    TaskEntry("asr", "speech", "garden.tasks.audio:SpeechRecognition",
              "CTC speech recognition: greedy transcripts, WER and CER"),
    TaskEntry("audio-classify", "speech", "garden.tasks.audio:AudioClassification",
              "utterance classification (keyword spotting, speaker identification)"),
    TaskEntry("vqa", "multimodal", "garden.tasks.vqa:VisualQuestionAnswering",
              "visual question answering over image region features"),
]


@hookimpl
def garden_tasks():
    return TASKS


@hookimpl
def garden_config_dir():
    return "pkg://garden.tasks.conf"

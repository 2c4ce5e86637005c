"""The inference plan: which precision (and whether ``torch.compile``) runs a model fastest on
this machine, and the check that keeps a quantised plan honest.

``infer.precision=auto`` chooses by what the hardware runs fast, detected once per process:

* a GPU, or a CPU with AMX (``amx_bf16`` in /proc/cpuinfo, Intel since Sapphire Rapids): ``bf16``;
* any other CPU: ``int8-dynamic`` (``quantize_dynamic`` on the Linear layers: int8 weights,
  activations quantised per batch), checked against fp32. On AVX2 alone (AMD before Zen 4, Intel
  before Cooper Lake, most laptops) bf16 is emulated and several times slower than fp32; with
  AVX512-BF16 but no AMX (AMD Zen 4 and 5) bf16 is fast, but int8 on AVX512-VNNI is faster still:
  1.05-2.7x bf16 for ViT-base and BERT-base at batch 1 and 8 (bench/inference.py on a 2-core
  AVX-512 EPYC, docs/benchmarks.md);
* ``+compile`` (``torch.compile``, inductor) on a GPU, for runs of at least
  ``infer.compile_min_batches`` batches: its warm-up (tens of seconds for a base model) is paid
  once per process and only a long run earns it back. Never on a CPU: in garden's infer loop on
  a 2-core AVX2 EPYC the compiled plans were not reliably faster than the eager ones, slower in
  several cases, after a warm-up of seconds to minutes (bench/inference.py's ``auto +compile``
  column); ``infer.precision=...+compile`` still names it;
* ``fp32`` for models under :data:`MIN_PARAMS` parameters, whose casts and quantisation cost
  more than they save, and for tasks that forbid the lower precision.

A quantised plan is checked on the run's own first ``infer.check_batches`` batches: the same
batches run in fp32 too, and if top-1 agreement falls below ``infer.min_agreement`` the run goes
on in fp32 with a one-line note. The plan, why it was chosen and the agreement measured go into
the run's metrics.json.

    >>> parse("int8-dynamic+compile").label, parse("bf16").compile
    ('int8-dynamic+compile', False)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from garden.declared import cpu_features
from garden.errors import ConfigError

#: the precisions a plan can name; ``+compile`` may follow any of them, ``auto`` chooses
PRECISIONS = ("fp32", "bf16", "fp16", "int8-dynamic")
#: below this many parameters ``auto`` stays fp32: bf16 measured 0.9x fp32 on the 0.1 M-parameter
#: tiny variants and 2.3-3.2x on the base models (bench/inference.py on an AMX CPU)
MIN_PARAMS = 10_000_000


@dataclass(frozen=True)
class Plan:
    """A precision and whether to compile; ``reason`` says why ``auto`` chose it."""

    precision: str = "fp32"
    compile: bool = False
    reason: str = ""

    @property
    def label(self) -> str:
        return self.precision + ("+compile" if self.compile else "")

    @property
    def quantised(self) -> bool:
        return self.precision == "int8-dynamic"


def parse(value: str) -> Plan:
    """``infer.precision`` as a plan (``auto`` aside), or a ConfigError naming the choices."""
    precision, plus, extra = value.partition("+")
    if precision not in PRECISIONS or (plus and extra != "compile"):
        raise ConfigError(f"infer.precision={value} is not auto or one of {', '.join(PRECISIONS)} "
                          "(each optionally followed by +compile, e.g. int8-dynamic+compile)")
    return Plan(precision, bool(plus))


def native_bf16(features: frozenset[str] | None = None) -> bool:
    """Whether the CPU multiplies bf16 in hardware (AMX or AVX512-BF16)."""
    features = cpu_features() if features is None else features
    return "amx_bf16" in features or "avx512_bf16" in features


@dataclass(frozen=True)
class Machine:
    """What the plan depends on: the device and what it runs fast."""

    device: str = "cpu"
    bf16: bool = False
    #: AMX: bf16 matrix tiles, faster than int8 on AVX512-VNNI (bf16 alone, AVX512-BF16, is not)
    amx: bool = False

    @classmethod
    def here(cls, device: str) -> "Machine":
        if device == "cuda":
            import torch

            return cls("cuda", torch.cuda.is_bf16_supported())
        features = cpu_features()
        return cls("cpu", native_bf16(features), "amx_bf16" in features)

    def describe(self) -> str:
        if self.device == "cuda":
            return "GPU" + (" with bf16" if self.bf16 else " without bf16")
        if self.amx:
            return "CPU with AMX"
        return "CPU with AVX512-BF16, no AMX" if self.bf16 else "CPU without a bf16 path (no AMX/AVX512-BF16)"


def choose(requested: str, machine: Machine, *, params: int, batches: int, allow_bf16: bool = True,
           allow_int8: bool = True, offered: tuple[str, ...] = PRECISIONS, can_compile: bool = True,
           compile_min_batches: int = 100) -> Plan:
    """The plan for ``infer.precision=requested`` on ``machine``, for a model of ``params``
    parameters and a run of ``batches`` batches on a backend that runs the ``offered``
    precisions (and ``can_compile``).

    >>> choose("auto", Machine("cpu", bf16=False), params=86_000_000, batches=10).label
    'int8-dynamic'
    >>> choose("auto", Machine("cpu", bf16=True, amx=True), params=86_000_000, batches=10).label
    'bf16'
    >>> choose("auto", Machine("cpu", bf16=True), params=86_000_000, batches=10).label
    'int8-dynamic'
    >>> choose("auto", Machine("cpu", bf16=False), params=100_000, batches=10).label
    'fp32'
    """
    if requested != "auto":
        return parse(requested)
    compiles_here = can_compile and machine.device != "cpu"
    long_run = compiles_here and batches >= compile_min_batches
    why_compile = "" if not compiles_here else (
        f"; {batches} batches: +compile" if long_run
        else f"; {batches} batches < infer.compile_min_batches={compile_min_batches}: no compile")
    if params < MIN_PARAMS:
        return Plan("fp32", False, f"auto: {params / 1e6:.1f}M parameters, under {MIN_PARAMS // 1_000_000}M: "
                                   "lower precision costs more than it saves")
    where = machine.describe()
    fast_bf16 = machine.bf16 and (machine.device != "cpu" or machine.amx)
    if fast_bf16 and allow_bf16 and "bf16" in offered:
        return Plan("bf16", long_run, f"auto: {where}{why_compile}")
    if machine.device == "cpu" and allow_int8 and "int8-dynamic" in offered:
        return Plan("int8-dynamic", long_run, f"auto: {where}: dynamic int8, checked against fp32{why_compile}")
    if machine.bf16 and allow_bf16 and "bf16" in offered:  # no int8 here: bf16 still beats fp32
        return Plan("bf16", long_run, f"auto: {where}: no int8 plan here{why_compile}")
    reason = f"{where}; no quantised plan allowed here" if not (allow_bf16 and allow_int8) else where
    return Plan("fp32", long_run, f"auto: {reason}{why_compile}")


def logits_of(output: Any) -> Any:
    """The scores a task's output ranks by (a tensor, or ``.logits``), or None when it has none."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    logits = getattr(output, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    return None


@dataclass
class Agreement:
    """Top-1 agreement and the largest logit difference between a plan's outputs and fp32's
    (for generated token ids: the share of positions holding the same token)."""

    threshold: float
    batches: int = 0
    positions: int = 0
    agreeing: int = 0
    max_logit_error: float = 0.0
    comparable: bool = True
    notes: list[str] = field(default_factory=list)

    def add(self, reference: Any, candidate: Any) -> None:
        ref, got = logits_of(reference), logits_of(candidate)
        self.batches += 1
        if ref is None or got is None or ref.shape != got.shape:
            self.comparable = False
            return
        if not ref.is_floating_point():  # generated token ids: the same token at each position
            self.positions += ref.numel()
            self.agreeing += int((ref == got).sum())
            return
        ref, got = ref.float(), got.float()
        self.positions += ref[..., 0].numel()
        self.agreeing += int((ref.argmax(-1) == got.argmax(-1)).sum())
        self.max_logit_error = max(self.max_logit_error, float((ref - got).abs().max()))

    @property
    def top1(self) -> float:
        return self.agreeing / self.positions if self.positions else 0.0

    @property
    def accepted(self) -> bool:
        return self.comparable and self.positions > 0 and self.top1 >= self.threshold

    def summary(self) -> str:
        if not self.comparable:
            return "outputs have no logits to compare"
        return (f"top-1 agreement with fp32 {self.top1:.1%} of {self.positions} over the first {self.batches} "
                f"batch{'es' * (self.batches != 1)}, max logit error {self.max_logit_error:.3g}")

    def to_dict(self) -> dict[str, Any]:
        return {"top1": round(self.top1, 6), "max_logit_error": round(self.max_logit_error, 6),
                "compared": self.positions, "batches": self.batches, "threshold": self.threshold,
                "accepted": self.accepted}


def quantize_dynamic(model: Any) -> Any:
    """A copy of ``model`` with its Linear layers in dynamic int8 (weights int8, activations
    quantised per batch); the original stays fp32 for the agreement check."""
    import warnings

    import torch

    with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", ".*quantiz", UserWarning)
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=False)


def compiled(model: Any) -> Any:
    """``torch.compile``'d ``model`` for inference (inductor, its weights frozen as constants, as
    inductor advises for CPU inference); it compiles at its first call, for that call's shapes,
    and once more, with sizes symbolic, at the first other shape (torch's default)."""
    import torch

    return torch.compile(model, options={"freezing": True})

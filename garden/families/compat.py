"""The torch and transformers APIs that differ between today's stack and the Poplar SDK's (torch
2.0.1, transformers 4.29.2; ``constraints-sdk.txt``), in one place, so the stage blocks of every
family and the planner read the same on both.

* :func:`flop_counter`: ``torch.utils.flop_counter.FlopCounterMode`` (torch 2.1+), else a counter
  of the matmuls and convolutions, which is what it counts.
* :func:`bidirectional_mask` / :func:`causal_mask`: the attention mask a layer takes
  (``transformers.masking_utils`` in 5.x; an additive ``(batch, 1, queries, keys)`` mask in 4.x).
* :func:`layer_output`: a layer's hidden states (4.x layers return a tuple, 5.x a tensor).
* :func:`call_layer`: a layer called with the keywords its ``forward`` takes (4.x GPT-2 takes no
  ``position_ids``), its hidden states returned.
* :func:`scales_decoder_outputs`: T5's ``config.scale_decoder_outputs`` (5.x), which 4.x derives
  from ``tie_word_embeddings``.
* :func:`attention_kwargs`: ``attn_implementation=...`` where transformers takes it (4.36+).
* :func:`fast_tokenizer`: the tokenizers-backed class of a model's tokenizer (``BertTokenizerFast``
  in 4.x, whose ``BertTokenizer`` is the pure-Python one; 5.x has only ``BertTokenizer``).
"""

from __future__ import annotations

from typing import Any


def flop_counter() -> Any:
    """A context manager that counts the FLOPs run inside it (``get_total_flops()``)."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:  # torch 2.0
        return _matmul_flops()
    return FlopCounterMode(display=False)


def _matmul_flops() -> Any:
    import math

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten

    def matmul(a: Any, b: Any) -> int:
        return 2 * math.prod(a.shape[:-1]) * a.shape[-1] * b.shape[-1]

    class MatmulFlops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.total = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            packet = getattr(func, "overloadpacket", None)
            if packet in (aten.mm, aten.bmm):
                self.total += matmul(args[0], args[1])
            elif packet in (aten.addmm, aten.baddbmm):
                self.total += matmul(args[1], args[2])
            elif packet is aten.convolution:
                weight = args[1]
                self.total += 2 * out.numel() * math.prod(weight.shape[1:])
            return out

        def get_total_flops(self) -> int:
            return self.total

    return MatmulFlops()


def attention_kwargs(implementation: str | None) -> dict:
    """The keyword that chooses the attention kernel, for a transformers that has the choice."""
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return {"attn_implementation": implementation} if implementation and (major, minor) >= (4, 36) else {}


def fast_tokenizer(name: str) -> Any:
    """transformers' ``{name}Fast`` where it has one (4.x), else ``name`` (5.x: fast already)."""
    import transformers

    return getattr(transformers, f"{name}Fast", None) or getattr(transformers, name)


def layer_output(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


def call_layer(layer: Any, *args: Any, **kwargs: Any) -> Any:
    """``layer(*args, **kwargs)`` without the keywords its forward does not take; its hidden states."""
    import inspect

    parameters = inspect.signature(layer.forward).parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    kwargs = {k: v for k, v in kwargs.items() if k in parameters or (open_ended and v is not None)}
    return layer_output(layer(*args, **kwargs))


def scales_decoder_outputs(config: Any) -> bool:
    """Whether T5 scales the decoder's output by ``d_model ** -0.5`` before its LM head."""
    return bool(getattr(config, "scale_decoder_outputs", config.tie_word_embeddings))


def _additive(keep: Any, dtype: Any) -> Any:
    import torch

    return torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, torch.finfo(dtype).min)


def bidirectional_mask(config: Any, hidden: Any, attention_mask: Any, **kwargs: Any) -> Any:
    """The mask an encoder layer (or a decoder's cross-attention, given ``encoder_hidden_states``)
    takes for ``attention_mask`` (batch, keys) over the queries of ``hidden``."""
    try:
        from transformers.masking_utils import create_bidirectional_mask
    except ImportError:  # transformers 4.x
        keep = attention_mask[:, None, None, :].bool().expand(-1, 1, hidden.shape[1], -1)
        return _additive(keep, hidden.dtype)
    return create_bidirectional_mask(config=config, inputs_embeds=hidden, attention_mask=attention_mask, **kwargs)


def causal_mask(config: Any, hidden: Any, attention_mask: Any, **kwargs: Any) -> Any:
    """The mask a decoder layer takes: causal, and ``attention_mask`` (batch, keys) padding."""
    import torch

    try:
        from transformers.masking_utils import create_causal_mask
    except ImportError:  # transformers 4.x
        length = hidden.shape[1]
        keep = torch.ones(length, length, dtype=torch.bool).tril()[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :].bool()
        return _additive(keep, hidden.dtype)
    return create_causal_mask(config=config, inputs_embeds=hidden, attention_mask=attention_mask, **kwargs)

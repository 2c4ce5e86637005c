"""Stage blocks for any model, found by introspection and cut by ``torch.distributed.pipelining``.

A curated family writes its blocks by hand (``run(model, *carry)`` per block). For a model no
plugin describes, :func:`traced_blocks` finds them:

* the repeated layers: the largest ``nn.ModuleList`` of same-class modules (by parameters; an
  encoder-decoder has one list under each half, both taken; lists of a similar size are taken
  by how the forward calls them: one after the other, all; in rounds, the first of each round;
  never, none), unless ``model.blocks=<path>`` names them (several: comma-separated);
* everything run before the first layer is the ``embeddings`` block, everything after the last
  the ``head`` (final norm, pooler, classifier; ``tied_to`` the embeddings when it shares their
  weights), and what runs between two lists (an encoder's final norm, a decoder's embeddings) a
  block of its own, ``after.<list>``.

The task's forward is traced with pipelining's tracer (``pipeline(module, args)`` over
``torch.export``, with a ``pipe_split()`` before every layer), once per input signature (batch
and sequence sizes are symbolic, so one trace usually serves a whole run). Each block runs its
piece of that graph; what crosses a cut is whatever the later pieces read (hidden states, a
mask, rotary embeddings, a position bias, a size), found from the graph's data flow, so no block
needs to know the model. The pieces use the model's own parameters: training them trains it::

    >>> blocks = traced_blocks(model, task, probe)           # doctest: +SKIP
    >>> [b.name for b in blocks][:3], blocks[-1].kind         # doctest: +SKIP
    (['embeddings', 'layer.0', 'layer.1'], 'head')

A block may hold parameters another block holds too (ALBERT runs one layer's weights twelve
times; T5's decoder reads the encoder's embeddings); the pipeline backend sums such a
parameter's gradients over the stages that hold it.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from garden.errors import ConfigError
from garden.hookspecs import Block

#: a second module list this close in size to the largest makes the choice the user's
AMBIGUOUS_SHARE = 0.5
#: where a model keeps its :class:`Traced` (an attribute, so the two are collected together)
ATTRIBUTE = "_garden_traced"


class TraceError(ConfigError):
    """The model's forward could not be cut into blocks (``torch.export`` refused it, or its
    layers do not run one after the other)."""


# -- which module lists hold the layers ------------------------------------------------------


@dataclass(frozen=True)
class LayerList:
    """A candidate list of repeated layers: ``LayerList("bert.encoder.layer", 12, "BertLayer", 85e6)``."""

    path: str
    length: int
    kind: str
    params: int

    def describe(self) -> str:
        return f"{self.path} ({self.length} x {self.kind}, {self.params:,} parameters)"


def layer_lists(model: Any) -> list[LayerList]:
    """Every ``nn.ModuleList`` of same-class modules with parameters, not inside another such
    list, largest (by parameters) first. A list of lists (Funnel's blocks of layers) is no
    candidate itself, since nothing calls its entries: the lists in it are."""
    import torch

    found: list[LayerList] = []
    for path, module in model.named_modules():
        if not isinstance(module, torch.nn.ModuleList) or len(module) == 0:
            continue
        kinds = {type(child) for child in module}
        if len(kinds) != 1 or any(path.startswith(f"{outer.path}.") for outer in found) \
                or issubclass(next(iter(kinds)), (torch.nn.ModuleList, torch.nn.ModuleDict)):
            continue
        params = sum(p.numel() for p in module.parameters())
        if params:
            found.append(LayerList(path, len(module), kinds.pop().__name__, params))
    return sorted(found, key=lambda c: -c.params)


def choose_layers(model: Any, override: str | Sequence[str] | None = None, *, encoder_decoder: bool = False,
                  calls: Callable[[list[LayerList]], list[int]] | None = None) -> list[LayerList]:
    """The layer lists to cut at (``model.blocks`` names them, comma-separated); otherwise the
    largest, or for an encoder-decoder the largest under each half. When other lists are close
    in size, ``calls`` (which list each layer call of a rehearsal belongs to) decides by how
    they run (:func:`by_call_order`); when it cannot, the error names them and the override."""
    candidates = layer_lists(model)
    if override:
        paths = [override] if isinstance(override, str) else list(override)
        paths = [p.strip() for path in paths for p in str(path).split(",") if p.strip()]
        by_path = {c.path: c for c in candidates}
        unknown = [p for p in paths if p not in by_path]
        if unknown:
            raise ConfigError(f"model.blocks={','.join(paths)}: {unknown[0]} is not a list of same-class modules "
                              f"of {type(model).__name__}; candidates: {_listing(candidates)}")
        return [by_path[p] for p in paths]
    if not candidates:
        raise ConfigError(f"{type(model).__name__} has no nn.ModuleList of repeated layers to cut into stages")
    if encoder_decoder:
        halves = [next((c for c in candidates if _under(c.path, half)), None) for half in ("encoder", "decoder")]
        if halves[0] and halves[1]:
            return [halves[0], halves[1]]
    first = candidates[0]
    rivals = [c for c in candidates[1:] if c.params >= AMBIGUOUS_SHARE * first.params]
    if not rivals:
        return [first]
    decided = by_call_order([first, *rivals], calls([first, *rivals])) if calls else None
    if decided:
        return decided
    raise ConfigError(
        f"{type(model).__name__} has {len(rivals) + 1} lists of repeated layers of similar size: "
        f"{_listing([first, *rivals])}; pick the one(s) to cut with model.blocks=<path>[,<path>]")


def by_call_order(lists: list[LayerList], calls: list[int]) -> list[LayerList] | None:
    """Lists of a similar size, chosen by how the task's forward calls them (``calls``: the list
    of each layer call, in order): the ones it never calls are left out; lists that run one after
    the other (a speech model's convolutions, then its transformer layers) are all taken, in that
    order; lists called in rounds, each round begun by the next entry of the first list called
    (XLM's ``attentions[i]`` then ``ffns[i]``; PoolFormer's patch embedding then its stage's
    blocks), are one layer per round, cut where a round begins. None when it is neither.

        >>> [l.path for l in by_call_order([LayerList("a", 2, "A", 9), LayerList("b", 2, "B", 9)], [1, 1, 0, 0])]
        ['b', 'a']
        >>> [l.path for l in by_call_order([LayerList("a", 2, "A", 9), LayerList("b", 2, "B", 9)], [0, 1, 0, 1])]
        ['a']
    """
    ran = list(dict.fromkeys(calls))
    if not ran:
        return None
    stretches = [n for i, n in enumerate(calls) if i == 0 or calls[i - 1] != n]
    if len(stretches) == len(ran):
        return [lists[n] for n in ran]
    lead = ran[0]
    if calls.count(lead) == lists[lead].length:  # each round begins with the lead list's next entry
        return [lists[lead]]
    return None


def _under(path: str, part: str) -> bool:
    return any(part in atom for atom in path.split("."))


def _listing(candidates: Sequence[LayerList]) -> str:
    return "; ".join(c.describe() for c in candidates) or "none"


# -- tracing and cutting -----------------------------------------------------------------------


@dataclass
class Piece:
    """One cut of a traced graph: the submodule to call, the carried values it reads, the values
    it makes (``getitems``: which output index each is), and the values carried in and out."""

    module: Any
    reads: tuple[str, ...]
    outputs: tuple[str, ...]
    carry_in: tuple[str, ...]
    carry_out: tuple[str, ...]
    getitems: dict[str, int]


@dataclass
class Trace:
    """The task's forward for one input signature, cut into pieces; ``params``: the ids of the
    parameters each piece uses."""

    pieces: list[Piece]
    params: list[set[int]]


def trace(module: Any, inputs: tuple, begins: Sequence[str], ends: dict[str, int]) -> Trace:
    """``module(*inputs)`` captured by pipelining's tracer, cut before every call of a module of
    ``begins`` and after the ``n``-th call of each ``ends`` module (``{path: n}``); the pieces are
    rebound to ``module``'s own parameters and buffers.

    The cuts are pipelining's ``pipe_split()`` markers, put in around the layers' forwards
    (:func:`around_forwards`): ``SplitPoint.BEGINNING`` and ``END`` do the same, but one module
    cannot be both (the last layer of a list is), and a layer that runs several times (ALBERT's
    one shared layer) is cut at every run."""
    import torch
    from torch.distributed.pipelining import pipe_split, pipeline

    calls = dict.fromkeys(ends, 0)

    def before(path: str) -> None:
        if path in begins:
            pipe_split()

    def after(path: str) -> None:
        if path in ends:
            calls[path] += 1
            if calls[path] == ends[path]:
                pipe_split()

    try:
        with torch.enable_grad(), grad_modes_inline(), around_forwards(module, {*begins, *ends}, before, after):
            pipe = pipeline(module, mb_args=tuple(inputs))
    except Exception as err:  # export raises many types; the first line of the cause says why
        cause = err.__cause__ or err
        reason = " ".join(str(cause).split())[:300] or type(cause).__name__
        raise TraceError(f"torch.export cannot capture {type(module.model).__name__}'s forward as one graph "
                         f"({type(cause).__name__}: {reason})") from None
    return _pieces(pipe.split_gm, module)


@contextlib.contextmanager
def grad_modes_inline() -> Iterator[None]:
    """Trace a ``with torch.no_grad():`` inside a forward (M2M100's sinusoidal positions,
    SeamlessM4T, DeepSeek-V3.2's indexer) as plain switches of the grad mode in the graph.

    torch.export would wrap the region in a ``wrap_with_set_grad_enabled`` sub-graph, which
    pipelining's unflatten then asks for as an input of the piece ("Expected positional argument
    for parameter submod_1"); left as raw ``_set_grad_enabled`` nodes, ``split_module``'s own
    grad-region bookkeeping fails on pipelining's partition names. So the region is traced raw
    and each switch becomes :func:`grad_mode_enter` / :func:`grad_mode_exit`, which split like
    any call and, on the way out, restore the mode the piece was called in rather than the one it
    was traced in (a piece run under ``no_grad`` stays there)."""
    from torch._export.passes import replace_set_grad_with_hop_pass as hop_pass
    from torch.distributed.pipelining._IR import Pipe
    from torch.fx.node import has_side_effect

    for switch in (grad_mode_enter, grad_mode_exit):  # kept by dead-code elimination
        has_side_effect(switch)
    wrap, export = hop_pass.replace_set_grad_with_hop_pass, Pipe.__dict__["_trace_with_export"]

    def exported(*args: Any, **kwargs: Any) -> Any:
        program = export.__func__(*args, **kwargs)
        switch_grad_modes(program.graph_module)
        return program

    hop_pass.replace_set_grad_with_hop_pass = lambda gm, graph_signature: (gm, graph_signature)
    Pipe._trace_with_export = staticmethod(exported)
    try:
        yield
    finally:
        hop_pass.replace_set_grad_with_hop_pass, Pipe._trace_with_export = wrap, export


def switch_grad_modes(gm: Any) -> None:
    """Each pair of ``torch._C._set_grad_enabled`` nodes of ``gm``'s graph (a region's entry,
    then its exit back to the mode before it) as ``grad_mode_enter``/``grad_mode_exit``."""
    import torch

    graph, entered = gm.graph, []
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not torch._C._set_grad_enabled:
            continue
        with graph.inserting_before(node):
            if entered and node.args[0] == entered[-1][1]:
                switch = graph.call_function(grad_mode_exit, (entered.pop()[0],))
            else:
                switch = graph.call_function(grad_mode_enter, (node.args[0],))
                entered.append((switch, not node.args[0]))
        switch.meta = dict(node.meta)
        graph.erase_node(node)
    gm.recompile()


def grad_mode_enter(enabled: bool) -> bool:
    """Set the grad mode; return the one it replaced."""
    import torch

    before = torch.is_grad_enabled()
    torch._C._set_grad_enabled(enabled)
    return before


def grad_mode_exit(before: bool) -> None:
    import torch

    torch._C._set_grad_enabled(before)


@contextlib.contextmanager
def around_forwards(root: Any, paths: Iterable[str], before: Callable[[str], None],
                    after: Callable[[str], None]) -> Iterator[None]:
    """Each module of ``root`` at ``paths`` calls ``before(path)`` and ``after(path)`` around its
    forward, however it is called: ``layer(x)``, or ``layer.forward(x)`` as SqueezeBERT's encoder
    calls its layers, past the module hooks."""
    patched = []
    for path in paths:
        layer = root.get_submodule(path)

        def forward(*args: Any, _inner: Callable[..., Any] = layer.forward, _path: str = path, **kwargs: Any) -> Any:
            before(_path)
            out = _inner(*args, **kwargs)
            after(_path)
            return out

        vars(layer)["forward"] = forward
        patched.append(layer)
    try:
        yield
    finally:
        for layer in patched:
            vars(layer).pop("forward", None)


def _pieces(split: Any, module: Any) -> Trace:
    """The split graph as pieces, each reading and handing on named values (its data flow)."""
    _rebind(split, module)
    graph = split.graph
    calls = [n for n in graph.nodes if n.op == "call_module"]
    output = next(n for n in graph.nodes if n.op == "output")
    made_by: dict[str, int] = {}
    getitems: dict[str, int] = {}
    for node in graph.nodes:
        if node.op == "placeholder":
            made_by[node.name] = -1
        elif node.op == "call_module":
            made_by[node.name] = calls.index(node)
        elif node.op == "call_function":  # getitem of a piece's output tuple
            made_by[node.name] = made_by[node.args[0].name]
            getitems[node.name] = node.args[1]
    reads = [_names((call.args, call.kwargs)) for call in calls]
    result = tuple(_names(output.args))
    order = [n.name for n in graph.nodes if n.op != "output"]

    def live_before(k: int) -> tuple[str, ...]:
        later = {v for used in reads[k:] for v in used} | set(result)
        return tuple(v for v in order if v in later and made_by[v] < k)

    pieces = []
    for k, call in enumerate(calls):
        outputs = tuple(v for v in order if made_by.get(v) == k and (v in getitems or v == call.name))
        pieces.append(Piece(getattr(split, call.target), tuple(reads[k]), outputs, live_before(k),
                            live_before(k + 1) if k + 1 < len(calls) else result,
                            {v: getitems[v] for v in outputs if v in getitems}))
    return Trace(pieces, [{id(p) for p in piece.module.parameters()} for piece in pieces])


def nothing_before(first: Piece) -> Piece:
    """The embeddings piece of a model whose first layer is the first thing it runs (PoolFormer's
    first patch embedding): it hands on what it is given."""
    return Piece(lambda: None, (), (), first.carry_in, first.carry_in, {})


def _names(args: Any) -> list[str]:
    """The graph nodes named anywhere in ``args`` (nested tuples, lists, dicts), in order."""
    if hasattr(args, "op"):
        return [args.name]
    if isinstance(args, (tuple, list)):
        return [n for a in args for n in _names(a)]
    if isinstance(args, dict):
        return [n for a in args.values() for n in _names(a)]
    return []


def _rebind(split: Any, module: Any) -> None:
    """Point every piece's parameters and buffers back at ``module``'s (the tracer copies a
    parameter that two pieces use, and every call of a module run twice), so training the pieces
    trains the model."""
    for piece in split.children():
        for kind, named in (("parameter", piece.named_parameters(remove_duplicate=False)),
                            ("buffer", piece.named_buffers(remove_duplicate=False))):
            for name, value in list(named):
                path = re.sub(r"@\d+", "", name)  # the tracer names a module's second call "layer@1"
                try:
                    original = module.get_parameter(path) if kind == "parameter" else module.get_buffer(path)
                except AttributeError:
                    continue
                if original is value:
                    continue
                owner_path, _, attr = name.rpartition(".")
                owner = piece.get_submodule(owner_path) if owner_path else piece
                (owner._parameters if kind == "parameter" else owner._buffers)[attr] = original


def run_piece(piece: Piece, carry: tuple) -> tuple:
    """Run ``piece`` on the values carried into it; return the values carried out of it."""
    env = dict(zip(piece.carry_in, carry))
    out = piece.module(*[env[v] for v in piece.reads])
    for name in piece.outputs:
        env[name] = out[piece.getitems[name]] if name in piece.getitems else out
    return tuple(env[v] for v in piece.carry_out)


# -- the blocks ----------------------------------------------------------------------------------


def task_module(model: Any, task: Any) -> Any:
    """The model as the task runs it, ``forward(*inputs)``: what gets traced, so the last block
    returns exactly what ``task.forward`` returns (logits; start and end; logits and frames)."""
    import torch

    class TaskForward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return task.forward(self.model, dict(zip(task.input_names, inputs)))

    return TaskForward()


def signature(values: Sequence[Any], exact: bool) -> tuple:
    """What a trace must agree on: dtypes, ranks, and which sizes are 1 (a dynamic trace), or
    every size (a static one)."""
    import torch

    return tuple((v.dtype, tuple(v.shape) if exact else tuple(d == 1 for d in v.shape))
                 if isinstance(v, torch.Tensor) else type(v).__name__ for v in values)


@dataclass
class Cut:
    """One trace, its pieces grouped per block, and the carried slots that hold Python ints
    (sizes, sent between stages as 0-d tensors)."""

    groups: list[list[Piece]]
    exact: bool
    int_slots: dict[int, set[int]] = field(default_factory=dict)


def rehearse(module: Any, model: Any, lists: Sequence[LayerList], probe: tuple
             ) -> tuple[dict[str, int], list[tuple[int, str]]]:
    """Run ``module(*probe)`` once, eagerly: the order ``model``'s modules are first called in,
    and the calls of the ``lists``' layers in order, ``[(list index, path), ...]`` (a shared
    layer once per call)."""
    import torch

    order: dict[str, int] = {}
    calls: list[tuple[int, str]] = []
    children = {f"{l.path}.{i}": n for n, l in enumerate(lists) for i in range(l.length)}
    hooks = []
    for name, child in model.named_modules():
        def hook(m: Any, args: Any, name: str = name) -> None:
            order.setdefault(name, len(order))
        hooks.append(child.register_forward_pre_hook(hook))

    def called(name: str) -> None:
        order.setdefault(name, len(order))
        calls.append((children[name], name))

    try:
        with torch.no_grad(), around_forwards(model, children, called, lambda name: None):
            module(*probe)
    finally:
        for h in hooks:
            h.remove()
    return order, calls


class Traced:
    """A model's blocks and the traces that run them, one per input signature (see module doc)."""

    def __init__(self, model: Any, task: Any, lists: list[LayerList], probe: tuple) -> None:
        self.model, self.task, self.lists = model, task, lists
        self.module = task_module(model, task)
        self.cuts: dict[tuple, Cut] = {}
        order, self.layer_calls = rehearse(self.module, model, lists, probe)
        if not self.layer_calls:
            raise TraceError(f"{type(model).__name__} never calls its layers {', '.join(l.path for l in lists)} "
                             "for this task; pick the layers it runs with model.blocks=<path>")
        #: the first module the model runs that is not one holding the first layer
        self.first_call = next(n for n in order if n and not self.layer_calls[0][1].startswith(f"{n}."))
        self.begins = sorted({f"model.{path}" for _, path in self.layer_calls})
        last = {n: path for n, path in self.layer_calls}
        self.ends = {f"model.{path}": sum(p == path for _, p in self.layer_calls) for path in last.values()}
        first = self.capture(probe)
        self.blocks = self.describe(first[0], order)
        self.boundaries: list[dict[tuple, Cut]] = [{} for _ in self.groups]
        self.register(first, probe)

    # tracing

    def capture(self, inputs: tuple) -> tuple[Trace, bool]:
        """A dynamic trace (batch and sequence sizes symbolic), else a static one: ``(trace, exact)``."""
        import torch
        from torch.utils._python_dispatch import _disable_current_modes

        dynamic = tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in inputs)
        for t in dynamic:
            if isinstance(t, torch.Tensor):
                for dim in range(min(t.dim(), 2)):
                    if t.shape[dim] > 1 and (dim == 0 or t.dim() == 2):
                        torch._dynamo.mark_dynamic(t, dim)
        with _disable_current_modes():  # a FlopCounterMode would count the tracer's fake tensors
            try:
                found = trace(self.module, dynamic, self.begins, self.ends), False
            except TraceError:
                found = trace(self.module, tuple(inputs), self.begins, self.ends), True
        expected = 1 + len(self.layer_calls) + len(self.lists)
        if len(found[0].pieces) == expected - 1 and self.layer_calls[0][1] == self.first_call:
            found[0].pieces.insert(0, nothing_before(found[0].pieces[0]))  # the first layer is the model's first call
            found[0].params.insert(0, set())
        if len(found[0].pieces) != expected:
            raise TraceError(f"the traced forward of {type(self.model).__name__} cuts into {len(found[0].pieces)} "
                             f"pieces, not the {expected} its layers ({', '.join(l.path for l in self.lists)}) give; "
                             "pick others with model.blocks=<path>")
        return found

    def register(self, traced: tuple[Trace, bool], inputs: tuple) -> Cut:
        found, exact = traced
        cut = Cut([[found.pieces[i] for i in group] for group in self.groups], exact)
        self.cuts[(self.model.training, signature(inputs, exact))] = cut
        return cut

    def cut_for(self, index: int, carry: tuple) -> Cut:
        """The trace for what block ``index`` received: the first block traces a new input
        signature; a later one finds the trace that made what it carries."""
        for exact in (True, False):
            key = (self.model.training, signature(carry, exact))
            table = self.cuts if index == 0 else self.boundaries[index]
            if key in table:
                return table[key]
        if index == 0:
            return self.register(self.capture(carry), carry)
        raise TraceError(f"block {self.blocks[index].name} of {type(self.model).__name__} received values no trace "
                         f"made ({signature(carry, True)}); run the blocks before it first")

    def run(self, index: int, carry: tuple) -> tuple:
        import torch

        cut = self.cut_for(index, carry)
        ints = cut.int_slots.get(index, set())
        values = tuple(int(v) if i in ints else v for i, v in enumerate(carry))
        for piece in cut.groups[index]:
            values = run_piece(piece, values)
        if index + 1 < len(cut.groups):
            slots = {i for i, v in enumerate(values) if not isinstance(v, torch.Tensor)}
            cut.int_slots[index + 1] = slots
            values = tuple(torch.tensor(int(v)) if i in slots else v for i, v in enumerate(values))
            self.boundaries[index + 1][(self.model.training, signature(values, cut.exact))] = cut
        return values

    # the blocks themselves

    def describe(self, found: Trace, order: dict[str, int]) -> list[Block]:
        """Name the pieces, run a piece without parameters with the block before it, and say
        which modules each block holds: its own in the order the model calls them (BeginBlock
        starts a block at the first), then those it shares with a block before it."""
        names, kinds = ["embeddings"], ["embedding"]
        paths = [l.path for l in self.lists]
        labels = [_short(path, paths) if len(paths) > 1 else "layer" for path in paths]
        counts = [0] * len(self.lists)
        for position, (n, _) in enumerate(self.layer_calls):
            names.append(f"{labels[n]}.{counts[n]}")
            kinds.append("layer")
            counts[n] += 1
            following = self.layer_calls[position + 1][0] if position + 1 < len(self.layer_calls) else None
            if following is not None and following != n:
                names.append(f"after.{labels[n]}")
                kinds.append("embedding")
        names.append("head")
        kinds.append("head")
        groups: list[list[int]] = []
        for i, kind in enumerate(kinds):
            if groups and kind == "embedding" and not found.params[i]:
                groups[-1].append(i)
            else:
                groups.append([i])
        self.groups = groups
        held = [set().union(*(found.params[i] for i in group)) for group in groups]
        held[-1] |= {id(p) for p in self.model.parameters()} - set().union(*held)  # unused (a skipped pooler)
        by_id = {id(p): n for n, p in self.model.named_parameters()}
        blocks, earlier = [], set()
        for g, group in enumerate(groups):
            kind = kinds[group[0]]
            own, shared = held[g] - earlier, held[g] & earlier
            earlier |= held[g]
            modules = _modules(self.model, {by_id[i] for i in own}, order)
            modules += [m for m in _modules(self.model, {by_id[i] for i in shared}, order) if m not in modules]
            tied = names[0] if kind == "head" and g > 0 and shared & held[0] else None
            blocks.append(Block(names[group[0]], kind, tuple(modules), _runner(self, g), tied_to=tied))
        return blocks


def _short(path: str, paths: list[str]) -> str:
    """The first part of ``path`` that tells it from the other lists (``encoder``, ``decoder``)."""
    for atom in path.split("."):
        if sum(atom in p.split(".") for p in paths) == 1:
            return atom
    return path.replace(".", "_")


def _runner(traced: Traced, index: int) -> Callable[..., tuple]:
    ref = weakref.ref(traced)

    def run(model: Any, *carry: Any) -> tuple:
        found = ref()
        if found is None or found.model is not model:
            found = traced_of(model)
        return found.run(index, carry)

    return run


def _modules(model: Any, names: set[str], order: dict[str, int]) -> list[str]:
    """The largest modules whose parameters are all in ``names`` (then single parameters left
    over), in the order the model first calls them."""
    chosen: list[str] = []

    def visit(prefix: str, module: Any) -> None:
        params = [f"{prefix}{n}" for n, _ in module.named_parameters()]
        if params and all(p in names for p in params):
            chosen.append(prefix.rstrip("."))
            return
        for child_name, child in module.named_children():
            visit(f"{prefix}{child_name}.", child)
        chosen.extend(f"{prefix}{n}" for n, _ in module.named_parameters(recurse=False) if f"{prefix}{n}" in names)

    if names:
        visit("", model)
    late = len(order) + 1
    return sorted(chosen, key=lambda p: order.get(p, late))


def traced_of(model: Any) -> Traced:
    found = vars(model).get(ATTRIBUTE)
    if found is None:
        raise TraceError(f"{type(model).__name__} has no traced blocks: call the family's stage_blocks first")
    return found


def tracer_available() -> None:
    """One line where this torch cannot trace (the Poplar SDK's 2.0.1 has no ``torch.export`` and
    no ``torch.distributed.pipelining``)."""
    import torch

    try:
        import torch.distributed.pipelining  # noqa: F401
        import torch.export  # noqa: F401
    except ImportError:
        raise TraceError(f"finding stages by tracing needs torch.export and torch.distributed.pipelining, "
                         f"which this torch ({torch.__version__}) lacks; on the Poplar SDK's stack run a plugin "
                         "whose stage_blocks are written out (every seed model's are)") from None


def traced_blocks(model: Any, task: Any, probe: tuple, blocks: str | Sequence[str] | None = None) -> list[Block]:
    """The model's stage blocks (see module doc); ``blocks`` names the layer lists (``model.blocks``)."""
    known = vars(model).get(ATTRIBUTE)
    if known is None or known.task.name != task.name:
        tracer_available()
        encoder_decoder = bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False))
        module = task_module(model, task)

        def calls(lists: list[LayerList]) -> list[int]:
            return [n for n, _ in rehearse(module, model, lists, probe)[1]]

        lists = choose_layers(model, blocks, encoder_decoder=encoder_decoder, calls=calls)
        known = Traced(model, task, lists, probe)
        vars(model)[ATTRIBUTE] = known
    return known.blocks

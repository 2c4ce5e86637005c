"""ViT for garden: transformers' ViTForImageClassification, its processor and its stage layout."""

from __future__ import annotations

from typing import Any

from garden.families.transformers import TransformersFamily, preprocessor_class, submodule_path
from garden.hookspecs import Block, BuildSpec


def _hidden(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


class ViT(TransformersFamily):
    architecture = "vit"
    preprocessor_class = "ViTImageProcessor"

    def default_preprocessor(self, spec: BuildSpec) -> Any:
        size = self.config(spec).image_size
        return preprocessor_class(self.preprocessor_class)(
            size={"height": size, "width": size}, image_mean=[0.5] * 3, image_std=[0.5] * 3
        )

    def stage_blocks(self, model: Any, task: str) -> list[Block]:
        """Embeddings, one block per encoder layer, then the final norm with the classifier."""
        layers = submodule_path(model, "vit.layers", "vit.encoder.layer")

        def layer_block(i: int) -> Block:
            return Block(f"layer.{i}", "layer", (f"{layers}.{i}",),
                         lambda m, h: (_hidden(m.get_submodule(layers)[i](h)),))

        return [
            Block("embeddings", "embedding", ("vit.embeddings",), lambda m, x: (m.vit.embeddings(x),)),
            *[layer_block(i) for i in range(len(model.get_submodule(layers)))],
            Block("head", "head", ("vit.layernorm", "classifier"),
                  lambda m, h: (m.classifier(m.vit.layernorm(h)[:, 0, :]),)),
        ]

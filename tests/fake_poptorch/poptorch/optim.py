"""poptorch.optim, as far as garden uses it: AdamW and SGD with poptorch's extra arguments."""

from __future__ import annotations

import torch

from poptorch import _record


class AdamW(torch.optim.AdamW):
    """torch's AdamW plus poptorch's arguments; ``max_grad_norm`` (default inf) clips the gradients'
    global norm before each update, on the device."""

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None,
                 maximize=None, foreach=None, capturable=None, differentiable=None, fused=None,
                 loss_scaling=None, bias_correction=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None):
        given = {k: v for k, v in dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                       amsgrad=amsgrad).items() if v is not None}
        super().__init__(params, **given)
        if bias_correction is False:
            raise NotImplementedError("the poptorch double runs AdamW with bias correction only")
        self.loss_scaling = 1.0 if loss_scaling is None else loss_scaling
        self.bias_correction = True
        self.max_grad_norm = float("inf") if max_grad_norm is None else max_grad_norm
        _record("optim.AdamW", lr=self.param_groups[0]["lr"], weight_decay=self.param_groups[0]["weight_decay"],
                max_grad_norm=self.max_grad_norm)


class SGD(torch.optim.SGD):
    """torch's SGD plus poptorch's arguments; ``max_grad_norm`` (default inf) clips the gradients'
    global norm before each update, on the device."""

    def __init__(self, params, lr, momentum=None, dampening=None, weight_decay=None, nesterov=None,
                 maximize=None, foreach=None, differentiable=None, loss_scaling=None, velocity_scaling=None,
                 use_combined_accum=None, accum_type=None, velocity_accum_type=None, max_grad_norm=None):
        given = {k: v for k, v in dict(momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                       nesterov=nesterov).items() if v is not None}
        super().__init__(params, lr=lr, **given)
        self.loss_scaling = 1.0 if loss_scaling is None else loss_scaling
        self.max_grad_norm = float("inf") if max_grad_norm is None else max_grad_norm
        group = self.param_groups[0]
        _record("optim.SGD", lr=group["lr"], momentum=group["momentum"], weight_decay=group["weight_decay"],
                max_grad_norm=self.max_grad_norm)

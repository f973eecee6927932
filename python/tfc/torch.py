"""tfc.torch.Module: a compiled model as a torch.nn.Module.

    import tfc, tfc.torch
    net = tfc.torch.Module(tfc.compile("spec.toml"))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    logits, loss = net(tokens, targets)
    loss.backward(); opt.step()

Its one parameter, `flat`, is the model's parameter buffer itself (a
tensor over the same memory: no copies), so an optimizer's in-place update
is what the next compiled forward reads; `net.tensor(name)` is a view of
one tensor of it. Forward and backward are the compiled ones, through a
torch.autograd.Function. With a loss the compiled backward starts from the
loss, so gradients must reach the model through its loss alone (a scalar
multiple of it is fine); without one, through its output (d_logits, d_y).
CPU float32 tensors; int32/int64 token ids.
"""

import numpy as np
import torch

from . import Error


class _Compiled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, net, flat, inputs, *x):
        m = net.model
        arrays = {k: v.detach().cpu().numpy() for k, v in inputs.items()}
        for name, value in zip(net._float_inputs, x):
            arrays[name] = value.detach().cpu().numpy()
        out = m.forward(**arrays)
        ctx.net, ctx.float_inputs = net, [v.requires_grad for v in x]
        names = net._outputs
        ctx.names = names
        return tuple(torch.as_tensor(np.asarray(out[n], np.float32)) for n in names)

    @staticmethod
    def backward(ctx, *grads):
        net, m = ctx.net, ctx.net.model
        m.zero_grad()
        if m.has_loss:
            g_loss = grads[ctx.names.index("loss")]
            others = [g for n, g in zip(ctx.names, grads) if n != "loss"]
            if any(g is not None and bool(torch.any(g != 0)) for g in others):
                raise Error(f"tfc.torch: model {m.name} has a loss; gradients "
                            "must reach it through the loss alone")
            scale = float(g_loss) if g_loss is not None else 0.0
            d_inputs = m.backward()
        else:
            name = ctx.names[0]
            scale = 1.0
            d_inputs = m.backward(**{"d_" + name: grads[0].contiguous().numpy()})
        d_flat = torch.from_numpy(m.grads * np.float32(scale))
        d_x = [torch.from_numpy(d_inputs["d_" + n] * np.float32(scale)) if need else None
               for n, need in zip(net._float_inputs, ctx.float_inputs)]
        return (None, d_flat, None, *d_x)


class Module(torch.nn.Module):
    """A tfc.Model as a module; forward(*inputs) takes the model's inputs in
    order (tokens or x, enc, targets, lengths as it has them) and returns
    its outputs in order ((logits, loss), (logits,), (y,))."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.flat = torch.nn.Parameter(torch.from_numpy(model.params))
        arrays = model.entry_arrays("forward")
        self._inputs = [n for n, _, access, _ in arrays if access == 0 and n != "params"]
        self._outputs = [n for n, _, access, _ in arrays if access == 1]
        self._float_inputs = [n for n, dtype, access, _ in arrays
                              if access == 0 and dtype == 0 and n != "params"]

    def tensor(self, name):
        """One parameter tensor, a view of `flat` (shared memory)."""
        view = self.model.tensors[name]
        start = (view.ctypes.data - self.model.params.ctypes.data) // 4
        return self.flat[start:start + view.size].view(view.shape)

    def forward(self, *inputs):
        if len(inputs) != len(self._inputs):
            raise Error(f"tfc.torch: {self.model.name} takes {len(self._inputs)} inputs "
                        f"({', '.join(self._inputs)}), not {len(inputs)}")
        named = dict(zip(self._inputs, inputs))
        ints = {k: v for k, v in named.items() if k not in self._float_inputs}
        floats = [named[k] for k in self._float_inputs]
        return _Compiled.apply(self, self.flat, ints, *floats)

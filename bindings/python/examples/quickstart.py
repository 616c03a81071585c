"""fox-jit from Python in a few lines (README.md, "From Python"): a bias
gradient, a reward rank normalization, and the perception blocks as torch
modules, trained for a few steps. Needs torch with a CUDA GPU for the ops;
without one it says so after loading the library and exits 77 (the status
meson reads as "skipped"). The bindings suite runs it in a fresh venv
against the wheel."""

import sys

import foxjit

print("fox-jit %s, library %s" % (foxjit.version(), foxjit.library().path))
try:
    import torch
except ImportError:
    torch = None
if torch is None or not torch.cuda.is_available():
    print("no CUDA GPU through torch here: the library loads, the ops need a GPU")
    sys.exit(77)

from foxjit import ops
from foxjit.modules import AttentionPooling, CfCSequence, GRNHeads, VariableSelection

# db[42] += sum over the batch of dy[8192, 42], on torch's current stream.
dy = torch.randn(8192, 42, device="cuda")
db = torch.zeros(42, device="cuda")
ops.bias_grad_reduce(dy, db)
assert torch.allclose(db, dy.double().sum(0).float(), rtol=1e-5, atol=1e-4)

# Rewards to signed ranks in (-1, 1] (ties share the highest rank).
rewards = torch.randn(100_000, device="cuda")
ranks = ops.rank_normalize(rewards, std_ema=1.0, mean_ema=0.0)
assert ranks.abs().max().item() <= 1.0

# VSN -> CfC over the whole sequence -> attention pooling -> GRN heads.
B, K, F, D, E, H = 32, 64, 40, 128, 64, 5
model = torch.nn.ModuleDict({"vsn": VariableSelection(F), "cfc": CfCSequence(F, D),
                             "pool": AttentionPooling(D), "heads": GRNHeads(D, E, H)}).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
x = torch.randn(B, K, F, device="cuda")
dt = torch.full((B, K), 1.0, device="cuda")
labels = (x[:, :, :1].cumsum(1) > 0).float().expand(B, K, H)
for step in range(20):
    hs = model["cfc"](model["vsn"](x), dt)                  # [B, K, D]
    logits = model["heads"](hs)                              # [B, K, H]
    pooled_logits = model["heads"](model["pool"](hs))        # [B, H]
    loss = (torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
            + torch.nn.functional.binary_cross_entropy_with_logits(pooled_logits,
                                                                   labels[:, -1]))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step in (0, 19):
        print("step %2d: loss %.4f" % (step, loss.item()))
print("ok")

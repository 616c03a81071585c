"""python3 tools/torch_capture_probe.py: does a CUDA-graph capture of
fox-jit's custom ops, forward and backward, work on a module that was
compiled (torch.compile) and run once before, in the same process? One
capture per case, each in a child process: the default capture,
capture_error_mode "thread_local" and "relaxed", Inductor's compile
workers limited to the compiling thread (TORCHINDUCTOR_COMPILE_THREADS=1),
the compiled module's first run, the warm-ups and the capture all on one
side stream, PyTorch's stale-capture-stream override
where it has one, and without the torch.compile. A diagnostic of
bindings/python/README.md's known limit; needs torch and a GPU.

The suspected cause: autograd's AccumulateGrad node of a parameter keeps
the stream of the backward that made it, and a compiled module keeps
those nodes alive; when its first run was on the default (legacy) stream,
the backward inside the capture makes the capturing stream and the
legacy stream wait on each other at its end, which capture refuses
(cudaErrorStreamCaptureImplicit). If so, the one-stream and override
cases pass and the others fail."""

import argparse
import os
import subprocess
import sys


def child(mode, compile_first, warm_on_side=False, override=False):
    import torch
    import foxjit.torch as ft  # noqa: F401 (registers the ops)
    from foxjit.modules import AttentionPooling, CfCSequence, GRNHeads, VariableSelection

    B, K, F, D, E, H = 8, 16, 8, 32, 16, 3

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vsn, self.cfc = VariableSelection(F), CfCSequence(F, D)
            self.pool, self.heads = AttentionPooling(D), GRNHeads(D, E, H)

        def forward(self, x, dt):
            hs = self.cfc(self.vsn(x), dt)
            return self.heads(hs).square().mean() + self.heads(self.pool(hs)).square().mean()

    x = torch.randn(B, K, F, device="cuda")
    dt = torch.ones(B, K, device="cuda")
    m = Net().cuda()
    s = torch.cuda.Stream()     # the warm-ups' stream (and the capture's, with warm_on_side)
    if compile_first:
        # The module itself is compiled and run once; the capture below is
        # of that same module, eagerly (the case that failed).
        c = torch.compile(m, fullgraph=True)
        if warm_on_side:
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                c(x, dt).backward()
        else:
            c(x, dt).backward()
        torch.cuda.synchronize()
    if override:
        setter = getattr(torch.autograd.graph, "set_override_stale_capture_stream", None)
        if setter is None:
            print("this PyTorch has no set_override_stale_capture_stream")
            sys.exit(3)
        setter(True)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            m.zero_grad(set_to_none=True)
            m(x, dt).backward()
    torch.cuda.current_stream().wait_stream(s)
    m.zero_grad(set_to_none=True)
    g = torch.cuda.CUDAGraph()
    kw = {} if mode == "global" else {"capture_error_mode": mode}
    if warm_on_side:
        kw["stream"] = s        # the stream the compiled module first ran on
    with torch.cuda.graph(g, **kw):
        loss = m(x, dt)
        loss.backward()
    g.replay()
    torch.cuda.synchronize()
    print("capture ok, loss %.6f" % loss.item())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=4, metavar=("MODE", "COMPILE", "SIDE", "OVERRIDE"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1] == "1", a.child[2] == "1", a.child[3] == "1")
        return 0
    # (capture_error_mode, compile first, its first run on the side stream,
    # PyTorch's stale-stream override, environment)
    cases = [("global", "1", "0", "0", {}), ("thread_local", "1", "0", "0", {}),
             ("global", "1", "0", "0", {"TORCHINDUCTOR_COMPILE_THREADS": "1"}),
             ("relaxed", "1", "0", "0", {}), ("global", "1", "1", "0", {}),
             ("global", "1", "0", "1", {}), ("global", "0", "0", "0", {})]
    rows = []
    for mode, comp, side, override, env in cases:
        e = dict(os.environ, **env)
        print("case: mode %s, compile %s, first run on the side stream %s, override %s, %s"
              % (mode, comp, side, override, env or "-"), file=sys.stderr, flush=True)
        r = subprocess.run([sys.executable, __file__, "--child", mode, comp, side, override],
                           env=e, capture_output=True, text=True, timeout=900)
        tail = (r.stdout + r.stderr).strip().splitlines()
        err = next((l for l in reversed(tail) if "Error" in l or "error" in l), "")
        rows.append((mode, comp, side, override,
                     " ".join("%s=%s" % kv for kv in env.items()) or "-",
                     "ok" if r.returncode == 0 else "FAILED: " + err[:160]))
        print(rows[-1], flush=True)
        if r.returncode:
            print("\n".join(tail[-25:]))
    print("| capture_error_mode | torch.compile before | its first run on the side stream "
          "| stale-stream override | env | result |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| %s | %s | %s | %s | %s | %s |" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

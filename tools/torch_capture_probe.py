"""python3 tools/torch_capture_probe.py: does a CUDA-graph capture of
fox-jit's custom ops, forward and backward, work on a module that was
compiled (torch.compile) and run once before, in the same process? One
capture per case, each in a child process: the default capture,
capture_error_mode "thread_local" and "relaxed", Inductor's compile
workers limited to the compiling thread (TORCHINDUCTOR_COMPILE_THREADS=1),
the compiled module's first run, the warm-ups and the capture all on one
side stream, PyTorch's stale-capture-stream override
where it has one, and without the torch.compile; needs torch and a GPU.

Why it exists: on 2026-12-01 a capture of the backward of a module that
had been compiled and run once failed on PyTorch 2.11 with
cudaErrorStreamCaptureImplicit. The suspected cause was autograd's (a
parameter's AccumulateGrad node keeping the stream of the backward that
made it, and the capture's backward making that legacy stream and the
capturing stream wait on each other). Its run on an H100 with PyTorch
2.11 (2026-12-07) found every case capturing and replaying, that one
included; the override case is n/a there (2.11 lacks the override).
tests/test_gpu.py's test_cuda_graph_after_compiling_the_same_module keeps
that case in the suite."""

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
        if r.returncode == 0:
            result = "ok"
        elif r.returncode == 3:         # the child's exit when torch lacks the override
            result = "n/a: this PyTorch has no set_override_stale_capture_stream"
        else:
            result = "FAILED: " + err[:160]
        rows.append((mode, comp, side, override,
                     " ".join("%s=%s" % kv for kv in env.items()) or "-", result))
        print(rows[-1], flush=True)
        if r.returncode not in (0, 3):
            print("\n".join(tail[-25:]))
    print("| capture_error_mode | torch.compile before | its first run on the side stream "
          "| stale-stream override | env | result |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| %s | %s | %s | %s | %s | %s |" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""python3 tools/torch_capture_probe.py: does a CUDA-graph capture of
fox-jit's custom ops, forward and backward, work on a module that was
compiled (torch.compile) and run once before, in the same process? One capture per mode, each in a
child process: the default capture, capture_error_mode "thread_local" and
"relaxed", with Inductor's compile workers limited to the compiling thread
(TORCHINDUCTOR_COMPILE_THREADS=1), and without the torch.compile. A
diagnostic of bindings/python/README.md's known limit; needs torch and a
GPU."""

import argparse
import os
import subprocess
import sys


def child(mode, compile_first):
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
    if compile_first:
        # The module itself is compiled and run once; the capture below is
        # of that same module, eagerly (the case that failed).
        c = torch.compile(m, fullgraph=True)
        c(x, dt).backward()
        torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            m.zero_grad(set_to_none=True)
            m(x, dt).backward()
    torch.cuda.current_stream().wait_stream(s)
    m.zero_grad(set_to_none=True)
    g = torch.cuda.CUDAGraph()
    kw = {} if mode == "global" else {"capture_error_mode": mode}
    with torch.cuda.graph(g, **kw):
        loss = m(x, dt)
        loss.backward()
    g.replay()
    torch.cuda.synchronize()
    print("capture ok, loss %.6f" % loss.item())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=2, metavar=("MODE", "COMPILE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1] == "1")
        return 0
    cases = [("global", "1", {}), ("thread_local", "1", {}),
             ("global", "1", {"TORCHINDUCTOR_COMPILE_THREADS": "1"}), ("relaxed", "1", {}),
             ("global", "0", {})]
    rows = []
    for mode, comp, env in cases:
        e = dict(os.environ, **env)
        r = subprocess.run([sys.executable, __file__, "--child", mode, comp], env=e,
                           capture_output=True, text=True, timeout=900)
        tail = (r.stdout + r.stderr).strip().splitlines()
        err = next((l for l in reversed(tail) if "Error" in l or "error" in l), "")
        rows.append((mode, comp, " ".join("%s=%s" % kv for kv in env.items()) or "-",
                     "ok" if r.returncode == 0 else "FAILED: " + err[:160]))
        print(rows[-1], flush=True)
        if r.returncode:
            print("\n".join(tail[-25:]))
    print("| capture_error_mode | torch.compile before | env | result |")
    print("|---|---|---|---|")
    for row in rows:
        print("| %s | %s | %s | %s |" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

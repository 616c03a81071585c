"""python3 -m foxjit.overhead: what a call costs through Python.

For a few ops at the trainers' shapes: host microseconds per call through
the Python wrapper on torch tensors (foxjit.ops: its fast path, the calls
being alike), through the same wrapper with its checks on every call (the
op under the fast path, op.__wrapped__), through the raw ctypes call on
addresses (Runtime methods; arguments built once, as the issue that set the
target measured it), through the raw ctypes call with every tensor's
address and torch's current stream read at each call (what calling the
Runtime methods on torch tensors takes when the tensors change between
calls, as a training step's do), through a prepared call
(foxjit.ops.prepare: the wrapper's checks done once), through the autograd
path where the op has one (foxjit.torch's custom op, parameters requiring
grad: torch's dispatcher and autograd bookkeeping included) and, with
--c-json, through C (tools/examples/call_overhead, the same calls in a C
loop); and the GPU microseconds per call through each (CUDA events around
N calls back to back). The wrapper / ctypes columns are the wrappers'
cost as ratios to both raw calls (the package aims at 1.5 or less). Prints a Markdown table;
--json FILE keeps the numbers."""

import argparse
import json
import time

import torch

import foxjit
import foxjit.torch as ft
from foxjit import ops


def host_us(fn, n):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return host


def gpu_us(fn, n):
    fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / n * 1e3


def cases():
    rt = ops.runtime_for(0)
    s = torch.cuda.current_stream().cuda_stream
    x = torch.randn(8192, 42, device="cuda")
    out = torch.empty(42, device="cuda")
    r = torch.randn(4096 * 1000, device="cuda")
    ro = torch.empty_like(r)
    ws_bytes = rt.rank_normalize_workspace_size(r.numel())
    ws = torch.empty(ws_bytes, dtype=torch.uint8, device="cuda")
    b, n_in, n_hid = 32, 128, 128
    xc, hc = torch.randn(b, n_in, device="cuda"), torch.randn(b, n_hid, device="cuda")
    dt = torch.rand(b, device="cuda") + 0.5
    p = [torch.randn(n_hid, n_in, device="cuda") * .1, torch.randn(n_hid, n_hid, device="cuda") * .1,
         torch.zeros(n_hid, device="cuda"), torch.rand(n_hid, device="cuda") * 8 + 1]
    h_out, u = torch.empty(b, n_hid, device="cuda"), torch.empty(b, n_hid, device="cuda")
    cargs = foxjit.runtime.CfcArgs(batch=b, n_in=n_in, n_hid=n_hid, w_in=p[0].data_ptr(),
                                   w_rec=p[1].data_ptr(), bias=p[2].data_ptr(),
                                   tau=p[3].data_ptr(), x=xc.data_ptr(), h=hc.data_ptr(),
                                   dt=dt.data_ptr(), u=u.data_ptr(), h_out=h_out.data_ptr())
    xp = x.data_ptr()
    pg = [t.clone().requires_grad_(True) for t in p]
    cur = torch._C._cuda_getCurrentRawStream     # torch's current stream of a device

    def cfc_per_call():
        a = foxjit.runtime.CfcArgs(batch=b, n_in=n_in, n_hid=n_hid, w_in=p[0].data_ptr(),
                                   w_rec=p[1].data_ptr(), bias=p[2].data_ptr(),
                                   tau=p[3].data_ptr(), x=xc.data_ptr(), h=hc.data_ptr(),
                                   dt=dt.data_ptr(), u=u.data_ptr(), h_out=h_out.data_ptr())
        rt.cfc_forward(a, cur(0))
    yield ("column_sum 8192x42",
           lambda: ops.column_sum(x, out=out),
           lambda: ops.column_sum.__wrapped__(x, out=out),
           ops.prepare(ops.column_sum, x, out=out),
           lambda: rt.column_sum(xp, 8192, 42, out.data_ptr(), False, s),
           lambda: rt.column_sum(x.data_ptr(), 8192, 42, out.data_ptr(), False, cur(0)), None)
    yield ("rank_normalize 4096000",
           lambda: ops.rank_normalize(r, 1.0, 0.0, out=ro, workspace=ws),
           lambda: ops.rank_normalize.__wrapped__(r, 1.0, 0.0, out=ro, workspace=ws),
           ops.prepare(ops.rank_normalize, r, 1.0, 0.0, out=ro, workspace=ws),
           lambda: rt.rank_normalize(r.data_ptr(), r.numel(), 1.0, 0.0, "max", ro.data_ptr(),
                                     ws.data_ptr(), ws_bytes, s),
           lambda: rt.rank_normalize(r.data_ptr(), r.numel(), 1.0, 0.0, "max", ro.data_ptr(),
                                     ws.data_ptr(), ws_bytes, cur(0)), None)
    yield ("cfc_forward 32x128x128",
           lambda: ops.cfc_forward(xc, hc, dt, *p, h_out=h_out, u=u),
           lambda: ops.cfc_forward.__wrapped__(xc, hc, dt, *p, h_out=h_out, u=u),
           ops.prepare(ops.cfc_forward, xc, hc, dt, *p, h_out=h_out, u=u),
           lambda: rt.cfc_forward(cargs, s), cfc_per_call,
           lambda: ft.cfc_step(xc, hc, dt, *pg))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--c-json", help="the C loop's figures (tools/examples/call_overhead)")
    ap.add_argument("--json", help="write the table's numbers here")
    a = ap.parse_args(argv)
    c = {}
    if a.c_json:
        with open(a.c_json) as f:
            c = json.load(f)
    rows = []
    for name, wrapper, checked, prepared, raw, raw_per_call, autograd in cases():
        row = {"op": name,
               "wrapper_host_us": host_us(wrapper, a.calls),
               "checked_host_us": host_us(checked, a.calls),
               "prepared_host_us": host_us(prepared, a.calls),
               "ctypes_host_us": host_us(raw, a.calls),
               "ctypes_per_call_host_us": host_us(raw_per_call, a.calls),
               "wrapper_gpu_us": gpu_us(wrapper, a.calls // 4),
               "ctypes_gpu_us": gpu_us(raw, a.calls // 4)}
        row["wrapper_over_ctypes"] = row["wrapper_host_us"] / row["ctypes_host_us"]
        row["wrapper_over_ctypes_per_call"] = (row["wrapper_host_us"]
                                               / row["ctypes_per_call_host_us"])
        row["prepared_over_ctypes"] = row["prepared_host_us"] / row["ctypes_host_us"]
        if autograd is not None:
            row["autograd_host_us"] = host_us(autograd, a.calls)
        row.update({k: v for k, v in c.get(name, {}).items()})
        rows.append(row)

    def opt(r, k):
        return "%.2f" % r[k] if k in r else "-"
    print("| op | Python wrapper host us/call | its checks on every call, host us/call "
          "| prepared call host us/call "
          "| raw ctypes host us/call | raw ctypes, addresses read per call, host us/call "
          "| wrapper / ctypes | wrapper / ctypes per call | prepared / ctypes "
          "| autograd op host us/call | C host us/call | GPU us/call (wrapper) "
          "| GPU us/call (ctypes) | GPU us/call (C) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s | %.2f | %.2f "
              "| %s |"
              % (r["op"], r["wrapper_host_us"], r["checked_host_us"], r["prepared_host_us"],
                 r["ctypes_host_us"],
                 r["ctypes_per_call_host_us"], r["wrapper_over_ctypes"],
                 r["wrapper_over_ctypes_per_call"], r["prepared_over_ctypes"],
                 opt(r, "autograd_host_us"), opt(r, "c_host_us"), r["wrapper_gpu_us"],
                 r["ctypes_gpu_us"], opt(r, "c_gpu_us")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

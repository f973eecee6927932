#!/usr/bin/env python3
"""PyTorch eager reference for the benchmarks: the same spec, built by the
independent oracle (test/Numerics/oracle.py) in float32 and timed on
`threads` intra-op threads.

    torch_model.py spec.toml threads batch seq [iterations] [--train]
                   [--device=cuda] [--autocast-bf16]

Debian's torch does its CPU matmuls in OpenBLAS, whose thread count
torch.set_num_threads does not change: this script sets OPENBLAS_NUM_THREADS
and OMP_NUM_THREADS to `threads` before torch loads, and prints
`torch_threads T`, CPU time over wall time of the timed steps (how many
cores torch really kept busy).

Prints `torch_eager median_ms` (forward under no_grad), or with --train
`torch_eager_train median_ms` (forward + autograd backward: from the loss
when the spec has one, else from sum(y * dy)). With --device=cuda the model
and inputs live on the GPU and each step is timed between synchronisations
(or the script says why it cannot: Debian's torch has no CUDA).
With --autocast-bf16 (the reference for a `dtype = "bf16"` spec) the model is
the f32 one run under torch.autocast(bfloat16): PyTorch's own mixed
precision, whose matmuls (attention's too) take bf16 operands; labels get a
`_bf16` suffix."""
import contextlib
import os
import sys
import time


def set_threads_before_torch_loads(threads):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)


def main():
    flags = ("--train", "--autocast-bf16")
    args = [a for a in sys.argv[1:]
            if a not in flags and not a.startswith("--device=")]
    train = "--train" in sys.argv
    autocast = "--autocast-bf16" in sys.argv
    device = "cpu"
    for a in sys.argv[1:]:
        if a.startswith("--device="):
            device = a.split("=", 1)[1]
    spec, threads, batch, seq = args[0], *map(int, args[1:4])
    iters = int(args[4]) if len(args) > 4 else 10
    set_threads_before_torch_loads(threads)
    global torch, oracle
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                    "test", "Numerics"))
    import oracle
    if device == "cuda" and not torch.cuda.is_available():
        print("torch_eager n/a: this torch has no CUDA device")
        return
    torch.set_num_threads(threads)
    model = oracle.Oracle.from_file(spec, dtype=torch.float32)
    cfg = model.cfg
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    model.set_bf16(False)  # The spec's rounding, if any, is autocast's job.
    model.to(device)
    amp = (lambda: torch.autocast(device, dtype=torch.bfloat16)) if autocast \
        else contextlib.nullcontext
    kwargs = {}
    if cfg.vocab:
        inputs = [torch.randint(0, cfg.vocab, (batch, seq), device=device)]
        if cfg.has_loss:
            kwargs["targets"] = torch.randint(0, cfg.vocab, (batch, seq),
                                              device=device)
    else:
        inputs = [torch.randn(batch, seq, cfg.d_model, device=device)]

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    def step():
        if not train:
            with torch.no_grad(), amp():
                model(*inputs, **kwargs)
            return
        model.zero_grad(set_to_none=False)
        with amp():
            outputs = model(*inputs, **kwargs)
        if cfg.has_loss:
            outputs[-1].backward()
        else:
            (outputs[0] * dy).sum().backward()

    dy = None
    if train and not cfg.has_loss:
        with torch.no_grad():
            dy = torch.randn_like(model(*inputs, **kwargs)[0]).float()
    times, wall, cpu = [], 0.0, 0.0
    for i in range(iters + 2):
        sync()
        c0, t0 = time.process_time(), time.perf_counter()
        step()
        sync()
        if i >= 2:
            times.append((time.perf_counter() - t0) * 1e3)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
    times.sort()
    label = ("torch_eager_train" if train else "torch_eager") + \
        ("_bf16" if autocast else "")
    print(f"{label} {times[len(times) // 2]:.3f}")
    print(f"torch_threads {cpu / wall:.2f}")


if __name__ == "__main__":
    main()

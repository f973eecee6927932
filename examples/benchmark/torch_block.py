#!/usr/bin/env python3
"""PyTorch eager reference for the block benchmark: the same spec, built by
the independent oracle (test/Numerics/oracle.py) in float32, timed with
torch.no_grad() on `threads` intra-op threads.

    torch_block.py spec.toml threads batch seq [iterations]

Prints `torch_eager median_ms`."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "test", "Numerics"))
import oracle  # noqa: E402


def main():
    spec, threads, batch, seq = sys.argv[1], *map(int, sys.argv[2:5])
    iters = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    torch.set_num_threads(threads)
    model = oracle.Oracle.from_file(spec, dtype=torch.float32)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    x = torch.randn(batch, seq, model.cfg.d_model, dtype=torch.float32)
    times = []
    with torch.no_grad():
        for i in range(iters + 2):
            t0 = time.perf_counter()
            model(x)
            if i >= 2:
                times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(f"torch_eager {times[len(times) // 2]:.3f}")


if __name__ == "__main__":
    main()

"""The hidden_norms probe ([probes] hidden_norms, docs/abi.md; and
stream_norms with hyper-connections) against the
float64 PyTorch oracle, for each spec given:

- forward's hidden_norms within 1e-5 of the oracle's (relative to the
  largest norm), and the last one equal to the output's own mean row norm
  where the model ends without a final norm or head;
- the same bits on 1 and 2 threads (each mean adds its rows in order);
- the probe changes nothing else: the same spec without it, on the same
  parameters and inputs, gives the same outputs and gradients bit for bit
  (and its backward takes no d_hidden_norms).

    probes_check.py --cache DIR SPEC...
"""
import argparse
import os
import re
import sys
import tempfile

import numpy as np
import torch

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
sys.path.insert(0, os.path.join(here, "..", "Numerics"))
import tfc  # noqa: E402
from oracle import Oracle  # noqa: E402


def inputs_for(m, rng, batch, seq):
    inputs = {}
    if m.has_embedding:
        inputs["tokens"] = rng.integers(0, m.vocab, (batch, seq)).astype(np.int32)
    else:
        inputs["x"] = rng.standard_normal((batch, seq, m.d_model)).astype(np.float32)
    names = [a[0] for a in m.entry_arrays("forward")]
    if "lengths" in names:
        inputs["lengths"] = rng.integers(1, seq + 1, batch).astype(np.int32)
    if "enc" in names:
        inputs["enc"] = rng.standard_normal(
            (batch, min(seq + 2, m.max_seq), m.d_model)).astype(np.float32)
    if m.has_loss:
        inputs["targets"] = rng.integers(-1, m.vocab, (batch, seq)).astype(np.int32)
    return inputs


def forward_backward(m, inputs, seed):
    out = m.forward(**inputs)
    m.zero_grad()
    again = {k: v for k, v in inputs.items() if k == "lengths"}
    if m.has_loss:
        grads = m.backward(**again)
    else:
        name = "logits" if m.has_head else "y"
        grads = m.backward(**{"d_" + name: seed}, **again)
    return out, grads, m.grads.copy()


def check(spec, cache, rng):
    with_probe = tfc.compile(spec, cache_dir=cache, threads=1)
    two_threads = tfc.compile(spec, cache_dir=cache, threads=2)
    text = re.sub(r"hidden_norms\s*=\s*true", "hidden_norms = false", open(spec).read())
    plain_spec = os.path.join(tempfile.mkdtemp(dir=cache), os.path.basename(spec))
    with open(plain_spec, "w") as f:
        f.write(text)
    plain = tfc.compile(plain_spec, cache_dir=cache, threads=1)
    name, failures, checks = with_probe.name, [], 0

    backward_arrays = [a[0] for a in with_probe.entry_arrays("backward")]
    checks += 1
    if any(a in ("hidden_norms", "stream_norms", "d_hidden_norms", "d_stream_norms")
           for a in backward_arrays):
        failures.append(f"backward takes {backward_arrays}")

    for m in (with_probe, two_threads, plain):
        m.init(seed=5)
    oracle = Oracle.from_file(spec)
    oracle.load_flat(with_probe.params)
    for batch, seq in ((1, 1), (3, 7), (4, 16)):
        inputs = inputs_for(with_probe, rng, batch, seq)
        out_name = "logits" if with_probe.has_head else "y"
        seed = rng.standard_normal((batch, seq, with_probe.vocab if with_probe.has_head
                                    else with_probe.d_model)).astype(np.float32)
        out, grads, dparams = forward_backward(with_probe, inputs, seed)
        norms = np.asarray(out["hidden_norms"], np.float64)

        torch_inputs = {k: torch.tensor(v) for k, v in inputs.items()
                        if k in ("targets", "lengths", "enc")}
        inp = inputs.get("tokens", inputs.get("x"))
        oracle(torch.tensor(inp), **torch_inputs)
        ref = np.asarray(oracle.hidden_norms)
        err = float(np.max(np.abs(norms - ref)) / np.max(np.abs(ref)))
        checks += 1
        if norms.shape != (with_probe_depth(with_probe),) or err > 1e-5:
            failures.append(f"b={batch} s={seq}: hidden_norms {norms} vs oracle {ref} "
                            f"(rel {err:.2e})")
        if oracle.cfg.hyper:
            # Each stream's norms [depth + 1, streams] (docs/abi.md).
            streams = np.asarray(out["stream_norms"], np.float64)
            sref = np.asarray(oracle.stream_norms)
            serr = float(np.max(np.abs(streams - sref)) / np.max(np.abs(sref)))
            checks += 1
            if streams.shape != sref.shape or serr > 1e-5:
                failures.append(f"b={batch} s={seq}: stream_norms {streams} vs oracle "
                                f"{sref} (rel {serr:.2e})")
        if not with_probe.has_head and "final_norm.weight" not in with_probe.tensors:
            y = np.asarray(out["y"], np.float64)
            rows = np.linalg.norm(y, axis=-1)
            if "lengths" in inputs:
                rows = rows[np.arange(seq)[None, :] < inputs["lengths"][:, None]]
            checks += 1
            if abs(rows.mean() - norms[-1]) > 1e-5 * rows.mean():
                failures.append(f"b={batch} s={seq}: last norm {norms[-1]} vs the "
                                f"output's {rows.mean()}")

        out2, _, dparams2 = forward_backward(two_threads, inputs, seed)
        checks += 1
        if not all(np.array_equal(out2[k], out[k]) for k in ("hidden_norms", "stream_norms")
                   if k in out):
            failures.append(f"b={batch} s={seq}: 2 threads give other norms")

        plain_out, plain_grads, plain_dparams = forward_backward(plain, inputs, seed)
        checks += 1
        same = (np.array_equal(plain_out[out_name], out[out_name])
                and np.array_equal(plain_dparams, dparams)
                and all(np.array_equal(plain_grads[k], grads[k]) for k in plain_grads)
                and (not with_probe.has_loss or plain_out["loss"] == out["loss"]))
        if not same:
            failures.append(f"b={batch} s={seq}: the probe changed outputs or gradients")
    print(f"{name}: {checks} checks" + ("" if not failures else
                                        ": FAIL " + "; ".join(failures)))
    return not failures


def with_probe_depth(m):
    return [a for a in m.entry_arrays("forward") if a[0] == "hidden_norms"][0][3][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("specs", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    rng = np.random.default_rng(23)
    ok = [check(s, a.cache, rng) for s in a.specs]
    print(f"{sum(ok)} passed, {len(ok) - sum(ok)} failed")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Hugging Face checkpoints into compiled tfc models, end to end, offline.

For small LLaMA-, Qwen3-, GPT-2- and BERT-like specs (Inputs/st_*.toml):
the PyTorch oracle (oracle.py, which reads the spec on its own) gets random
parameters; this script writes them under the family's Hugging Face names
and layouts (nn.Linear [out, in], GPT-2's fused Conv1D c_attn [in, 3d], BERT's
token types) as a safetensors file -- the format written here with struct and
json, not with tfc's writer -- and the C driver (harness/st_load.c) loads it
with tfc_load_safetensors into the compiled model and runs forward. Checked:

  - logits (y for BERT) against the oracle's, within 1e-5 of max(1, |ref|);
  - the parameters as tfc loaded them (saved by the driver in tfc's names,
    read back here) equal the oracle's bit for bit: every transpose and
    split is exact;
  - saving what a tfc-named file loads gives the same bytes (round trip; the
    .test runs cmp on the two files);
  - a sharded copy (model.safetensors.index.json, three shards) gives the
    same logits bit for bit;
  - a missing tensor, an unused one, a shape mismatch and BERT's pooler
    without an ignore prefix fail with their messages (printed for
    FileCheck).

Qwen3's file is BF16 and GPT-2's F16, from parameters rounded to those types
first, so the loaded f32 values are still exactly the oracle's.
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import Oracle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH, SEQ = 2, 5

# ---------------------------------------------------------------------------
# The format (huggingface/safetensors README): u64 little-endian header
# length, JSON header {name: {dtype, shape, data_offsets}}, raw data.
# ---------------------------------------------------------------------------

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BOOL": np.bool_}


def to_bytes(array, dtype):
    if dtype == "BF16":  # f32 bits >> 16: exact for values already bf16
        bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
        assert not np.any(bits & 0xFFFF), "not bf16-representable"
        return (bits >> 16).astype("<u2").tobytes()
    return np.ascontiguousarray(array, dtype=DTYPES[dtype]).astype(
        np.dtype(DTYPES[dtype]).newbyteorder("<")).tobytes()


def write_safetensors(path, tensors, metadata=None):
    """tensors: [(name, array, dtype)] in file order."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, array, dtype in tensors:
        blob = to_bytes(array, dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(array)),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """{name: f32 array} of an F32-only file (the driver's saved params)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", name
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + end],
                                  dtype="<f4").reshape(e["shape"])
    return out


# ---------------------------------------------------------------------------
# Each family's names, from the oracle's parameters (ABI names, [in, out]).
# ---------------------------------------------------------------------------

def llama_names(p, cfg):
    t = [("model.embed_tokens.weight", p["embed.tokens"])]
    for i in range(cfg.depth):
        b, h = f"blocks.{i}.", f"model.layers.{i}."
        t.append((h + "input_layernorm.weight", p[b + "attn_norm.weight"]))
        for w in "qkvo":
            t.append((h + f"self_attn.{w}_proj.weight", p[b + f"attn.w{w}.weight"].T))
        if cfg.qk_norm != "none":
            t.append((h + "self_attn.q_norm.weight", p[b + "attn.q_norm.weight"]))
            t.append((h + "self_attn.k_norm.weight", p[b + "attn.k_norm.weight"]))
        t.append((h + "post_attention_layernorm.weight", p[b + "ffn_norm.weight"]))
        for ours, theirs in (("w_gate", "gate_proj"), ("w_up", "up_proj"),
                             ("w_down", "down_proj")):
            t.append((h + f"mlp.{theirs}.weight", p[b + f"ffn.{ours}.weight"].T))
    t.append(("model.norm.weight", p["final_norm.weight"]))
    if not cfg.tied:
        t.append(("lm_head.weight", p["head.weight"].T))
    return t


def gpt2_names(p, cfg):
    t = [("wte.weight", p["embed.tokens"]), ("wpe.weight", p["embed.positions"])]
    for i in range(cfg.depth):
        b, h = f"blocks.{i}.", f"h.{i}."
        qkv = [b + f"attn.w{w}" for w in "qkv"]
        t += [(h + "ln_1.weight", p[b + "attn_norm.weight"]),
              (h + "ln_1.bias", p[b + "attn_norm.bias"]),
              (h + "attn.c_attn.weight",
               np.concatenate([p[n + ".weight"] for n in qkv], axis=1)),
              (h + "attn.c_attn.bias",
               np.concatenate([p[n + ".bias"] for n in qkv])),
              (h + "attn.c_proj.weight", p[b + "attn.wo.weight"]),
              (h + "attn.c_proj.bias", p[b + "attn.wo.bias"]),
              (h + "ln_2.weight", p[b + "ffn_norm.weight"]),
              (h + "ln_2.bias", p[b + "ffn_norm.bias"]),
              (h + "mlp.c_fc.weight", p[b + "ffn.w_up.weight"]),
              (h + "mlp.c_fc.bias", p[b + "ffn.w_up.bias"]),
              (h + "mlp.c_proj.weight", p[b + "ffn.w_down.weight"]),
              (h + "mlp.c_proj.bias", p[b + "ffn.w_down.bias"])]
    t += [("ln_f.weight", p["final_norm.weight"]),
          ("ln_f.bias", p["final_norm.bias"])]
    return t


def bert_names(p, cfg, token_types):
    e, t = "bert.embeddings.", []
    # HF adds token type 0's row to every position: the file's positions are
    # tfc's minus that row (exact: both lie on a 2^-12 grid, see params()).
    t.append((e + "word_embeddings.weight", p["embed.tokens"]))
    t.append((e + "position_embeddings.weight", p["embed.positions"] - token_types[0]))
    t.append((e + "token_type_embeddings.weight", token_types))
    t.append((e + "LayerNorm.weight", p["embed.norm.weight"]))
    t.append((e + "LayerNorm.bias", p["embed.norm.bias"]))
    for i in range(cfg.depth):
        b, h = f"blocks.{i}.", f"bert.encoder.layer.{i}."
        for ours, theirs in (("wq", "attention.self.query"), ("wk", "attention.self.key"),
                             ("wv", "attention.self.value"),
                             ("wo", "attention.output.dense")):
            t.append((h + theirs + ".weight", p[b + f"attn.{ours}.weight"].T))
            t.append((h + theirs + ".bias", p[b + f"attn.{ours}.bias"]))
        t += [(h + "attention.output.LayerNorm.weight", p[b + "attn_norm.weight"]),
              (h + "attention.output.LayerNorm.bias", p[b + "attn_norm.bias"]),
              (h + "intermediate.dense.weight", p[b + "ffn.w_up.weight"].T),
              (h + "intermediate.dense.bias", p[b + "ffn.w_up.bias"]),
              (h + "output.dense.weight", p[b + "ffn.w_down.weight"].T),
              (h + "output.dense.bias", p[b + "ffn.w_down.bias"]),
              (h + "output.LayerNorm.weight", p[b + "ffn_norm.weight"]),
              (h + "output.LayerNorm.bias", p[b + "ffn_norm.bias"])]
    return t


# ---------------------------------------------------------------------------

def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


class Runner:
    def __init__(self, a):
        self.a, self.passed, self.failed = a, 0, 0

    def result(self, ok, line):
        print(("" if ok else "FAIL: ") + line, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def build(self, name):
        d = os.path.join(self.a.work, name)
        os.makedirs(d, exist_ok=True)
        spec = os.path.join(HERE, "Inputs", f"st_{name}.toml")
        r = run(self.a.tfc.split() + [spec, "--forward-only", "-o",
                                      os.path.join(d, f"st_{name}.o")])
        if r.returncode:
            sys.exit(f"tfc failed on {spec}:\n{r.stderr}")
        r = run(self.a.cc.split() + [
            "-O2", "-std=c11", "-Wall", "-Werror", "-I" + self.a.include, "-I" + d,
            f"-DTFC_HEADER=\"st_{name}.h\"", f"-DTFC_NAME=st_{name}",
            f"-DTFC_UNAME=ST_{name.upper()}",
            os.path.join(HERE, "harness", "st_load.c"), os.path.join(d, f"st_{name}.o"),
            "-L" + self.a.runtime_lib, "-ltfc_safetensors", "-lcjson", "-ltfc_runtime",
            "-lpthread", "-lm", "-o", os.path.join(d, "st_load")])
        if r.returncode:
            sys.exit(f"cc failed:\n{r.stderr}")
        return d, spec

    def load(self, d, map_name, path, *extra):
        tokens = os.path.join(d, "tokens.bin")
        return run([os.path.join(d, "st_load"), *extra, map_name, path, tokens,
                    str(BATCH), str(SEQ)])

    def params(self, model, name, rng, dtype):
        """Random parameters, rounded so that the file's dtype holds them
        exactly (and BERT's positions on a grid where p - t0 + t0 = p)."""
        flat = rng.normal(0.0, 0.3, model.param_count).astype(np.float32)
        for tname, offset, shape in model.layout:
            n = math.prod(shape)
            if "norm" in tname:
                flat[offset:offset + n] += 1.0
            if tname == "embed.positions" and name == "bert":
                flat[offset:offset + n] = np.round(flat[offset:offset + n] * 4096) / 4096
        if dtype == "BF16":
            flat = torch.from_numpy(flat).to(torch.bfloat16).float().numpy()
        elif dtype == "F16":
            flat = flat.astype(np.float16).astype(np.float32)
        return flat

    def family(self, name, dtype):
        d, spec = self.build(name)
        model = Oracle.from_file(spec)
        cfg = model.cfg
        rng = np.random.default_rng(16)
        flat = self.params(model, name, rng, dtype)
        model.load_flat(flat)
        p = {n: flat[o:o + math.prod(s)].reshape(s) for n, o, s in model.layout}
        tokens = rng.integers(0, cfg.vocab, (BATCH, SEQ)).astype(np.int32)
        tokens.tofile(os.path.join(d, "tokens.bin"))
        with torch.no_grad():
            ref = model(tokens)[0].numpy()

        extra, skips = [], []
        if name == "llama":
            tensors = llama_names(p, cfg)
        elif name == "qwen3":
            tensors = llama_names(p, cfg)
        elif name == "gpt2":
            tensors = gpt2_names(p, cfg)
            # Older transformers saved the causal mask with the weights.
            for i in range(cfg.depth):
                skips.append((f"h.{i}.attn.bias",
                              np.tril(np.ones((1, 1, cfg.max_seq, cfg.max_seq), bool)),
                              "BOOL"))
        else:
            types = (np.round(rng.normal(0, 0.3, (2, cfg.d_model)) * 4096) / 4096
                     ).astype(np.float32)
            tensors = bert_names(p, cfg, types)
            skips.append(("bert.embeddings.position_ids",
                          np.arange(cfg.max_seq, dtype=np.int64)[None], "I64"))
            skips.append(("bert.pooler.dense.weight",
                          rng.normal(0, 1, (cfg.d_model, cfg.d_model)).astype(np.float32),
                          "F32"))
            extra = ["-i", "bert.pooler."]
        file_tensors = [(n, a, dtype) for n, a in tensors] + skips
        hf = os.path.join(d, "model.safetensors")
        write_safetensors(hf, file_tensors, {"format": "pt"})

        # Load, forward, compare with the oracle.
        out = os.path.join(d, "out.bin")
        saved = os.path.join(d, "saved.safetensors")
        r = self.load(d, name, hf, *extra, "-s", saved, "-o", out)
        if r.returncode:
            self.result(False, f"{name}: {r.stdout.strip()} {r.stderr.strip()}")
            return
        got = np.fromfile(out, dtype=np.float32).reshape(ref.shape)
        err = float(np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))))
        what = "logits" if cfg.has_head else "y"
        self.result(err <= 1e-5, f"{name}: {dtype} file, {what} vs oracle: "
                    f"max error {err:.1e} (bound 1e-05)")
        # What tfc loaded, in tfc's names: the oracle's parameters exactly.
        back = read_safetensors(saved)
        bad = [n for n, _, _ in model.layout
               if not np.array_equal(back[n].view(np.uint32), p[n].view(np.uint32))]
        self.result(not bad and set(back) == {n for n, _, _ in model.layout},
                    f"{name}: loaded parameters bit-identical to the oracle's"
                    + (f" (not: {bad})" if bad else ""))
        # Round trip: tfc's own file loads and saves to the same bytes.
        r = self.load(d, "tfc", saved, "-s", os.path.join(d, "saved2.safetensors"))
        self.result(r.returncode == 0, f"{name}: saved file reloads ({r.stdout.strip()})")

        if name == "llama":
            self.sharded(d, name, file_tensors, got)
            self.negatives(d, name, file_tensors)
        if name == "bert":
            r = self.load(d, name, hf)
            print(f"{name} no ignore: {r.stdout.strip()}")

    def sharded(self, d, name, file_tensors, got):
        shards = [f"model-0000{k + 1}-of-00003.safetensors" for k in range(3)]
        weight_map = {}
        for k, shard in enumerate(shards):
            part = file_tensors[k::3]
            write_safetensors(os.path.join(d, shard), part)
            weight_map.update({n: shard for n, _, _ in part})
        index = os.path.join(d, "model.safetensors.index.json")
        with open(index, "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f,
                      indent=2)
        out = os.path.join(d, "out_sharded.bin")
        r = self.load(d, "auto", index, "-o", out)
        same = r.returncode == 0 and np.array_equal(
            np.fromfile(out, dtype=np.float32).reshape(got.shape), got)
        self.result(same, f"{name}: 3 shards + index.json give the same logits "
                    f"bit for bit ({r.stdout.strip()})")

    def negatives(self, d, name, file_tensors):
        bad = os.path.join(d, "bad.safetensors")
        cases = {
            "missing": [t for t in file_tensors
                        if t[0] != "model.layers.1.mlp.up_proj.weight"],
            "unused": file_tensors + [("model.layers.2.mlp.up_proj.weight",
                                       np.zeros((24, 16), np.float32), "F32")],
            # k_proj [kv, d] = [8, 16] written as tfc's [in, out] = [16, 8].
            "shape": [(n, a.T if n == "model.layers.0.self_attn.k_proj.weight" else a, t)
                      for n, a, t in file_tensors],
        }
        for case, tensors in cases.items():
            write_safetensors(bad, tensors)
            r = self.load(d, name, bad)
            self.result(r.returncode == 3, f"{name} {case}: {r.stdout.strip()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tfc", default="tfc")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--include", required=True)
    ap.add_argument("--runtime-lib", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    runner = Runner(a)
    for name, dtype in (("llama", "F32"), ("qwen3", "BF16"), ("gpt2", "F16"),
                        ("bert", "F32")):
        runner.family(name, dtype)
    print(f"{runner.passed} passed, {runner.failed} failed")
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every refusal of python/tfc, printed one per line for FileCheck
(test/Python/binding.test): tfc.Error with the runtime's or the binding's
message, never a crash.

    binding_errors.py --cache DIR LM_SPEC FORWARD_ONLY_SO NOT_A_MODEL
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tfc  # noqa: E402


def attempt(what, fn):
    try:
        fn()
        print(f"{what}: no error")
    except tfc.Error as e:
        print(f"{what}: {e}")


def main():
    cache, spec, forward_only, not_a_model = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    m = tfc.compile(spec, cache_dir=cache, threads=1)
    m.init(1)
    tok = np.zeros((2, 5), np.int32)
    attempt("backward first", lambda: m.backward())
    attempt("token id", lambda: m.forward(tokens=tok + 99, targets=tok))
    attempt("rank", lambda: m.forward(tokens=tok[..., None], targets=tok))
    attempt("shape", lambda: m.forward(tokens=tok, targets=tok[:, :3]))
    attempt("missing", lambda: m.forward(tokens=tok))
    attempt("unknown", lambda: m.forward(tokens=tok, targets=tok, enc=tok))
    attempt("too long", lambda: m.forward(tokens=np.zeros((2, 99), np.int32),
                                          targets=np.zeros((2, 99), np.int32)))
    cache_ = m.kv_cache(2, 8)
    m.prefill(cache_, tok)
    attempt("decode position", lambda: m.decode(cache_, tok[:, 0], np.full(2, 7, np.int32)))
    attempt("decode cache", lambda: m.decode(None, tok[:, 0], np.zeros(2, np.int32)))
    attempt("cache size", lambda: m.kv_cache(9, 8))
    attempt("no file", lambda: tfc.load(os.path.join(cache, "missing.so")))
    attempt("not a model", lambda: tfc.load(not_a_model))
    fo = tfc.load(forward_only)
    fo.forward(tokens=tok, targets=tok)
    attempt("forward-only", lambda: fo.backward())
    bad = os.path.join(cache, "bad.toml")
    with open(bad, "w") as f:
        f.write('name = "bad"\n[model]\nd_model = 0\n')
    attempt("compile", lambda: tfc.compile(bad, cache_dir=cache))


if __name__ == "__main__":
    main()

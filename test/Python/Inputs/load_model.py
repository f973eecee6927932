"""Loads a shared model with python/tfc and prints what tfc.load says:
`loaded NAME` or the tfc.Error (cuda-build-refused.test).

    load_model.py LIBRARY
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import tfc  # noqa: E402

try:
    print(f"loaded {tfc.load(sys.argv[1]).name}")
except tfc.Error as e:
    print(f"tfc.Error: {e}")

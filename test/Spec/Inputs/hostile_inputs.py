"""Writes hostile spec files for the lit tests, generated at test time so that
no large file is committed.

    hostile_inputs.py KIND OUT     one input (KINDS below) to the file OUT
    hostile_inputs.py --all DIR    every input, as DIR/KIND.toml
    hostile_inputs.py --endless    comments to stdout until the reader
                                   closes the pipe, then exit 0

Each is at most a few MiB and written in well under a second.
"""
import os
import sys

SPEC = 'name = "m"\n[model]\nd_model = 64\nn_heads = 4\n'
N = 100000  # Deep enough to overflow TOML++'s recursion without the limits.


def dotted(parts, part="a"):
    return ".".join([part] * parts)


KINDS = {
    # Nesting: 100 000 '[' (TOML++ stops at 256 itself), inline tables.
    "deep-arrays": SPEC + "x = " + "[" * N + "]" * N + "\n",
    "deep-inline-tables": SPEC + "x = " + "{a = " * N + "1" + "}" * N + "\n",
    # 100 000-part dotted keys and headers: SIGSEGV in TOML++ 3.3.0.
    "dotted-key": SPEC + dotted(N) + " = 1\n",
    "dotted-key-digits": SPEC + dotted(N, "1") + " = 1\n",
    "dotted-header": SPEC + "[" + dotted(N) + "]\n",
    "dotted-array-header": SPEC + "[[" + dotted(N) + "]]\n",
    # Enormous files: over the limit (2 MiB), and big things within it.
    "too-large": SPEC + "# " + "x" * (2 << 20) + "\n",
    "big-key": SPEC + "k" * 1000000 + " = 1\n",
    "big-string": SPEC + "[norm]\ntype = \"" + "s" * 1000000 + "\"\n",
    "many-keys": SPEC + "".join("k%d = 1\n" % i for i in range(80000)),
    "many-sections": SPEC + "".join("[s%d]\n" % i for i in range(100000)),
    # 15 000 unknown 64-character keys: the longest words the "did you
    # mean" edit distance still compares, each against every key of [model].
    "many-long-keys": SPEC + "".join("d_model_%056d = 1\n" % i
                                     for i in range(15000)),
    "big-array": SPEC + "x = [" + "1, " * 300000 + "]\n",
    "long-integer": SPEC + "depth = " + "1" * 1000000 + "\n",
    # Bytes that are not UTF-8 or not text.
    "invalid-utf8-comment": "# ok \xc0\xaf\n" + SPEC,
    "invalid-utf8-value": SPEC + "depth = \xff\n",
    "nul-byte": SPEC + "depth = 1\0\n",
}


def write(kind, path):
    data = KINDS[kind].encode("latin-1")  # Each char one byte, as written.
    with open(path, "wb") as f:
        f.write(data)


def endless():
    line = b"# endless\n" * 1000
    try:
        while True:
            os.write(1, line)
    except OSError:  # EPIPE: the reader is gone, as it should be.
        os._exit(0)


def main(argv):
    if argv[1:] == ["--endless"]:
        endless()
    if len(argv) == 3 and argv[1] == "--all":
        os.makedirs(argv[2], exist_ok=True)
        for kind in KINDS:
            write(kind, os.path.join(argv[2], kind + ".toml"))
        return 0
    if len(argv) == 3 and argv[1] in KINDS:
        write(argv[1], argv[2])
        return 0
    sys.stderr.write("usage: hostile_inputs.py KIND OUT | --all DIR\nkinds: "
                     + " ".join(KINDS) + "\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

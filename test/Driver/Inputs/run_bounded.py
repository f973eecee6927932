"""Runs tfc on spec files under `ulimit -v` and `timeout` and checks that each
finished inside both bounds with the expected outcome.

    run_bounded.py --vmem-kib N --timeout S --expect error|ok TFC SPEC... [-- TFC-ARGS...]

--expect error: every spec must fail with exit code 1 and exactly one
diagnostic line, `SPEC:LINE:COL: error: ...` or `SPEC: error: ...`.
--expect ok: every spec must compile (exit code 0). A crash, a timeout (exit
code 124) or running out of the address space (a crash or std::bad_alloc)
fails the check. Prints one line per spec: `PASS name seconds`.
"""
import argparse
import re
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vmem-kib", type=int, required=True)
    parser.add_argument("--timeout", type=int, required=True)
    parser.add_argument("--expect", choices=["error", "ok"], required=True)
    parser.add_argument("tfc")
    parser.add_argument("specs", nargs="+")
    argv, extra = sys.argv[1:], []
    if "--" in argv:  # Split here: argparse would take `--` for itself.
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    failures = 0
    for spec in args.specs:
        # The limits apply to tfc alone: `ulimit -v` in a shell that then
        # becomes `timeout`, which runs tfc.
        command = ["bash", "-c",
                   'ulimit -v "$0" && exec timeout "$1" "${@:2}"',
                   str(args.vmem_kib), str(args.timeout), args.tfc, spec] + extra
        start = time.monotonic()
        result = subprocess.run(command, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        seconds = time.monotonic() - start
        stderr = result.stderr.decode("utf-8", "replace")
        name = spec.rsplit("/", 1)[-1]
        problem = None
        if result.returncode == 124:
            problem = "timed out after %d s" % args.timeout
        elif result.returncode < 0 or result.returncode > 1:
            problem = "exit code %d (crash or out of memory)" % result.returncode
        elif args.expect == "ok" and result.returncode != 0:
            problem = "did not compile"
        elif args.expect == "error":
            lines = stderr.splitlines()
            located = re.compile(re.escape(spec) + r"(:\d+:\d+)?: error: \S")
            if result.returncode != 1:
                problem = "was accepted"
            elif len(lines) != 1 or not located.match(lines[0]):
                problem = "not one `%s:line:col: error:` line" % name
        if problem:
            failures += 1
            print("FAIL %s: %s\n%s" % (name, problem, stderr[:2000]))
        else:
            print("PASS %s %.1f" % (name, seconds))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

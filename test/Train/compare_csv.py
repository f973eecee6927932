"""Two CSV files of the same rows: the same header and keys (every column
but the last), the last column's numbers within --rtol of each other
(relative to the larger magnitude). Prints 'N rows within RTOL' or the
first row that differs, and exits 1 then.

    compare_csv.py A.csv B.csv --rtol 1e-5
"""
import argparse
import csv
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rtol", type=float, required=True)
    args = ap.parse_args()
    with open(args.a) as fa, open(args.b) as fb:
        a, b = list(csv.reader(fa)), list(csv.reader(fb))
    if a[0] != b[0] or len(a) != len(b):
        print(f"differ: header {a[0]} / {b[0]}, {len(a)} / {len(b)} lines")
        return 1
    for ra, rb in zip(a[1:], b[1:]):
        x, y = float(ra[-1]), float(rb[-1])
        if ra[:-1] != rb[:-1] or abs(x - y) > args.rtol * max(abs(x), abs(y), 1e-30):
            print(f"differ: {ra} / {rb}")
            return 1
    print(f"{len(a) - 1} rows within {args.rtol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

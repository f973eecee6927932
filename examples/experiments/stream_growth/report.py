"""Experiment 3's report: the hidden_norms probe of a 36-block pre-LN model
at initialisation and after training, beside sqrt(L + 1) and the seed's
numbers. Usage: report.py OUT MODE."""

import csv
import glob
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import runs  # noqa: E402

# Seed 001: unit-length random 256-dim vectors added to a unit start vector.
SEED_UNIT = {1: 1.414, 4: 2.235, 16: 4.120, 36: 6.067}
# Seed 001: a trained Qwen3-VL-4B's mean prompt-token norm at some layers.
SEED_QWEN = {1: 5.9, 20: 59.8, 35: 533.6}

SEED = """seed 001: random unit steps give sqrt(L + 1): 1.414, 2.235, 4.120, 6.067 at L = 1, 4, 16, 36;
          a trained Qwen3-VL-4B grows much faster: 5.9 at layer 1, 59.8 at 20, 533.6 at 35"""


def main():
    out, mode = sys.argv[1], sys.argv[2]
    (path,) = glob.glob(os.path.join(out, "*", "hidden_norms.csv"))
    run = runs.Run(os.path.dirname(path))
    by_step = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            by_step.setdefault(int(row["step"]), {})[int(row["index"])] = float(row["norm"])
    first, last = min(by_step), max(by_step)
    init = [by_step[first][i] for i in sorted(by_step[first])]
    trained = [by_step[last][i] for i in sorted(by_step[last])]
    depth = len(init) - 1

    # Over block 0's input (the seed's unit start vector) and over block 1's
    # output: here the blocks' steps dwarf the embedding, so the random-walk
    # law sqrt(L) is better compared from block 1 on.
    rows = [[l, init[l], trained[l], init[l] / init[0], trained[l] / trained[0],
             math.sqrt(l + 1), init[l] / init[1], math.sqrt(l)]
            for l in range(depth + 1)]
    runs.write_csv(os.path.join(out, "norms.csv"),
                   ["block", "init", "trained", "init_over_0", "trained_over_0",
                    "sqrt_l_plus_1", "init_over_1", "sqrt_l"], rows)

    lines = [f"pre-LN, width 256, 36 blocks, copy task; mean row L2 norm of the hidden state "
             f"({mode}: after {last} steps, loss {run.last_loss():.4f})",
             f"{'L':>3}  {'init':>8}  {'init/h0':>8}  {'sqrt(L+1)':>9}  {'seed':>6}  "
             f"{'init/h1':>8}  {'sqrt(L)':>7}  {'trained':>9}  {'trained/h0':>10}"]
    for l in (0, 1, 4, 16, 20, 35, 36):
        if l > depth:
            continue
        seed = SEED_UNIT.get(l)
        lines.append(f"{l:>3}  {init[l]:8.3f}  {init[l] / init[0]:8.3f}  "
                     f"{math.sqrt(l + 1):9.3f}  "
                     + (f"{seed:6.3f}" if seed else f"{'':>6}")
                     + f"  {init[l] / init[1]:8.3f}  {math.sqrt(l):7.3f}  {trained[l]:9.3f}  "
                     f"{trained[l] / trained[0]:10.3f}")
    table = "\n".join(lines)
    runs.publish(out, table, SEED)

    png = os.path.join(out, "results.png")
    data = os.path.join(out, "norms.csv")
    if runs.gnuplot(f"""
set terminal pngcairo size 1200,500 noenhanced
set output "{png}"
set datafile separator ","
set multiplot layout 1,2 title "Residual stream growth, pre-LN, 36 blocks ({mode})"
set title "growth from block 1 at initialisation (h_L / h_1)"
set xlabel "block L"; set ylabel "ratio"; set key top left
plot "{data}" using 1:7 every ::2 with linespoints pt 7 title "tfc, at initialisation", \\
     "{data}" using 1:8 every ::2 with lines dt 2 title "sqrt(L): random unit steps"
set title "mean row norm"
set ylabel "||h_L||"; set logscale y
plot "{data}" using 1:2 every ::1 with linespoints pt 7 title "at initialisation", \\
     "{data}" using 1:3 every ::1 with linespoints pt 5 title "after {last} steps"
unset multiplot
"""):
        print(f"plot: {png}")


if __name__ == "__main__":
    main()

# Reads "seq bytes" lines for seq doubling each line and prints, from the
# third line on, the ratio of successive increments: 2.0 for a workspace
# affine in seq, close to 4 for one dominated by a seq^2 term.
{ seq[NR] = $1; bytes[NR] = $2 }
NR >= 3 {
  printf "ratio %.1f\n", (bytes[NR] - bytes[NR - 1]) / (bytes[NR - 1] - bytes[NR - 2])
}

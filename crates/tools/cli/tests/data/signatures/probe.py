"""Builds a set of 4 million ints ROUNDS times (argument 1). The keys are multiples of
an odd constant, so consecutive inserts land far apart in the set's table (128 MB at
the end, rehashed as it grows): nearly every insert misses a 16 MB cache, and the
inserts run in C (a few dozen instructions each). Every round does the same work, so
a profile of a few rounds stands for a long run. Test program for hetsched's
signature policy."""
import sys

N = 1 << 22
K = 2654435761
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 1
keys = list(range(0, N * K, K))
print(sum(len(set(keys)) for _ in range(ROUNDS)))

"""Probes a set of 4 million ints with its own keys, ROUNDS times (argument 1). The
keys are multiples of an odd constant, so consecutive probes land far apart in the
set's 128 MB table: nearly every probe misses a 16 MB cache, and the probes run in C
(a few dozen instructions each). Test program for hetsched's signature policy."""
import sys

N = 1 << 22
K = 2654435761
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 1
keys = list(range(0, N * K, K))
s = set(keys)
print(sum(s.issuperset(keys) for _ in range(ROUNDS)))

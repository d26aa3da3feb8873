"""Looks up 4 million int keys in a dict built from them, ROUNDS times (argument 1).
The keys are multiples of an odd constant, so consecutive lookups land on index-table
slots far apart: nearly every lookup misses a 16 MB cache in the dict's 32 MB index
table, and the lookups run in C (few instructions per miss). Test program for
hetsched's signature policy."""
import sys

N = 1 << 22
K = 2654435761
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 1
keys = list(range(0, N * K, K))
d = dict.fromkeys(keys)
print(sum(sum(map(d.__contains__, keys)) for _ in range(ROUNDS)))

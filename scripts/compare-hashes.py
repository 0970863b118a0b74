#!/usr/bin/env python3
"""Compares the seed hashes of two sets of `durasim run --json` result files.

Usage: compare-hashes.py DIR_A DIR_B

Every *.jsonl file of DIR_B must have a namesake in DIR_A, and each seed line of it (workload,
seed) the same hash as in its namesake: the same campaign run by two builds (Release with g++ and
the sanitizer build with clang, say) must simulate the same runs. Prints one line per difference
and exits 1 when there is any; 0 with a count otherwise.
"""
import pathlib
import sys

from seed_records import seed_records


def seed_hashes(path):
    return {key: record["hash"] for key, record in seed_records(path).items()}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare-hashes.py DIR_A DIR_B")
    dir_a, dir_b = map(pathlib.Path, sys.argv[1:])
    files = sorted(dir_b.glob("*.jsonl"))
    if not files:
        sys.exit(f"compare-hashes: no *.jsonl in {dir_b}")
    differences = compared = 0
    for file_b in files:
        file_a = dir_a / file_b.name
        if not file_a.exists():
            print(f"{file_b.name}: missing from {dir_a}")
            differences += 1
            continue
        a, b = seed_hashes(file_a), seed_hashes(file_b)
        for key in sorted(a.keys() | b.keys()):
            compared += 1
            if a.get(key) != b.get(key):
                differences += 1
                print(f"{file_b.name}: {key[0]} seed {key[1]}: {a.get(key)} in {dir_a}, {b.get(key)} in {dir_b}")
    if differences:
        sys.exit(1)
    print(f"compare-hashes: {compared} seeds of {len(files)} campaigns hash the same in {dir_a} and {dir_b}")


if __name__ == "__main__":
    main()

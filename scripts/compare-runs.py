#!/usr/bin/env python3
"""Checks that two durasim binaries simulate the same runs: the determinism check of a speed change.

Usage: compare-runs.py OLD_BINARY NEW_BINARY [--scale X] [--jobs N] [--keep DIR]

Runs the same campaigns (every workload under both fault profiles, the seed ranges below times
--scale) with each binary, `durasim run --json`, and compares every seed's record field by field:
hash, outcome, failure, per-invariant checked and violated counts, fault and buggify counts, event
counts and simulated time. Only the wall time may differ. Prints one line per difference (at most
20 per campaign) and a summary; exits 1 when any seed differs or either binary fails to run.
--scale 1 is the sweep of a speed round's closing note (about 17 minutes on two cores, both
binaries side by side); --scale 0.33 the quick one. A speed change that alters what is simulated
shows up here as a changed hash or count, naming the seed to replay with `durasim explain`.
"""
import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import tempfile

from seed_records import seed_records

# (workload, first seed, seeds at --scale 1); None is the default campaign (every workload).
CAMPAIGNS = [
    (None, 0, 100),
    ("core", 0, 2000),
    ("runtime", 0, 1000),
    ("alarms", 0, 1000),
    ("log", 100, 500),
    ("fanout", 0, 1000),
    ("outbox", 0, 500),
    ("events", 0, 1000),
    ("mixed", 0, 300),
]
PROFILES = ["recoverable", "arbitrary"]
IGNORED = {"wall_s"}


def campaign_args(workload, first, count, profile):
    args = ["run", "--seeds", f"{first}..{first + count - 1}", "--faults", profile]
    if workload:
        args += ["--workload", workload]
    return args


def run(binary, args, out):
    """Runs one campaign; failing seeds are results, a crash or bad option is not."""
    out.unlink(missing_ok=True)  # a file left by an earlier run in --keep's directory is no result
    done = subprocess.run([binary, *args, "--json", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if not out.exists():
        raise RuntimeError(f"{binary} {' '.join(args)}: no results (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    return out


def seeds(path):
    return {key: {k: v for k, v in record.items() if k not in IGNORED} for key, record in seed_records(path).items()}


def differences(old, new):
    """(seed key, what differs) for every field of every seed that differs."""
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            yield key, f"only in {'new' if a is None else 'old'}"
            continue
        for field in sorted(a.keys() | b.keys()):
            if a.get(field) != b.get(field):
                yield key, f"{field} {json.dumps(a.get(field))[:120]} -> {json.dumps(b.get(field))[:120]}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=2, help="campaigns run at once (default 2)")
    parser.add_argument("--keep", help="write the result files here instead of a temporary directory")
    options = parser.parse_args()
    for binary in (options.old, options.new):
        if not pathlib.Path(binary).is_file():
            sys.exit(f"compare-runs: no binary {binary}")
    work = pathlib.Path(options.keep) if options.keep else pathlib.Path(tempfile.mkdtemp(prefix="compare-runs."))
    work.mkdir(parents=True, exist_ok=True)
    jobs = []
    for workload, first, count in CAMPAIGNS:
        count = max(1, round(count * options.scale))
        for profile in PROFILES:
            name = f"{workload or 'default'}-{profile}"
            args = campaign_args(workload, first, count, profile)
            jobs.append((name, args))
    failed = differing = compared = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        futures = {}
        for name, args in jobs:
            for side, binary in (("old", options.old), ("new", options.new)):
                futures[(name, side)] = pool.submit(run, binary, args, work / f"{name}.{side}.jsonl")
        for name, args in jobs:
            try:
                old, new = seeds(futures[(name, "old")].result()), seeds(futures[(name, "new")].result())
            except RuntimeError as error:
                print(f"{name}: {error}")
                failed += 1
                continue
            found = list(differences(old, new))
            compared += len(old)
            differing += len({key for key, _ in found})
            for (workload, seed), what in found[:20]:
                print(f"{name}: {workload} seed {seed}: {what}")
            if len(found) > 20:
                print(f"{name}: ... {len(found) - 20} more")
            status = "same" if not found else f"{len(found)} differences"
            print(f"{name}: {len(old)} seeds ({' '.join(args[1:])}): {status}", flush=True)
    print(f"compare-runs: {compared} seeds compared, {differing} differ, {failed} campaigns failed to run ({work})")
    sys.exit(1 if differing or failed else 0)


if __name__ == "__main__":
    main()

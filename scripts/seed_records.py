"""Reads the seed records of a `durasim run --json` result file (JSON lines), for the comparison
scripts (compare-hashes.py, compare-runs.py)."""
import json


def seed_records(path):
    """Every seed record of the file, keyed by (workload, seed); other lines are skipped."""
    records = {}
    with open(path) as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("type") == "seed":
                records[(record["workload"], record["seed"])] = record
    return records

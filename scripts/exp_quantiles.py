#!/usr/bin/env python3
"""Regenerates sim/exp_quantiles.inc: 1,024 integer quantiles of Exp(1) scaled by 10^6."""
import math
import pathlib

values = [int(round(-math.log(1 - (i + 0.5) / 1024) * 1e6)) for i in range(1024)]
rows = ["    " + ", ".join(str(v) for v in values[i:i + 8]) + "," for i in range(0, 1024, 8)]
header = (
    "// 1,024 quantiles of Exp(1) scaled by 10^6: entry i = round(-ln(1 - (i + 0.5) / 1024) * 10^6).\n"
    "// Generated once by scripts/exp_quantiles.py; fixed data so latency draws need no libm (runtime.md 2.3).\n"
)
target = pathlib.Path(__file__).resolve().parent.parent / "sim" / "exp_quantiles.inc"
target.write_text(header + "\n".join(rows) + "\n")

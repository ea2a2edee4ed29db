#!/usr/bin/env python3
"""Markdown table of `sim bench --json` results (files named on the command line). Runs with
`--rounds` above 1 give the median and, in brackets, the range over their rounds."""
import json
import sys


def figure(v, part, key, fmt, scale=1.0):
    """The figure `key` of `part` (`kernel` or `copy`): median (min–max) where the run has a spread."""
    s = v.get("spread", {}).get(key)
    if s:
        return f"{fmt(scale * s['median'])} ({fmt(scale * s['min'])}–{fmt(scale * s['max'])})"
    x = v.get(part, {}).get(key)
    return fmt(scale * x) if x is not None else "-"


print("| bench | precision | threads | variant | block | size | COPY GB/s | BW_e GB/s | % of COPY | Mcells/s | RDP s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    try:
        v = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"| {path} | unreadable: {e} |")
        continue
    k = v.get("kernel", {})
    name = v["name"] + (f" {v['scheme']}" if "scheme" in v else "") + (f" ({v['flux']})" if "flux" in v else "")
    block = "x".join(str(b) for b in v.get("block", [])) or "-"
    size = v.get("nx", v.get("points", v.get("size")))
    rdp = f"{k['rdp_s']:.3e}" if "rdp_s" in k else "-"
    one, zero = (lambda x: f"{x:.1f}"), (lambda x: f"{x:.0f}")
    print(f"| {name} | {v['precision']} | {v.get('threads', '-')} | {v.get('variant', '-')} | {block} | {size} "
          f"| {figure(v, 'copy', 'bw_GBps', one)} | {figure(v, 'kernel', 'bw_eff_GBps', one)} "
          f"| {figure(v, 'kernel', 'fraction_of_copy', one, 100.0)} | {figure(v, 'kernel', 'mcells_per_s', zero)} | {rdp} |")

#!/usr/bin/env python3
"""Markdown table of `sim bench --json` results (files named on the command line)."""
import json
import sys

print("| bench | precision | variant | block | size | COPY GB/s | BW_e GB/s | % of COPY | Mcells/s | RDP s |")
print("|---|---|---|---|---|---|---|---|---|---|")
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
    print(f"| {name} | {v['precision']} | {v.get('variant', '-')} | {block} | {size} | {v['copy']['bw_GBps']:.1f} "
          f"| {k.get('bw_eff_GBps', 0):.1f} | {100 * k.get('fraction_of_copy', 0):.1f} | {k.get('mcells_per_s', 0):.0f} | {rdp} |")

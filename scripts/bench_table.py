#!/usr/bin/env python3
"""Markdown table of `sim bench --json` results (files named on the command line). Runs with
`--rounds` above 1 give the median and, in brackets, the range over their rounds. A
`sim bench tridiag` file gives a row per layout it timed (its rate in millions of unknowns
per second in the Mcells/s column)."""
import json
import sys


def figure(v, part, key, fmt, scale=1.0):
    """The figure `key` of `part` (`kernel` or `copy`): median (min–max) where the run has a spread."""
    s = v.get("spread", {}).get(key)
    if s:
        return f"{fmt(scale * s['median'])} ({fmt(scale * s['min'])}–{fmt(scale * s['max'])})"
    x = v.get(part, {}).get(key)
    return fmt(scale * x) if x is not None else "-"


def rows(v):
    """(name, size, a file of one `kernel`, its rate's key and scale) of each row of one bench file."""
    name = v["name"] + (f" {v['scheme']}" if "scheme" in v else "") + (f" ({v['flux']})" if "flux" in v else "")
    if v["name"] != "tridiag":
        return [(name, v.get("nx", v.get("points", v.get("size"))), v, "mcells_per_s", 1.0)]
    size = f"{v.get('size')} x {v.get('batch')}"
    layouts = [k for k, x in v.items() if isinstance(x, dict) and "bw_eff_GBps" in x and k != "copy"]
    return [(f"tridiag {v.get('solver', '')} {k}", size, {"kernel": v[k], "copy": v.get("copy", {})},
             "unknowns_per_s", 1e-6) for k in layouts]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/bench_table.py BENCH.json [BENCH.json ...] (files of `sim bench --json`)")
    print("| bench | precision | threads | variant | block | size | COPY GB/s | BW_e GB/s | % of COPY | Mcells/s | RDP s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failed = False
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                v = json.load(f)
            if not isinstance(v, dict) or "name" not in v or "precision" not in v:
                raise ValueError("not the output of sim bench --json")
        except (OSError, ValueError) as e:
            print(f"bench_table.py: {path}: {e}", file=sys.stderr)
            failed = True
            continue
        k = v.get("kernel", {})
        block = "x".join(str(b) for b in v.get("block", [])) or "-"
        rdp = f"{k['rdp_s']:.3e}" if "rdp_s" in k else "-"
        one, zero = (lambda x: f"{x:.1f}"), (lambda x: f"{x:.0f}")
        for name, size, w, rate, scale in rows(v):
            print(f"| {name} | {v['precision']} | {v.get('threads', '-')} | {v.get('variant', '-')} | {block} | {size} "
                  f"| {figure(w, 'copy', 'bw_GBps', one)} | {figure(w, 'kernel', 'bw_eff_GBps', one)} "
                  f"| {figure(w, 'kernel', 'fraction_of_copy', one, 100.0)} | {figure(w, 'kernel', rate, zero, scale)} | {rdp} |")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()

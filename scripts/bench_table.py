#!/usr/bin/env python3
"""Markdown table of `sim bench --json` results (files named on the command line). Runs with
`--rounds` above 1 give the median and, in brackets, the range over their rounds. A
`sim bench tridiag` file gives a row per layout it timed (its rate in millions of unknowns
per second in the Mcells/s column; a layout that fell back to another solver gets a row
without figures and its reason under the table)."""
import json
import re
import sys


def figure(v, part, key, fmt, scale=1.0):
    """The figure `key` of `part` (`kernel` or `copy`): median (min–max) where the run has a spread."""
    s = v.get("spread", {}).get(key)
    if s:
        return f"{fmt(scale * s['median'])} ({fmt(scale * s['min'])}–{fmt(scale * s['max'])})"
    x = v.get(part, {}).get(key)
    return fmt(scale * x) if x is not None else "-"


def tridiag_label(v, k):
    """The solver and layout of a `sim bench tridiag` layout key: the batched Thomas bench also
    times SPIKE on interleaved systems (`interleaved_spike_R[_staged]`, R-row partitions)."""
    x = v[k]
    m = re.fullmatch(r"(?:(\w+?)_)?spike(?:_(\d+))?(_staged)?", k)
    if m:
        layout = (f" {m[1]}" if m[1] else "") + (f", {m[2]}-row partitions" if m[2] else "")
        kernels = "staged" if m[3] else x.get("kernels")
        return f"tridiag spike{layout}" + (f" ({kernels})" if kernels else "")
    if k.startswith("thomas_"):
        return f"tridiag thomas {k[len('thomas_'):]}"
    return f"tridiag {v.get('solver', 'thomas')} {k}"


def rows(v):
    """(name, size, a file of one `kernel`, its rate's key and scale, fallback) of each row of one
    bench file."""
    name = v["name"] + (f" {v['scheme']}" if "scheme" in v else "") + (f" ({v['flux']})" if "flux" in v else "")
    if v["name"] != "tridiag":
        return [(name, v.get("nx", v.get("points", v.get("size"))), v, "mcells_per_s", 1.0, None)]
    size = f"{v.get('size')} x {v.get('batch')}"
    layouts = [k for k, x in v.items() if isinstance(x, dict) and k != "copy" and ("bw_eff_GBps" in x or "fallback" in x)]
    return [(tridiag_label(v, k), size, {"kernel": v[k], "copy": v.get("copy", {})}, "unknowns_per_s", 1e-6,
             v[k].get("fallback")) for k in layouts]


def rate(x):
    """Whole numbers where they are large, three significant digits where small (lskum's
    Mcells/s is below 1)."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/bench_table.py BENCH.json [BENCH.json ...] (files of `sim bench --json`)")
    print("| bench | precision | threads | variant | block | size | COPY GB/s | BW_e GB/s | % of COPY | Mcells/s | RDP s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    failed = False
    notes = []
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
        one = lambda x: f"{x:.1f}"  # noqa: E731
        for name, size, w, key, scale, fallback in rows(v):
            if fallback:
                # No figures of its own: the time would be the other solver's.
                notes.append(f"{name}, {v['precision']}, {size}: {fallback}")
                print(f"| {name} | {v['precision']} | {v.get('threads', '-')} | {v.get('variant', '-')} | {block} "
                      f"| {size} | - | - | - | fallback (below) | - |")
                continue
            print(f"| {name} | {v['precision']} | {v.get('threads', '-')} | {v.get('variant', '-')} | {block} | {size} "
                  f"| {figure(w, 'copy', 'bw_GBps', one)} | {figure(w, 'kernel', 'bw_eff_GBps', one)} "
                  f"| {figure(w, 'kernel', 'fraction_of_copy', one, 100.0)} | {figure(w, 'kernel', key, rate, scale)} | {rdp} |")
    if notes:
        print()
        for n in notes:
            print(f"- {n}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()

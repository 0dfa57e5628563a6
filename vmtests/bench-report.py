#!/usr/bin/env python3
"""Report of `make bench`: read the host's and the guest's result lines
(vmtests/bench-run.sh, vmtests/bench.sh), print the tables, and write
OUTDIR/results.json (every raw figure, versions, parameters, the derived
ratios), OUTDIR/results.md (the tables) and OUTDIR/results.svg (a chart).

Figures are ratios to a baseline measured in the same run; absolute
numbers come from TCG emulation and are shown, not judged.

usage: bench-report.py --out DIR [--command CMD] RESULTS...
Result lines: "BENCH key number", "FIO key {json}", "INFO key text",
"LOG text", "ERROR where text", "PROFILE key text" (bench.profile=1: also
OUTDIR/profile.txt), "DONE".
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

WORKLOADS = [
    ("rand4k_new", "4 KiB random writes, never-touched chunks", "4 KiB random, new chunks"),
    ("rand4k_rewrite", "4 KiB random rewrites, chunks already copied", "4 KiB random, copied chunks"),
    ("seq1m_new", "1 MiB sequential writes, never-touched chunks", "1 MiB sequential, new chunks"),
]
CONFIGS = [
    ("none", "no snapshot"),
    ("other_filtered", "no snapshot of this disk, a filter on another"),
    ("blksnap_other", "blksnap, storage on another disk"),
    ("blksnap_same", "blksnap, storage file on the origin's fs"),
    ("dmsnap", "dm-snapshot (transient, same chunk, same disk)"),
]
COLORS = {"blksnap_other": "#1f77b4", "blksnap_same": "#74a9cf",
          "dmsnap": "#ff7f0e", "blksnap": "#1f77b4", "dm": "#ff7f0e",
          "base": "#9e9e9e"}


def parse(paths):
    r = {"values": {}, "fio": {}, "info": {}, "log": [], "errors": [],
         "profile": {}, "done": False}
    for path in paths:
        try:
            f = open(path, encoding="utf-8", errors="replace")
        except OSError as e:
            r["errors"].append(f"{path}: {e}")
            continue
        with f:
            for line in f:
                line = line.rstrip("\r\n")
                kind, _, rest = line.partition(" ")
                if kind == "BENCH":
                    k, _, v = rest.partition(" ")
                    try:
                        r["values"][k] = float(v)
                    except ValueError:
                        r["errors"].append(f"bad value line: {line[:200]}")
                elif kind == "FIO":
                    k, _, v = rest.partition(" ")
                    try:
                        # fio may print a warning before its JSON.
                        r["fio"][k] = json.loads(v[v.index("{"):])
                    except ValueError:
                        r["errors"].append(f"unreadable fio JSON for {k}")
                elif kind == "INFO":
                    k, _, v = rest.partition(" ")
                    r["info"][k] = v
                elif kind == "LOG":
                    r["log"].append(rest)
                elif kind == "PROFILE":
                    k, _, v = rest.partition(" ")
                    r["profile"].setdefault(k, []).append(v)
                elif kind == "ERROR":
                    r["errors"].append(rest)
                elif kind == "DONE":
                    r["done"] = True
    return r


def fio_summary(job_json):
    """The figures of one fio job: direction, ios, bytes, seconds, MB/s,
    IOPS, mean and p99 latency (µs)."""
    job = job_json["jobs"][0]
    ddir = "write" if job["write"]["io_bytes"] else "read"
    d = job[ddir]
    pct = d.get("clat_ns", {}).get("percentile", {})
    return {
        "dir": ddir,
        "ios": d["total_ios"],
        "bytes": d["io_bytes"],
        "runtime_s": d["runtime"] / 1000.0,
        "mb_s": d["bw_bytes"] / 1e6,
        "iops": d["iops"],
        "lat_mean_us": d["lat_ns"]["mean"] / 1000.0,
        "lat_p99_us": pct.get("99.000000", 0) / 1000.0,
    }


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def t975(df):
    """Student's t, 97.5% quantile, for DF degrees of freedom: the tables'
    values up to 5, above that the Cornish-Fisher expansion (within 0.002
    of the tables from 6 up)."""
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}
    if df in table:
        return table[df]
    z = 1.959964
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3


def pair_interval(ratios):
    """Geometric mean of per-pass-pair ratios and its 95% interval (t on the
    logarithms): how finely the run tells the two devices apart."""
    n = len(ratios)
    if n < 2:
        return {"pairs": n, "geo_mean": ratios[0] if n else None, "ci95": None}
    logs = [math.log(x) for x in ratios]
    mu = sum(logs) / n
    sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return {"pairs": n, "geo_mean": math.exp(mu),
            "ci95": [math.exp(mu - half), math.exp(mu + half)]}


def reps_of(values, fio, prefix):
    """Repetition numbers present for keys starting with PREFIX.rN."""
    pat = re.compile(re.escape(prefix) + r"\.r(\d+)\.")
    found = set()
    for k in list(values) + list(fio):
        m = pat.match(k)
        if m:
            found.add(int(m.group(1)))
    return sorted(found)


def fmt(x, digits=2, unit=""):
    if x is None:
        return "n/m"
    if isinstance(x, str):
        return x
    if abs(x) >= 100:
        s = f"{x:.0f}"
    elif abs(x) >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.{digits}f}"
    return s + unit


def disk_sum(values, key, devs, field):
    return sum(values.get(f"{key}.disk.{d}.{field}", 0) for d in devs)


# --- figures ------------------------------------------------------------------
def write_figures(R, prefix="write"):
    v, fio = R["values"], R["fio"]
    summ = {k: fio_summary(j) for k, j in fio.items()}
    reps = reps_of(v, fio, f"{prefix}.none")
    out = {"reps": reps, "rows": {}}
    for wl, _, _ in WORKLOADS:
        row = {}
        for cfg, _ in CONFIGS:
            lats, mbs, ratios, iops = [], [], [], []
            for r in reps:
                s = summ.get(f"{prefix}.{cfg}.r{r}.{wl}")
                base = summ.get(f"{prefix}.none.r{r}.{wl}")
                if not s:
                    continue
                lats.append(s["lat_mean_us"])
                mbs.append(s["mb_s"])
                iops.append(s["iops"])
                if base and base["lat_mean_us"]:
                    ratios.append(s["lat_mean_us"] / base["lat_mean_us"])
            cell = {"lat_mean_us": med(lats), "mb_s": med(mbs),
                    "iops": med(iops), "cost_ratio": med(ratios)}
            # What the disks did per write (first rep): chunk copies show as
            # reads of the origin disk and writes to the storage disk.
            k = f"{prefix}.{cfg}.r{reps[0]}.{wl}" if reps else None
            if k and k in summ:
                n = summ[k]["ios"] or 1
                # origin and storage disks
                cell["disk_per_write"] = disk_counters(v, k, ["vdb", "vdc"], n)
                cell["cpu_ticks"] = cpu_ticks(v, k)
            row[cfg] = cell
        # blksnap against dm-snapshot, paired within each repetition.
        for cfg in ("blksnap_other", "blksnap_same"):
            pairs = [summ[f"{prefix}.{cfg}.r{r}.{wl}"]["lat_mean_us"] /
                     summ[f"{prefix}.dmsnap.r{r}.{wl}"]["lat_mean_us"]
                     for r in reps if f"{prefix}.{cfg}.r{r}.{wl}" in summ
                     and f"{prefix}.dmsnap.r{r}.{wl}" in summ]
            row.setdefault(cfg, {})["over_dm"] = med(pairs)
        out["rows"][wl] = row
    takes = {}
    for cfg, _ in CONFIGS[1:]:
        takes[cfg] = med([v.get(f"{prefix}.{cfg}.r{r}.take_s") for r in reps])
    out["take_s"] = takes
    return out


def stock_figures(R, W):
    """The standalone route (Debian's kernel, bdev_filter.ko) against the
    patched kernel: each configuration's cost as a multiple of no
    snapshot on its own kernel, and the two costs' ratio."""
    S = write_figures(R, "stock.write")
    if not S["reps"]:
        return None
    rows = {}
    for wl, _, _ in WORKLOADS:
        row = {}
        for cfg, _ in CONFIGS[1:]:
            p = W["rows"].get(wl, {}).get(cfg, {}).get("cost_ratio")
            st = S["rows"].get(wl, {}).get(cfg, {}).get("cost_ratio")
            row[cfg] = {"patched_cost": p, "stock_cost": st,
                        "stock_over_patched": (st / p) if p and st else None}
        rows[wl] = row
    return {"reps": S["reps"], "rows": rows, "stock": S}


READ_CASES = [("unchanged", "direct"), ("changed", "direct"),
              ("unchanged", "buffered"), ("changed", "buffered")]


def disk_counters(v, key, disks, n):
    """What DISKS did during job KEY, per fio I/O (n of them), and how many
    I/Os were in flight on average while a disk was busy."""
    busy = disk_sum(v, key, disks, "busy_ms")
    return {
        "r_ios": disk_sum(v, key, disks, "r_ios") / n,
        "r_kib": disk_sum(v, key, disks, "r_sectors") / 2 / n,
        "w_ios": disk_sum(v, key, disks, "w_ios") / n,
        "w_kib": disk_sum(v, key, disks, "w_sectors") / 2 / n,
        "r_ms": disk_sum(v, key, disks, "r_ms") / n,
        "w_ms": disk_sum(v, key, disks, "w_ms") / n,
        "busy_ms": busy,
        "in_flight": (disk_sum(v, key, disks, "queue_ms") / busy) if busy else None}


def cpu_ticks(v, key):
    return {f: v.get(f"{key}.cpu.{f}") for f in ("user", "sys", "idle", "iowait", "irq")}


def merge_passes(summ, values):
    """bench.sh reads each figure in interleaved passes (read.KEY.pN): one
    summary per figure (read.KEY) from their sums, bytes over seconds, and
    the counters of its passes added up under its key."""
    parts = {}
    for k in summ:
        m = re.match(r"(read\..*\.r\d+)\.p\d+$", k)
        if m:
            parts.setdefault(m.group(1), []).append(k)
    out = {k: s for k, s in summ.items() if not re.search(r"\.p\d+$", k)}
    vals = dict(values)
    for key, ks in parts.items():
        ss = [summ[k] for k in ks]
        ios = sum(s["ios"] for s in ss)
        secs = sum(s["runtime_s"] for s in ss)
        nbytes = sum(s["bytes"] for s in ss)
        out[key] = {
            "dir": ss[0]["dir"], "ios": ios, "bytes": nbytes, "runtime_s": secs,
            "mb_s": nbytes / secs / 1e6 if secs else None,
            "iops": ios / secs if secs else None,
            "lat_mean_us": sum(s["lat_mean_us"] * s["ios"] for s in ss) / ios if ios else None,
            "lat_p99_max_us": max(s["lat_p99_us"] for s in ss),
            "passes": len(ss),
        }
        for k in ks:
            for vk, x in values.items():
                if vk.startswith(k + "."):
                    mk = key + vk[len(k):]
                    vals[mk] = vals.get(mk, 0.0) + x
    return out, vals


def read_figures(R):
    """Image reads: the origin, blksnap's image and dm's snapshot device, in
    READ_LOOPS interleaved passes per repetition (origin, then both snapshots
    in ABBA order; bench.sh's section_read), summed per repetition."""
    fio = R["fio"]
    per_pass = {k: fio_summary(j) for k, j in fio.items() if k.startswith("read.")}
    summ, v = merge_passes(per_pass, R["values"])
    loops = R["info"].get("param.READ_LOOPS")
    loops = int(loops) if loops and loops.isdigit() else None
    reps = sorted(int(m.group(1)) for k in summ
                  for m in [re.match(r"read\.origin\.unchanged\.direct\.r(\d+)$", k)] if m)
    rows = {}
    for data, mode in READ_CASES:
        row = {}
        snaps = {}
        for tool, snap in (("blksnap", "blksnap_image"), ("dm", "dm_snap")):
            os_, ss, ratios = [], [], []
            snaps[tool] = {}
            for r in reps:
                o = summ.get(f"read.origin.{data}.{mode}.r{r}")
                s = summ.get(f"read.{snap}.{data}.{mode}.r{r}")
                # A repetition cut short (a failed section) is no figure.
                passes = {summ.get(f"read.{x}.{data}.{mode}.r{r}", {}).get("passes")
                          for x in ("origin", "blksnap_image", "dm_snap")}
                if len(passes) > 1 or (loops and passes != {None} and passes != {loops}):
                    continue
                if o and o["mb_s"]:
                    os_.append(o["mb_s"])
                if s and s["mb_s"]:
                    ss.append(s["mb_s"])
                    snaps[tool][r] = s["mb_s"]
                if o and s and o["mb_s"] and s["mb_s"]:
                    ratios.append(s["mb_s"] / o["mb_s"])
            cell = {"origin_mb_s": med(os_), "snap_mb_s": med(ss), "ratio": med(ratios),
                    "ratios": ratios}
            if reps:
                for name, src in (("snap", snap), ("origin", "origin")):
                    k = f"read.{src}.{data}.{mode}.r{reps[0]}"
                    if k in summ:
                        n = summ[k]["ios"] or 1
                        cell[f"{name}_lat_mean_us"] = summ[k]["lat_mean_us"]
                        cell[f"{name}_disk_per_read"] = disk_counters(v, k, ["vda", "vdb", "vdc"], n)
                        cell[f"{name}_cpu_ticks"] = cpu_ticks(v, k)
            row[tool] = cell
        # blksnap's image against dm's snapshot device, read in interleaved
        # passes in the same repetition: the pairs share the host's speed.
        pairs = [snaps["blksnap"][r] / snaps["dm"][r] for r in reps
                 if r in snaps["blksnap"] and snaps["dm"].get(r)]
        row["blksnap"]["over_dm_pairs"] = pairs
        row["blksnap"]["over_dm"] = med(pairs) if pairs else None
        # Single passes against the dm pass of the same round (bench.sh's
        # read_reps), from repetitions that were not cut short: the spread
        # of these is the run's resolution.
        pass_ratios = []
        for k, s in sorted(per_pass.items()):
            m = re.match(rf"read\.blksnap_image\.{data}\.{mode}\.(r(\d+)\.p\d+)$", k)
            if not m or int(m.group(2)) not in snaps["blksnap"].keys() & snaps["dm"].keys():
                continue
            d = per_pass.get(f"read.dm_snap.{data}.{mode}.{m.group(1)}")
            if d and s["mb_s"] and d["mb_s"]:
                pass_ratios.append(s["mb_s"] / d["mb_s"])
        row["blksnap"]["over_dm_pass_pairs"] = pair_interval(pass_ratios)
        def pairs_where(field, want):
            """blksnap/dm per repetition from the passes whose value FIELD
            (bench.sh's read_pass) is WANT."""
            wpairs = []
            for r in reps:
                if r not in snaps["blksnap"] or not snaps["dm"].get(r):
                    continue
                speeds = []
                for snap in ("blksnap_image", "dm_snap"):
                    nbytes = secs = 0
                    for k, s in per_pass.items():
                        m = re.match(rf"read\.{snap}\.{data}\.{mode}\.r{r}\.p\d+$", k)
                        if m and v.get(f"{k}.{field}") == want:
                            nbytes += s["bytes"]
                            secs += s["runtime_s"]
                    speeds.append(nbytes / secs if secs else None)
                if all(speeds):
                    wpairs.append(speeds[0] / speeds[1])
            return wpairs
        # The same, from the passes whose reader ran on the CPU that took
        # the disks' interrupts, and from the others (bench.sh's read_cpu).
        for where, flag in (("completion_cpu", 1), ("other_cpu", 0)):
            wpairs = pairs_where("on_completion_cpu", flag)
            row["blksnap"][f"over_dm_reader_on_{where}_pairs"] = wpairs
            row["blksnap"][f"over_dm_reader_on_{where}"] = med(wpairs) if wpairs else None
        # And per CPU the reader ran on, steered or not (bench.steer=0).
        cpus = sorted({int(x) for k, x in v.items()
                       if re.match(rf"read\.(blksnap_image|dm_snap)\.{data}\.{mode}\.r\d+\.p\d+\.reader_cpu$", k)})
        by_cpu = {}
        for cpu in cpus:
            wpairs = pairs_where("reader_cpu", cpu)
            by_cpu[str(cpu)] = {"over_dm": med(wpairs) if wpairs else None, "pairs": wpairs}
        row["blksnap"]["over_dm_by_reader_cpu_number"] = by_cpu
        rows[f"{data}.{mode}"] = row
    return {"reps": reps, "rows": rows,
            "completion_cpu": R["info"].get("read.completion_cpu"),
            "disk_irqs": R["info"].get("read.disk_irqs")}


def mem_kb(v, prefix):
    s = v.get(prefix + ".slab_kb")
    vm = v.get(prefix + ".vmalloc_kb")
    f = v.get(prefix + ".memfree_kb")
    if s is None or vm is None:
        return None, None
    return s + vm, f


def scale_figures(R):
    v = R["values"]
    sizes = sorted({int(m.group(1)) for k in v
                    for m in [re.match(r"scale\.\w+\.(\d+)g\.", k)] if m})
    rows = {}
    pcts = sorted({int(m.group(1)) for k in v
                   for m in [re.match(r"scale\.\w+\.\d+g\.(?:mem\.)?change(\d+)", k)] if m})
    for g in sizes:
        row = {}
        for tool in ("blksnap", "dm"):
            p = f"scale.{tool}.{g}g"
            base_sv, base_free = mem_kb(v, p + ".mem.before")
            cell = {"chunk_bytes": v.get(p + ".chunk_bytes"),
                    "chunks": v.get(p + ".chunks"),
                    "create_s": v.get(p + ".create_s"),
                    "take_s": v.get(p + ".take_s"),
                    "destroy_s": v.get(p + ".destroy_s")}
            phases = ["created", "taken"] + [f"change{q}" for q in pcts] + ["destroyed"]
            for ph in phases:
                sv, free = mem_kb(v, f"{p}.mem.{ph}")
                if sv is None or base_sv is None:
                    cell[f"mem_{ph}_mib"] = None
                    cell[f"memfree_drop_{ph}_mib"] = None
                    continue
                cell[f"mem_{ph}_mib"] = (sv - base_sv) / 1024
                cell[f"memfree_drop_{ph}_mib"] = (base_free - free) / 1024
            for q in pcts:
                cell[f"change{q}_chunks"] = v.get(f"{p}.change{q}.chunks")
                cell[f"change{q}_skipped_copy_gib"] = v.get(f"{p}.change{q}.skipped_copy_gib")
                k = f"{p}.change{q}"
                if k in R["fio"]:
                    cell[f"change{q}_s"] = fio_summary(R["fio"][k])["runtime_s"]
            row[tool] = cell
        rows[str(g)] = row
    return {"sizes": sizes, "pcts": pcts, "rows": rows}


def growth_figures(R):
    v = R["values"]

    def series(fmt_key):
        out = []
        r = 1
        while fmt_key.format(r) in v:
            out.append(v[fmt_key.format(r)])
            r += 1
        return out

    g = {}
    fa = series("host.fallocate.r{}.s")
    sg = series("host.sf_grow.r{}.s")
    g["host_fallocate_4g_s"] = med(fa)
    g["host_sf_grow_4g_s"] = med(sg)
    g["host_sf_grow_ratio"] = (med(sg) / med(fa)) if fa and sg and med(fa) else None
    g["host_extents"] = med(series("host.sf_grow.r{}.extents"))
    lat = series("growth.latency.r{}.s")
    g["latency_s"] = med(lat)
    g["latency_all_s"] = lat
    g["trigger_write_s"] = med(series("growth.latency.r{}.trigger_write_s"))
    o = series("growth.add_after_take.other_fs.r{}.s")
    s = series("growth.add_after_take.same_fs.r{}.s")
    g["add_after_take_other_fs_s"] = med(o)
    g["add_after_take_same_fs_s"] = med(s)
    g["add_after_take_same_over_other"] = (med(s) / med(o)) if o and s and med(o) else None
    bursts = {}
    for k in v:
        m = re.match(r"growth\.burst\.t(\d+)\.b(\d+)\.survived$", k)
        if m:
            t, b = int(m.group(1)), int(m.group(2))
            bursts.setdefault(t, {})[b] = {
                "survived": bool(v[k]),
                "growths": v.get(f"growth.burst.t{t}.b{b}.growths"),
                "storage_bytes": v.get(f"growth.burst.t{t}.b{b}.storage_bytes"),
                "free_at_take_mib": v.get(f"growth.burst.t{t}.b{b}.free_at_take_mib"),
                "growable_at_take_mib": v.get(f"growth.burst.t{t}.b{b}.growable_at_take_mib"),
                "mb_s": fio_summary(R["fio"][f"growth.burst.t{t}.b{b}"])["mb_s"]
                if f"growth.burst.t{t}.b{b}" in R["fio"] else None}
    g["bursts"] = {}
    for t in sorted(bursts):
        tried = bursts[t]
        ok = [b for b in tried if tried[b]["survived"]]
        bad = [b for b in tried if not tried[b]["survived"]]
        free = [tried[b]["free_at_take_mib"] for b in tried
                if tried[b]["free_at_take_mib"] is not None]
        growable = [tried[b]["growable_at_take_mib"] for b in tried
                    if tried[b]["growable_at_take_mib"] is not None]
        g["bursts"][str(t)] = {"tried": {str(b): tried[b] for b in sorted(tried)},
                               "free_at_take_mib": min(free) if free else None,
                               "growable_at_take_mib": min(growable) if growable else None,
                               "largest_survived_mib": max(ok) if ok else 0,
                               "first_overflow_mib": min(bad) if bad else None}
    return g


PEAKMEM_MEASURES = [
    # (name, how the peak is set against before create, row label)
    ("kernel", "rise", None),
    ("slabvm", "rise", "of which in Slab + VmallocUsed (their own peak)"),
    ("avail", "fall", "MemAvailable's fall (the writer's own memory included)"),
]


def size_label(mib):
    if mib is None:
        return "?"
    return f"{mib / 1024:g} GiB" if mib >= 1024 and mib % 1024 == 0 else f"{mib:g} MiB"


def peakmem_figures(R):
    """Peak kernel memory while 4 KiB writes copy every 8 MiB chunk of a
    region (bench.sh's section_peakmem): per tool and repetition the
    largest sample during the writes less the figure before create (for
    MemAvailable: the figure before less the smallest), in MiB; per
    measure the medians, and blksnap/dm per repetition, its median and
    the geometric mean with its 95% interval. A repetition counts when
    both tools ran in it."""
    v, fio = R["values"], R["fio"]

    def delta(tool, r, name, phase, how):
        b = v.get(f"peakmem.{tool}.r{r}.before.{name}_kb")
        x = v.get(f"peakmem.{tool}.r{r}.{phase}.{name}_kb")
        if b is None or x is None:
            return None
        return (x - b) / 1024 if how == "rise" else (b - x) / 1024

    ran = {}
    for k in v:
        m = re.match(r"peakmem\.(blksnap|dm)\.r(\d+)\.peak\.kernel_kb$", k)
        if m and f"peakmem.{m.group(1)}.r{m.group(2)}.before.kernel_kb" in v:
            ran.setdefault(int(m.group(2)), set()).add(m.group(1))
    reps = sorted(r for r, tools in ran.items() if tools == {"blksnap", "dm"})
    out = {"reps": reps, "region_mib": v.get("peakmem.region_mib"),
           "chunk_bytes": v.get("peakmem.chunk_bytes"), "writes": v.get("peakmem.writes"),
           "tools": {}, "measures": {}}
    for tool in ("blksnap", "dm"):
        cell = {"per_rep": {}}
        for r in reps:
            k = f"peakmem.{tool}.r{r}"
            fs = fio_summary(fio[f"{k}.write"]) if f"{k}.write" in fio else None
            w = v.get(f"{k}.write.disk.vdc.w_sectors")
            cell["per_rep"][str(r)] = {
                **{f"peak_{n}_mib": delta(tool, r, n, "peak", how)
                   for n, how, _ in PEAKMEM_MEASURES},
                "taken_kernel_mib": delta(tool, r, "kernel", "taken", "rise"),
                "after_kernel_mib": delta(tool, r, "kernel", "after", "rise"),
                "samples": v.get(f"{k}.peak.samples"),
                "writes_s": fs["runtime_s"] if fs else None,
                "storage_written_mib": w / 2048 if w is not None else None}
        for key in ("taken_kernel_mib", "after_kernel_mib", "samples", "writes_s",
                    "storage_written_mib"):
            cell[key] = med([x[key] for x in cell["per_rep"].values()])
        out["tools"][tool] = cell
    for n, _, _ in PEAKMEM_MEASURES:
        per = {t: [out["tools"][t]["per_rep"][str(r)][f"peak_{n}_mib"] for r in reps]
               for t in ("blksnap", "dm")}
        # A ratio needs two figures above zero (a fall of MemAvailable
        # can come out negative).
        pairs = [b / d for b, d in zip(per["blksnap"], per["dm"])
                 if b is not None and d is not None and b > 0 and d > 0]
        out["measures"][n] = {
            "blksnap_mib": med(per["blksnap"]), "dm_mib": med(per["dm"]),
            "over_dm": med(pairs), "over_dm_pairs": pair_interval(pairs),
            "pairs_left_out": len(reps) - len(pairs)}
    return out


DEEPQ_ROWS = [
    ("rand4k_qd1", "4 KiB random writes, QD1, 1 job"),
    ("rand4k_qd32", "4 KiB random writes, QD32, 1 job"),
    ("rand4k_qd8x4", "4 KiB random writes, QD8, 4 jobs"),
    ("seq1m_qd8", "1 MiB sequential writes, QD8, 1 job"),
]
DEEPQ_CONFIGS = ("none", "blksnap", "dmsnap")


def deepq_figures(R):
    """Write IOPS at queue depth, every write to a never-copied chunk
    (bench.sh's section_deepq): per row and configuration the median IOPS
    over the repetitions, and blksnap/dm paired by repetition: the median
    of the ratios, and their geometric mean with its 95% interval. A
    repetition gives a ratio when both ran in it."""
    v, fio = R["values"], R["fio"]
    summ = {k: fio_summary(j) for k, j in fio.items() if k.startswith("deepq.")}
    reps = sorted({int(m.group(1)) for k in summ
                   for m in [re.match(r"deepq\.\w+\.r(\d+)\.", k)] if m})
    chunks = v.get("deepq.chunks")
    out = {"reps": reps, "chunks": chunks, "chunk_bytes": v.get("deepq.chunk_bytes"),
           "rows": {}}
    for row, _ in DEEPQ_ROWS:
        cells = {}
        for cfg in DEEPQ_CONFIGS:
            per = {r: summ[f"deepq.{cfg}.r{r}.{row}"]["iops"] for r in reps
                   if f"deepq.{cfg}.r{r}.{row}" in summ}
            # What the storage disk took per chunk of the region: at least
            # the chunk when every chunk was copied (none: nothing).
            stor = [v.get(f"deepq.{cfg}.r{r}.{row}.disk.vdc.w_sectors", 0) / 2 / chunks
                    for r in per] if chunks else []
            cells[cfg] = {"iops": med(list(per.values())),
                          "iops_per_rep": {str(r): x for r, x in per.items()},
                          "storage_kib_per_chunk": med(stor)}
        b, d = cells["blksnap"]["iops_per_rep"], cells["dmsnap"]["iops_per_rep"]
        pairs = [b[r] / d[r] for r in b if b[r] and d.get(r)]
        cells["blksnap"]["over_dm"] = med(pairs)
        cells["blksnap"]["over_dm_pairs"] = pair_interval(pairs)
        out["rows"][row] = cells
    return out


def summary(F):
    """The few figures issues 15 and 32 judge by, each against dm-snapshot or
    against the space there was, in one place of results.json."""
    S = F["scale"]
    # Every key is there, None when the run did not measure it
    # (BENCH_QUICK changes only 1% of the chunks).
    bpc = {"blksnap": {"1pct": None, "10pct": None},
           "dm": {"1pct": None, "10pct": None}}
    origin = {"1pct": None, "10pct": None}
    for q in S["pcts"]:
        # The largest origin on which this share of chunks was changed
        # (a copy cap may have skipped the largest).
        for g in sorted(S["sizes"], reverse=True):
            row = S["rows"][str(g)]
            cells = [row.get(t, {}) for t in ("blksnap", "dm")]
            if all(c.get(f"mem_change{q}_mib") is not None and
                   c.get("mem_taken_mib") is not None and
                   c.get(f"change{q}_chunks") for c in cells):
                for tool, c in zip(("blksnap", "dm"), cells):
                    grown = (c[f"mem_change{q}_mib"] - c["mem_taken_mib"]) * 1048576
                    bpc[tool][f"{q}pct"] = round(grown / c[f"change{q}_chunks"], 1)
                origin[f"{q}pct"] = g
                break
    reads = {f"{data}_{mode}": F["read"]["rows"].get(f"{data}.{mode}", {})
             .get("blksnap", {}).get("over_dm") for data, mode in READ_CASES}
    reads_by_cpu = {f"{data}_{mode}": {
        where: F["read"]["rows"].get(f"{data}.{mode}", {}).get("blksnap", {})
        .get(f"over_dm_reader_on_{where}") for where in ("completion_cpu", "other_cpu")}
        for data, mode in READ_CASES}
    pass_pairs = {f"{data}_{mode}": F["read"]["rows"].get(f"{data}.{mode}", {})
                  .get("blksnap", {}).get("over_dm_pass_pairs")
                  for data, mode in READ_CASES}
    writes = {wl: F["write"]["rows"].get(wl, {}).get("blksnap_other", {}).get("over_dm")
              for wl, _, _ in WORKLOADS}
    bursts = {t: {"largest_survived_mib": b["largest_survived_mib"],
                  "first_overflow_mib": b["first_overflow_mib"],
                  "free_at_take_mib": b.get("free_at_take_mib"),
                  "growable_at_take_mib": b.get("growable_at_take_mib")}
              for t, b in F["growth"]["bursts"].items()}
    P = F["peakmem"]
    pk = P["measures"].get("kernel", {})
    D = F["deepq"]["rows"]
    deepq = {row: {"ratio": D.get(row, {}).get("blksnap", {}).get("over_dm"),
                   **(D.get(row, {}).get("blksnap", {}).get("over_dm_pairs") or pair_interval([]))}
             for row, _ in DEEPQ_ROWS}
    return {
        "peak_kernel_memory_mib": {
            "blksnap": pk.get("blksnap_mib"), "dm": pk.get("dm_mib"),
            "region_mib": P.get("region_mib"), "chunk_bytes": P.get("chunk_bytes")},
        "peak_kernel_memory_vs_dm": pk.get("over_dm"),
        "peak_kernel_memory_vs_dm_pairs": pk.get("over_dm_pairs") if P["reps"] else None,
        "bytes_per_changed_chunk": bpc,
        "bytes_per_changed_chunk_origin_gib": origin,
        "image_read_vs_dm": reads,
        "image_read_vs_dm_by_reader_cpu": reads_by_cpu,
        "image_read_vs_dm_pass_pairs": pass_pairs,
        "write_vs_dm": writes,
        "write_iops_vs_dm": deepq,
        "largest_burst_survived_mib": bursts,
        "standalone_write_cost_vs_patched": {
            wl: F["stock"]["rows"][wl]["blksnap_other"]["stock_over_patched"]
            for wl, _, _ in WORKLOADS} if F.get("stock") else None,
        "meaning": {
            "peak_kernel_memory_mib": "the most kernel memory (MemTotal - "
            "MemFree - Buffers - Cached - AnonPages - PageTables: slab, "
            "vmalloc, kernel stacks and the pages drivers allocate, such as "
            "chunk buffers) above its figure before create, sampled every 0.1 s "
            "while one 4 KiB O_DIRECT write in each chunk of region_mib of a "
            "raw origin copies every chunk (chunk_bytes: blksnap's "
            "chunk_minimum_shift=23, dm-snapshot the same chunk); median over "
            "the repetitions; lower is better",
            "peak_kernel_memory_vs_dm": "blksnap / dm-snapshot peak kernel "
            "memory, the median of the repetitions' ratios; <= 1 means blksnap "
            "holds no more",
            "peak_kernel_memory_vs_dm_pairs": "the same ratios: their number, "
            "geometric mean and 95% interval (Student's t on the logarithms; "
            "null for one pair; pairs with a figure at or below zero left out)",
            "bytes_per_changed_chunk": "kernel memory (slab+vmalloc) added by "
            "changing N% of the chunks after the take, per changed chunk; "
            "lower is better",
            "image_read_vs_dm": "blksnap image MB/s / dm-snapshot device MB/s, "
            "both snapshots of the same origin held at once and read in "
            "interleaved passes; median over the repetitions; >= 1 means "
            "blksnap reads at least as fast",
            "image_read_vs_dm_by_reader_cpu": "image_read_vs_dm from the "
            "passes whose reader ran on the CPU that took every disk's "
            "interrupts (completion_cpu) and from those on another CPU "
            "(other_cpu); null when the run did not record it",
            "image_read_vs_dm_pass_pairs": "each blksnap pass against the "
            "dm-snapshot pass of the same round: their number, the geometric "
            "mean of blksnap/dm MB/s (> 1 means blksnap is faster) and its 95% "
            "interval (Student's t on the logarithms; null for one pair); an "
            "interval that holds 1.0 means this run cannot tell the two apart "
            "on that row",
            "write_vs_dm": "blksnap (storage on another disk) / dm-snapshot "
            "mean write latency on the origin; <= 1 means blksnap costs no more",
            "write_iops_vs_dm": "per deep-queue row (fio libaio, O_DIRECT on "
            "a raw origin, every write to a chunk never copied since the take, "
            "blksnap's storage and dm-snapshot's COW on the same other disk, "
            "256 KiB chunks): blksnap / dm-snapshot write IOPS, the median of "
            "the repetitions' ratios (ratio), and their number, geometric mean "
            "and 95% interval (pairs, geo_mean, ci95: Student's t on the "
            "logarithms, null for one pair); >= 1 means blksnap writes at least "
            "as fast",
            "bytes_per_changed_chunk_origin_gib": "the origin each share "
            "was measured on: the largest on which both tools ran it",
            "largest_burst_survived_mib": "per low-space threshold (MiB): the "
            "largest burst tried that did not overflow, the first that did, "
            "the file system's free space at take time and the part of it "
            "'watch' may grow into (less its margin, min(5%, 256 MiB))",
            "standalone_write_cost_vs_patched": "blksnap's write cost (latency "
            "over no snapshot, same kernel) on Debian's kernel with "
            "bdev_filter.ko / on the patched kernel; <= 1 means the hook "
            "costs nothing more"}}


# --- tables -------------------------------------------------------------------
def md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(r) + " |")
    return "\n".join(lines)


def pair_cell(pp):
    """'0.980 [0.856, 1.121]' from pair_interval() (three places, so that an
    interval that excludes 1.0 does not print as holding it); one pair has
    no interval and says so; n/m without pairs."""
    if not pp or pp.get("geo_mean") is None:
        return fmt(None)
    if not pp.get("ci95"):
        return f"{fmt(pp['geo_mean'], 3)} (1 pair)"
    lo, hi = pp["ci95"]
    return f"{fmt(pp['geo_mean'], 3)} [{fmt(lo, 3)}, {fmt(hi, 3)}]"


def tables(F):
    out = []
    W = F["write"]
    rows = []
    for wl, label, _ in WORKLOADS:
        row = W["rows"].get(wl, {})
        base = row.get("none", {})
        cells = [label, fmt(base.get("lat_mean_us"), 0, " µs")]
        for cfg, _ in CONFIGS[1:]:
            c = row.get(cfg, {})
            cells.append(f"**×{fmt(c.get('cost_ratio'))}** ({fmt(c.get('lat_mean_us'), 0, ' µs')})")
        cells.append(fmt(row.get("blksnap_other", {}).get("over_dm")))
        rows.append(cells)
    out.append("Write cost on the origin while a snapshot is held: mean latency per "
               "write (fio psync, O_DIRECT, QD1) as a multiple of the same job without "
               f"a snapshot (median of {len(W['reps'])} run(s)); last column: blksnap "
               "(other disk) / dm-snapshot latency, paired by repetition, > 1 means blksnap is slower.\n")
    out.append(md_table(["workload", "no snapshot", "a filter on another disk",
                         "blksnap, other disk", "blksnap, file on origin fs",
                         "dm-snapshot", "blksnap/dm"], rows))

    St = F.get("stock")
    if St:
        rows = []
        for wl, label, _ in WORKLOADS:
            cells = [label]
            for cfg in ("other_filtered", "blksnap_other", "dmsnap"):
                c = St["rows"][wl][cfg]
                cells.append(f"×{fmt(c['patched_cost'])} / ×{fmt(c['stock_cost'])}: "
                             f"**{fmt(c['stock_over_patched'])}**")
            rows.append(cells)
        out.append("\nThe standalone route: the same write jobs on Debian's own kernel with "
                   "bdev_filter.ko (its ftrace hook) against the patched kernel. Each cell: the "
                   "cost (latency as a multiple of no snapshot on the same kernel) on the "
                   "patched / on Debian's kernel, then **Debian's / patched** (> 1: the hook "
                   f"costs more; median of {len(St['reps'])} run(s); dm-snapshot, which "
                   "needs no hook, shows what the two kernels differ by anyway).\n")
        out.append(md_table(["workload", "a filter on another disk", "blksnap, other disk",
                             "dm-snapshot"], rows))

    D = F["deepq"]
    if D["reps"]:
        rows = []
        for row, label in DEEPQ_ROWS:
            c = D["rows"][row]
            b = c["blksnap"]
            rows.append([label, fmt(c["none"]["iops"], 0), fmt(b["iops"], 0),
                         fmt(c["dmsnap"]["iops"], 0), f"**{fmt(b['over_dm'])}**",
                         pair_cell(b["over_dm_pairs"])])
        chunk = f"{int(D['chunk_bytes']) // 1024} KiB" if D.get("chunk_bytes") else "?"
        n = int(D["chunks"]) if D.get("chunks") else "?"
        out.append(f"\nWrite IOPS at queue depth (fio libaio, O_DIRECT, on the raw origin), "
                   f"every write to a chunk never copied since the take: each row on a fresh "
                   f"snapshot writes {n} chunks of {chunk} once each (4 KiB at a random slot "
                   "of each chunk, shuffled; or 1 MiB sequential), blksnap's storage and "
                   "dm-snapshot's COW on the same other raw disk, the same chunk. IOPS: "
                   f"median of {len(D['reps'])} run(s), the three in ABBA order; blksnap/dm: "
                   "the median of the repetitions' ratios, < 1 means blksnap is slower; "
                   "last column: their geometric mean [95% interval].\n")
        out.append(md_table(["workload", "no snapshot", "blksnap", "dm-snapshot",
                             "blksnap/dm", "per repetition"], rows))

    Rd = F["read"]["rows"]
    rows = []
    for data, mode in READ_CASES:
        r = Rd.get(f"{data}.{mode}", {})
        b, d = r.get("blksnap", {}), r.get("dm", {})
        rows.append([f"{data} data, {mode} 1 MiB reads",
                     f"**{fmt(b.get('ratio'))}** ({fmt(b.get('snap_mb_s'), 0)} / {fmt(b.get('origin_mb_s'), 0)} MB/s)",
                     f"**{fmt(d.get('ratio'))}** ({fmt(d.get('snap_mb_s'), 0)} / {fmt(d.get('origin_mb_s'), 0)} MB/s)",
                     fmt(b.get("over_dm")),
                     f"{fmt(b.get('over_dm_reader_on_completion_cpu'))} / "
                     f"{fmt(b.get('over_dm_reader_on_other_cpu'))}",
                     pair_cell(b.get("over_dm_pass_pairs"))])
    out.append("\nSequential read of the snapshot device as a fraction of the origin's "
               "speed (median snapshot / origin MB/s); blksnap/dm: blksnap / dm-snapshot "
               "MB/s, both snapshots of one origin held at once and read in interleaved "
               "passes in each repetition (median), < 1 means blksnap is slower; fifth "
               "column: the same from the passes whose reader ran on the CPU that took "
               "every disk's interrupts / on another CPU (half the passes each); "
               "single passes: blksnap / dm-snapshot of each pass against the other's "
               "pass of the same round, geometric mean [95% interval] (an interval "
               "that holds 1.00 means this run cannot tell the two apart).\n")
    out.append(md_table(["case", "blksnap image", "dm-snapshot device", "blksnap/dm",
                         "reader on the interrupts' CPU / on another",
                         "single passes"], rows))
    steer = F["read"].get("completion_cpu") or ""
    if steer.startswith("not steered"):
        cpus = sorted({c for row in F["read"]["rows"].values()
                       for c in row["blksnap"].get("over_dm_by_reader_cpu_number", {})}, key=int)
        rows = []
        for data, mode in READ_CASES:
            b = F["read"]["rows"].get(f"{data}.{mode}", {}).get("blksnap", {})
            by = b.get("over_dm_by_reader_cpu_number", {})
            rows.append([f"{data} data, {mode} 1 MiB reads"] +
                        [fmt(by.get(c, {}).get("over_dm")) for c in cpus])
        out.append(f"\nThe interrupt lines were {steer}; disk:line:CPU "
                   f"{F['read'].get('disk_irqs') or '?'}. blksnap / dm-snapshot MB/s "
                   "per CPU the reader ran on (median of the repetitions).\n")
        out.append(md_table(["case"] + [f"reader on CPU {c}" for c in cpus], rows))

    S = F["scale"]
    rows = []
    for g in S["sizes"]:
        for tool in ("blksnap", "dm"):
            c = S["rows"][str(g)].get(tool, {})
            ch = c.get("chunk_bytes")
            cells = [f"{g} GiB", "blksnap" if tool == "blksnap" else "dm-snapshot",
                     fmt(ch / 1024 if ch else None, 0, " KiB"),
                     fmt(c.get("take_s"), 3, " s"),
                     fmt(c.get("mem_taken_mib"), 1) + " / " + fmt(c.get("memfree_drop_taken_mib"), 1)]
            for q in S["pcts"]:
                if c.get(f"change{q}_skipped_copy_gib") is not None:
                    cells.append(f"not run ({fmt(c[f'change{q}_skipped_copy_gib'], 0)} GiB to copy)")
                else:
                    cells.append(fmt(c.get(f"mem_change{q}_mib"), 1) + " / " +
                                 fmt(c.get(f"memfree_drop_change{q}_mib"), 1))
            cells.append(fmt(c.get("mem_destroyed_mib"), 1))
            rows.append(cells)
    out.append("\nScale: sparse origins. Kernel memory in MiB as *slab+vmalloc delta / "
               "MemFree drop* against before create (after dropping caches); take "
               "time is the whole take: diff areas and image devices (blksnap), "
               "suspend, load and resume of the origin (dm).\n")
    out.append(md_table(["origin", "tool", "chunk", "take", "after take"] +
                        [f"after changing {q}% of chunks" for q in S["pcts"]] +
                        ["after destroy"], rows))

    P = F["peakmem"]
    if P["reps"]:
        rows = []
        region = size_label(P.get("region_mib"))
        chunk = size_label(P["chunk_bytes"] / 1048576) if P.get("chunk_bytes") else "?"
        for n, _, label in PEAKMEM_MEASURES:
            c = P["measures"][n]
            bold = "**" if label is None else ""
            rows.append([label or f"peak kernel memory, 4 KiB random writes over {region}, {chunk} chunks",
                         f"{bold}{fmt(c['blksnap_mib'], 1, ' MiB')}{bold}",
                         f"{bold}{fmt(c['dm_mib'], 1, ' MiB')}{bold}",
                         fmt(c["over_dm"]), pair_cell(c["over_dm_pairs"])])
        T = P["tools"]
        rows.append(["kernel memory after destroy (blksnap: and rmmod)",
                     fmt(T["blksnap"].get("after_kernel_mib"), 1, " MiB"),
                     fmt(T["dm"].get("after_kernel_mib"), 1, " MiB"), "", ""])
        rows.append(["written to the storage disk during the writes",
                     fmt(T["blksnap"].get("storage_written_mib"), 0, " MiB"),
                     fmt(T["dm"].get("storage_written_mib"), 0, " MiB"), "", ""])
        out.append(f"\nPeak kernel memory with {chunk} chunks (blksnap: chunk_minimum_shift=23; "
                   f"dm-snapshot: the same chunk): one 4 KiB O_DIRECT write in each chunk of "
                   f"the first {region} of a raw origin ({int(P['writes']) if P.get('writes') else '?'} writes, "
                   "shuffled), so that every chunk is copied to another disk; memory sampled "
                   "every 0.1 s during the writes, the peak less the figure before create, in "
                   f"MiB (median of {len(P['reps'])} run(s), blksnap and dm-snapshot in "
                   "turns). Kernel memory: MemTotal - MemFree - Buffers - Cached - AnonPages "
                   "- PageTables (slab, vmalloc, kernel stacks, and the pages drivers allocate "
                   "themselves: chunk buffers, kcopyd's pages). blksnap/dm: the median of the "
                   "repetitions' ratios; last column: their geometric mean [95% interval].\n")
        out.append(md_table(["measure", "blksnap", "dm-snapshot", "blksnap/dm",
                             "per repetition"], rows))

    G = F["growth"]
    rows = [["host ext4: `add FILE 4G` growth (sf_open+sf_grow) vs `fallocate 4G`+fsync",
             f"**×{fmt(G.get('host_sf_grow_ratio'))}** ({fmt(G.get('host_sf_grow_4g_s') and G['host_sf_grow_4g_s'] * 1000, 1, ' ms')} vs {fmt(G.get('host_fallocate_4g_s') and G['host_fallocate_4g_s'] * 1000, 1, ' ms')}, {fmt(G.get('host_extents'), 0)} extents)"],
            ["VM: low-space event to appended storage (`watch`, storage on another fs)",
             f"{fmt(G.get('latency_s') and G['latency_s'] * 1000, 0, ' ms')} (trigger write {fmt(G.get('trigger_write_s') and G['trigger_write_s'] * 1000, 0, ' ms')})"],
            ["VM: `add 64M` after take, file on the snapshotted fs vs on another fs",
             f"**×{fmt(G.get('add_after_take_same_over_other'))}** ({fmt(G.get('add_after_take_same_fs_s') and G['add_after_take_same_fs_s'] * 1000, 0, ' ms')} vs {fmt(G.get('add_after_take_other_fs_s') and G['add_after_take_other_fs_s'] * 1000, 0, ' ms')})"]]
    for t, b in G["bursts"].items():
        tried = ", ".join(f"{m} MiB {'ok' if x['survived'] else 'OVERFLOW'}"
                          f" ({fmt(x['mb_s'], 0)} MB/s)" for m, x in b["tried"].items())
        rows.append([f"VM: largest sequential burst survived, watch 64M+64M steps, threshold {t} MiB",
                     f"**{b['largest_survived_mib']} MiB** of {fmt(b.get('growable_at_take_mib'), 0, ' MiB')} "
                     f"growable at take ({tried})"])
    out.append("\nGrowth of the difference storage.\n")
    out.append(md_table(["measure", "result"], rows))
    return "\n".join(out) + "\n"


# --- chart --------------------------------------------------------------------
def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Chart:
    W = 980
    LEFT = 300
    RIGHT = 120

    def __init__(self):
        self.parts = []
        self.y = 76

    def text(self, x, y, s, size=12, anchor="start", weight="normal", color="#222"):
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
                          f'text-anchor="{anchor}" font-weight="{weight}" fill="{color}">{esc(s)}</text>')

    def panel(self, title, note, groups, scale, legend, ref=None, unit=""):
        """groups: [(label, [(series, value, text)])]; scale: 'log' or 'lin'."""
        self.text(20, self.y, title, 15, weight="bold")
        self.y += 16
        self.text(20, self.y, note, 11, color="#555")
        self.y += 12
        x0, x1 = self.LEFT, self.W - self.RIGHT
        vals = [v for _, bars in groups for _, v, _ in bars if v]
        if not vals:
            self.text(x0, self.y + 20, "no data", 12)
            self.y += 40
            return
        if scale == "log":
            lo = 10 ** math.floor(math.log10(min(vals + ([ref] if ref else []))))
            hi = 10 ** math.ceil(math.log10(max(vals) * 1.05))
            if hi <= lo:
                hi = lo * 10

            def X(v):
                return x0 + (x1 - x0) * (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
            ticks = []
            d = lo
            while d <= hi * 1.001:
                for m in (1, 2, 5):
                    if lo <= d * m <= hi * 1.001:
                        ticks.append(d * m)
                d *= 10
        else:
            hi = max(vals + ([ref] if ref else [])) * 1.1
            step = 10 ** math.floor(math.log10(hi))
            if hi / step < 3:
                step /= 2
            ticks = [i * step for i in range(int(hi / step) + 1)]

            def X(v):
                return x0 + (x1 - x0) * v / hi
        top = self.y + 8
        nbars = sum(len(b) for _, b in groups)
        height = nbars * 16 + len(groups) * 12
        for t in ticks:
            self.parts.append(f'<line x1="{X(t):.1f}" y1="{top}" x2="{X(t):.1f}" y2="{top + height}" stroke="#ddd"/>')
            self.text(X(t), top + height + 12, f"{t:g}{unit}", 10, "middle", color="#666")
        if ref:
            self.parts.append(f'<line x1="{X(ref):.1f}" y1="{top - 4}" x2="{X(ref):.1f}" y2="{top + height}" '
                              f'stroke="#444" stroke-dasharray="4,3"/>')
        y = top + 6
        for label, bars in groups:
            self.text(x0 - 8, y + 12, label, 12, "end", "bold")
            for series, v, txt in bars:
                color = COLORS.get(series, "#888")
                if v:
                    self.parts.append(f'<rect x="{x0}" y="{y}" width="{max(X(v) - x0, 1):.1f}" height="13" fill="{color}"/>')
                    self.text(X(v) + 4, y + 11, txt, 11)
                else:
                    self.text(x0 + 4, y + 11, txt or "n/m", 11, color="#999")
                y += 16
            y += 12
        self.y = top + height + 22
        lx = x0
        for series, name in legend:
            self.parts.append(f'<rect x="{lx}" y="{self.y - 10}" width="12" height="12" fill="{COLORS[series]}"/>')
            self.text(lx + 16, self.y, name, 11)
            lx += 36 + 6.2 * len(name)
        self.y += 30

    def svg(self, title, subtitle):
        head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.W}" height="{self.y + 10}" '
                f'font-family="DejaVu Sans, Arial, sans-serif">',
                f'<rect width="100%" height="100%" fill="white"/>']
        t = Chart()
        t.text(20, 24, title, 17, weight="bold")
        t.text(20, 44, subtitle, 11, color="#555")
        return "\n".join(head + t.parts + self.parts + ["</svg>"]) + "\n"


def chart(F, R):
    c = Chart()
    W = F["write"]["rows"]
    groups = []
    for wl, _, label in WORKLOADS:
        bars = []
        for cfg, name in CONFIGS[2:]:
            cell = W.get(wl, {}).get(cfg, {})
            r = cell.get("cost_ratio")
            bars.append((cfg, r, f"×{fmt(r)}  ({fmt(cell.get('lat_mean_us'), 0)} µs)" if r else "n/m"))
        groups.append((label, bars))
    c.panel("Write cost while a snapshot is held",
            "mean latency per write ÷ the same job without a snapshot (log scale; 1 = free; lower is better)",
            groups, "log", [("blksnap_other", "blksnap, storage on another disk"),
                            ("blksnap_same", "blksnap, storage file on the origin's fs"),
                            ("dmsnap", "dm-snapshot")], ref=1)
    Rd = F["read"]["rows"]
    groups = []
    for data, mode in READ_CASES:
        r = Rd.get(f"{data}.{mode}", {})
        groups.append((f"{data} data, {mode}",
                       [(t, r.get(t, {}).get("ratio"),
                         f"{fmt(r.get(t, {}).get('ratio'))}  ({fmt(r.get(t, {}).get('snap_mb_s'), 0)} MB/s)")
                        for t in ("blksnap", "dm")]))
    c.panel("Sequential read of the snapshot",
            "snapshot device MB/s ÷ origin MB/s, same run (1 = as fast as the origin; higher is better)",
            groups, "lin", [("blksnap", "blksnap image"), ("dm", "dm-snapshot device")], ref=1)
    S = F["scale"]
    groups = []
    for g in S["sizes"]:
        bars = []
        for t in ("blksnap", "dm"):
            cell = S["rows"][str(g)].get(t, {})
            m = cell.get("mem_taken_mib")
            bars.append((t, m if m and m > 0 else None,
                         f"{fmt(m, 1)} MiB, take {fmt(cell.get('take_s'), 2)} s" if m is not None else "n/m"))
        groups.append((f"{g} GiB origin", bars))
    c.panel("Kernel memory held after take (sparse origins)",
            "slab + vmalloc growth from before create, MiB (log scale; lower is better); label: also the time of take",
            groups, "log", [("blksnap", "blksnap"), ("dm", "dm-snapshot")])
    P = F["peakmem"]
    if P["reps"]:
        c.panel(f"Peak kernel memory, 4 KiB writes over {size_label(P.get('region_mib'))}, 8 MiB chunks",
                "the most kernel memory above before create while every chunk is copied, MiB "
                "(lower is better)",
                [("peak during the writes",
                  [(t, P["measures"]["kernel"][f"{t}_mib"],
                    f"{fmt(P['measures']['kernel'][f'{t}_mib'], 1)} MiB")
                   for t in ("blksnap", "dm")])],
                "lin", [("blksnap", "blksnap"), ("dm", "dm-snapshot")])
    G = F["growth"]
    ms = (lambda s: s * 1000 if s else None)
    groups = [("host: fallocate 4G + fsync", [("base", ms(G.get("host_fallocate_4g_s")), f"{fmt(ms(G.get('host_fallocate_4g_s')), 1)} ms")]),
              ("host: add's growth 4G", [("blksnap", ms(G.get("host_sf_grow_4g_s")), f"{fmt(ms(G.get('host_sf_grow_4g_s')), 1)} ms  (×{fmt(G.get('host_sf_grow_ratio'))})")]),
              ("VM: low-space event → appended", [("blksnap", ms(G.get("latency_s")), f"{fmt(ms(G.get('latency_s')), 0)} ms")]),
              ("VM: add 64M after take, other fs", [("base", ms(G.get("add_after_take_other_fs_s")), f"{fmt(ms(G.get('add_after_take_other_fs_s')), 0)} ms")]),
              ("VM: add 64M after take, same fs", [("blksnap", ms(G.get("add_after_take_same_fs_s")), f"{fmt(ms(G.get('add_after_take_same_fs_s')), 0)} ms  (×{fmt(G.get('add_after_take_same_over_other'))})")])]
    for t, b in G["bursts"].items():
        groups.append((f"VM: burst survived, threshold {t} MiB",
                       [("blksnap", None, f"{b['largest_survived_mib']} MiB" +
                         (f" (overflow at {b['first_overflow_mib']} MiB)" if b['first_overflow_mib'] else " (largest tried)"))]))
    c.panel("Storage growth", "time in ms (log scale; lower is better); grey = baseline of the same run",
            groups, "log", [("base", "baseline"), ("blksnap", "blksnap / blksnap-storage")])
    info = R["info"]
    return c.svg("blksnap benchmarks (QEMU TCG: ratios count, absolute numbers do not)",
                 f"{info.get('host.date', '')}  git {info.get('host.git', '')}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    R = parse(a.results)
    F = {"write": write_figures(R), "read": read_figures(R),
         "scale": scale_figures(R), "growth": growth_figures(R),
         "peakmem": peakmem_figures(R), "deepq": deepq_figures(R)}
    F["stock"] = stock_figures(R, F["write"])
    md = tables(F)
    info = R["info"]
    head = (f"`{a.command}` on {info.get('host.date', '?')} (git {info.get('host.git', '?')}), "
            f"guest kernel {info.get('guest.kernel', '?').split()[0]}, {info.get('guest.fio', '?')}, "
            f"{info.get('host.qemu', '?')} (TCG), host load {info.get('host.load', '?')}, "
            f"took {fmt(float(info.get('host.elapsed_s', 0)) / 60, 1)} min.\n\n")
    errs = R["errors"] + ([] if R["done"] else ["the guest did not report DONE"])
    # A section that ran to its end without a figure (a helper it calls
    # missing, say) must not pass as a table of n/m.
    if "section.read.s" in R["values"] and not F["read"]["reps"]:
        errs.append("read: the section ran but measured no read figure")
    if "section.peakmem.s" in R["values"] and not F["peakmem"]["reps"]:
        errs.append("peakmem: the section ran but measured no peak of both tools")
    if "section.deepq.s" in R["values"] and not any(
            F["deepq"]["rows"][row]["blksnap"]["over_dm"] is not None for row, _ in DEEPQ_ROWS):
        errs.append("deepq: the section ran but measured no blksnap/dm ratio")
    if errs:
        md += "\nErrors:\n" + "\n".join(f"- {e}" for e in errs) + "\n"
    doc = {"command": a.command, "info": info,
           "params": {k[6:]: v for k, v in info.items() if k.startswith("param.")},
           "versions": {k: v for k, v in info.items() if not k.startswith("param.")},
           "summary": summary(F), "figures": F, "values": R["values"],
           "fio": {k: {"summary": fio_summary(j), "raw": j} for k, j in R["fio"].items()},
           "errors": errs, "log": R["log"]}
    with open(f"{a.out}/results.json", "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True, ensure_ascii=False)
    with open(f"{a.out}/results.md", "w") as f:
        f.write(head + md)
    with open(f"{a.out}/results.svg", "w") as f:
        f.write(chart(F, R))
    written = ["results.json", "results.md", "results.svg"]
    if os.path.exists(f"{a.out}/profile.txt"):
        os.remove(f"{a.out}/profile.txt")   # not this run's
    if R["profile"]:
        # bench.profile=1: one flat profile per read kind, as perf gave it.
        with open(f"{a.out}/profile.txt", "w") as f:
            for k, lines in R["profile"].items():
                f.write(f"{k} (perf record -a, cpu-clock; share of all samples)\n")
                f.writelines(f"  {ln}\n" for ln in lines)
                f.write("\n")
        written.append("profile.txt")
    sys.stdout.write(head + md)
    print("\nwritten: " + ", ".join(f"{a.out}/{w}" for w in written))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())

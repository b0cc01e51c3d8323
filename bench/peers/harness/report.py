"""The figures as text: one line per system (what `run` prints) and the markdown tables that go
into bench/RESULTS.md."""
from . import census
from .runs import fmt, median


NODELOSS = ("nodeloss_default", "nodeloss_lease", "nodeloss_tuned")  # results before 2026-12-07
VARIANTS = ("default", "lease", "tuned")


def has_nodeloss(r):
    return "nodeloss" in r or any(v in r for v in NODELOSS)


def nodeloss_variants(r, long=True):
    """(placement, label, figures) of each node-loss run of one system, in table order. Results
    from before the placements were named (flat nodeloss_* keys) come as placement "unnamed"."""
    if "nodeloss" in r:
        cases = [(p, v, r["nodeloss"][p].get(v)) for p in r["nodeloss"] for v in VARIANTS]
    else:
        cases = [("unnamed", v[len("nodeloss_"):], r.get(v)) for v in NODELOSS]
    for placement, v, n in cases:
        if not n or "recovery_s" not in n:
            continue
        if v == "tuned":
            label = "tuned: " + r.get("tuned_note", "") if long else "tuned"
        elif v == "lease":
            label = "without launchers (kwok pods): the Lease grace alone" if long else "no launchers"
        else:
            label = "default" + (", its launchers run (as in every Lockstep pod)"
                                 if n.get("launchers") and long else
                                 " + launchers" if n.get("launchers") else "")
        yield placement, label, n


def spread(values):
    vals = [v for v in values if v is not None]
    return f"{min(vals):.2f}-{max(vals):.2f}" if len(vals) > 1 else ""


def ratio(peer, ours):
    if peer is None or ours in (None, 0):
        return "-"
    return f"{peer / ours:.2f}x"


def lines(res):
    out = []
    summary = []
    for key, r in res["systems"].items():
        b = r.get("burst", {})
        parts = [f"{key:3s}"]
        if b:
            parts.append(f"burst p50 {fmt(b['p50'])} s p95 {fmt(b['p95'])} s max {fmt(b['max'])} s"
                         f" all {fmt(b['all_running_s'])} s ({b['jobs_running']}/{b['jobs']})")
            cost = b.get("cost", {})
            parts.append("cost " + ", ".join(f"{n} {c['cpu_s']} CPU-s {c['peak_rss_mb']} MB"
                                             for n, c in cost.items()))
            if "writes" in b:
                parts.append(f"{b['writes']['per_job']} API writes per job")
        for placement, label, n in nodeloss_variants(r, long=False):
            got = n["recovery_s"]
            parts.append(f"node loss {placement} {label} "
                         + (f"{got:.1f} s" if got is not None else f"> {n['cap_s']:.0f} s"))
        c = r.get("contention")
        if c:
            parts.append(f"contention makespan {fmt(c['makespan_s'])} s partial GPU-s "
                         f"{c['partial_gpu_s']} (by events {c.get('partial_gpu_s_events', '-')}, "
                         f"longest span {fmt(c.get('partial_span_max_s'))} s) deadlocked "
                         f"{c['deadlocked']} peak partial {c['peak_partial']}")
        out.append(" | ".join(parts))
        summary.append(f"{key} {fmt(b.get('p50')) if b else '-'}")
    for key, runs in res.get("ceiling", {}).items():
        out.append(f"{key:4s} ceiling: " + "; ".join(
            f"p50 {fmt(c['p50'])} s all {fmt(c['all_running_s'])} s {fmt(c['pods_per_s'])} pods/s"
            for c in runs))
        summary.append(f"{key} {fmt(median([c['p50'] for c in runs]))}")
    if "ray" in res:
        out.append("ray: " + ", ".join(f"{k} median {fmt(median(v))} s ({len(v)} reps)"
                                       for k, v in res["ray"].items()))
    if summary:
        out.append(("quick: " if res.get("quick") else "summary: ") + " ".join(summary))
    return "\n".join(out)


def writes_table(res, top=8):
    """The API server's writes over each burst window (census.py), per job, heartbeats apart."""
    rows = census.rows(res)
    if not rows:
        return []
    t = ["| system | API writes per job | the largest kinds, per job | heartbeats in the window |",
         "|---|---:|---|---:|"]
    for name, w in rows:
        kinds = ", ".join(f"{kind} {n / w['jobs']:.1f}" for kind, n in list(w["by"].items())[:top])
        t.append(f"| {name} | {w['per_job']} | {kinds} | {w['heartbeats']} |")
    return t + [""]


def tables(res):
    """Markdown tables per workload, ratios to Lockstep (L)."""
    s, t = res["systems"], []
    L = s.get("L", {})
    if any("burst" in r for r in s.values()):
        lb = L.get("burst", {})
        t += ["| system | p50 s | p95 s | max s | all running s | jobs running | p50 / L's |",
              "|---|---:|---:|---:|---:|---:|---:|"]
        def burst_row(name, b, jobs):
            return (f"| {name} | {fmt(b['p50'])} | {fmt(b['p95'])} | {fmt(b['max'])} | "
                    f"{fmt(b['all_running_s'])} | {jobs} | {ratio(b['p50'], lb.get('p50'))} |")
        for k, r in s.items():
            b = r.get("burst")
            if b:
                t.append(burst_row(k, b, f"{b['jobs_running']}/{b['jobs']}"))
        for k, runs in res.get("ceiling", {}).items():
            for c in runs:
                t.append(burst_row(f"{k} ceiling", c, c['jobs_running']))
        t.append("")
        t += ["| system | process | CPU-s over burst | peak RSS MB |", "|---|---|---:|---:|"]
        for k, r in s.items():
            for n, c in r.get("burst", {}).get("cost", {}).items():
                t.append(f"| {k} | {n} | {c['cpu_s']} | {c['peak_rss_mb']} |")
        t.append("")
        t += writes_table(res)
    if any("contention" in r for r in s.values()):
        t += ["| system | makespan s | finished | deadlocked | partial-gang GPU-s (0.5-s samples) |"
              " partial-gang GPU-s (by events) | partial spans: count, p50 s, max s |"
              " peak partial gangs | makespan / L's |", "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
        lc = L.get("contention", {})
        for k, r in s.items():
            c = r.get("contention")
            if c:
                t.append(f"| {k} | {fmt(c['makespan_s'])} | {c['finished']}/{c['jobs']} | "
                         f"{c['deadlocked']} | {c['partial_gpu_s']} | "
                         f"{c.get('partial_gpu_s_events', '-')} | {c.get('partial_spans', '-')}, "
                         f"{fmt(c.get('partial_span_p50_s'))}, {fmt(c.get('partial_span_max_s'))} | "
                         f"{c['peak_partial']} | {ratio(c['makespan_s'], lc.get('makespan_s'))} |")
        t.append("")
    if any(has_nodeloss(r) for r in s.values()):
        ours = {p: n["recovery_s"] for p, label, n in nodeloss_variants(L)
                if label.startswith("default")}
        t += ["| placement | system | variant | last heartbeat -> job Running again s (median) | "
              "range | node killed -> Running s (median) | range | repetitions (from the last "
              "heartbeat) s | pods on the lost node | / L's default |",
              "|---|---|---|---:|---|---:|---|---|---:|---:|"]
        for p in dict.fromkeys(p for r in s.values() for p, _, _ in nodeloss_variants(r)):
            for k, r in s.items():
                for placement, name, n in nodeloss_variants(r):
                    if placement != p:
                        continue
                    got = n["recovery_s"]
                    shown = fmt(got) if got is not None else f"> {n['cap_s']:.0f} (not recovered)"
                    reps = ", ".join(fmt(x) for x in n.get("reps", []))
                    t.append(f"| {p} | {k} | {name} | {shown} | {spread(n.get('reps', []))} | "
                             f"{fmt(n.get('from_stop_s'))} | {spread(n.get('from_stop_reps', []))}"
                             f" | {reps} | {n.get('pods_on_lost_node', '-')} | "
                             f"{ratio(got if got is not None else n['cap_s'], ours.get(p))}"
                             f"{'+' if got is None else ''} |")
        t.append("")
    if "ray" in res:
        lr = median(res["ray"].get("L", []))
        t += ["| system | Ray cluster (1 head + 7 workers) Running, median s | repetitions s | / L's |",
              "|---|---:|---|---:|"]
        for k, v in res["ray"].items():
            t.append(f"| {k} | {fmt(median(v))} | {', '.join(fmt(x) for x in v)} | "
                     f"{ratio(median(v), lr)} |")
    return "\n".join(t)

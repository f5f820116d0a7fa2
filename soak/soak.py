#!/usr/bin/env python3
"""Soak test: run the daemon against a churning cluster, with periodic plugin
swaps, for a set time; sample the daemon's memory and Herald's own metrics,
and report whether memory stays flat.

    cargo build --release                       # the host
    (cd plugins && cargo build --release --target wasm32-wasip2 \\
        -p pod-lifecycle -p image-policy -p rollout-watch)
    soak/soak.py --minutes 30                   # writes soak/results-30min.{csv,md}

Two processes, as in a cluster: `herald apiserver --churn-interval` (the
embedded API server seeded with examples/cluster, Pods and Deployments
created, scaled and deleted all the time) and `herald run` with the three
example plugins, watching it over HTTP. Only the daemon is measured; the
API server's RSS is sampled for context (it keeps the last 10 000 change
events for watches to resume from, so it grows until that window is full).

Every --swap-every seconds one example plugin (in turn) is replaced by a new
version of itself: the same component with a custom section appended, so a
new digest and a real swap (compiled once, then from the artifact cache on
its next turn, as the variants repeat). Not run in CI.
"""

import argparse
import csv
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGINS = ["pod-lifecycle", "image-policy", "rollout-watch"]
COUNTERS = {
    "delivered": "herald_notifications_delivered_total",
    "failed": "herald_notifications_failed_total",
    "skipped": "herald_notifications_skipped_total",
    "reloads": "herald_plugin_reloads_total",
    "load_errors": "herald_plugin_load_errors_total",
    "watch_errors": "herald_watch_errors_total",
    "cached_objects": "herald_cache_objects",
    "cache_bytes": "herald_cache_bytes",
    "queue_depth": "herald_listener_queue_depth",
}


def leb128(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value == 0:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def variant(component, tag):
    """The component with a custom section `herald-soak-variant` = tag."""
    name = b"herald-soak-variant"
    payload = leb128(len(name)) + name + tag.encode()
    return component + b"\x00" + leb128(len(payload)) + payload


def find_plugin(name):
    file = name.replace("-", "_") + ".wasm"
    for base in ["target/wasm", "plugins/target"]:
        path = os.path.join(ROOT, base, "wasm32-wasip2", "release", file)
        if os.path.exists(path):
            return path
    sys.exit(f"{file} not found: build the example plugins first (see --help)")


def memory(pid):
    """RSS in KiB, split into anonymous (heap, stacks, plugin memories) and
    file-backed (the binary, mapped plugin artifacts), and the thread count."""
    fields = {"VmRSS:": "rss_kib", "RssAnon:": "anon_kib", "RssFile:": "file_kib", "Threads:": "threads"}
    found = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            parts = line.split()
            if parts and parts[0] in fields:
                found[fields[parts[0]]] = int(parts[1])
    return found


def scrape(address):
    """Sums of Herald's metrics, by short name."""
    text = urllib.request.urlopen(f"http://{address}/metrics", timeout=10).read().decode()
    sums = {key: 0.0 for key in COUNTERS}
    delivered = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, value = line.rsplit(" ", 1)
        name = series.split("{")[0]
        for key, metric in COUNTERS.items():
            if name == metric:
                sums[key] += float(value)
        if name == COUNTERS["delivered"]:
            delivered[series] = float(value)
    return sums, delivered


def wait_for_endpoints(log_path, process):
    deadline = time.time() + 600
    while time.time() < deadline:
        if process.poll() is not None:
            sys.exit(f"herald exited early; see {log_path}")
        with open(log_path) as log:
            for line in log:
                if "endpoints: http://" in line:
                    return line.split("http://", 1)[1].split("/", 1)[0]
        time.sleep(0.2)
    sys.exit("herald never printed its endpoints")


def slope_kib_per_minute(rows):
    """Least-squares slope of RSS over time."""
    xs = [row["elapsed_s"] / 60 for row in rows]
    ys = [row["rss_kib"] for row in rows]
    if len(xs) < 2:
        return 0.0
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / den if den else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--sample-every", type=float, default=10, help="seconds between samples")
    parser.add_argument("--swap-every", type=float, default=60, help="seconds between plugin swaps")
    parser.add_argument("--churn-interval", default="20ms")
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "herald"))
    parser.add_argument("--out", default=os.path.join(ROOT, "soak"))
    args = parser.parse_args()
    if not os.path.exists(args.binary):
        sys.exit(f"{args.binary} not found: cargo build --release")

    work = tempfile.mkdtemp(prefix="herald-soak-")
    plugin_dir = os.path.join(work, "plugins.d")
    os.makedirs(plugin_dir)
    originals = {}
    for name in PLUGINS:
        with open(find_plugin(name), "rb") as file:
            originals[name] = file.read()
        shutil.copyfile(find_plugin(name), os.path.join(plugin_dir, f"{name}.wasm"))

    log_path = os.path.join(work, "herald.log")
    kubeconfig = os.path.join(work, "kubeconfig")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    with open(os.path.join(work, "apiserver.log"), "w") as log:
        cluster = subprocess.Popen(
            [args.binary, "apiserver", "--seed", os.path.join(ROOT, "examples", "cluster"),
             "--kubeconfig-out", kubeconfig, "--churn-interval", args.churn_interval],
            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while not os.path.exists(kubeconfig):
        if cluster.poll() is not None or time.time() > deadline:
            sys.exit(f"the API server did not start; see {work}/apiserver.log")
        time.sleep(0.1)
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [args.binary, "run", "--kubeconfig", kubeconfig, "--plugins", plugin_dir,
             "--listen", "127.0.0.1:0", "--log-format", "json"],
            stdout=log, stderr=subprocess.STDOUT, env=env)
    address = wait_for_endpoints(log_path, process)
    print(f"herald pid {process.pid}, API server pid {cluster.pid}, endpoints {address}, work dir {work}")

    rows = []
    last_delivered, delivered_total = {}, 0.0
    started = time.time()
    next_sample, next_swap, swaps = started, started + args.swap_every, 0
    end = started + args.minutes * 60
    while time.time() < end:
        now = time.time()
        if now >= next_swap:
            name = PLUGINS[swaps % len(PLUGINS)]
            # Four variants per plugin, over and over: later swaps of a
            # variant come from the compiled-artifact cache.
            bytes_ = variant(originals[name], f"{swaps // len(PLUGINS) % 4}")
            staged = os.path.join(plugin_dir, f".{name}.wasm.tmp")
            with open(staged, "wb") as file:
                file.write(bytes_)
            os.rename(staged, os.path.join(plugin_dir, f"{name}.wasm"))
            swaps += 1
            next_swap += args.swap_every
        if now >= next_sample:
            sample, delivered = scrape(address)
            row = {"elapsed_s": round(now - started, 1), **memory(process.pid), "swaps": swaps}
            row.update({key: int(value) for key, value in sample.items()})
            # The listener counters belong to a plugin version and restart
            # at zero when it is swapped: a drop is a new version counting
            # (what the old one did since the last sample is not seen).
            for series, value in delivered.items():
                before = last_delivered.get(series, 0.0)
                delivered_total += value - before if value >= before else value
            last_delivered = delivered
            row["delivered_total"] = int(delivered_total)
            row["cluster_rss_kib"] = memory(cluster.pid).get("rss_kib", 0)
            rows.append(row)
            print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
            next_sample += args.sample_every
        if process.poll() is not None:
            sys.exit(f"herald exited during the soak; see {log_path}")
        if cluster.poll() is not None:
            sys.exit(f"the API server exited during the soak; see {work}/apiserver.log")
        time.sleep(0.2)

    process.send_signal(signal.SIGTERM)
    exit_code = process.wait(timeout=60)
    cluster.send_signal(signal.SIGTERM)
    cluster.wait(timeout=60)
    with open(log_path) as log:
        log_lines = sum(1 for _ in log)

    label = f"{args.minutes:g}min"
    csv_path = os.path.join(args.out, f"results-{label}.csv")
    with open(csv_path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    warm = [row for row in rows if row["elapsed_s"] >= min(300, args.minutes * 30)]
    last = rows[-1]
    summary = {
        "duration": f"{args.minutes:g} min",
        "samples": len(rows),
        "RSS first / min / max / last (MiB)": " / ".join(
            f"{v / 1024:.1f}" for v in [rows[0]["rss_kib"], min(r["rss_kib"] for r in rows),
                                       max(r["rss_kib"] for r in rows), last["rss_kib"]]),
        "RSS slope after warm-up (KiB/min)": f"{slope_kib_per_minute(warm):.1f}",
        "RSS at the end of warm-up / at the end (MiB)": f"{warm[0]['rss_kib'] / 1024:.1f} / {last['rss_kib'] / 1024:.1f}",
        "of which anonymous at the end of warm-up / at the end (MiB)":
            f"{warm[0]['anon_kib'] / 1024:.1f} / {last['anon_kib'] / 1024:.1f}",
        "threads at the end of warm-up / at the end": f"{warm[0]['threads']} / {last['threads']}",
        "notifications delivered (sum over plugin versions, at least)": last["delivered_total"],
        "failed / skipped": f"{last['failed']} / {last['skipped']}",
        "plugin swaps made / reloads counted / load errors": f"{swaps} / {last['reloads']} / {last['load_errors']}",
        "watch errors": last["watch_errors"],
        "objects cached at the end": last["cached_objects"],
        "daemon log lines (JSON; the plugins' own lines included)": log_lines,
        "API server RSS at the end (MiB, context)": f"{last['cluster_rss_kib'] / 1024:.1f}",
        "exit code after SIGTERM": exit_code,
    }
    md_path = os.path.join(args.out, f"results-{label}.md")
    with open(md_path, "w") as file:
        file.write(f"# Soak run, {label}\n\n")
        file.write(f"`soak/soak.py --minutes {args.minutes:g} --churn-interval {args.churn_interval} "
                   f"--swap-every {args.swap_every:g}` on {time.strftime('%Y-%m-%d', time.gmtime())}; "
                   f"samples every {args.sample_every:g} s in `results-{label}.csv`.\n\n")
        file.write("| measure | value |\n|---|---|\n")
        for key, value in summary.items():
            file.write(f"| {key} | {value} |\n")
        file.write("\n| minute | RSS (MiB) | anonymous (MiB) | threads | delivered | cached objects | queue depth | swaps |\n"
                   "|---|---|---|---|---|---|---|---|\n")
        for row in rows:
            if int(row["elapsed_s"]) % 60 < args.sample_every:
                file.write(f"| {row['elapsed_s'] / 60:.0f} | {row['rss_kib'] / 1024:.1f} | {row['anon_kib'] / 1024:.1f} "
                           f"| {row['threads']} | {row['delivered_total']} "
                           f"| {row['cached_objects']} | {row['queue_depth']} | {row['swaps']} |\n")
    print(f"\nwrote {csv_path} and {md_path}")
    for key, value in summary.items():
        print(f"  {key}: {value}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Peak RSS and CPU-seconds of a system's processes over a window, from /proc."""
import os
import threading

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class CostSampler:
    """Samples VmRSS every 0.5 s; at the end reads VmHWM (the kernel's peak) and CPU time."""

    def __init__(self, pids):
        self.pids = dict(pids)
        self.start_cpu = {n: cpu_seconds(p) for n, p in self.pids.items()}
        self.peak_rss = {n: 0 for n in self.pids}
        self.series = {n: [] for n in self.pids}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        import time
        t0 = time.time()
        while not self.stop.wait(0.5):
            for n, p in self.pids.items():
                try:
                    rss = status_kb(p, "VmRSS")
                except OSError:
                    continue
                self.peak_rss[n] = max(self.peak_rss[n], rss)
                self.series[n].append((time.time() - t0, rss / 1024))

    def finish(self):
        self.stop.set()
        self.thread.join()
        out = {}
        for n, p in self.pids.items():
            try:
                out[n] = {"cpu_s": round(cpu_seconds(p) - self.start_cpu[n], 2),
                          "peak_rss_mb": round(max(self.peak_rss[n], status_kb(p, "VmHWM")) / 1024, 1)}
            except OSError:
                out[n] = {"cpu_s": None, "peak_rss_mb": round(self.peak_rss[n] / 1024, 1)}
        return out

#!/usr/bin/env python3
"""The gap probe's report: findings, then one markdown table, from run_gap_probe.sh's
results.jsonl. Every ratio is against figures of the same run.

usage: gap_report.py RESULTS.jsonl
"""
import contextlib
import json
import statistics
import sys

# The tcp_ceiling cases: the hypothesis each tests and what it does differently.
TCP_CASES = {
    "tcp": ("ceiling", "loopback TCP: 1 MiB read()/send() into/from one hot 1 MiB buffer, "
                       "4 MiB socket buffers"),
    "io64k": ("c", "TCP, 64 KiB read()/send()"),
    "io8m": ("c", "TCP, 8 MiB read()/send()"),
    "sockbuf0": ("c", "TCP, socket buffers autotuned by the kernel"),
    "sockbuf16m": ("c", "TCP, 16 MiB socket buffers"),
    "nonblock": ("c", "TCP, non-blocking sockets and poll() when one would block (as the "
                      "server's threads)"),
    "span_up": ("c", "TCP, readers fill two 8 MiB chunks in turn, reads of up to 8 MiB (an "
                     "upload's staging chunks)"),
    "span_up_1m": ("c", "span_up, reads of at most 1 MiB"),
    "span_up_2m": ("c", "TCP, readers fill two 1 MiB chunks in turn, 1 MiB reads (a span "
                        "that stays in the caches)"),
    "span_down": ("c", "TCP, writers send a 4 MiB block in 4 MiB sends (a download's "
                       "response buffer)"),
    "span_down_1m": ("c", "span_down in 1 MiB sends"),
    "split": ("b", "TCP, writers pinned to the lower half of the cores, readers to the upper"),
    "bg_h2d": ("a", "TCP beside a full-speed pinned H2D copy loop"),
    "bg_d2h": ("a", "TCP beside a full-speed pinned D2H copy loop"),
    "dma_up": ("d", "span_up + each full chunk copied to the device: TCP + an upload's DMA"),
    "dma_up_2m": ("d", "span_up_2m + each full 1 MiB chunk copied to the device"),
    "dma_up_wc": ("d", "dma_up with write-combined chunks (not cached, not snooped)"),
    "dma_up_2m_wc": ("d", "dma_up_2m with write-combined chunks"),
    "dma_up_spare": ("d", "dma_up, each copy reading a spare span no thread writes"),
    "dma_up_2m_spare": ("d", "dma_up_2m, each copy reading a spare span no thread writes"),
    "dma_up_2m_bounce": ("d", "dma_up_2m, reads into one hot 1 MiB buffer, then memcpy'd in"),
    "dma_up_2m_nt": ("d", "dma_up_2m, reads into one hot 1 MiB buffer, then copied in by "
                          "non-temporal stores"),
    "dma_up_1m": ("d", "dma_up with reads of at most 1 MiB"),
    "dma_up_1m_nt": ("d", "dma_up_1m through a hot 1 MiB buffer and non-temporal stores"),
    "dma_up_256k_nt": ("d", "dma_up through a hot 256 KiB buffer (256 KiB reads) and "
                            "non-temporal stores"),
    "dma_up_256k_bounce": ("d", "dma_up through a hot 256 KiB buffer, then memcpy'd in"),
    "dma_up_64k_nt": ("d", "dma_up through a hot 64 KiB buffer and non-temporal stores"),
    "dma_down": ("d", "TCP + a download's DMA: each 4 MiB chunk copied from the device, then sent"),
    "tcp_huge": ("e", "tcp with both sides' buffers in transparent huge pages"),
    "span_up_huge": ("e", "span_up with the readers' chunks in huge pages (a TLB miss per "
                          "2 MiB, not per 4 KiB)"),
    "dma_up_huge": ("e", "dma_up with the readers' pinned chunks in huge pages"),
    "span_down_huge": ("e", "span_down with the writers' blocks in huge pages"),
    "dma_down_huge": ("e", "dma_down with the writers' pinned chunks in huge pages"),
    "tcp_ref": ("drift", "tcp again, right before gpuhttpd A's runs"),
}


def load(path):
    lines = []
    with open(path) as f:
        for text in f:
            text = text.strip()
            if text.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    lines.append(json.loads(text))
    return lines


def fmt(v, digits=2):
    return "-" if v is None or v < 0 else f"{v:.{digits}f}"


def ratio(a, b):
    return None if a is None or not b else a / b


class Report:
    def __init__(self, lines):
        self.lines = lines
        self.meta = {}
        for line in lines:
            if line.get("tool") == "meta":
                self.meta.update(line)
        self.variants = [v for v in lines if v.get("tool") == "meta" and "variant" in v]
        self.conns = [int(c) for c in str(self.meta.get("conns", "")).split()]

    def runs(self, tool, label, conns, mode=None):
        return [r for r in self.lines
                if r.get("tool") == tool and r.get("label") == label and r.get("conns") == conns
                and (mode is None or r.get("mode") == mode)]

    @staticmethod
    def ok(runs):
        return [r for r in runs if r.get("status") == "ok"]

    def best(self, runs):
        good = self.ok(runs)
        return max(good, key=lambda r: r["gbps"]) if good else None

    def best_gbps(self, tool, label, conns, mode=None):
        b = self.best(self.runs(tool, label, conns, mode))
        return b["gbps"] if b else None

    def tcp(self, conns):
        return self.best_gbps("tcp_ceiling", "tcp", conns)

    def a_runs(self, conns, mode):
        return [r for r in self.lines
                if r.get("tool") == "loadgen" and r.get("conns") == conns and r.get("mode") == mode
                and (r.get("label") == "A" or str(r.get("label", "")).startswith("A~"))]

    def paired(self, variant, conns, mode):
        """The median of B over A across the alternations of one variant."""
        a = [r for r in self.runs("loadgen", "A~" + variant, conns, mode)]
        b = [r for r in self.runs("loadgen", variant, conns, mode)]
        pairs = [y["gbps"] / x["gbps"] for x, y in zip(a, b)  # noqa: B905 (Python 3.9)
                 if x.get("status") == "ok" and y.get("status") == "ok" and x["gbps"] > 0]
        return statistics.median(pairs) if pairs else None

    # ---- the table ---------------------------------------------------------------

    @staticmethod
    def sides(run):
        """CPU seconds per GB of the receiving side, the sending side and the machine."""
        gb = run.get("bytes", 0) / 1e9
        if gb <= 0:
            return None, None, None
        def per(key):
            v = run.get(key)
            return None if v is None or v < 0 else v / gb
        if run["tool"] == "tcp_ceiling":
            recv, send = per("recv_cpu_s"), per("send_cpu_s")
        elif run.get("mode") == "upload":
            recv, send = per("server_cpu_s"), per("client_cpu_s")
        else:
            recv, send = per("client_cpu_s"), per("server_cpu_s")
        return recv, send, per("machine_cpu_s")

    def row(self, hyp, case, conns, runs, paired=None, what=""):
        tcp = self.tcp(conns)
        good = self.ok(runs)
        skipped = [r for r in runs if r.get("status") == "skipped"]
        if not good:
            why = skipped[0].get("reason", "skipped") if skipped else "FAILED"
            return f"| {hyp} | {case} | {conns} | {len(runs)} | {why} | | | | | | | | | | {what} |"
        b = max(good, key=lambda r: r["gbps"])
        rates = [r["gbps"] for r in good]
        spread = f"{min(rates):.2f}-{max(rates):.2f}" if len(rates) > 1 else "-"
        failed = len(runs) - len(good) - len(skipped)
        mark = f" ({failed} FAILED)" if failed else ""
        dma = b.get("background_dma_gbps") if b.get("background_dma", "none") != "none" else None
        if b.get("dma", "none") != "none":
            dma = b["gbps"]
        recv, send, machine = self.sides(b)
        busy, steal = b.get("machine_busy"), b.get("machine_steal")
        return (f"| {hyp} | {case} | {conns} | {len(runs)} | {b['gbps']:.2f}{mark} | {spread} | "
                f"{fmt(ratio(b['gbps'], tcp))} | {fmt(paired)} | {fmt(dma)} | "
                f"{fmt(None if busy is None or busy < 0 else 100 * busy, 0)} | "
                f"{fmt(None if steal is None or steal < 0 else 100 * steal, 1)} | "
                f"{fmt(b.get('runnable_mean'), 1)} | {fmt(recv, 3)} | {fmt(send, 3)} | "
                f"{fmt(machine, 3)} | {what} |")

    def table(self):
        out = ["| hyp. | case | conns | runs | GB/s (best) | min-max | vs TCP | vs A (paired) | "
               "DMA GB/s | busy % | steal % | runnable | recv CPU s/GB | send CPU s/GB | "
               "machine CPU s/GB | what |",
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in self.conns:
            for case, (hyp, what) in TCP_CASES.items():
                runs = self.runs("tcp_ceiling", case, c)
                if runs:
                    out.append(self.row(hyp, case, c, runs, what=what))
            for mode in ("upload", "download"):
                runs = self.a_runs(c, mode)
                if runs:
                    out.append(self.row("-", f"gpuhttpd A {mode}", c, runs,
                                        what="defaults (every A run of the probe)"))
            runs = self.runs("loadgen", "A_check", c, "download")
            if runs:
                out.append(self.row("client", "gpuhttpd A download, checked", c, runs,
                                    what="loadgen compares every byte on arrival, as the "
                                         "transfer bench does"))
            for mode in ("upload", "download"):
                runs = self.runs("loadgen", "split", c, mode)
                if runs:
                    out.append(self.row("b", f"gpuhttpd split {mode}", c, runs,
                                        what=f"server on CPUs {self.meta.get('high_cpus')}, "
                                             f"loadgen on {self.meta.get('low_cpus')}"))
            for v in self.variants:
                for mode in v["modes"].split():
                    runs = self.runs("loadgen", v["variant"], c, mode)
                    if runs:
                        out.append(self.row("c", f"{v['variant']} {mode}", c, runs,
                                            self.paired(v["variant"], c, mode), v["args"]))
        return out

    # ---- the findings ------------------------------------------------------------

    def per_conns(self, fn, digits=2):
        return ", ".join(f"{fmt(fn(c), digits)} at {c}" for c in self.conns)

    def case_ratio(self, case, base="tcp"):
        return lambda c: ratio(self.best_gbps("tcp_ceiling", case, c),
                               self.best_gbps("tcp_ceiling", base, c))

    def gpuhttpd_over(self, mode, case):
        def fn(c):
            a = self.best(self.a_runs(c, mode))
            return ratio(a["gbps"] if a else None, self.best_gbps("tcp_ceiling", case, c))
        return fn

    def machine_of(self, run):
        if not run:
            return "-"
        recv, send, machine = self.sides(run)
        busy = run.get("machine_busy", -1)
        return (f"{fmt(100 * busy if busy >= 0 else None, 0)}% busy, "
                f"{fmt(run.get('runnable_mean'), 1)} runnable, {fmt(machine, 3)} CPU s/GB")

    def skipped(self, case):
        """Why a tcp case never ran (every run of it skipped), or None."""
        runs = [r for r in self.lines if r.get("tool") == "tcp_ceiling" and r.get("label") == case]
        if runs and all(r.get("status") == "skipped" for r in runs):
            return runs[0].get("reason", "skipped")
        return None

    def findings(self):
        f = []
        pinned = {r["path"]: r["gbps"] for r in self.lines
                  if r.get("tool") == "pinned_ceiling" and r.get("status") == "ok"
                  and r.get("chunk") == 64 << 20}
        alone = (f"alone {fmt(pinned.get('h2d'))} H2D / {fmt(pinned.get('d2h'))} D2H GB/s"
                 if pinned else "no DMA figure alone (skipped)")

        def bg(case):
            return lambda c: (self.best(self.runs("tcp_ceiling", case, c)) or {}).get(
                "background_dma_gbps")
        why = self.skipped("bg_h2d")
        if why:
            f.append(f"- (a) memory bandwidth shared with the DMA: not measured ({why}).")
        else:
            f.append(f"- (a) memory bandwidth shared with the DMA: TCP beside a full-speed H2D "
                     f"loop = "
                     f"{self.per_conns(self.case_ratio('bg_h2d'))} of TCP alone (the loop ran at "
                     f"{self.per_conns(bg('bg_h2d'))} GB/s; {alone}); beside D2H "
                     f"{self.per_conns(self.case_ratio('bg_d2h'))} (loop "
                     f"{self.per_conns(bg('bg_d2h'))} GB/s).")
        for c in self.conns:
            tcp = self.best(self.runs("tcp_ceiling", "tcp", c))
            up = self.best(self.a_runs(c, "upload"))
            down = self.best(self.a_runs(c, "download"))
            f.append(f"- (b) CPU at {c} connections ({self.meta.get('cores')} cores): TCP "
                     f"{self.machine_of(tcp)}; gpuhttpd upload {self.machine_of(up)}; download "
                     f"{self.machine_of(down)}.")
        f.append(f"- (b) pinned split: TCP split = {self.per_conns(self.case_ratio('split'))} of "
                 f"TCP unpinned; gpuhttpd split upload = "
                 f"{self.per_conns(self.split_over('upload'))} of TCP split, download "
                 f"{self.per_conns(self.split_over('download'))}.")
        knobs = ", ".join(f"{case} {self.per_conns(self.case_ratio(case))}"
                          for case in ("io64k", "io8m", "sockbuf0", "sockbuf16m", "nonblock",
                                       "span_up", "span_down"))
        f.append(f"- (c) TCP with gpuhttpd's sizes and calls, over TCP: {knobs}. Smaller "
                 f"pieces on the same spans: span_up_1m over span_up "
                 f"{self.per_conns(self.case_ratio('span_up_1m', 'span_up'))}, span_down_1m "
                 f"over span_down {self.per_conns(self.case_ratio('span_down_1m', 'span_down'))}. "
                 f"Cache-sized spans (two 1 MiB chunks): span_up_2m = "
                 f"{self.per_conns(self.case_ratio('span_up_2m'))} of TCP, dma_up_2m = "
                 f"{self.per_conns(self.case_ratio('dma_up_2m'))}; write-combined chunks: "
                 f"dma_up_wc = {self.per_conns(self.case_ratio('dma_up_wc'))}, dma_up_2m_wc = "
                 f"{self.per_conns(self.case_ratio('dma_up_2m_wc'))}.")
        moved = []
        for v in self.variants:
            for mode in v["modes"].split():
                for c in self.conns:
                    p = self.paired(v["variant"], c, mode)
                    if p is not None:
                        moved.append((abs(p - 1), f"`{v['args']}` {mode} at {c}: {p:.2f}"))
        moved.sort(reverse=True)
        f.append("- (c) server options against the defaults, paired, largest changes first: "
                 + ("; ".join(m for _, m in moved[:6]) if moved else "none measured") + ".")
        why = self.skipped("dma_up")
        fair = (f"not measured ({why})" if why else
                f"TCP + an upload's DMA (dma_up) = {self.per_conns(self.case_ratio('dma_up'))} of "
                f"TCP, gpuhttpd upload = "
                f"{self.per_conns(self.gpuhttpd_over('upload', 'dma_up'))} of it; TCP + a "
                f"download's DMA (dma_down) = {self.per_conns(self.case_ratio('dma_down'))} of "
                f"TCP, gpuhttpd download = "
                f"{self.per_conns(self.gpuhttpd_over('download', 'dma_down'))} of it")
        f.append(f"- (d) the fair ceiling: {fair}. Without "
                 f"the DMA, the same spans (span_up, span_down): gpuhttpd upload = "
                 f"{self.per_conns(self.gpuhttpd_over('upload', 'span_up'))}, download = "
                 f"{self.per_conns(self.gpuhttpd_over('download', 'span_down'))} of them.")

        f.append(f"- (e) huge pages: tcp_huge = {self.per_conns(self.case_ratio('tcp_huge'))} of "
                 f"TCP; span_up_huge over span_up "
                 f"{self.per_conns(self.case_ratio('span_up_huge', 'span_up'))}, dma_up_huge over "
                 f"dma_up {self.per_conns(self.case_ratio('dma_up_huge', 'dma_up'))}, "
                 f"span_down_huge over span_down "
                 f"{self.per_conns(self.case_ratio('span_down_huge', 'span_down'))}, "
                 f"dma_down_huge over dma_down "
                 f"{self.per_conns(self.case_ratio('dma_down_huge', 'dma_down'))}.")

        def check(c):
            a = self.best(self.a_runs(c, "download"))
            k = self.best(self.runs("loadgen", "A_check", c, "download"))
            return ratio(k["gbps"] if k else None, a["gbps"] if a else None)
        f.append(f"- client: loadgen checking every downloaded byte = {self.per_conns(check)} of "
                 f"the unchecked download.")

        f.append(f"- gpuhttpd A over TCP: upload "
                 f"{self.per_conns(self.gpuhttpd_over('upload', 'tcp'))}, download "
                 f"{self.per_conns(self.gpuhttpd_over('download', 'tcp'))}.")
        noise = []
        for c in self.conns:
            rates = [r["gbps"] for r in self.ok(self.runs("tcp_ceiling", "tcp", c) +
                                                self.runs("tcp_ceiling", "tcp_ref", c))]
            if rates:
                noise.append(f"{min(rates):.2f}-{max(rates):.2f} GB/s over {len(rates)} runs "
                             f"at {c}")
        f.append("- noise: plain TCP measured " + ("; ".join(noise) if noise else "never") + ".")
        return f

    def split_over(self, mode):
        def fn(c):
            s = self.best(self.runs("loadgen", "split", c, mode))
            return ratio(s["gbps"] if s else None, self.best_gbps("tcp_ceiling", "split", c))
        return fn

    def header(self):
        m = self.meta
        return [
            "# gpuhttpd gap probe: the 8-16 connection gap",
            "",
            f"backend {m.get('backend')}, {m.get('bytes')} per connection, {m.get('cores')} cores "
            f"(split: {m.get('low_cpus')} / {m.get('high_cpus')}), {m.get('rounds')} rounds of the "
            f"tcp cases and of A, {m.get('ab_rounds')} A/B alternation(s) per variant, GPU: "
            f"{m.get('gpu') or '-'}, commit {m.get('commit')}, {m.get('date')}, "
            f"{m.get('elapsed_s', '?')} s",
            "",
            ("GB/s = 10^9 bytes/s, the best of a case's runs (min-max: their spread). vs TCP = "
             "that "
            "over the best plain `tcp` run at the same connection count. vs A (paired) = the "
            "median over alternations of a variant's run over A's run just before it. busy, "
            "steal and runnable: the whole machine over the timed part of the best run (steal: "
            "time the hypervisor took; runnable: threads running or waiting for a core). CPU "
            "s/GB: recv = the receiving side (the server of an upload, loadgen of a download; "
            "the reader threads of tcp), send = the sending side, machine = all cores' busy "
            "time. DMA GB/s: the background loop's rate beside the transfer, or the rate of an "
            "inline DMA case (it copies every byte)."),
            "",
        ]


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    r = Report(load(sys.argv[1]))
    print("\n".join(r.header() + ["## Findings", ""] + r.findings() + ["", "## Table", ""] +
                    r.table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

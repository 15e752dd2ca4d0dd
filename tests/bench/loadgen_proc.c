#include "loadgen.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* utime + stime of pid in seconds. The command name may hold spaces, so the fields
 * are counted from the last ')'. */
static int proc_cpu_seconds(pid_t pid, double *seconds)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')');
    unsigned long long utime, stime;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return -1;
    *seconds = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
    return 0;
}

static long proc_peak_rss_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Writing 5 to clear_refs resets the peak RSS to the current RSS (Linux 4.0+). */
static bool proc_reset_peak_rss(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

void lg_usage_mark_start(struct shared *shared)
{
    pid_t pid = shared->opt->server_pid;
    shared->usage.client_cpu_before_s = lg_process_cpu_s();
    lg_machine_start(&shared->usage.machine);
    if (pid <= 0)
        return;
    shared->usage.rss_reset = proc_reset_peak_rss(pid);
    shared->usage.cpu_ok = proc_cpu_seconds(pid, &shared->usage.cpu_before_s) == 0;
}

void lg_usage_mark_end(struct shared *shared)
{
    pid_t pid = shared->opt->server_pid;
    lg_machine_stop(&shared->usage.machine);
    shared->usage.client_cpu_after_s = lg_process_cpu_s();
    if (pid <= 0)
        return;
    shared->usage.cpu_ok =
        shared->usage.cpu_ok && proc_cpu_seconds(pid, &shared->usage.cpu_after_s) == 0;
    shared->usage.peak_rss_kib = proc_peak_rss_kib(pid);
}

/* This process's CPU time and the machine's over the timed part. */
static void format_client(const struct options *opt, const struct server_usage *u,
                          uint64_t bytes, char *out, size_t cap)
{
    char machine[256];
    double cpu = u->client_cpu_before_s >= 0 && u->client_cpu_after_s >= 0
                     ? u->client_cpu_after_s - u->client_cpu_before_s
                     : -1;
    double per_gb = cpu >= 0 && bytes ? cpu / ((double)bytes / 1e9) : -1;
    if (opt->json) {
        lg_machine_json(&u->machine, machine, sizeof machine);
        snprintf(out, cap, "\"client_cpu_s\":%.3f,\"client_cpu_s_per_gb\":%.4f,%s", cpu, per_gb,
                 machine);
    } else {
        lg_machine_text(&u->machine, machine, sizeof machine);
        snprintf(out, cap, "client: %.3f s CPU (%.4f s/GB); %s", cpu, per_gb, machine);
    }
}

/* The server's usage as JSON members (each followed by a comma) or as a text line,
 * after the client's and the machine's. */
void lg_format_usage(const struct options *opt, const struct server_usage *u, uint64_t bytes,
                     char *out, size_t cap)
{
    format_client(opt, u, bytes, out, cap);
    size_t used = strlen(out);
    out += used;
    cap -= used;
    if (opt->server_pid <= 0)
        return;
    double cpu = u->cpu_ok ? u->cpu_after_s - u->cpu_before_s : -1;
    double per_gb = u->cpu_ok && bytes ? cpu / ((double)bytes / 1e9) : -1;
    double rss_mib = u->peak_rss_kib >= 0 ? (double)u->peak_rss_kib / 1024 : -1;
    if (opt->json)
        snprintf(out, cap,
                 "\"server_cpu_s\":%.3f,\"server_cpu_s_per_gb\":%.4f,"
                 "\"server_peak_rss_mib\":%.1f,\"server_peak_rss_timed_only\":%s,",
                 cpu, per_gb, rss_mib, u->rss_reset ? "true" : "false");
    else
        snprintf(out, cap, "server: %.3f s CPU (%.4f s/GB), peak RSS %.1f MiB%s\n", cpu, per_gb,
                 rss_mib, u->rss_reset ? "" : " (over its whole life)");
}

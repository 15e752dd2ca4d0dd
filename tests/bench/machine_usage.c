#define _GNU_SOURCE
#include "machine_usage.h"

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The aggregate "cpu" line of /proc/stat: busy (user, nice, system, irq, softirq),
 * steal, and all of it (idle and iowait too; guest time is inside user already). */
static int read_stat(unsigned long long *busy, unsigned long long *steal,
                     unsigned long long *total)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long user, nice, sys, idle, iowait, irq, softirq, st = 0;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle,
                   &iowait, &irq, &softirq, &st);
    fclose(f);
    if (n < 7)
        return -1;
    *busy = user + nice + sys + irq + softirq;
    *steal = st;
    *total = *busy + idle + iowait + st;
    return 0;
}

/* The running count of /proc/loadavg ("0.50 0.40 0.30 3/456 12345"), this thread
 * included; -1 when unreadable. */
static int read_running(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return -1;
    int running = -1;
    if (fscanf(f, "%*f %*f %*f %d/", &running) != 1)
        running = -1;
    fclose(f);
    return running;
}

static void *sampler_main(void *arg)
{
    struct lg_machine *m = arg;
    const struct timespec period = {0, 5 * 1000 * 1000};
    while (!atomic_load(&m->stop)) {
        int running = read_running();
        if (running > 0) {
            m->runnable_sum += running - 1; /* not the sampler itself */
            m->samples++;
        }
        nanosleep(&period, NULL);
    }
    return NULL;
}

void lg_machine_start(struct lg_machine *m)
{
    *m = (struct lg_machine){0};
    m->ok = read_stat(&m->busy0, &m->steal0, &m->total0) == 0;
    atomic_init(&m->stop, false);
    m->sampling = pthread_create(&m->sampler, NULL, sampler_main, m) == 0;
}

void lg_machine_stop(struct lg_machine *m)
{
    unsigned long long busy, steal, total;
    if (m->sampling) {
        atomic_store(&m->stop, true);
        pthread_join(m->sampler, NULL);
        m->sampling = false;
    }
    m->ok = m->ok && read_stat(&busy, &steal, &total) == 0 && total > m->total0;
    if (m->ok) {
        m->busy = busy - m->busy0;
        m->steal = steal - m->steal0;
        m->total = total - m->total0;
    }
}

struct figures {
    long cores;
    double busy, steal, cpu_s, runnable;
};

static struct figures figures_of(const struct lg_machine *m)
{
    struct figures f = {sysconf(_SC_NPROCESSORS_ONLN), -1, -1, -1, -1};
    if (m->ok) {
        f.busy = (double)m->busy / (double)m->total;
        f.steal = (double)m->steal / (double)m->total;
        f.cpu_s = (double)m->busy / (double)sysconf(_SC_CLK_TCK);
    }
    if (m->samples)
        f.runnable = m->runnable_sum / (double)m->samples;
    return f;
}

void lg_machine_json(const struct lg_machine *m, char *out, size_t cap)
{
    struct figures f = figures_of(m);
    snprintf(out, cap,
             "\"cores\":%ld,\"machine_busy\":%.3f,\"machine_steal\":%.3f,"
             "\"machine_cpu_s\":%.3f,\"runnable_mean\":%.1f,",
             f.cores, f.busy, f.steal, f.cpu_s, f.runnable);
}

void lg_machine_text(const struct lg_machine *m, char *out, size_t cap)
{
    struct figures f = figures_of(m);
    snprintf(out, cap, "machine: %ld cores, %.0f%% busy, %.0f%% stolen, %.3f CPU s, "
                       "%.1f threads runnable on average\n",
             f.cores, 100 * f.busy, 100 * f.steal, f.cpu_s, f.runnable);
}

double lg_process_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

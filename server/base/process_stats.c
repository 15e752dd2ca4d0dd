#include "process_stats.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int ghd_process_stats_get(struct ghd_process_stats *st)
{
    memset(st, 0, sizeof(*st));
    int rc = 0;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        st->cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                          (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        st->max_fds = (uint64_t)rl.rlim_cur;
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long long size = 0, resident = 0;
    if (f && fscanf(f, "%llu %llu", &size, &resident) == 2 && page > 0) {
        st->virtual_bytes = size * (uint64_t)page;
        st->resident_bytes = resident * (uint64_t)page;
    } else {
        rc = -1;
    }
    if (f)
        fclose(f);
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            st->open_fds++;
    closedir(d);
    if (st->open_fds)
        st->open_fds--; /* the directory's own descriptor */
    return rc;
}

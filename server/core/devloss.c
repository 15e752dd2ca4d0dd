#include "devloss.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

void ghd_devloss_init(struct ghd_devloss *d)
{
    memset(d, 0, sizeof(*d));
    atomic_init(&d->lost, 0);
    pthread_mutex_init(&d->lock, NULL);
}

void ghd_devloss_destroy(struct ghd_devloss *d)
{
    pthread_mutex_destroy(&d->lock);
}

int ghd_devloss_mark(struct ghd_devloss *d, const char *fmt, ...)
{
    int first = 0;
    pthread_mutex_lock(&d->lock);
    if (!atomic_load(&d->lost)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
        va_end(ap);
        atomic_store(&d->lost, 1); /* after the reason: a reader that sees it lost finds it */
        first = 1;
    }
    pthread_mutex_unlock(&d->lock);
    return first;
}

int ghd_devloss_get(struct ghd_devloss *d, struct ghd_err *err)
{
    if (!atomic_load(&d->lost))
        return 0;
    if (err) {
        pthread_mutex_lock(&d->lock);
        ghd_err_set(err, GHD_EDEVLOST, "%s", d->reason);
        pthread_mutex_unlock(&d->lock);
    }
    return 1;
}

#include "fault_guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

/* What the thread's guard covers. Written before the jump point is armed and
 * read only by this thread's own signal handler. */
static _Thread_local sigjmp_buf *guard_jump;
static _Thread_local uintptr_t guard_lo, guard_hi;

static struct sigaction previous;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    if (guard_jump && a >= guard_lo && a < guard_hi)
        siglongjmp(*guard_jump, 1);
    /* Not a guarded access: whatever was there before handles it. */
    if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
        previous.sa_sigaction(sig, si, uc);
        return;
    }
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler) {
        previous.sa_handler(sig);
        return;
    }
    /* Returning re-runs the access, which now faults with the default action. */
    signal(sig, SIG_DFL);
}

/* Installs the handler when SIGBUS is not ours (first use, or someone, a
 * test harness say, replaced it since); a syscall per guarded copy, which
 * moves megabytes. */
static void install(void)
{
    struct sigaction now;
    if (sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
        now.sa_sigaction == on_sigbus)
        return;
    pthread_mutex_lock(&install_lock);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    struct sigaction old;
    if (sigaction(SIGBUS, &sa, &old) == 0 &&
        !((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_sigbus))
        previous = old;
    pthread_mutex_unlock(&install_lock);
}

int ghd_fault_guard_run(const void *lo, size_t n, int (*fn)(void *ctx), void *ctx,
                        int *faulted)
{
    install();
    sigjmp_buf jump;
    *faulted = 0;
    guard_lo = (uintptr_t)lo;
    guard_hi = (uintptr_t)lo + n;
    if (sigsetjmp(jump, 1)) { /* the handler jumped back: the mask is restored */
        guard_jump = NULL;
        *faulted = 1;
        return 0;
    }
    guard_jump = &jump;
    int rc = fn(ctx);
    guard_jump = NULL;
    return rc;
}

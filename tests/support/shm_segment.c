/* Shared-memory segments for the region tests (shm_segment.h). */
#include "shm_segment.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

void support_shm_open(struct support_shm *g, size_t size)
{
    static int seq;
    snprintf(g->name, sizeof(g->name), "/ghd_test_%d_%d", (int)getpid(), seq++);
    g->fd = shm_open(g->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(g->fd >= 0);
    assert_int_equal(ftruncate(g->fd, (off_t)size), 0);
    g->p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
    assert_true(g->p != MAP_FAILED);
    g->size = size;
    for (size_t i = 0; i < size; i++)
        g->p[i] = (unsigned char)(i * 7 + 3);
}

void support_shm_close(struct support_shm *g)
{
    munmap(g->p, g->size);
    close(g->fd);
    shm_unlink(g->name);
}

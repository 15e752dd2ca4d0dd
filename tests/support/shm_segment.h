#ifndef GHD_TESTS_SUPPORT_SHM_SEGMENT_H
#define GHD_TESTS_SUPPORT_SHM_SEGMENT_H

/* A POSIX shared-memory segment made by the test process, for the region
 * tests to register (POST /v1/regions {"shm": name}): named per process,
 * mapped here, and filled with a pattern, byte i being (i * 7 + 3) & 0xff. */
#include <stddef.h>

struct support_shm {
    char name[64];
    int fd;
    unsigned char *p;
    size_t size;
};

/* Creates, sizes, maps and fills a new segment; fails the test otherwise. */
void support_shm_open(struct support_shm *g, size_t size);
/* Unmaps, closes and unlinks it. */
void support_shm_close(struct support_shm *g);

#endif

#ifndef GHD_CORE_TIERS_TIER_DISK_H
#define GHD_CORE_TIERS_TIER_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* The disk tier's files (core/tier.h), one per spilled buffer:
 * DIR/<buffer id>.ghdt, a header of GHD_TIER_FILE_HEADER bytes, then the
 * buffer's bytes from that offset on (so that the data lies aligned for
 * large, page-aligned reads and writes). The header, little-endian:
 *
 *     0   8  magic "GHDTIER\0"
 *     8   4  format version (GHD_TIER_FILE_VERSION, 1)
 *     12  4  header bytes (4096)
 *     16  8  the buffer's size in bytes
 *     24  8  the buffer's version (its ETag's number) when it was written
 *     32  72 the buffer's id, NUL-padded
 *     104    zeros up to the header's end
 *
 * A file whose magic, version, header size, size or id do not match what
 * the buffer expects, or whose data is short, is never read as its bytes:
 * the buffer is unreadable instead. A change that a version-1 reader would
 * misread takes a new version; README.md here has the whole format, the
 * version rule and what a reader checks. Version 1 is what a later start
 * could find again (buffers that survive a restart); this one deletes its
 * files when their buffers go. Written and read with O_DIRECT where the
 * filesystem takes it (tier_disk.c); the bytes are the same either way. */

#define GHD_TIER_FILE_HEADER 4096
#define GHD_TIER_FILE_VERSION 1
#define GHD_TIER_FILE_SUFFIX ".ghdt"

struct ghd_tier_file_id {
    const char *dir;
    const char *id;
    uint64_t size;
    uint64_t version;
    int direct; /* with O_DIRECT where the filesystem takes it (tier_disk.c) */
};

/* Creates (or truncates) the file and writes its header; *fd to write the
 * data at GHD_TIER_FILE_HEADER + offset. GHD_ENOMEM (the disk refuses:
 * full, read-only, missing) with the reason in *err. */
int ghd_tier_file_create(const struct ghd_tier_file_id *f, int *fd, struct ghd_err *err);
/* Writes n bytes at data offset `off`; GHD_ENOMEM with the reason. */
int ghd_tier_file_write(int fd, const void *src, size_t n, uint64_t off, struct ghd_err *err);
/* Opens the file and checks its header against f; GHD_EUNREADABLE with the
 * reason when it is missing, short or another buffer's. */
int ghd_tier_file_open(const struct ghd_tier_file_id *f, int *fd, struct ghd_err *err);
/* Reads n bytes at data offset `off`; GHD_EUNREADABLE on an I/O error or a
 * short file. */
int ghd_tier_file_read(int fd, void *dst, size_t n, uint64_t off, struct ghd_err *err);
void ghd_tier_file_remove(const char *dir, const char *id);
/* The file's path into out. */
void ghd_tier_file_path(const char *dir, const char *id, char *out, size_t len);

#ifdef GHD_TESTABLE
/* Test hooks: the nth data write (or read) from now fails as a full disk
 * (or an I/O error) would; 0 turns it off. */
void ghd_tier_file_fail_write_nth(long n);
void ghd_tier_file_fail_read_nth(long n);
/* While on, opening a file with O_DIRECT fails with EINVAL, as on a
 * filesystem that refuses it. */
void ghd_tier_file_refuse_direct(int on);
#endif

#endif

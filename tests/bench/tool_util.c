#include "tool_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

int lg_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    uint64_t unit = 1;
    switch (*end) {
    case 'k':
    case 'K':
        unit = 1ULL << 10;
        end++;
        break;
    case 'm':
    case 'M':
        unit = 1ULL << 20;
        end++;
        break;
    case 'g':
    case 'G':
        unit = 1ULL << 30;
        end++;
        break;
    default: break;
    }
    if (unit > 1 && end[0] == 'i' && end[1] == 'B')
        end += 2;
    if (*end != '\0')
        return -1;
    *out = v * unit;
    return 0;
}

double lg_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void lg_json_escape(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
}

void lg_set_sockbuf(int fd, int bytes)
{
    if (bytes <= 0)
        return;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

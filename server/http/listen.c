#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.h"

int ghd_listen_open(const char *bind_ipv4, unsigned port, int *fd, unsigned *bound, char *why,
                    size_t why_len)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, bind_ipv4, &addr.sin_addr) != 1) {
        snprintf(why, why_len, "--bind '%s' is not an IPv4 address", bind_ipv4);
        return GHD_EINVAL;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
        snprintf(why, why_len, "cannot open a socket: %s", strerror(errno));
        return GHD_EUNAVAIL;
    }
    int one = 1;
    const char *step = "set SO_REUSEADDR on";
    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
        goto fail;
    step = "bind";
    if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        goto fail;
    step = "listen on";
    if (listen(s, SOMAXCONN) != 0)
        goto fail;
    socklen_t len = sizeof(addr);
    if (getsockname(s, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    *fd = s;
    *bound = port;
    return 0;
fail:;
    int err = errno;
    close(s);
    snprintf(why, why_len, "cannot %s %s:%u: %s%s", step, bind_ipv4, port, strerror(err),
             err == EADDRINUSE ? " (another process, perhaps another gpuhttpd, listens there: "
                                 "stop it or choose another --port)"
                               : "");
    return GHD_EUNAVAIL;
}

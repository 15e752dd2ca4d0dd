#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.h"

int ghd_listen_open(const char *bind_ipv4, unsigned port, int *fd, unsigned *bound,
                    struct ghd_err *err)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, bind_ipv4, &addr.sin_addr) != 1)
        return ghd_err_set(err, GHD_EINVAL, "--bind '%s' is not an IPv4 address", bind_ipv4);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return ghd_err_set(err, GHD_EUNAVAIL, "cannot open a socket: %s", strerror(errno));
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
    int e = errno;
    close(s);
    return ghd_err_set(err, GHD_EUNAVAIL, "cannot %s %s:%u: %s%s", step, bind_ipv4, port,
                       strerror(e),
                       e == EADDRINUSE ? " (another process, perhaps another gpuhttpd, listens "
                                         "there: stop it or choose another port)"
                                       : "");
}

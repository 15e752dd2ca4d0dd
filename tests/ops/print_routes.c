/* Prints the router's table, one "METHOD PATTERN" a line, for check_routes.py. */
#include <stdio.h>

#include "http/router.h"

int main(void)
{
    size_t n;
    const struct ghd_route *routes = ghd_router_table(&n);
    for (size_t i = 0; i < n; i++)
        printf("%s %s\n", routes[i].method, routes[i].pattern);
    return n ? 0 : 1;
}

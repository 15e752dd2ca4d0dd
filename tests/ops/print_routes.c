/* Prints the route table, one "METHOD PATTERN" a line, for check_routes.py. */
#include <stdio.h>

#include "handlers/handlers.h"

int main(void)
{
    for (size_t i = 0; i < ghd_routes.count; i++)
        printf("%s %s\n", ghd_routes.table[i].method, ghd_routes.table[i].pattern);
    return ghd_routes.count ? 0 : 1;
}

#include "server/roles.h"
#include <stdio.h>
int srv_gateway_main(int argc, char **argv)
{
    fprintf(stderr, "wharfd: gateway: not built yet\n");
    return 2;
}

/* Command lines of the cluster roles (roles.c), dispatched from main.c. */
#ifndef WH_SERVER_ROLES_H
#define WH_SERVER_ROLES_H

#include <stddef.h>
#include <stdint.h>

int srv_storage_main(int argc, char **argv);
int srv_gateway_main(int argc, char **argv);

/* Shared option helpers. */
int srv_parse_listen(const char *s, char *host, size_t hostlen, uint16_t *port);
const char *srv_cluster_secret(void);             /* NULL (and says why) when unset/short */
void srv_block_signals(void);

#endif

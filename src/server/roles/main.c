/* SPDX-License-Identifier: Apache-2.0 */
/* wharfd: the S3 server. `wharfd serve --data DIR --listen HOST:PORT`; the commands are
 * commands.c's table. */
#include "roles/roles.h"

int main(int argc, char **argv)
{
    return role_wharfd_main(argc, argv);
}

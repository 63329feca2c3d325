/* SPDX-License-Identifier: Apache-2.0 */
/* wharfd's commands (`wharfd serve|gateway|storage|check-config|user|key|node`), one row each of
 * the table below: argv[1] picks the role's main (roles.h). */
#include "roles/roles.h"
#include "roles/config.h"
#include "front/front.h"

#include <stdio.h>
#include <string.h>

static int check_config_main(int argc, char **argv);

/* wharfd's commands: argv[1] -> its main. usage: its lines of `wharfd --help`, after "wharfd "
 * (NULL: said by another row's). */
static const struct {
    const char *name;
    role_main_fn main;
    const char *usage;
} commands[] = {
    {.name = "serve",
     .main = role_serve_main,
     .usage = "serve --data DIR --listen HOST:PORT [options]\n"
              "       wharfd serve|gateway|storage --config FILE [options] [--print-config]"},
    {.name = "check-config",
     .main = check_config_main,
     .usage = "check-config FILE  (check a configuration file, start nothing)"},
    {.name = "gateway",
     .main = role_gateway_main,
     .usage = "gateway --meta URL --listen HOST:PORT [options]  (a cluster's S3 front)"},
    {.name = "storage",
     .main = role_storage_main,
     .usage = "storage --meta URL --data DIR --listen HOST:PORT  (a cluster's storage)"},
    {.name = "user",
     .main = role_user_main,
     .usage = "user|key ...  (IAM users and access keys; wharfd user --help)"},
    {.name = "key", .main = role_user_main},
    {.name = "node",
     .main = role_node_main,
     .usage = "node list|drain|remove ...  (a cluster's storage servers)"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

void role_wharfd_usage(FILE *f)
{
    const char *lead = "usage: wharfd ";
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i].usage) {
            fprintf(f, "%s%s\n", lead, commands[i].usage);
            lead = "       wharfd ";
        }
    fprintf(f, "       wharfd --help | --version\n");
    role_serve_help(f);
}

static int check_config_main(int argc, char **argv)
{
    static const role_main_fn mains[3] = {role_serve_main, role_gateway_main, role_storage_main};
    return role_conf_check_main(argc, argv, mains);
}

int role_wharfd_main(int argc, char **argv)
{
    const char *cmd = argc >= 2 ? argv[1] : "";
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        role_wharfd_usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("wharfd %s\n", FRONT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].main(argc, argv);
    return role_usage_error(NULL, "expected the command 'serve', got '%s'", cmd);
}

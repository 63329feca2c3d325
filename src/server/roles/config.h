/* SPDX-License-Identifier: Apache-2.0 */
/* wharfd's configuration files: one per process (`wharfd serve --config FILE`, also gateway
 * and storage), parsed with libinih. Every long option of a role is a key of its file: the
 * option's name with '_' for '-' (--max-conns is max_conns), and an option given on the
 * command line overrides its key. The file's keys become options placed before the command
 * line's own, so one parser (the role's getopt table) checks both and the last one wins.
 *
 * A file may open with a section naming its role ([serve], [gateway], [storage]); keys of
 * another role's section are refused. `wharfd check-config FILE` (which needs the section)
 * runs the role's parser over the file and stops; `--print-config` prints the effective
 * settings with the source of each, secrets masked, and stops. On SIGHUP the running role
 * parses its file again (role_conf_reload): a bad file changes nothing, a changed key that
 * can change live is applied, any other changed key is logged as needing a restart.
 *
 * Secrets come from files (*_file keys, --*-file flags) or the environment, never only from
 * a flag; a secret file others may read or write is refused, a group-readable one warned of
 * (role_conf_secret_mode). docs/operations.md lists the keys. */
#ifndef WH_ROLES_CONFIG_H
#define WH_ROLES_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct option;

/* A role's main: parses argv[2..] and runs, or returns where role_conf_stop_here says so. */
typedef int (*role_main_fn)(int argc, char **argv);

/* Before a role's getopt loop (argv[1] is the role): takes --config FILE and --print-config
 * out of the command line, reads FILE and makes *argv the file's keys as long options
 * followed by the command line's own (the new vector lives as long as the process). 0, or
 * 2 after saying what is wrong (an unreadable file, a line that is not key = value, an
 * unknown key, with the file's name and line). */
int role_conf_begin(const char *role, role_main_fn role_main, const struct option *opts, int *argc,
                    char ***argv);
/* After the getopt loop: errors said from here on name no line of the file. */
void role_conf_parsed(void);
/* "FILE:LINE: key KEY: " when the option being parsed (getopt's optind) came from the file,
 * else nothing; role_usage_error prints it before the reason. */
void role_conf_where(FILE *f);
/* After the role checked its options, before it starts anything: true when it stops here
 * (check-config, --print-config, a reload's check); the caller then returns
 * role_conf_finish(), which prints what was asked and returns 0. */
bool role_conf_stop_here(void);
int role_conf_finish(void);

/* `wharfd check-config FILE`: the role from the file's section, its parser over the file.
 * mains: the roles' mains, indexed serve, gateway, storage. 0: good; 2: what is wrong said. */
int role_conf_check_main(int argc, char **argv, const role_main_fn mains[3]);

/* SIGHUP (the signal thread): parses the file again with the command line's options as at
 * start. A bad file: logged, nothing changes, returns -1. Else each changed key the role can
 * change live is handed to apply (0: applied; -1: refused, logged by apply), each other
 * changed key logged as needing a restart; 0. No file: 0, nothing done. */
typedef int (*role_conf_apply_fn)(void *arg, const char *key, const char *value);
int role_conf_reload(role_conf_apply_fn apply, void *arg);

/* A secret file's mode: refused (-1, said on stderr) when others may read or write it, or
 * when it cannot be read; a warning when its group may read it. key names the setting. */
int role_conf_secret_mode(const char *key, const char *path);
/* Reads a secret: the first line of path (its mode checked as above), without the line end,
 * into a new string (*out). 0, or -1 after saying what is wrong (naming key). */
int role_conf_read_secret(const char *key, const char *path, char **out);

/* Whether the option name (e.g. "meta") was given on the command line, not in the file. */
bool role_conf_on_command_line(const char *name);

/* The fuzz driver's entry: the file parser over text, for role. 0 good, else the error. */
int role_conf_parse_text(const char *role, const char *text, size_t len);

#endif

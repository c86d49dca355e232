/* The subcommands, dispatched by main.c.  Each returns an exit code. */
#ifndef MEMPROF_CMD_H
#define MEMPROF_CMD_H

/* argv[0] is the subcommand's name. */
int cmd_attach(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif

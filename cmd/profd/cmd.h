/* cmd.h: the subcommands of the profd binary, one file each. Each takes the
 * arguments after the command name (argv[0] is the command) and returns the exit
 * status: 0 success, 1 failure, 2 usage error. */
#ifndef PROFD_CMD_H
#define PROFD_CMD_H

int pd_cmd_pprof(int argc, char **argv);
int pd_cmd_tsdb(int argc, char **argv);
int pd_cmd_tsdb_analyze(const char *dir);
int pd_cmd_check(int argc, char **argv);
int pd_cmd_run(int argc, char **argv);

#endif

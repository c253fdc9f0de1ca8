/* main.c: the profd binary's entry point: global flags and subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "profd/api.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: profd <command> [flags] [args]\n"
		"\n"
		"profd is a continuous-profiling server for pprof profiles.\n"
		"\n"
		"commands:\n"
		"  run        the daemon: scrape the configured targets and store their profiles\n"
		"  check      validate configuration files (like promtool check config)\n"
		"  pprof      read, check, report on, merge and diff pprof files\n"
		"  tsdb       import, analyze and query a storage directory\n"
		"\n"
		"flags:\n"
		"  -h, --help     show this help\n"
		"  --version      print the version\n"
		"\n"
		"Run 'profd <command> --help' for a command's flags.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("profd version %s\n", PD_VERSION);
		return 0;
	}
	/* not a command of its own: the child process of a report=svg layout */
	if (strcmp(cmd, "__callgraph-layout") == 0)
		pd_api_callgraph_layout_main(argc - 1, argv + 1);
	if (strcmp(cmd, "run") == 0 || strcmp(cmd, "all") == 0)
		return pd_cmd_run(argc - 1, argv + 1);
	if (strcmp(cmd, "check") == 0)
		return pd_cmd_check(argc - 1, argv + 1);
	if (strcmp(cmd, "pprof") == 0)
		return pd_cmd_pprof(argc - 1, argv + 1);
	if (strcmp(cmd, "tsdb") == 0)
		return pd_cmd_tsdb(argc - 1, argv + 1);
	fprintf(stderr, "profd: unknown command \"%s\"\n\n", cmd);
	usage(stderr);
	return 2;
}

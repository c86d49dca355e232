/*
 * A program that embeds CPython (links Debian's libpython3.11.so, as uwsgi
 * or a plug-in host does) and runs a script in it: embed_app SCRIPT ARGS...
 * It is not called python and its executable exports no CPython symbol, so
 * the loader must find the interpreter in the mapped libpython.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

int main(int argc, char **argv)
{
	PyConfig config;
	PyStatus status;

	if (argc < 2) {
		fprintf(stderr, "usage: embed_app SCRIPT [ARGS...]\n");
		return 2;
	}
	PyConfig_InitPythonConfig(&config);
	/* Our arguments are the script's, not options of python3's command line. */
	config.parse_argv = 0;
	/* sys.argv is the script and its arguments, as `python3 SCRIPT ARGS...` has it. */
	status = PyConfig_SetBytesArgv(&config, argc - 1, argv + 1);
	if (!PyStatus_Exception(status))
		status = PyConfig_SetBytesString(&config, &config.run_filename, argv[1]);
	if (!PyStatus_Exception(status))
		status = Py_InitializeFromConfig(&config);
	PyConfig_Clear(&config);
	if (PyStatus_Exception(status))
		Py_ExitStatusException(status);
	return Py_RunMain();
}

/* A shared library with the right file name but no entry point. */
#include "mnemo/abi/mnemo_abi.h"

MNEMO_EXPORT int mnemo_plugin_something_else(void) { return 42; }

/* A plugin built against a future ABI: the loader must refuse it with a clear reason. */
#include "mnemo/abi/plugin_abi.h"

static const char* const types[] = {"wrongabi", 0};
static const mnemo_plugin_api api = {999u, sizeof(mnemo_plugin_api), "wrongabi", "test module", types, 0, 0, 0};

MNEMO_EXPORT const mnemo_plugin_api* mnemo_plugin_entry(void) { return &api; }

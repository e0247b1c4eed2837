/* A backend built against an older ABI version. */
#include "mnemo/abi/backend_abi.h"

static const mnemo_backend_api api = {.abi_version = 0u, .struct_size = sizeof(mnemo_backend_api), .name = "wrongabi"};

MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void) { return &api; }

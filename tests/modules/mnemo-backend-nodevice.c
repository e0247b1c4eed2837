/* A backend whose driver is missing: it loads, reports zero devices and refuses to open. */
#include <stdio.h>

#include "mnemo/abi/backend_abi.h"
#include "refusing_backend.h"

static int32_t device_count(void) { return 0; }
static mnemo_status device_info(int32_t i, mnemo_device_info* out) { (void)i; (void)out; return MNEMO_ERR_INVALID; }
static mnemo_status open_dev(int32_t d, const mnemo_backend_config* c, void** ctx, mnemo_error* err) {
    (void)d; (void)c; (void)ctx;
    snprintf(err->message, sizeof err->message, "no driver");
    return MNEMO_ERR_DEVICE;
}

static const char* why(void) { return "simulated: no hardware"; }

static const mnemo_backend_api api = {MNEMO_ABI_VERSION, sizeof(mnemo_backend_api), "nodevice", device_count,
                                      device_info, open_dev, close_dev, 0, alloc, 0, release, rw, rd, supports,
                                      prep, run, rel, why};

MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void) { return &api; }

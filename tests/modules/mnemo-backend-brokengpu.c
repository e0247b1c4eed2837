/* A GPU that fails: it reports one discrete device and refuses to open it (a lost device, a
 * missing feature), so `--backend auto` must skip it and say why. */
#include <stdio.h>
#include <string.h>

#include "mnemo/abi/backend_abi.h"
#include "refusing_backend.h"

static int32_t device_count(void) { return 1; }
static mnemo_status device_info(int32_t i, mnemo_device_info* out) {
    if (i != 0) return MNEMO_ERR_INVALID;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "Simulated GPU");
    out->type = MNEMO_DEVICE_GPU;
    return MNEMO_OK;
}
static mnemo_status open_dev(int32_t d, const mnemo_backend_config* c, void** ctx, mnemo_error* err) {
    (void)d; (void)c; (void)ctx;
    snprintf(err->message, sizeof err->message, "simulated: the device lacks 16-bit storage");
    return MNEMO_ERR_DEVICE;
}

static const char* why(void) { return ""; }

static const mnemo_backend_api api = {MNEMO_ABI_VERSION, sizeof(mnemo_backend_api), "brokengpu", device_count,
                                      device_info, open_dev, close_dev, 0, alloc, 0, release, rw, rd, supports,
                                      prep, run, rel, why};

MNEMO_EXPORT const mnemo_backend_api* mnemo_backend_entry(void) { return &api; }

/* A second plugin that claims model_type "llama": loading a llama model must name both. */
#include <stdio.h>

#include "mnemo/abi/plugin_abi.h"

static mnemo_status create(const mnemo_host_api* host, const mnemo_context_params* params, mnemo_model_info* info,
                           void** out, mnemo_error* err) {
    (void)host; (void)params; (void)info; (void)out;
    snprintf(err->message, sizeof err->message, "dupllama test plugin loads nothing");
    return MNEMO_ERR_UNSUPPORTED;
}
static mnemo_status build(void* model, const mnemo_builder_api* b, mnemo_error* err) {
    (void)model; (void)b; (void)err;
    return MNEMO_ERR_UNSUPPORTED;
}
static void destroy(void* model) { (void)model; }

static const char* const types[] = {"llama", 0};
static const mnemo_plugin_api api = {MNEMO_ABI_VERSION, sizeof(mnemo_plugin_api), "dupllama", "test module", types,
                                     create, build, destroy};

MNEMO_EXPORT const mnemo_plugin_api* mnemo_plugin_entry(void) { return &api; }

/* The part of a test backend that never gets a device open: every call after open() fails. Shared
 * by the modules that simulate a missing driver (nodevice) and a GPU that refuses (brokengpu). */
#pragma once

#include "mnemo/abi/backend_abi.h"

static void close_dev(void* ctx) { (void)ctx; }
static mnemo_status alloc(void* c, uint64_t s, void** b, mnemo_error* e) { (void)c; (void)s; (void)b; (void)e; return MNEMO_ERR_DEVICE; }
static void release(void* c, void* b) { (void)c; (void)b; }
static mnemo_status rw(void* c, void* b, uint64_t o, const void* p, uint64_t s, mnemo_error* e) {
    (void)c; (void)b; (void)o; (void)p; (void)s; (void)e; return MNEMO_ERR_DEVICE;
}
static mnemo_status rd(void* c, void* b, uint64_t o, void* p, uint64_t s, mnemo_error* e) {
    (void)c; (void)b; (void)o; (void)p; (void)s; (void)e; return MNEMO_ERR_DEVICE;
}
static int32_t supports(void* c, const mnemo_node* n) { (void)c; (void)n; return 0; }
static mnemo_status prep(void* c, const mnemo_node* n, int32_t k, void** g, mnemo_error* e) {
    (void)c; (void)n; (void)k; (void)g; (void)e; return MNEMO_ERR_DEVICE;
}
static mnemo_status run(void* c, void* g, uint64_t* t, mnemo_error* e) { (void)c; (void)g; (void)t; (void)e; return MNEMO_ERR_DEVICE; }
static void rel(void* c, void* g) { (void)c; (void)g; }

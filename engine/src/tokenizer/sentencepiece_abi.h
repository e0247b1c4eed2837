/* The C interface of libmnemo-tokenizer-sentencepiece.so, the module that holds Debian's
 * libsentencepiece. Why a module: that library carries its own copy of protobuf-lite 3.14 and
 * exports it, so in a process that also loads libprotobuf (the knowledge server's gRPC client
 * and server) one of the two copies answers the other's calls and the process crashes while it
 * starts. libmnemo loads the module with RTLD_LOCAL | RTLD_DEEPBIND: its protobuf stays out of
 * the global scope and binds to itself. Only C types cross, and the module never frees what the
 * engine allocated or the reverse. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MNEMO_SPM_ENTRY_SYMBOL "mnemo_sentencepiece_api"
#define MNEMO_SPM_ABI_VERSION 1u

enum { MNEMO_SPM_BYTE = 1, MNEMO_SPM_CONTROL = 2, MNEMO_SPM_UNKNOWN = 4 };

typedef struct mnemo_spm mnemo_spm;

typedef struct mnemo_spm_api {
    uint32_t abi_version;
    /* NULL on failure, with the reason in err (always NUL-terminated). */
    mnemo_spm* (*load)(const char* path, char* err, size_t err_len);
    void (*free)(mnemo_spm* m);
    int32_t (*piece_size)(const mnemo_spm* m);
    /* The piece's bytes, valid while m is loaded. */
    const char* (*id_to_piece)(const mnemo_spm* m, int32_t id, size_t* len);
    int32_t (*kind)(const mnemo_spm* m, int32_t id); /* MNEMO_SPM_* bits */
    int32_t (*bos_id)(const mnemo_spm* m);
    int32_t (*eos_id)(const mnemo_spm* m);
    int32_t (*unk_id)(const mnemo_spm* m);
    int32_t (*piece_to_id)(const mnemo_spm* m, const char* piece, size_t len);
    /* Encodes text into out[0..cap): returns how many ids the text has (call again with a larger
     * buffer when that exceeds cap), or -1 with the reason in err. */
    int64_t (*encode)(const mnemo_spm* m, const char* text, size_t len, int32_t* out, size_t cap, char* err, size_t err_len);
} mnemo_spm_api;

typedef const mnemo_spm_api* (*mnemo_spm_entry_fn)(void);

#ifdef __cplusplus
}
#endif

// `mnemo-kb` dispatcher: picks the subcommand and maps errors to exit codes (0 ok, 1 runtime
// error, 2 usage error), with the same dispatcher as `mnemo` itself (app/common).
#include "app/dispatch.hpp"
#include "commands.hpp"

namespace {

using mnemo::app::Command;

const Command kCommands[] = {
    {"compress", mnemo::kb::cmd_compress, "train a VQ codec on a memory folder and write its memories as codes"},
    {"build", mnemo::kb::cmd_build, "memorize a corpus into a new bank (codec, records, retrieval index)"},
    {"add", mnemo::kb::cmd_add, "memorize a corpus into a new version of a bank, with its codec (a known doc_id replaces its document)"},
    {"delete", mnemo::kb::cmd_delete, "publish a new version of a bank without some documents (by doc_id)"},
    {"compact", mnemo::kb::cmd_compact, "publish a new version of a bank whose segments no longer hold retired records"},
    {"documents", mnemo::kb::cmd_documents, "list a bank's documents with their versions"},
    {"copy", mnemo::kb::cmd_copy, "copy a bank's published version to another store (a folder, rados://POOL/NS), checking every blob"},
    {"verify", mnemo::kb::cmd_verify, "read a whole bank and check every blob's SHA-256 and every record's CRC (exit 1: damage)"},
    {"push", mnemo::kb::cmd_push, "send a corpus to a running server, which memorizes it into a new version (admin token)"},
    {"export", mnemo::kb::cmd_export, "write a bank's current version as a compressed memory folder (mnemo run --memories)"},
#ifdef MNEMO_KB_SERVE
    {"serve", mnemo::kb::cmd_serve, "serve a bank over gRPC with TLS and access tokens (docs/kb-protocol.md)"},
    {"token", mnemo::kb::cmd_token, "make an access token for serve (token new --name N --scope read|admin --tokens F)"},
#endif
};

}  // namespace

int main(int argc, char** argv) {
    return mnemo::app::dispatch("mnemo-kb", MNEMO_VERSION, "The Mnemo knowledge server's tools (server/README.md).", kCommands,
                                argc, argv);
}

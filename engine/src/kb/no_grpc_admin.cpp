// A build without gRPC: the admin API exists, the calls do not.
#include "mnemo/error.hpp"
#include "mnemo/kb/kb_admin.hpp"

namespace mnemo {
namespace {

[[noreturn]] void no_client(const KbAdminConnection& c) {
    throw Error("knowledge server '" + c.url +
                "': this build of Mnemo has no knowledge-server client (built without gRPC: install libgrpc++-dev and rebuild)");
}

}  // namespace

KbAddResult kb_add_documents(const KbAdminConnection& c, const std::vector<KbAddDocument>&, const std::function<void(const KbAddProgress&)>&,
                             const std::atomic<bool>*) {
    no_client(c);
}

std::vector<KbDocumentInfo> kb_list_documents(const KbAdminConnection& c, size_t) { no_client(c); }

uint64_t kb_delete_documents(const KbAdminConnection& c, const std::vector<std::string>&) { no_client(c); }

}  // namespace mnemo

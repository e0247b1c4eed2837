// A build without gRPC: the API exists, the connection does not.
#include "mnemo/error.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo {

std::shared_ptr<KbSource> connect_kb(const KbSourceOptions& options, const MemoryFolderModel&) {
    throw Error("knowledge server '" + (options.urls.empty() ? options.url : options.urls.front()) +
                "': this build of Mnemo has no knowledge-server client (built without gRPC: install libgrpc++-dev and rebuild)");
}

}  // namespace mnemo

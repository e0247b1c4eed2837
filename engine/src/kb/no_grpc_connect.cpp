// A build without gRPC: the API exists, the connection does not.
#include "mnemo/error.hpp"
#include "mnemo/memory/remote_memory.hpp"

namespace mnemo {

std::shared_ptr<RemoteMemorySource> connect_knowledge_server(const RemoteMemoryOptions& options, const MemoryFolderModel&) {
    throw Error("knowledge server '" + options.url +
                "': this build of Mnemo has no knowledge-server client (built without gRPC: install libgrpc++-dev and rebuild)");
}

}  // namespace mnemo

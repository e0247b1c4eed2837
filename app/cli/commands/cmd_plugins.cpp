// `mnemo plugins`: every model plugin found, the model types it loads, and load failures.
#include <cstdio>

#include "commands.hpp"
#include "common.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/modules/registry.hpp"

namespace mnemo::cli {

int cmd_plugins(int argc, char** argv) {
    app::ArgParser p("plugins", "mnemo plugins", "List the model plugins that were found and the model types they load.");
    if (!p.parse(argc, argv, 2)) return 0;

    const PluginRegistry& reg = PluginRegistry::global();
    if (reg.modules().empty()) std::printf("no plugins found\n");
    for (const PluginModule& m : reg.modules()) {
        std::string types;
        for (const std::string& t : m.model_types) types += (types.empty() ? "" : ", ") + t;
        const char* desc = (m.api != nullptr && m.api->description != nullptr) ? m.api->description : "";
        std::printf("%s  (%s)\n  %s\n  model types: %s\n", printable(m.name).c_str(), printable(m.path).c_str(),
                    printable(desc).c_str(), types.empty() ? "-" : printable(types).c_str());
    }
    for (const LoadError& e : reg.load_errors()) {
        // File names from the search folders and the loader's words: escaped like any outside text.
        std::printf("failed to load %s: %s\n", printable(e.path).c_str(), printable(e.reason).c_str());
    }
    return 0;
}

}  // namespace mnemo::cli

#include "config_checks.hpp"

#include "mnemo/plugin.hpp"

namespace mnemo::config {

void require(bool ok, const std::string& what) {
    if (!ok) throw plugin::PluginError("config.json: " + what);
}

}  // namespace mnemo::config

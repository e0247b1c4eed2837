// Registries of runtime-loaded modules. Backends: libmnemo-backend-<name>.so; plugins:
// libmnemo-plugin-<name>.so. Search order (first found wins per module name):
//   1. $MNEMO_BACKEND_PATH / $MNEMO_PLUGIN_PATH (':'-separated folders or module files)
//   2. the folder of the running executable (the build tree)
//   3. the folder of libmnemo.so (an installed tree: <prefix>/lib/mnemo holds libmnemo and the
//      modules), so an installed or unpacked tree works wherever it lies
// A module that fails to load (missing symbol, ABI version mismatch, dlopen error) is not fatal:
// it is listed in load_errors() with the reason, so `mnemo devices` / `mnemo plugins` can show it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/abi/backend_abi.h"
#include "mnemo/abi/plugin_abi.h"

namespace mnemo {

struct LoadError {
    std::string path;
    std::string reason;
};

struct BackendModule {
    std::string name;  // api->name
    std::string path;
    const mnemo_backend_api* api = nullptr;
    std::shared_ptr<void> handle;  // dlclose on release
};

struct PluginModule {
    std::string name;
    std::string path;
    const mnemo_plugin_api* api = nullptr;
    std::vector<std::string> model_types;
    std::shared_ptr<void> handle;
};

struct DeviceEntry {
    std::string backend;
    int32_t index = 0;
    mnemo_device_info info{};
};

class MNEMO_API BackendRegistry {
public:
    // Scan the default search path (see above).
    static BackendRegistry& global();
    // Scan exactly these folders / files (tests use this).
    explicit BackendRegistry(const std::vector<std::string>& search_paths);

    const std::vector<BackendModule>& modules() const { return modules_; }
    const std::vector<LoadError>& load_errors() const { return errors_; }
    // nullptr when no such backend was loaded.
    const BackendModule* find(const std::string& name) const;
    // Throws an Error listing what is available (and why others failed to load).
    const BackendModule& require(const std::string& name) const;
    std::vector<DeviceEntry> devices() const;

private:
    std::vector<BackendModule> modules_;
    std::vector<LoadError> errors_;
};

class MNEMO_API PluginRegistry {
public:
    static PluginRegistry& global();
    explicit PluginRegistry(const std::vector<std::string>& search_paths);

    const std::vector<PluginModule>& modules() const { return modules_; }
    const std::vector<LoadError>& load_errors() const { return errors_; }
    // The plugin that loads `model_type`. Throws an Error naming the type and listing the known
    // ones when none does, and naming both plugins when two claim it.
    const PluginModule& for_model_type(const std::string& model_type) const;

private:
    std::vector<PluginModule> modules_;
    std::vector<LoadError> errors_;
};

// Default search folders for "backend" or "plugin" modules (env var first).
MNEMO_API std::vector<std::string> default_search_paths(const char* env_var);

}  // namespace mnemo

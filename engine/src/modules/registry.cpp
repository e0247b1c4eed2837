// Finding, loading and validating backend and plugin modules (see mnemo/modules/registry.hpp).
#include "mnemo/modules/registry.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "mnemo/error.hpp"

namespace fs = std::filesystem;

namespace mnemo {
namespace {

std::string executable_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}

// The folder of the file this code is in: libmnemo.so wherever it was installed (or the program,
// for the tests that link the engine statically).
std::string libmnemo_dir() {
    Dl_info self{};
    if (!dladdr(reinterpret_cast<void*>(&executable_dir), &self) || !self.dli_fname) return {};
    std::error_code ec;
    const fs::path lib = fs::canonical(self.dli_fname, ec);
    return ec ? std::string() : lib.parent_path().string();
}

std::vector<std::string> split_path_list(const char* text) {
    std::vector<std::string> out;
    if (!text) return out;
    std::stringstream s(text);
    std::string item;
    while (std::getline(s, item, ':'))
        if (!item.empty()) out.push_back(item);
    return out;
}

// Module files in search order; the first file of a given file name wins, so a module in
// MNEMO_*_PATH shadows the installed one.
std::vector<fs::path> find_module_files(const std::vector<std::string>& search, const std::string& prefix) {
    std::vector<fs::path> out;
    std::set<std::string> seen;
    auto consider = [&](const fs::path& p) {
        const std::string name = p.filename().string();
        if (name.rfind(prefix, 0) != 0 || p.extension() != ".so") return;
        if (seen.insert(name).second) out.push_back(p);
    };
    for (const std::string& entry : search) {
        std::error_code ec;
        fs::path p(entry);
        if (fs::is_regular_file(p, ec)) {
            // An explicitly named file is taken whatever its name (tests, out-of-tree modules).
            const std::string name = p.filename().string();
            if (seen.insert(name).second) out.push_back(p);
        } else if (fs::is_directory(p, ec)) {
            std::vector<fs::path> in_dir;
            for (const auto& e : fs::directory_iterator(p, ec))
                if (e.is_regular_file(ec)) in_dir.push_back(e.path());
            std::sort(in_dir.begin(), in_dir.end());
            for (const auto& f : in_dir) consider(f);
        }
    }
    return out;
}

struct Opened {
    std::shared_ptr<void> handle;
    void* entry = nullptr;
};

// dlopen + dlsym; on failure fills `reason`.
Opened open_module(const fs::path& path, const char* symbol, std::string& reason) {
    Opened o;
    dlerror();
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = dlerror();
        reason = std::string("cannot be loaded: ") + (e ? e : "unknown dlopen error");
        return o;
    }
    o.handle = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
    o.entry = dlsym(h, symbol);
    if (!o.entry) reason = std::string("is not a Mnemo module: it does not export ") + symbol;
    return o;
}

std::string abi_mismatch(uint32_t got) {
    std::ostringstream s;
    s << "was built for Mnemo module ABI version " << got << ", this engine speaks version " << MNEMO_ABI_VERSION
      << " (rebuild the module against this engine)";
    return s.str();
}

}  // namespace

std::vector<std::string> default_search_paths(const char* env_var) {
    std::vector<std::string> paths = split_path_list(std::getenv(env_var));
    auto add = [&](const fs::path& dir) {
        const std::string d = dir.lexically_normal().string();
        if (std::find(paths.begin(), paths.end(), d) == paths.end()) paths.push_back(d);
    };
    // The build tree puts modules next to the programs; an installed tree puts them where
    // libmnemo is (or MNEMO_LIB_TO_MODULES from it). Both are found from where the code runs, so an
    // installed tree works wherever it was unpacked; no absolute path is compiled in.
    const std::string exe = executable_dir();
    if (!exe.empty()) add(exe);
    const std::string lib = libmnemo_dir();
    if (!lib.empty()) add(fs::path(lib) / MNEMO_LIB_TO_MODULES);
    return paths;
}

// ---------------------------------------------------------------- backends

BackendRegistry& BackendRegistry::global() {
    static BackendRegistry registry(default_search_paths("MNEMO_BACKEND_PATH"));
    return registry;
}

BackendRegistry::BackendRegistry(const std::vector<std::string>& search_paths) {
    std::set<std::string> names;
    for (const fs::path& path : find_module_files(search_paths, "libmnemo-backend-")) {
        std::string reason;
        Opened o = open_module(path, MNEMO_BACKEND_ENTRY_SYMBOL, reason);
        if (!reason.empty()) {
            errors_.push_back({path.string(), reason});
            continue;
        }
        const mnemo_backend_api* api = reinterpret_cast<mnemo_backend_entry_fn>(o.entry)();
        if (!api) {
            errors_.push_back({path.string(), "entry point returned no backend"});
        } else if (api->abi_version != MNEMO_ABI_VERSION) {
            errors_.push_back({path.string(), abi_mismatch(api->abi_version)});
        } else if (api->struct_size < sizeof(mnemo_backend_api) || !api->name || !api->device_count ||
                   !api->device_info || !api->open || !api->close || !api->buffer_alloc || !api->buffer_free ||
                   !api->buffer_write || !api->buffer_read || !api->supports_node || !api->graph_prepare ||
                   !api->graph_run || !api->graph_release) {
            errors_.push_back({path.string(), "backend table is incomplete (a required function is missing)"});
        } else if (!names.insert(api->name).second) {
            errors_.push_back({path.string(), std::string("a backend named '") + api->name +
                                                  "' was already loaded from " + find(api->name)->path + "; ignored"});
        } else {
            modules_.push_back({api->name, path.string(), api, o.handle});
        }
    }
}

const BackendModule* BackendRegistry::find(const std::string& name) const {
    for (const BackendModule& m : modules_)
        if (m.name == name) return &m;
    return nullptr;
}

const BackendModule& BackendRegistry::require(const std::string& name) const {
    if (const BackendModule* m = find(name)) return *m;
    std::ostringstream s;
    s << "backend '" << name << "' is not available; loaded backends: ";
    if (modules_.empty()) s << "none";
    for (size_t i = 0; i < modules_.size(); ++i) s << (i ? ", " : "") << modules_[i].name;
    for (const LoadError& e : errors_) s << "; " << e.path << " " << e.reason;
    throw Error(s.str());
}

std::vector<DeviceEntry> BackendRegistry::devices() const {
    std::vector<DeviceEntry> out;
    for (const BackendModule& m : modules_) {
        const int32_t n = m.api->device_count();
        for (int32_t i = 0; i < n; ++i) {
            DeviceEntry d;
            d.backend = m.name;
            d.index = i;
            if (m.api->device_info(i, &d.info) == MNEMO_OK) out.push_back(d);
        }
    }
    return out;
}

// ---------------------------------------------------------------- plugins

PluginRegistry& PluginRegistry::global() {
    static PluginRegistry registry(default_search_paths("MNEMO_PLUGIN_PATH"));
    return registry;
}

PluginRegistry::PluginRegistry(const std::vector<std::string>& search_paths) {
    for (const fs::path& path : find_module_files(search_paths, "libmnemo-plugin-")) {
        std::string reason;
        Opened o = open_module(path, MNEMO_PLUGIN_ENTRY_SYMBOL, reason);
        if (!reason.empty()) {
            errors_.push_back({path.string(), reason});
            continue;
        }
        const mnemo_plugin_api* api = reinterpret_cast<mnemo_plugin_entry_fn>(o.entry)();
        if (!api) {
            errors_.push_back({path.string(), "entry point returned no plugin"});
            continue;
        }
        if (api->abi_version != MNEMO_ABI_VERSION) {
            errors_.push_back({path.string(), abi_mismatch(api->abi_version)});
            continue;
        }
        if (api->struct_size < sizeof(mnemo_plugin_api) || !api->name || !api->model_types || !api->create ||
            !api->build || !api->destroy) {
            errors_.push_back({path.string(), "plugin table is incomplete (a required function is missing)"});
            continue;
        }
        PluginModule m{api->name, path.string(), api, {}, o.handle};
        for (const char* const* t = api->model_types; *t; ++t) m.model_types.emplace_back(*t);
        modules_.push_back(std::move(m));
    }
}

const PluginModule& PluginRegistry::for_model_type(const std::string& model_type) const {
    std::vector<const PluginModule*> hits;
    for (const PluginModule& m : modules_)
        if (std::find(m.model_types.begin(), m.model_types.end(), model_type) != m.model_types.end())
            hits.push_back(&m);
    if (hits.size() == 1) return *hits[0];
    std::ostringstream s;
    if (hits.empty()) {
        s << "no plugin loads model_type '" << model_type << "'; known types: ";
        bool any = false;
        for (const PluginModule& m : modules_)
            for (const std::string& t : m.model_types) {
                s << (any ? ", " : "") << t << " (" << m.name << ")";
                any = true;
            }
        if (!any) s << "none (no plugins found; set MNEMO_PLUGIN_PATH)";
        for (const LoadError& e : errors_) s << "; " << e.path << " " << e.reason;
    } else {
        s << "model_type '" << model_type << "' is claimed by more than one plugin: ";
        for (size_t i = 0; i < hits.size(); ++i) s << (i ? " and " : "") << hits[i]->name << " (" << hits[i]->path << ")";
        s << "; remove one of them from the plugin path";
    }
    throw Error(s.str());
}

}  // namespace mnemo

#include "backend/auto_backend.hpp"

#include <algorithm>

#include "mnemo/error.hpp"

namespace mnemo::cli {

namespace {

int kind_rank(const DeviceEntry& d) {
    switch (d.info.type) {
        case MNEMO_DEVICE_GPU: return 0;
        case MNEMO_DEVICE_IGPU: return 1;
        case MNEMO_DEVICE_OTHER: return 2;
        default: return d.backend == "cpu" ? 3 : 4;
    }
}

int backend_rank(const std::string& name) { return name == "cuda" ? 0 : name == "vulkan" ? 1 : 2; }

std::string label(const DeviceEntry& d) { return d.backend + ":" + std::to_string(d.index) + " (" + d.info.name + ")"; }

}  // namespace

std::vector<DeviceEntry> auto_candidates(const BackendRegistry& registry) {
    std::vector<DeviceEntry> all = registry.devices();
    std::stable_sort(all.begin(), all.end(), [](const DeviceEntry& a, const DeviceEntry& b) {
        if (kind_rank(a) != kind_rank(b)) return kind_rank(a) < kind_rank(b);
        return backend_rank(a.backend) < backend_rank(b.backend);
    });
    return all;
}

AutoChoice open_auto_session(SessionOptions o, const BackendRegistry& registry) {
    const std::vector<DeviceEntry> candidates = auto_candidates(registry);
    std::string skipped;
    for (const DeviceEntry& d : candidates) {
        o.backend = d.backend;
        o.device = d.index;
        try {
            AutoChoice c;
            c.session = Session::open(o);
            c.report = label(d) + (skipped.empty() ? "" : "; skipped " + skipped);
            return c;
        } catch (const Cancelled&) {
            throw;
        } catch (const std::exception& e) {
            skipped += (skipped.empty() ? "" : "; ") + label(d) + ": " + e.what();
        }
    }
    if (candidates.empty())
        throw Error("--backend auto: no backend module has a device (`mnemo devices` lists the modules and why they have none)");
    throw Error("--backend auto: no device could open model '" + o.model_dir + "': " + skipped);
}

}  // namespace mnemo::cli

// `mnemo devices`: every backend module found, its devices, and modules that failed to load.
#include <cstdio>
#include <cstring>

#include "app/measure.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/modules/registry.hpp"

namespace mnemo::cli {

namespace {

const char* device_type_name(int32_t t) {
    switch (t) {
        case MNEMO_DEVICE_CPU: return "cpu";
        case MNEMO_DEVICE_GPU: return "gpu";
        case MNEMO_DEVICE_IGPU: return "integrated gpu";
        default: return "other";
    }
}

std::string caps_text(uint32_t caps) {
    std::string s;
    auto add = [&](uint32_t bit, const char* name) {
        if (caps & bit) s += (s.empty() ? "" : ", ") + std::string(name);
    };
    add(MNEMO_CAP_HOST_MEMORY, "host-memory");
    add(MNEMO_CAP_F16, "f16");
    add(MNEMO_CAP_BF16, "bf16");
    add(MNEMO_CAP_QUANT, "q8_0, q4_0, q4_k, q5_k, q6_k");
    add(MNEMO_CAP_PROFILE, "profile");
    add(MNEMO_CAP_IMPORT_HOST, "import-host");
    add(MNEMO_CAP_MAP_HOST, "map-host");
    return s.empty() ? "-" : s;
}

// Fixed-size C strings from a module: never read past the array even without a terminator.
template <size_t N>
std::string c_field(const char (&a)[N]) {
    size_t n = 0;
    while (n < N && a[n] != '\0') ++n;
    return std::string(a, n);
}

}  // namespace

int cmd_devices(int argc, char** argv) {
    app::ArgParser p("devices", "mnemo devices", "List the backend modules that were found and their devices.");
    if (!p.parse(argc, argv, 2)) return 0;

    const BackendRegistry& reg = BackendRegistry::global();
    const std::vector<DeviceEntry> devices = reg.devices();
    if (reg.modules().empty()) std::printf("no backend modules found\n");
    // A GPU reached through two backends (Vulkan and CUDA on an NVIDIA card) carries the same
    // UUID in both: it is described once, and its later entries point back to the first.
    std::vector<const DeviceEntry*> shown;
    auto first_with_uuid = [&](const DeviceEntry& d) -> const DeviceEntry* {
        if (!d.info.has_uuid) return nullptr;
        for (const DeviceEntry* s : shown)
            if (s->info.has_uuid && std::memcmp(s->info.uuid, d.info.uuid, 16) == 0) return s;
        return nullptr;
    };
    for (const BackendModule& m : reg.modules()) {
        std::printf("%s  (%s)\n", printable(m.name).c_str(), printable(m.path).c_str());
        bool any = false;
        for (const DeviceEntry& d : devices) {
            if (d.backend != m.name) continue;
            any = true;
            const std::string desc = c_field(d.info.description);
            if (const DeviceEntry* same = first_with_uuid(d)) {
                std::printf("  [%d] = %s:%d (the same %s)  caps=%s\n", d.index, same->backend.c_str(), same->index,
                            c_field(d.info.name).c_str(), caps_text(d.info.caps).c_str());
                if (!desc.empty()) std::printf("      %s\n", printable(desc).c_str());
                continue;
            }
            shown.push_back(&d);
            std::printf("  [%d] %s  type=%s  memory=%s total, %s free  caps=%s\n", d.index,
                        c_field(d.info.name).c_str(), device_type_name(d.info.type),
                        d.info.memory_total ? app::format_bytes(d.info.memory_total).c_str() : "unknown",
                        d.info.memory_free ? app::format_bytes(d.info.memory_free).c_str() : "unknown",
                        caps_text(d.info.caps).c_str());
            if (!desc.empty()) std::printf("      %s\n", printable(desc).c_str());
        }
        if (!any) {
            const char* why = m.api->unavailable_reason ? m.api->unavailable_reason() : nullptr;
            if (why && *why) std::printf("  (no devices: %s)\n", printable(why).c_str());
            else std::printf("  (no devices)\n");
        }
    }
    for (const LoadError& e : reg.load_errors()) {
        // File names from the search folders and the loader's words: escaped like any outside text.
        std::printf("failed to load %s: %s\n", printable(e.path).c_str(), printable(e.reason).c_str());
    }
    return 0;
}

}  // namespace mnemo::cli

// Context's pipeline cache file: compiled pipelines kept between runs, per device and driver.
#include "context.hpp"

#include "backend_common.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace mnemo_vk {

namespace {
constexpr uint64_t kCacheFileLimit = 256ull << 20;
}  // namespace

// The pipeline cache lives in $MNEMO_VK_CACHE_DIR, else $XDG_CACHE_HOME/mnemo, else
// ~/.cache/mnemo, one file per device and driver version. MNEMO_VK_CACHE_DIR="" disables it.
std::string Context::cache_path() const {
    std::filesystem::path dir;
    if (const char* d = std::getenv("MNEMO_VK_CACHE_DIR")) {
        if (!*d) return "";
        dir = d;
    } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
        dir = std::filesystem::path(x) / "mnemo";
    } else if (const char* h = std::getenv("HOME"); h && *h) {
        dir = std::filesystem::path(h) / ".cache" / "mnemo";
    } else {
        return "";
    }
    char name[160];
    std::snprintf(name, sizeof name, "vulkan-pipelines-%04x-%04x-%08x-%02x%02x%02x%02x%02x%02x%02x%02x.bin",
                  physical_->props.vendorID, physical_->props.deviceID, physical_->props.driverVersion, physical_->uuid[0],
                  physical_->uuid[1], physical_->uuid[2], physical_->uuid[3], physical_->uuid[4], physical_->uuid[5],
                  physical_->uuid[6], physical_->uuid[7]);
    return (dir / name).string();
}

void Context::load_pipeline_cache() {
    std::vector<char> data;
    const std::string path = cache_path();
    if (!path.empty()) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);
        if (!ec && size > 0 && size < kCacheFileLimit) {
            std::ifstream f(path, std::ios::binary);
            data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        }
    }
    // The driver checks the header (vendor, device, cache UUID) and ignores data not its own.
    auto ci = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
    ci.initialDataSize = data.size();
    ci.pInitialData = data.empty() ? nullptr : data.data();
    if (vk_.vkCreatePipelineCache(device_, &ci, nullptr, &cache_) != VK_SUCCESS) {
        ci.initialDataSize = 0;
        ci.pInitialData = nullptr;
        if (vk_.vkCreatePipelineCache(device_, &ci, nullptr, &cache_) != VK_SUCCESS) cache_ = VK_NULL_HANDLE;
    }
}

// Written to a temporary file and renamed: a crash never leaves a half-written cache.
void Context::save_pipeline_cache() {
    if (!cache_ || !cache_dirty_) return;
    const std::string path = cache_path();
    if (path.empty()) return;
    size_t size = 0;
    if (vk_.vkGetPipelineCacheData(device_, cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
    std::vector<char> data(size);
    if (vk_.vkGetPipelineCacheData(device_, cache_, &size, data.data()) != VK_SUCCESS) return;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    // Unique per process and context: parallel test processes save the same device's cache.
    const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(this));
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) return;
        f.write(data.data(), static_cast<std::streamsize>(size));
        if (!f.good()) {
            f.close();
            std::filesystem::remove(tmp, ec);
            return;
        }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace mnemo_vk

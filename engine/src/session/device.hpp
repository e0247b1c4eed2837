// A backend device context and the buffers made on it (the session's only way to the backend).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/modules/registry.hpp"

namespace mnemo::session_detail {

// Buffers are released in reverse order of allocation.
class Device {
public:
    Device(const BackendModule& module, int32_t device, int32_t threads) : api_(module.api), name_(module.name) {
        const int32_t count = api_->device_count();
        if (count <= 0) {
            // Say why (no driver, or every device lacks a feature Mnemo needs: the module knows),
            // so that a user on an edge device learns what to change rather than only "0 devices".
            const char* why = api_->unavailable_reason ? api_->unavailable_reason() : nullptr;
            throw Error("backend '" + name_ + "' has no usable device" + (why && *why ? std::string(": ") + why : std::string()) +
                        " (`mnemo devices` lists every backend's devices; --backend cpu always works)");
        }
        if (device < 0 || device >= count)
            throw Error("backend '" + name_ + "' has " + std::to_string(count) + " device(s); device " +
                        std::to_string(device) + " does not exist");
        if (api_->device_info(device, &info_) != MNEMO_OK) throw Error("backend '" + name_ + "': cannot query device " + std::to_string(device));
        mnemo_backend_config cfg{threads};
        mnemo_error err{};
        if (api_->open(device, &cfg, &ctx_, &err) != MNEMO_OK)
            throw Error("backend '" + name_ + "': cannot open device " + std::to_string(device) + ": " + err.message);
    }
    ~Device() {
        for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it) api_->buffer_free(ctx_, *it);
        if (ctx_) api_->close(ctx_);
    }
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const mnemo_backend_api* api() const { return api_; }
    void* ctx() const { return ctx_; }
    const mnemo_device_info& info() const { return info_; }
    const std::string& name() const { return name_; }

    void* alloc(uint64_t bytes, const std::string& what) {
        void* b = nullptr;
        mnemo_error err{};
        const uint64_t size = std::max<uint64_t>(bytes, 1);
        if (api_->buffer_alloc(ctx_, size, &b, &err) != MNEMO_OK)
            throw Error(name_ + ": cannot allocate " + std::to_string(bytes) + " bytes for " + what + ": " + err.message);
        track(b, size, false);
        return b;
    }
    // Use host memory in place when the backend can (mmapped weights on the CPU, or imported by a
    // unified-memory GPU), else copy; a pointer the backend refuses is copied too.
    void* wrap_or_upload(const void* host, uint64_t bytes, const std::string& what) {
        if (api_->buffer_from_host && (info_.caps & (MNEMO_CAP_HOST_MEMORY | MNEMO_CAP_IMPORT_HOST))) {
            void* b = nullptr;
            mnemo_error err{};
            if (api_->buffer_from_host(ctx_, const_cast<void*>(host), bytes, &b, &err) == MNEMO_OK) {
                track(b, bytes, true);
                return b;
            }
        }
        void* b = alloc(bytes, what);
        write(b, 0, host, bytes, what);
        return b;
    }
    // Host memory read in place by the device, whatever it costs per byte (--memory-tables host:
    // a discrete GPU reads the pages over the bus, and only the rows a step selects). Throws,
    // naming the device, where the backend cannot or the driver refuses the pointer: the caller
    // asked for host memory, so there is no silent copy.
    void* map_host(const void* host, uint64_t bytes, const std::string& what) {
        const uint32_t can = MNEMO_CAP_HOST_MEMORY | MNEMO_CAP_IMPORT_HOST | MNEMO_CAP_MAP_HOST;
        const std::string device = name_ + " device '" + std::string(info_.name, strnlen(info_.name, sizeof info_.name)) + "'";
        if (!api_->buffer_from_host || !(info_.caps & can))
            throw Error("memory tables in host memory: the " + device + " cannot read host memory in place (" + what +
                        "); use --memory-tables device");
        void* b = nullptr;
        mnemo_error err{};
        if (api_->buffer_from_host(ctx_, const_cast<void*>(host), bytes, &b, &err) != MNEMO_OK)
            throw Error("memory tables in host memory: the " + device + " refused " + what + ": " + err.message);
        track(b, bytes, true);
        return b;
    }
    void release(void* buffer) {
        auto it = std::find(buffers_.begin(), buffers_.end(), buffer);
        if (it != buffers_.end()) {
            api_->buffer_free(ctx_, buffer);
            const size_t i = static_cast<size_t>(it - buffers_.begin());
            bytes_ -= sizes_[i].bytes;
            if (sizes_[i].host) host_bytes_ -= sizes_[i].bytes;
            buffers_.erase(it);
            sizes_.erase(sizes_.begin() + static_cast<long>(i));
        }
    }
    // Bytes of the buffers made here that are alive now, the most there ever were at once, and
    // how many of the live ones are host memory used in place (mmapped weights on the CPU: they
    // count as resident memory of the process rather than as copies the backend made).
    uint64_t bytes() const { return bytes_; }
    uint64_t peak_bytes() const { return peak_bytes_; }
    uint64_t host_bytes() const { return host_bytes_; }
    void write(void* buffer, uint64_t offset, const void* src, uint64_t bytes, const std::string& what) {
        mnemo_error err{};
        if (api_->buffer_write(ctx_, buffer, offset, src, bytes, &err) != MNEMO_OK)
            throw Error(name_ + ": writing " + what + ": " + err.message);
    }
    void read(void* buffer, uint64_t offset, void* dst, uint64_t bytes, const std::string& what) {
        mnemo_error err{};
        if (api_->buffer_read(ctx_, buffer, offset, dst, bytes, &err) != MNEMO_OK)
            throw Error(name_ + ": reading " + what + ": " + err.message);
    }

private:
    struct Size {
        uint64_t bytes;
        bool host;
    };
    void track(void* buffer, uint64_t bytes, bool host) {
        buffers_.push_back(buffer);
        sizes_.push_back({bytes, host});
        bytes_ += bytes;
        if (host) host_bytes_ += bytes;
        peak_bytes_ = std::max(peak_bytes_, bytes_);
    }

    const mnemo_backend_api* api_;
    std::string name_;
    mnemo_device_info info_{};
    void* ctx_ = nullptr;
    std::vector<void*> buffers_;
    std::vector<Size> sizes_;  // parallel to buffers_
    uint64_t bytes_ = 0;
    uint64_t peak_bytes_ = 0;
    uint64_t host_bytes_ = 0;
};

}  // namespace mnemo::session_detail

// --backend auto: the model on the device most likely to be fastest that can run it. The only
// place the CLI falls back from one device to another; a named --backend never does (its error
// says why, e.g. a Vulkan device without 16-bit storage, and what else there is).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mnemo/modules/registry.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::cli {

// Every device of every loaded backend, best first: discrete GPUs, integrated GPUs, other
// accelerators, then the CPU backend, then CPU-type devices of other backends (a software Vulkan
// driver such as lavapipe is far slower than the CPU backend). Within a kind CUDA comes before
// Vulkan, then registry order.
std::vector<DeviceEntry> auto_candidates(const BackendRegistry& registry);

struct AutoChoice {
    std::unique_ptr<Session> session;
    // "cpu:0 (AMD EPYC 7B13); skipped vulkan:0 (…): <reason>" for the user (stderr).
    std::string report;
};

// Opens o.model_dir on each candidate in turn (o.backend and o.device are replaced) until one
// works. Throws mnemo::Error listing every candidate's failure when none does.
AutoChoice open_auto_session(SessionOptions o, const BackendRegistry& registry);

}  // namespace mnemo::cli

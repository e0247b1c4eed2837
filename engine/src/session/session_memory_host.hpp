// What a session offers its explicit memories (detail::MemoryHost): its states, its graphs and
// its device, and nothing else of Session::Impl.
#pragma once

#include <memory>

#include "memory/memory_host.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo {

std::unique_ptr<detail::MemoryHost> make_memory_host(Session::Impl& session);

}  // namespace mnemo

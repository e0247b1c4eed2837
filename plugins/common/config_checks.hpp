// The checks every plugin's config reader makes: a failed one is an error that says it comes from
// config.json and names the field and what was expected.
#pragma once

#include <cstdint>
#include <string>

namespace mnemo::config {

// Throws plugin::PluginError("config.json: " + what) unless ok.
void require(bool ok, const std::string& what);

// Decimal text of v, for the messages above.
inline std::string num(int64_t v) { return std::to_string(v); }

}  // namespace mnemo::config

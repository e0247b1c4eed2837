// Mnemo's own architectures in GGUF (the memory-layer and Memory3 plugins, and any model_type
// outside the Llama family): general.architecture is "mnemo_<model_type>", the model folder's
// config.json travels whole as a string key (the plugin reads the same fields as from the
// folder, so the model fingerprint is the folder's when the weights keep their type), and the
// tensors keep the names the plugin declares. docs/gguf.md lists the keys.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mnemo::detail {

inline constexpr std::string_view kGgufMnemoArchPrefix = "mnemo_";
inline constexpr std::string_view kGgufMnemoConfigKey = "mnemo.config_json";
inline constexpr std::string_view kGgufMnemoGenerationConfigKey = "mnemo.generation_config_json";

inline std::string mnemo_gguf_arch(const std::string& model_type) { return std::string(kGgufMnemoArchPrefix) + model_type; }

// "mnemo_pkm" -> "pkm"; nullopt for other architectures.
inline std::optional<std::string> model_type_of_mnemo_arch(const std::string& arch) {
    if (arch.size() <= kGgufMnemoArchPrefix.size() || arch.compare(0, kGgufMnemoArchPrefix.size(), kGgufMnemoArchPrefix) != 0)
        return std::nullopt;
    return arch.substr(kGgufMnemoArchPrefix.size());
}

}  // namespace mnemo::detail

#include "app/default_model.hpp"

#include <filesystem>
#include <system_error>

namespace mnemo::app {

namespace fs = std::filesystem;

namespace {

std::string executable_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

std::vector<std::string> default_model_places() {
    std::vector<std::string> places;
    const std::string exe_dir = executable_dir();
    if (!exe_dir.empty()) {
        places.push_back((fs::path(exe_dir) / MNEMO_BIN_TO_DATA / "default-model").lexically_normal().string());
    }
    // The source tree's model only for a program that runs where this build put it: an installed
    // copy that looked there too would seem to work on the build machine and fail everywhere else.
    std::error_code ec;
    if (exe_dir.empty() || fs::equivalent(exe_dir, MNEMO_BUILD_BIN_DIR, ec)) places.push_back(MNEMO_DEFAULT_MODEL_DIR);
    return places;
}

std::string find_default_model() {
    for (const std::string& place : default_model_places()) {
        std::error_code ec;
        if (fs::is_regular_file(fs::path(place) / "config.json", ec)) return place;
    }
    return {};
}

}  // namespace mnemo::app

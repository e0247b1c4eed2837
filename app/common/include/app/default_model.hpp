// Where a program finds the model that ships with Mnemo when the user names none: an installed
// program looks in <exe>/../share/mnemo/default-model (no environment variable, no absolute
// path: an installed tree can be moved), a program in the build tree's bin folder in the source
// tree's assets/default-model. The CLI, mnemo-kb and the GUI all start from the same bundled model.
#pragma once

#include <string>
#include <vector>

namespace mnemo::app {

// The folders looked in, in order (for messages that say where the model was not found).
std::vector<std::string> default_model_places();

// The first of those folders that holds a config.json; empty when none does.
std::string find_default_model();

}  // namespace mnemo::app

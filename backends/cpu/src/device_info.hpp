// The single CPU "device": model name, ISA features and memory, as mnemo_device_info.
#pragma once

#include "mnemo/abi/backend_abi.h"

namespace mnemo_cpu {

void fill_device_info(mnemo_device_info* out);

}  // namespace mnemo_cpu

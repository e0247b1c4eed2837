// MNEMO_API marks what libmnemo exports. The library is built with hidden visibility, so only the
// classes and functions of the public headers carrying this mark are part of its ABI; helpers
// (SHA-256, the Unicode tables, the arena planner...) stay inside it whatever their linkage.
//
// The op table and shape rules are also compiled into every backend module (mnemo_op_rules, which
// defines MNEMO_API_HIDDEN): there nothing is exported, so a module never interposes libmnemo.
#pragma once

#if defined(MNEMO_API_HIDDEN)
#define MNEMO_API
#elif defined(_WIN32)
#if defined(MNEMO_BUILDING_LIBMNEMO)
#define MNEMO_API __declspec(dllexport)
#else
#define MNEMO_API __declspec(dllimport)
#endif
#else
#define MNEMO_API __attribute__((visibility("default")))
#endif

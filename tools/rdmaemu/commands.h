// The rdmaemu commands. Each lives in its own file with its option table; main.cpp dispatches
// and prints usage from these definitions.
#pragma once

#include "options.h"

#include <span>
#include <string_view>

namespace rdmaemu {

struct CommandDef {
    std::string_view name;
    std::string_view synopsis; // the arguments, for usage
    std::string_view summary;
    std::span<const OptionSpec> options;
    bool takes_command; // `run`: the words after the options are a program to start
    int (*run)(const ParsedArgs& args);
};

extern const CommandDef kUpCommand;
extern const CommandDef kDownCommand;
extern const CommandDef kRunCommand;
extern const CommandDef kStatusCommand;
extern const CommandDef kTraceCompareCommand;
extern const CommandDef kTimelineCommand;
extern const CommandDef kUiCommand;

// Exit statuses besides the program's own (run) and 0.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
// status: no host is up, or one of the set is down or not answering.
inline constexpr int kExitHostDown = 3;
// A file given to the command is unreadable or not what it reads (trace-compare: no trace).
inline constexpr int kExitBadInput = 4;

} // namespace rdmaemu

// rdmaemu: the command users type. Dispatches to one command and prints usage.
#include "commands.h"

#include "emu/ipc/protocol.h"

#include <cstdio>
#include <string>
#include <vector>

namespace rdmaemu {
namespace {

const CommandDef* const kCommands[] = {&kUpCommand,     &kDownCommand,         &kRunCommand,
                                       &kStatusCommand, &kTraceCompareCommand, &kTimelineCommand,
                                       &kUiCommand};

constexpr OptionSpec kHelp = {"help", "", "show this help"};

void print_options(std::FILE* out, const CommandDef& cmd) {
    for (const auto& o : cmd.options) {
        std::string left = "--" + std::string(o.name);
        if (!o.value.empty()) left += " " + std::string(o.value);
        std::string help(o.help);
        if (!o.choices.empty()) {
            help += " (";
            for (size_t i = 0; i < o.choices.size(); ++i)
                help += (i ? "|" : "") + std::string(o.choices[i]);
            help += ")";
        }
        std::fprintf(out, "      %-24s %s\n", left.c_str(), help.c_str());
    }
}

void print_command(std::FILE* out, const CommandDef& cmd) {
    std::string line = "  rdmaemu " + std::string(cmd.name);
    if (!cmd.synopsis.empty()) line += " " + std::string(cmd.synopsis);
    std::fprintf(out, "%s\n      %.*s\n", line.c_str(), int(cmd.summary.size()),
                 cmd.summary.data());
    print_options(out, cmd);
}

void usage(std::FILE* out) {
    std::fprintf(out, "Usage: rdmaemu <command> [options]   (rdmaemu --version)\n\n"
                      "Emulated RDMA hosts on one machine: each host is a nicsimd daemon with "
                      "one RoCE v2 device\n(emu0) on its own address 127.0.S.<host>.\n\n"
                      "Commands:\n");
    for (const auto* cmd : kCommands)
        print_command(out, *cmd);
    std::fprintf(out,
                 "\nEnvironment:\n"
                 "  RDMAEMU_RUNTIME_DIR  directory of one set of hosts (default "
                 "/tmp/rdmaemu-<uid>);\n"
                 "                       sets in different directories run side by side\n"
                 "  RDMAEMU_MODE         devices programs see: emulated (default), hardware "
                 "(rdma-core's\n"
                 "                       real devices, every verb forwarded) or mixed (both)\n"
                 "  RDMAEMU_REAL_LIBIBVERBS  rdma-core's libibverbs.so.1 for hardware/mixed "
                 "mode (default:\n"
                 "                       the system one)\n"
                 "  RDMAEMU_TRACE        write a verbs trace to this file (%%p: the pid); compare "
                 "two\n"
                 "                       with trace-compare\n"
                 "  RDMAEMU_EXPLAIN=1    say on stderr why each error completion, refused verb "
                 "or event\n"
                 "                       happened (what run --explain sets)\n"
                 "\nrun exits with the program's status, or 125 when the host is not up, 126 or "
                 "127\nwhen the program cannot be executed or found. status exits 3 when no host "
                 "is up or\none of the set is down.\n"
                 "\nExample:\n"
                 "  rdmaemu up --hosts 2 && rdmaemu run --host 1 -- ibv_devinfo && "
                 "rdmaemu down\n");
}

int usage_error(const CommandDef* cmd, const std::string& msg) {
    if (!msg.empty()) std::fprintf(stderr, "rdmaemu: %s\n", msg.c_str());
    if (cmd) {
        std::fprintf(stderr, "Usage:\n");
        print_command(stderr, *cmd);
    } else {
        usage(stderr);
    }
    return kExitUsage;
}

int dispatch(int argc, char** argv) {
    std::string_view name = argc > 1 ? argv[1] : "--help";
    if (name == "--help" || name == "-h" || name == "help") {
        usage(stdout);
        return 0;
    }
    if (name == "--version" || name == "version") {
        // The commit is the one the build was configured from (CMake's configure step).
        std::printf("rdmaemu %s (git %s), rdma-core 44 ABI, control protocol %u\n", RDMAEMU_VERSION,
                    RDMAEMU_GIT_COMMIT, unsigned(emu::ipc::kVersion));
        return 0;
    }
    const CommandDef* cmd = nullptr;
    for (const auto* c : kCommands)
        if (c->name == name) cmd = c;
    if (!cmd) return usage_error(nullptr, "unknown command '" + std::string(name) + "'");

    std::vector<OptionSpec> specs(cmd->options.begin(), cmd->options.end());
    specs.push_back(kHelp);
    ParsedArgs args;
    std::span<char* const> words(argv + 2, static_cast<size_t>(argc - 2));
    if (auto err = parse_options(words, specs, cmd->takes_command, args))
        return usage_error(cmd, *err);
    if (args.has("help")) {
        std::printf("Usage:\n");
        print_command(stdout, *cmd);
        return 0;
    }
    int rc = cmd->run(args);
    return rc == kExitUsage ? usage_error(cmd, "") : rc;
}

} // namespace
} // namespace rdmaemu

int main(int argc, char** argv) {
    return rdmaemu::dispatch(argc, argv);
}

// The rdmaemu commands' option parser (tools/rdmaemu/options.cpp, on CLI11): a command's table
// of options decides what is taken, the value checks and the messages a user reads; `run`'s
// program starts at "--" or at the first word that is not an option.
#include "options.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using rdmaemu::OptionSpec;
using rdmaemu::ParsedArgs;
using rdmaemu::ValueKind;

namespace {

constexpr std::string_view kLevels[] = {"info", "debug"};

constexpr OptionSpec kSpecs[] = {
    {"host", "I", "the host"},
    {"preload", "", "a flag"},
    {"level", "L", "one of two", kLevels},
    {"drop", "P", "a probability", {}, true, ValueKind::probability},
    {"delay-us", "D", "a count", {}, true, ValueKind::count},
    {"seed", "S", "a 64-bit count", {}, true, ValueKind::count64},
    {"allow-uid", "UIDS", "uids", {}, true, ValueKind::uid_list},
    {"max-per-process", "SHARES", "shares", {}, true, ValueKind::share_list},
};

struct Result {
    std::optional<std::string> error;
    ParsedArgs args;
};

Result parse(std::vector<std::string> words, bool takes_command = false) {
    std::vector<char*> argv;
    argv.reserve(words.size());
    for (auto& w : words)
        argv.push_back(w.data());
    Result r;
    r.error = rdmaemu::parse_options(argv, kSpecs, takes_command, r.args);
    return r;
}

using Words = std::vector<std::string>;

} // namespace

TEST_CASE("rdmaemu options: values, flags and --name=value", "[rdmaemu_options]") {
    Result r = parse({"--host", "2", "--preload", "--level=debug", "--drop", "0.05"});
    REQUIRE_FALSE(r.error);
    CHECK(r.args.get("host") == "2");
    CHECK(r.args.has("preload"));
    CHECK(r.args.get("preload") == "");
    CHECK(r.args.get("level") == "debug");
    CHECK(r.args.get("drop") == "0.05");
    CHECK_FALSE(r.args.has("seed"));
    CHECK_FALSE(r.args.get("seed"));
    CHECK(r.args.rest.empty());
}

TEST_CASE("rdmaemu options: an option given twice keeps its last value", "[rdmaemu_options]") {
    Result r = parse({"--host", "1", "--host=3"});
    REQUIRE_FALSE(r.error);
    CHECK(r.args.get("host") == "3");
}

TEST_CASE("rdmaemu options: a value is the next word, whatever it looks like",
          "[rdmaemu_options]") {
    Result r = parse({"--host", "--preload"});
    REQUIRE_FALSE(r.error);
    CHECK(r.args.get("host") == "--preload");
    CHECK_FALSE(r.args.has("preload"));
}

TEST_CASE("rdmaemu options: the messages of a bad command line", "[rdmaemu_options]") {
    const std::vector<std::pair<Words, std::string>> cases = {
        {{"--nope"}, "unknown option '--nope'"},
        {{"--nope=1", "--host", "1"}, "unknown option '--nope'"},
        {{"--host", "1", "--nope", "x"}, "unknown option '--nope'"},
        {{"-x"}, "unknown option '-x'"}, // no command has short options
        {{"--host"}, "option '--host' needs a value"},
        {{"--preload=yes"}, "option '--preload' takes no value"},
        {{"stray"}, "unexpected argument 'stray'"},
        {{"--host", "1", "stray"}, "unexpected argument 'stray'"},
        {{"--level", "loud"}, "invalid value 'loud' for --level (one of: info debug)"},
        {{"--drop", "1.5"},
         "invalid value '1.5' for --drop (wants a probability from 0 to 1, "
         "e.g. 0.05)"},
        {{"--drop=nan"},
         "invalid value 'nan' for --drop (wants a probability from 0 to 1, "
         "e.g. 0.05)"},
        {{"--delay-us", "-1"},
         "invalid value '-1' for --delay-us (wants a whole number from 0 "
         "to 4294967295)"},
        {{"--delay-us", "4294967296"},
         "invalid value '4294967296' for --delay-us (wants a whole "
         "number from 0 to 4294967295)"},
        {{"--seed", "1.5"},
         "invalid value '1.5' for --seed (wants a whole number from 0 to "
         "18446744073709551615)"},
        {{"--allow-uid", "alice"},
         "invalid value 'alice' for --allow-uid (wants user ids "
         "separated by commas, e.g. 1000,1001)"},
        {{"--max-per-process", "qp=0"},
         "invalid value 'qp=0' for --max-per-process (wants KIND=N[,KIND=N...] with KIND qp, cq, "
         "mr or context and N >= 1, e.g. qp=1000,cq=1000,mr=4096,context=64)"},
    };
    for (const auto& [words, message] : cases) {
        INFO(Catch::Detail::stringify(words));
        Result r = parse(words);
        REQUIRE(r.error);
        CHECK(*r.error == message);
    }
}

TEST_CASE("rdmaemu options: good values of each kind", "[rdmaemu_options]") {
    Result r =
        parse({"--drop", "5e-2", "--delay-us", "4294967295", "--seed", "18446744073709551615",
               "--allow-uid", "1000,1001", "--max-per-process", "qp=10,cq=20"});
    REQUIRE_FALSE(r.error);
    CHECK(r.args.get("drop") == "5e-2");
    CHECK(r.args.get("seed") == "18446744073709551615");
    CHECK(r.args.get("max-per-process") == "qp=10,cq=20");
}

TEST_CASE("rdmaemu options: run's program starts at -- or at the first word not an option",
          "[rdmaemu_options]") {
    Result r = parse({"--host", "1", "--", "ib_send_bw", "--size", "64", "--host"}, true);
    REQUIRE_FALSE(r.error);
    CHECK(r.args.get("host") == "1");
    CHECK(r.args.rest == Words{"ib_send_bw", "--size", "64", "--host"});

    r = parse({"--preload", "ibv_devinfo", "-v", "--preload", "--", "x"}, true);
    REQUIRE_FALSE(r.error);
    CHECK(r.args.has("preload"));
    CHECK(r.args.rest == Words{"ibv_devinfo", "-v", "--preload", "--", "x"});

    r = parse({"--host", "1", "--", "--", "prog"}, true);
    REQUIRE_FALSE(r.error);
    CHECK(r.args.rest == Words{"--", "prog"});

    r = parse({"--host", "1"}, true);
    REQUIRE_FALSE(r.error);
    CHECK(r.args.rest.empty());

    r = parse({"--host", "1", "--"}, true);
    REQUIRE_FALSE(r.error);
    CHECK(r.args.rest.empty());

    r = parse({"--nope", "--host", "1", "prog"}, true);
    REQUIRE(r.error);
    CHECK(*r.error == "unknown option '--nope'");

    r = parse({"--host", "1", "-x", "prog"}, true);
    REQUIRE(r.error);
    CHECK(*r.error == "unknown option '-x'");
}

#include "support/private_log_sink.h"

#include "temp_dir.h"

#include <catch2/catch.hpp>
#include <spdlog/logger.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

} // namespace

TEST_CASE("log sink: rotates at the size into .1 and .2, 0600, newest in the log itself",
          "[log_sink]") {
    TempDir dir("log_sink");
    const std::string path = dir / "nicsimd.log";
    {
        spdlog::logger log("t", std::make_shared<nicsim::PrivateLogSink>(path, 1000, 3));
        log.set_pattern("%v");
        for (int i = 0; i < 1000; ++i) // 1000 lines of 10 bytes: 10 files' worth, 3 kept
            log.info("line {:04}", i);
    }
    for (const char* name : {"nicsimd.log", "nicsimd.log.1", "nicsimd.log.2"}) {
        INFO(name);
        REQUIRE(fs::exists(dir / name));
        CHECK(fs::file_size(dir / name) <= 1000);
        struct stat st {};
        REQUIRE(stat((dir / name).c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == 0600);
    }
    CHECK_FALSE(fs::exists(dir / "nicsimd.log.3"));
    // Oldest to newest: .2, .1, the log; together the last lines written, in order.
    std::vector<std::string> kept;
    for (const char* name : {"nicsimd.log.2", "nicsimd.log.1", "nicsimd.log"})
        for (auto& l : lines_of(dir / name))
            kept.push_back(l);
    REQUIRE(kept.size() == 300); // three full files of 100 lines
    for (size_t i = 0; i < kept.size(); ++i)
        CHECK(kept[i] == fmt::format("line {:04}", 700 + i));
}

TEST_CASE("log sink: appends to the log rdmaemu made, refuses a link", "[log_sink]") {
    TempDir dir("log_sink_open");
    const std::string path = dir / "nicsimd.log";
    SECTION("appends") {
        std::ofstream(path) << "from rdmaemu\n";
        {
            spdlog::logger log("t", std::make_shared<nicsim::PrivateLogSink>(path, 1 << 20, 3));
            log.set_pattern("%v");
            log.info("from the daemon");
        }
        CHECK(lines_of(path) == std::vector<std::string>{"from rdmaemu", "from the daemon"});
    }
    SECTION("a symbolic link is refused") {
        const std::string victim = dir / "victim";
        std::ofstream(victim) << "keep";
        fs::create_symlink(victim, path);
        CHECK_THROWS_WITH(nicsim::PrivateLogSink(path, 1 << 20, 3),
                          Catch::Contains("is a symbolic link"));
        CHECK(fs::file_size(victim) == 4);
    }
}

// A new directory of our own (mkdtemp: 0700) under the temp dir, removed with its contents when
// the test ends. Files that only their owner reaches (emu/private_files.h) need such a
// directory: /tmp itself is writable by everyone and is refused.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& tag) {
        std::string pattern =
            (std::filesystem::temp_directory_path() / ("rdmaemu_" + tag + "_XXXXXX")).string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

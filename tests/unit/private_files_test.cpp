#include "emu/private_files.h"

#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

std::string contents(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_text(int fd, const std::string& text) {
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
}

// Runs `body` with the umask at 000, as a careless shell would have it.
template <class F> void with_umask_000(F body) {
    mode_t old = umask(0);
    body();
    umask(old);
}

} // namespace

TEST_CASE("private dirs: ours and not writable by others, or refused with the reason",
          "[private_files]") {
    TempDir tmp("private_dirs");
    const std::string dir = tmp / "d";
    fs::create_directory(dir);
    fs::permissions(dir, fs::perms::owner_all);
    CHECK(emu::open_private_dir(dir).fd);
    CHECK(emu::open_private_dir(dir + "/").fd);

    SECTION("a symbolic link, also with a trailing slash") {
        const std::string link = tmp / "link";
        fs::create_directory_symlink(dir, link);
        for (const auto& path : {link, link + "/"}) {
            auto opened = emu::open_private_dir(path);
            CHECK_FALSE(opened.fd);
            CHECK(opened.error == link + " is a symbolic link (to " + dir + ")");
        }
    }
    SECTION("writable by group or others") {
        fs::permissions(dir, fs::perms::owner_all | fs::perms::group_write);
        CHECK(emu::open_private_dir(dir).error ==
              dir + " is writable by group or others (mode 0720)");
        fs::permissions(dir, fs::perms::all | fs::perms::sticky_bit);
        CHECK(emu::open_private_dir(dir).error ==
              dir + " is writable by group or others (mode 1777)");
    }
    SECTION("another user's") {
        if (geteuid() != 0) return; // only root can give a directory away
        REQUIRE(chown(dir.c_str(), 65534, 65534) == 0);
        CHECK(emu::open_private_dir(dir).error == dir + " belongs to uid 65534, not to uid 0");
    }
    SECTION("not a directory") {
        const std::string file = tmp / "f";
        std::ofstream(file) << "x";
        CHECK(emu::open_private_dir(file).error == file + " is not a directory");
    }
}

TEST_CASE("private dirs: made with exactly their mode and 0700 parents, whatever the umask",
          "[private_files]") {
    TempDir tmp("make_dirs");
    const std::string deep = tmp / "a/b/c";
    with_umask_000([&] {
        CHECK(emu::make_private_dir(deep, 0711).fd);
        CHECK(emu::make_private_dir(tmp / "plain", 0700).fd);
    });
    CHECK(mode_of(deep) == 0711);
    CHECK(mode_of(tmp / "a") == 0700);
    CHECK(mode_of(tmp / "a/b") == 0700);
    CHECK(mode_of(tmp / "plain") == 0700);
    // An existing directory is checked, not changed.
    fs::permissions(deep, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    CHECK(emu::make_private_dir(deep, 0700).fd);
    CHECK(mode_of(deep) == 0750);
    fs::permissions(deep, fs::perms::all);
    CHECK_FALSE(emu::make_private_dir(deep, 0700).fd);
}

TEST_CASE("private files: new, exact mode, and nothing but our own stale file replaced",
          "[private_files]") {
    TempDir tmp("files");
    const std::string path = tmp / "f";

    SECTION("0600 under umask 000") {
        with_umask_000([&] { CHECK(emu::create_private_file(path, O_WRONLY, 0600).fd); });
        CHECK(mode_of(path) == 0600);
    }
    SECTION("a stale file of ours is replaced by a new, empty one") {
        std::ofstream(path) << "old run";
        REQUIRE(chmod(path.c_str(), 0644) == 0);
        auto opened = emu::create_private_file(path, O_WRONLY, 0600);
        REQUIRE(opened.fd);
        CHECK(contents(path).empty());
        CHECK(mode_of(path) == 0600);
    }
    SECTION("a symbolic link is refused; its target is not touched") {
        const std::string victim = tmp / "victim";
        std::ofstream(victim) << "secret";
        fs::create_symlink(victim, path);
        auto opened = emu::create_private_file(path, O_WRONLY, 0600);
        CHECK_FALSE(opened.fd);
        CHECK(opened.error == path + " is a symbolic link (to " + victim + "); not replacing it");
        CHECK(contents(victim) == "secret");
    }
    SECTION("a directory is refused") {
        fs::create_directory(path);
        CHECK(emu::create_private_file(path, O_WRONLY, 0600).error ==
              path + " exists and is not a regular file");
    }
    SECTION("another user's file is refused") {
        if (geteuid() != 0) return;
        std::ofstream(path) << "theirs";
        REQUIRE(chown(path.c_str(), 65534, 65534) == 0);
        CHECK(emu::create_private_file(path, O_WRONLY, 0600).error ==
              path + " belongs to uid 65534, not to uid 0");
        CHECK(contents(path) == "theirs");
    }
    SECTION("in a directory others can write: refused before anything is made") {
        fs::permissions(tmp.path, fs::perms::all);
        CHECK_FALSE(emu::create_private_file(path, O_WRONLY, 0600).fd);
        CHECK_FALSE(fs::exists(path));
    }
}

TEST_CASE("private files: appending keeps what is there, refuses links", "[private_files]") {
    TempDir tmp("append");
    auto dir = emu::open_private_dir(tmp.path.string());
    REQUIRE(dir.fd);
    const std::string path = tmp / "log";

    SECTION("missing: made 0600") {
        with_umask_000([&] {
            auto opened = emu::append_private_file(dir.fd.get(), "log", path, 0600);
            REQUIRE(opened.fd);
            write_text(opened.fd.get(), "one\n");
        });
        CHECK(mode_of(path) == 0600);
        CHECK(contents(path) == "one\n");
    }
    SECTION("existing: appended to, mode set") {
        std::ofstream(path) << "first\n";
        REQUIRE(chmod(path.c_str(), 0644) == 0);
        auto opened = emu::append_private_file(dir.fd.get(), "log", path, 0600);
        REQUIRE(opened.fd);
        write_text(opened.fd.get(), "second\n");
        CHECK(contents(path) == "first\nsecond\n");
        CHECK(mode_of(path) == 0600);
    }
    SECTION("a hard link to another file, or a symbolic link, is refused") {
        const std::string other = tmp / "other";
        std::ofstream(other) << "keep";
        fs::create_hard_link(other, path);
        CHECK(emu::append_private_file(dir.fd.get(), "log", path, 0600).error ==
              path + " has other hard links");
        fs::remove(path);
        fs::create_symlink(other, path);
        CHECK(emu::append_private_file(dir.fd.get(), "log", path, 0600).error ==
              path + " is a symbolic link (to " + other + ")");
        CHECK(contents(other) == "keep");
    }
}

TEST_CASE("private files: split_path", "[private_files]") {
    using P = std::pair<std::string, std::string>;
    CHECK(emu::split_path("/a/b/c.log") == P{"/a/b", "c.log"});
    CHECK(emu::split_path("/c.log") == P{"/", "c.log"});
    CHECK(emu::split_path("c.log") == P{".", "c.log"});
}

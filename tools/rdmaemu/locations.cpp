#include "locations.h"

#include "emu/paths.h"

#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace rdmaemu {

std::string exe_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : exe.parent_path().string();
}

std::string nicsimd_path() {
    return exe_dir() + "/nicsimd";
}

std::string verbs_lib_dir() {
    fs::path dir = fs::path(exe_dir()).parent_path() / "lib";
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(dir, ec);
    return ec ? dir.string() : canonical.string();
}

std::string verbs_lib_path() {
    return verbs_lib_dir() + "/libibverbs.so.1";
}

std::string rdmacm_lib_path() {
    return verbs_lib_dir() + "/librdmacm.so.1";
}

std::string runtime_dir_abs() {
    std::error_code ec;
    fs::path dir = fs::absolute(emu::runtime_dir(), ec);
    if (ec) return emu::runtime_dir();
    dir = dir.lexically_normal();
    if (!dir.has_filename() && dir != dir.root_path()) dir = dir.parent_path(); // "dir/"
    return dir.string();
}

} // namespace rdmaemu

// Where rdmaemu finds its siblings in the build (or install) tree, and the runtime directory
// of the current set of hosts.
#pragma once

#include <string>

namespace rdmaemu {

std::string exe_dir();         // the directory rdmaemu itself runs from
std::string nicsimd_path();    // <exe dir>/nicsimd
std::string verbs_lib_dir();   // <exe dir>/../lib, canonical
std::string verbs_lib_path();  // <lib dir>/libibverbs.so.1
std::string rdmacm_lib_path(); // <lib dir>/librdmacm.so.1

// emu::runtime_dir(), made absolute so that programs started with another cwd find it.
std::string runtime_dir_abs();

} // namespace rdmaemu

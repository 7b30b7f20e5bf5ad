// ImportObject: what a context made by ibv_import_device learns about its session's PDs, MRs
// and DMs, looked up by handle as the kernel looks up a uverbs file's objects.
#include "protocol_rig.h"

#include <sys/mman.h>

using namespace proto;

namespace {

int import(Rig& rig, ipc::ImportType type, uint32_t handle, ipc::ImportObjectReply& r) {
    return nicsim::import_object(rig.ctx, {static_cast<uint32_t>(type), handle}, r);
}

} // namespace

TEST_CASE("import: a PD by its handle", "[import]") {
    Rig rig;
    ipc::ImportObjectReply r{};
    CHECK(import(rig, ipc::ImportType::Pd, rig.pd, r) == 0);
    CHECK(rig.ctx.pass_fds.empty());
    CHECK(import(rig, ipc::ImportType::Pd, rig.pd + 100, r) == ENOENT);
}

TEST_CASE("import: an MR gives its keys, length and rights", "[import]") {
    Rig rig;
    std::vector<uint8_t> buf(5000);
    uint32_t access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    Mr& mr = rig.reg_mr(buf.data(), buf.size(), access);
    ipc::ImportObjectReply r{};
    REQUIRE(import(rig, ipc::ImportType::Mr, mr.handle, r) == 0);
    CHECK(r.lkey == mr.lkey);
    CHECK(r.rkey == mr.rkey);
    CHECK(r.length == 5000);
    CHECK(r.access == access);
    CHECK(import(rig, ipc::ImportType::Mr, mr.handle + 1, r) == ENOENT);
    // A PD's handle is not an MR's.
    CHECK(import(rig, ipc::ImportType::Mr, rig.pd, r) == (rig.pd == mr.handle ? 0 : ENOENT));
}

TEST_CASE("import: a DM comes with a memfd of the same memory", "[import]") {
    Rig rig;
    nicsim::Dm& dm = rig.alloc_dm(3000);
    ipc::ImportObjectReply r{};
    REQUIRE(import(rig, ipc::ImportType::Dm, dm.handle, r) == 0);
    CHECK(r.length == 3000);
    CHECK(r.map_bytes == dm.memory.size());
    REQUIRE(rig.ctx.pass_fds.size() == 1);
    void* p = ::mmap(nullptr, r.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                     rig.ctx.pass_fds[0].get(), 0);
    REQUIRE(p != MAP_FAILED);
    static_cast<uint8_t*>(dm.memory.data())[2999] = 0x5A;
    CHECK(static_cast<uint8_t*>(p)[2999] == 0x5A);
    static_cast<uint8_t*>(p)[0] = 0xA5;
    CHECK(static_cast<uint8_t*>(dm.memory.data())[0] == 0xA5);
    ::munmap(p, r.map_bytes);
    rig.ctx.pass_fds.clear();
    CHECK(import(rig, ipc::ImportType::Dm, dm.handle + 1, r) == ENOENT);
    CHECK(rig.ctx.pass_fds.empty());
}

TEST_CASE("import: an unknown object type is EINVAL", "[import]") {
    Rig rig;
    ipc::ImportObjectReply r{};
    CHECK(nicsim::import_object(rig.ctx, {0, rig.pd}, r) == EINVAL);
    CHECK(nicsim::import_object(rig.ctx, {99, rig.pd}, r) == EINVAL);
}

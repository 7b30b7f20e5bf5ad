// A session's objects of one kind, by the handle the client knows them as. Handles are per
// session, so a handle from one session can never name another session's object.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

namespace nicsim {

template <typename T> class HandleTable {
  public:
    T* get(uint32_t handle) const {
        auto it = objects_.find(handle);
        return it == objects_.end() ? nullptr : it->second.get();
    }
    T& add(std::unique_ptr<T> obj) {
        uint32_t h = next_++;
        obj->handle = h;
        return *objects_.emplace(h, std::move(obj)).first->second;
    }
    void erase(uint32_t handle) { objects_.erase(handle); }
    // Takes the object out of the table (its handle no longer names it) without freeing it.
    std::unique_ptr<T> release(uint32_t handle) {
        auto it = objects_.find(handle);
        if (it == objects_.end()) return nullptr;
        std::unique_ptr<T> obj = std::move(it->second);
        objects_.erase(it);
        return obj;
    }
    size_t size() const { return objects_.size(); }
    bool empty() const { return objects_.empty(); }
    template <typename Fn> void for_each(Fn fn) const {
        for (const auto& [h, obj] : objects_)
            fn(*obj);
    }
    // Highest handle first: later objects may depend on earlier ones.
    T* newest() const { return objects_.empty() ? nullptr : objects_.rbegin()->second.get(); }

  private:
    std::map<uint32_t, std::unique_ptr<T>> objects_;
    uint32_t next_ = 1; // 0 means "none" in requests
};

} // namespace nicsim

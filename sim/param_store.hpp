#pragma once
// ParamStore: the server's parameters as immutable, reference-counted versions with
// copy-on-write (DESIGN.md section 1). A reader holds a Snapshot of the version it read; the
// server copies the current block before writing only while someone else holds it. Memory is
// therefore O(live versions x parameters), whatever the number of workers. Freed blocks are kept
// for reuse so that steady state allocates nothing.
//
// Single-threaded by contract (one run = one thread): reference counts are plain integers.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace stalesim {

class ParamStore;

namespace detail {
struct Block {
  std::vector<float> values;
  int64_t version = 0;
  int32_t refs = 0;
  // Pins (ParamStore::pin): readers on other threads that need the values but hold no reference.
  // A pinned block is never written nor reused; one whose last reference went while pinned is
  // `orphan` (no longer a live version) until its last pin goes.
  int32_t pins = 0;
  bool orphan = false;
};
}  // namespace detail

// A held, immutable version of the parameters. Cheap to copy (a reference count).
class Snapshot {
 public:
  Snapshot() = default;
  Snapshot(const Snapshot& o) : store_(o.store_), block_(o.block_) { retain(); }
  Snapshot(Snapshot&& o) noexcept : store_(o.store_), block_(o.block_) { o.block_ = nullptr; }
  Snapshot& operator=(Snapshot o) noexcept {
    std::swap(store_, o.store_);
    std::swap(block_, o.block_);
    return *this;
  }
  ~Snapshot() { release(); }

  explicit operator bool() const { return block_ != nullptr; }
  std::span<const float> values() const { return block_->values; }
  int64_t version() const { return block_->version; }
  void reset() {
    release();
    block_ = nullptr;
  }

 private:
  friend class ParamStore;
  Snapshot(ParamStore* store, detail::Block* block) : store_(store), block_(block) { retain(); }
  void retain() {
    if (block_) ++block_->refs;
  }
  inline void release();
  ParamStore* store_ = nullptr;
  detail::Block* block_ = nullptr;
};

class ParamStore {
 public:
  // `count` float parameters, all zero, version 0. count may be 0 (time-only models keep
  // versions without values).
  explicit ParamStore(int64_t count);
  ParamStore(const ParamStore&) = delete;
  ParamStore& operator=(const ParamStore&) = delete;
  // REQUIRES: every Snapshot has been released (Snapshots point into the store).
  ~ParamStore() = default;

  int64_t size() const { return count_; }
  int64_t version() const { return current_->version; }
  // Holds the current version.
  Snapshot read() { return Snapshot(this, current_); }
  // The current values, writable. Copies them first if any reader holds the current version.
  // The version does not change until commit().
  std::span<float> write();
  // The next version's values, to be written whole: `to` receives every element, computed from
  // `from` (the current values). When no reader holds the current version the two are the same
  // block (an in-place update); otherwise `to` is a fresh block and nothing is copied first, which
  // saves write()'s copy pass. Element-wise to[i] = f(from[i], ...) is safe in both cases.
  // The version does not change until commit().
  struct WriteView {
    std::span<const float> from;
    std::span<float> to;
  };
  WriteView write_next();
  // Ends a write: the version number rises by one.
  void commit() { ++current_->version; }
  // Pins: keep the values of `s`'s version readable, unchanged, after every Snapshot of it has
  // been released, without counting it as a live version, so that a gradient pool's thread can
  // read them while the run goes on (sim/gradient_pool.hpp). A write to the current version while
  // only the store and pins hold it goes to another block, as if in place: live_blocks,
  // peak_live_blocks and copies are those of the run without pins, so the outputs do not depend
  // on when a pool's thread lets go. pin and unpin are called on the store's own thread.
  // REQUIRES: s holds a version.
  const detail::Block* pin(const Snapshot& s);
  void unpin(const detail::Block* pinned);

  // The current values, read-only, without taking a reference.
  std::span<const float> peek() const { return current_->values; }

  // Blocks alive now (current plus versions still held) and the most ever alive at once.
  int64_t live_blocks() const { return live_; }
  int64_t peak_live_blocks() const { return peak_live_; }
  int64_t copies() const { return copies_; }

 private:
  friend class Snapshot;
  void on_last_release(detail::Block* b);
  detail::Block* fresh_block();
  detail::Block* take_block();
  // The current version, held by the store alone but pinned: moves it to another block (not a
  // copy, not a live version more) and returns the pinned one, now an orphan.
  detail::Block* move_pinned_current();

  int64_t count_;
  std::vector<std::unique_ptr<detail::Block>> blocks_;  // owns every block ever made
  std::vector<detail::Block*> free_;
  detail::Block* current_ = nullptr;  // the store itself holds one reference
  int64_t live_ = 0;
  int64_t peak_live_ = 0;
  int64_t copies_ = 0;
};

inline void Snapshot::release() {
  if (block_ && --block_->refs == 0) store_->on_last_release(block_);
}

}  // namespace stalesim

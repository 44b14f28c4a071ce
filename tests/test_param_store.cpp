#include <doctest/doctest.h>

#include <vector>

#include "sim/param_store.hpp"

using namespace stalesim;

TEST_CASE("a snapshot keeps the values it read while the server writes") {
  ParamStore store(4);
  {
    auto w = store.write();
    for (int i = 0; i < 4; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i);
    store.commit();
  }
  Snapshot s = store.read();
  CHECK(s.version() == 1);
  store.write()[0] = 100.0f;
  store.commit();
  CHECK(s.values()[0] == 0.0f);
  CHECK(store.peek()[0] == 100.0f);
  CHECK(store.version() == 2);
  CHECK(s.version() == 1);
  CHECK(store.copies() == 1);
  CHECK(store.live_blocks() == 2);
}

TEST_CASE("writing with no reader copies nothing") {
  ParamStore store(1000);
  for (int i = 0; i < 10; ++i) {
    store.write()[0] += 1.0f;
    store.commit();
  }
  CHECK(store.copies() == 0);
  CHECK(store.peak_live_blocks() == 1);
  CHECK(store.peek()[0] == 10.0f);
}

TEST_CASE("many readers of one version share one block, and memory follows live versions") {
  ParamStore store(16);
  std::vector<Snapshot> readers;
  for (int i = 0; i < 1000; ++i) readers.push_back(store.read());
  CHECK(store.live_blocks() == 1);
  store.write()[0] = 1.0f;
  store.commit();
  CHECK(store.live_blocks() == 2);
  readers.clear();
  CHECK(store.live_blocks() == 1);
  // Freed blocks are reused: a new reader and write make no new allocation beyond the pool.
  Snapshot s = store.read();
  store.write()[0] = 2.0f;
  store.commit();
  CHECK(store.live_blocks() == 2);
  CHECK(store.peak_live_blocks() == 2);
}

TEST_CASE("copying and moving snapshots keeps reference counts right") {
  ParamStore store(2);
  Snapshot a = store.read();
  Snapshot b = a;
  Snapshot c = std::move(b);
  CHECK_FALSE(b);
  store.write()[1] = 3.0f;
  store.commit();
  a.reset();
  CHECK(store.live_blocks() == 2);  // c still holds version 0
  c.reset();
  CHECK(store.live_blocks() == 1);
}

TEST_CASE("a store of zero parameters still counts versions (time-only model)") {
  ParamStore store(0);
  Snapshot s = store.read();
  store.write();
  store.commit();
  CHECK(store.version() == 1);
  CHECK(s.values().empty());
}

TEST_CASE("write_next updates in place when unheld and into a fresh block when a reader holds the version") {
  ParamStore store(3);
  {
    auto [from, to] = store.write_next();
    CHECK(from.data() == to.data());  // nobody holds version 0: in place
    for (size_t i = 0; i < 3; ++i) to[i] = from[i] + static_cast<float>(i + 1);
    store.commit();
  }
  CHECK(store.copies() == 0);
  Snapshot held = store.read();
  {
    auto [from, to] = store.write_next();
    CHECK(from.data() != to.data());             // the reader's block is left alone...
    CHECK(from.data() == held.values().data());  // ...and read from, without a copy pass first
    for (size_t i = 0; i < 3; ++i) to[i] = from[i] * 10.0f;
    store.commit();
  }
  CHECK(held.values()[2] == 3.0f);
  CHECK(store.peek()[0] == 10.0f);
  CHECK(store.peek()[2] == 30.0f);
  CHECK(store.version() == 2);
  CHECK(held.version() == 1);
  CHECK(store.copies() == 1);
  CHECK(store.live_blocks() == 2);
  held.reset();
  CHECK(store.live_blocks() == 1);
}

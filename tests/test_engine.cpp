#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <set>
#include <utility>
#include <vector>

#include "base/rng.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/lazy_deque.hpp"

using namespace stalesim;

namespace {
std::vector<uint64_t> drain(Engine& e, SimTime limit = SimTime::max()) {
  std::vector<uint64_t> order;
  e.run_until(limit, [&](const Event& ev) { order.push_back(ev.payload); });
  return order;
}
}  // namespace

TEST_CASE("events run in time order and equal times run in scheduling order") {
  Engine e;
  e.schedule(SimTime::from_ns(30), 0, 0, 1);
  e.schedule(SimTime::from_ns(10), 0, 0, 2);
  e.schedule(SimTime::from_ns(30), 0, 0, 3);
  e.schedule(SimTime::from_ns(10), 0, 0, 4);
  e.schedule(SimTime::from_ns(20), 0, 0, 5);
  CHECK(drain(e) == std::vector<uint64_t>{2, 4, 5, 1, 3});
  CHECK(e.now() == SimTime::from_ns(30));
  CHECK(e.events_run() == 5);
}

TEST_CASE("thousands of events, many at equal times, some cancelled, run in (time, seq) order") {
  // The queue is a 4-ary heap: check it against a sort on many pushes and pops interleaved.
  Engine e;
  Rng rng(3, Purpose::kOrder, 0);
  std::vector<std::pair<int64_t, uint64_t>> expected;  // (time, payload = seq order)
  std::vector<EventId> ids;
  uint64_t next_payload = 0;
  for (int i = 0; i < 5000; ++i) {
    const auto t = static_cast<int64_t>(rng.below(300));  // many ties
    ids.push_back(e.schedule(SimTime::from_ns(t), 0, 0, next_payload));
    expected.emplace_back(t, next_payload++);
  }
  std::vector<bool> cancelled(expected.size(), false);
  for (size_t i = 0; i < ids.size(); i += 7) {
    CHECK(e.cancel(ids[i]));
    cancelled[i] = true;
  }
  std::vector<std::pair<int64_t, uint64_t>> ran;
  // Handlers schedule more events at or after the current time while the queue drains.
  e.run_until(SimTime::from_ns(1'000'000), [&](const Event& ev) {
    ran.emplace_back(e.now().ns(), ev.payload);
    if (ran.size() % 3 == 0 && next_payload < 8000) {
      const int64_t t = e.now().ns() + static_cast<int64_t>(rng.below(50));
      e.schedule(SimTime::from_ns(t), 0, 0, next_payload);
      expected.emplace_back(t, next_payload++);
      cancelled.push_back(false);
    }
  });
  std::vector<std::pair<int64_t, uint64_t>> want;
  for (size_t i = 0; i < expected.size(); ++i)
    if (!cancelled[i]) want.push_back(expected[i]);
  std::sort(want.begin(), want.end());  // payloads rise with seq: (time, payload) is (time, seq)
  CHECK(ran == want);
  CHECK(e.pending() == 0);
}

// The queue switches between a heap alone (few events) and a heap in front of time buckets and a
// far list (sim/engine/engine.hpp); which tier an event waits in must never change the order. Against a
// sorted reference, with the pending count crossing the switch both ways, ties, zero delays,
// outliers far in the future, cancellations in every tier, and run_until stopping early.
TEST_CASE("the two-tier queue runs events in (time, seq) order whatever the number pending") {
  struct Shape {
    const char* name;
    int pending;     // events kept pending while it runs
    uint64_t delay;  // new events at now + below(delay) ns
  };
  for (const Shape shape : {Shape{"small", 40, 1000}, Shape{"around the switch", 600, 100},
                            Shape{"many, ties", 6000, 3}, Shape{"many, spread", 30000, 1'000'000}}) {
    CAPTURE(shape.name);
    Engine e;
    Rng rng(11, Purpose::kOrder, static_cast<uint64_t>(shape.pending));
    std::set<std::pair<int64_t, uint64_t>> want;  // (time, seq) of the events pending
    std::vector<std::pair<EventId, int64_t>> ids;
    auto add = [&](int64_t t) {
      const EventId id = e.schedule(SimTime::from_ns(t), 0, 0, 0);
      want.emplace(t, id.seq);
      ids.emplace_back(id, t);
    };
    auto delay = [&]() -> int64_t {
      if (rng.below(100) == 0) return 1'000'000'000'000 + static_cast<int64_t>(rng.below(1000));  // outlier
      return static_cast<int64_t>(rng.below(shape.delay));
    };
    for (int i = 0; i < shape.pending; ++i) add(delay());
    int64_t ran = 0, mismatches = 0;
    const int64_t steps = 4 * static_cast<int64_t>(shape.pending) + 2000;
    int64_t limit = 0;
    while (ran < steps && !want.empty()) {
      limit += static_cast<int64_t>(shape.delay) / 2 + 1;
      e.run_until(SimTime::from_ns(limit), [&](const Event& ev) {
        if (want.empty() || *want.begin() != std::pair{ev.time.ns(), ev.seq}) ++mismatches;
        want.erase({ev.time.ns(), ev.seq});
        ++ran;
        // Keep the pending count near its target, drifting below and above it.
        const int64_t phase = (ran / (shape.pending + 1)) % 2;
        const uint64_t births = phase == 0 ? rng.below(3) : rng.below(2);
        for (uint64_t b = 0; b < births; ++b) add(e.now().ns() + delay());
        if (rng.below(20) == 0 && !ids.empty()) {  // cancel a random event, pending or not
          const auto [id, t] = ids[rng.below(ids.size())];
          if (e.cancel(id)) want.erase({t, id.seq});
        }
        if (ran >= steps) e.stop();
      });
      if (e.pending() > 0) add(e.now().ns());  // at the current time, after run_until stopped
    }
    CHECK(mismatches == 0);
    CHECK(e.pending() == want.size());
    e.run_until(SimTime::max(), [&](const Event& ev) {
      if (want.empty() || *want.begin() != std::pair{ev.time.ns(), ev.seq}) ++mismatches;
      want.erase({ev.time.ns(), ev.seq});
    });
    CHECK(mismatches == 0);
    CHECK(want.empty());
    CHECK(e.pending() == 0);
  }
}

TEST_CASE("a cancelled event does not run and cannot be cancelled twice") {
  Engine e;
  e.schedule(SimTime::from_ns(1), 0, 0, 1);
  const EventId id = e.schedule(SimTime::from_ns(2), 0, 0, 2);
  e.schedule(SimTime::from_ns(3), 0, 0, 3);
  CHECK(e.pending() == 3);
  CHECK(e.cancel(id));
  CHECK_FALSE(e.cancel(id));
  CHECK(e.pending() == 2);
  CHECK(drain(e) == std::vector<uint64_t>{1, 3});
  CHECK(e.pending() == 0);
}

TEST_CASE("an event that already ran cannot be cancelled") {
  Engine e;
  const EventId id = e.schedule(SimTime::from_ns(1), 0);
  drain(e);
  CHECK_FALSE(e.cancel(id));
  CHECK(e.pending() == 0);
  CHECK_FALSE(e.cancel(EventId{}));
  CHECK_FALSE(e.cancel(EventId{999}));
}

TEST_CASE("run_until stops at the limit and leaves later events pending") {
  Engine e;
  for (int t = 1; t <= 10; ++t) e.schedule(SimTime::from_ns(t * 100), 0, 0, static_cast<uint64_t>(t));
  CHECK(drain(e, SimTime::from_ns(500)) == std::vector<uint64_t>{1, 2, 3, 4, 5});
  CHECK(e.now() == SimTime::from_ns(500));
  CHECK(e.pending() == 5);
  CHECK(drain(e).size() == 5);
}

TEST_CASE("handlers may schedule events, including at the current time, which run after") {
  Engine e;
  std::vector<uint64_t> order;
  e.schedule(SimTime::from_ns(5), 0, 0, 1);
  e.run_until(SimTime::max(), [&](const Event& ev) {
    order.push_back(ev.payload);
    if (ev.payload == 1) {
      e.schedule(e.now(), 0, 0, 2);
      e.schedule_in(SimTime::from_ns(1), 0, 0, 3);
    }
  });
  CHECK(order == std::vector<uint64_t>{1, 2, 3});
  CHECK(e.now() == SimTime::from_ns(6));
}

TEST_CASE("scheduling in the past is refused") {
  Engine e;
  e.schedule(SimTime::from_ns(10), 0);
  drain(e);
  CHECK_THROWS_AS(e.schedule(SimTime::from_ns(5), 0), std::logic_error);
}

TEST_CASE("stop makes run_until return after the current event") {
  Engine e;
  for (int t = 1; t <= 5; ++t) e.schedule(SimTime::from_ns(t), 0, 0, static_cast<uint64_t>(t));
  std::vector<uint64_t> order;
  e.run_until(SimTime::max(), [&](const Event& ev) {
    order.push_back(ev.payload);
    if (ev.payload == 2) e.stop();
  });
  CHECK(order == std::vector<uint64_t>{1, 2});
  CHECK(e.pending() == 3);
}

TEST_CASE("SimTime converts at the edges and rounds to the nearest nanosecond") {
  CHECK(SimTime::from_seconds(1.5).ns() == 1'500'000'000);
  CHECK(SimTime::from_us(50).ns() == 50'000);
  CHECK(SimTime::from_seconds(1e-9 * 0.6).ns() == 1);
  CHECK(SimTime::from_ns(2'500'000'000).seconds() == doctest::Approx(2.5));
}

// A worker's pushes on the wire (sim/engine/lazy_deque.hpp): one inline, the rest spilled to a deque;
// first in, first out however many are queued, and cleared by a crash.
TEST_CASE("InlineHeadQueue keeps first-in first-out order across its inline head and its spill") {
  InlineHeadQueue<int64_t, INT64_MIN> q;
  CHECK(q.empty());
  q.push_back(0);  // 0 is a value like any other (a push of 0 bytes), not the empty mark
  CHECK(q.size() == 1);
  CHECK(q.front() == 0);
  for (int64_t v = 1; v <= 5; ++v) q.push_back(v * 10);
  CHECK(q.size() == 6);
  std::vector<int64_t> out;
  for (int i = 0; i < 3; ++i) {
    out.push_back(q.front());
    q.pop_front();
  }
  q.push_back(60);  // pushed behind the spilled ones while some are still queued
  while (!q.empty()) {
    out.push_back(q.front());
    q.pop_front();
  }
  CHECK(out == std::vector<int64_t>{0, 10, 20, 30, 40, 50, 60});
  q.push_back(7);
  q.push_back(8);
  q.clear();
  CHECK(q.empty());
  CHECK(q.size() == 0);
  q.push_back(9);
  CHECK(q.front() == 9);
}

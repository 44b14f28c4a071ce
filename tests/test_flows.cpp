// Issue 33: FlowNetwork (sim/network/flows.hpp), which keeps its channel lists up to date and
// computes a channel's remaining bandwidth only when progressive filling reaches it, against the
// reference that recomputes everything at every flow start and end (tests/flows_reference.hpp):
// random traffic on random small topologies must give bit-identical rates after every event,
// completion times, link counters and load reports.
#include <doctest/doctest.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "base/rng.hpp"
#include "sim/network/flows.hpp"
#include "tests/flows_reference.hpp"

using namespace stalesim;
using stalesim::testing::ReferenceFlowNetwork;

namespace {

constexpr uint32_t kFlow = 7;
constexpr uint32_t kStart = 8;
constexpr uint32_t kDone = 9;

struct Message {
  int64_t at = 0;
  std::vector<std::vector<int32_t>> routes;  // one per part
  std::vector<FlowNetwork::Part> parts;
};

struct Traffic {
  std::vector<double> gbps;
  std::vector<Message> messages;
};

// A random topology of 2 to 9 channels (bandwidths repeated, so shares tie) and 40 messages of 1
// to 3 parts, each over 1 to 4 distinct channels; a third of them start at the instant of the one
// before; a tenth of the parts are empty.
Traffic random_traffic(uint64_t seed) {
  Rng rng(seed);
  Traffic t;
  const double bandwidths[] = {1.0, 2.5, 4.0, 10.0, 3.7, 4.0};
  const auto channels = 2 + static_cast<int32_t>(rng.next() % 8);
  for (int32_t c = 0; c < channels; ++c) t.gbps.push_back(bandwidths[rng.next() % 6]);
  int64_t at = 0;
  t.messages.resize(40);
  for (Message& m : t.messages) {
    if (rng.uniform() >= 0.3) at += static_cast<int64_t>(rng.next() % 20'000);
    m.at = at;
    const auto parts = 1 + rng.next() % 3;
    for (uint64_t p = 0; p < parts; ++p) {
      std::vector<int32_t> all;
      for (int32_t c = 0; c < channels; ++c) all.push_back(c);
      for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.next() % i]);
      all.resize(1 + rng.next() % std::min<uint64_t>(4, all.size()));
      m.routes.push_back(all);
    }
    for (const auto& r : m.routes) {
      const int64_t bytes = rng.uniform() < 0.1 ? 0 : 1 + static_cast<int64_t>(rng.next() % 40'000);
      m.parts.push_back({r, bytes, SimTime::from_ns(static_cast<int64_t>(rng.next() % 1'000))});
    }
  }
  return t;
}

struct Observed {
  std::vector<std::vector<double>> rates;  // after every event
  std::vector<std::pair<uint32_t, int64_t>> done;
  std::vector<std::tuple<int64_t, int32_t, double, int32_t>> loads;
  std::vector<std::tuple<int64_t, int64_t, int32_t, int32_t>> stats;
  size_t most_flows = 0;
};

template <class Net>
Observed drive(const Traffic& t, bool hook) {
  Engine engine;
  Net net(t.gbps, kFlow);
  Observed out;
  if (hook)
    net.on_load([&out](SimTime now, int32_t ch, double gbps, int32_t n) {
      out.loads.emplace_back(now.ns(), ch, gbps, n);
    });
  for (size_t m = 0; m < t.messages.size(); ++m)
    engine.schedule(SimTime::from_ns(t.messages[m].at), kStart, static_cast<uint32_t>(m));
  engine.run_until(SimTime::max(), [&](const Event& e) {
    if (e.kind == kFlow) net.on_event(engine);
    if (e.kind == kDone) out.done.emplace_back(e.target, e.time.ns());
    if (e.kind == kStart) net.send(engine, t.messages[e.target].parts, {kDone, e.target, 0});
    out.rates.push_back(net.rates());
    out.most_flows = std::max(out.most_flows, net.active_flows());
  });
  for (const auto& s : net.stats()) out.stats.emplace_back(s.bytes, s.busy_ns, s.peak, s.active);
  return out;
}

}  // namespace

TEST_CASE("flows: the incremental max-min sharing equals the full recomputation, bit for bit") {
  size_t most_flows = 0;
  size_t messages_done = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    CAPTURE(seed);
    const Traffic t = random_traffic(seed);
    const bool hook = seed % 2 == 0;
    const Observed fast = drive<FlowNetwork>(t, hook);
    const Observed ref = drive<ReferenceFlowNetwork>(t, hook);
    REQUIRE(fast.rates.size() == ref.rates.size());
    for (size_t i = 0; i < ref.rates.size(); ++i) {
      CAPTURE(i);
      REQUIRE(fast.rates[i] == ref.rates[i]);
    }
    REQUIRE(fast.done == ref.done);
    REQUIRE(fast.loads == ref.loads);
    REQUIRE(fast.stats == ref.stats);
    CHECK(fast.done.size() == t.messages.size());
    CHECK(hook == !ref.loads.empty());
    most_flows = std::max(most_flows, ref.most_flows);
    messages_done += ref.done.size();
  }
  // The traffic did overlap: many flows shared the channels at once.
  CHECK(most_flows >= 10);
  CHECK(messages_done == 300 * 40);
}
